"""The Lua side's requires run one way: no cycle, lazy requires included,
nothing below the public façade requiring it, every module in one part and
no part requiring one above it (shared < host < offer < routes < runs <
the entry points), and DESIGN.md's graph is the one read from the source
(scripts/require_graph.py)."""

from __future__ import annotations

import require_graph


def test_no_require_cycle_lazy_or_not() -> None:
    assert require_graph.cycles(require_graph.graph()) == []


def test_only_the_entry_points_require_the_facade() -> None:
    assert require_graph.upward(require_graph.graph()) == []


def test_every_module_is_in_a_part() -> None:
    assert require_graph.unplaced(require_graph.graph()) == []


def test_every_module_required_is_there() -> None:
    assert require_graph.missing(require_graph.graph()) == []


def test_nothing_requires_back_up_the_chain() -> None:
    assert require_graph.against_the_chain(require_graph.graph()) == []


def test_the_chain_is_read_as_written() -> None:
    edges = {
        "ttyoffer.host": {"ttyoffer.offer.prompts": False},
        "ttyoffer.runs.pane": {"ttyoffer.shared.layout": True, "ttyoffer.config": True},
        "ttyoffer.shared.notify": {"ttyoffer.config": True},
        "ttyoffer.offer.window": {"ttyoffer.stray": True},
    }
    assert require_graph.against_the_chain(edges) == [
        "ttyoffer.host (host) requires ttyoffer.offer.prompts (offer)",
    ]
    assert require_graph.unplaced(edges) == ["ttyoffer.stray"]
    assert require_graph.part("ttyoffer.hostile") is None
    assert require_graph.missing(edges) == [
        "ttyoffer.host requires ttyoffer.offer.prompts, which is no module",
        "ttyoffer.offer.window requires ttyoffer.stray, which is no module",
        "ttyoffer.runs.pane requires ttyoffer.config, which is no module",
        "ttyoffer.runs.pane requires ttyoffer.shared.layout, which is no module",
        "ttyoffer.shared.notify requires ttyoffer.config, which is no module",
    ]


def test_design_md_holds_the_graph_read_from_the_source() -> None:
    assert require_graph.DESIGN.read_text() == require_graph.expected(), (
        "run python scripts/require_graph.py --write"
    )


def test_the_reader_sees_lazy_requires_and_click_functions() -> None:
    lines = require_graph._code(
        "local a = require('ttyoffer.a') -- require('ttyoffer.comment')\n"
        "local function f() return require('ttyoffer.b') end\n"
        """vim.cmd([[call luaeval("require('ttyoffer.c').x(_A)", 1)]])\n"""
    )
    assert "comment" not in "\n".join(lines)
    assert [require_graph._REQUIRE.findall(line) for line in lines] == [
        ["ttyoffer.a"],
        ["ttyoffer.b"],
        ["ttyoffer.c"],
    ]
