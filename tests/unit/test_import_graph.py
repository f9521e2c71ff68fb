"""The Python side's imports run one way: edge → offer, runs → term, no
cycle, lazy imports included, each library imported only by the part it
belongs to, and DESIGN.md's graph is the one read from the source
(scripts/import_graph.py)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import import_graph
from harness import ROOT


def test_no_import_cycle_lazy_or_not() -> None:
    assert import_graph.cycles(import_graph.graph()) == []


def test_parts_import_only_downward() -> None:
    assert import_graph.upward(import_graph.graph()) == []


def test_libraries_only_where_their_part_is() -> None:
    # pynvim at the edge alone, pyte in the offer's screen model alone, the
    # standard library below.
    assert import_graph.foreign(import_graph.libraries()) == []


def test_every_module_is_in_a_part() -> None:
    parts = {import_graph.part(name) for name in import_graph.sources()}
    assert parts == set(import_graph.MAY_IMPORT)


def test_design_md_holds_the_graph_read_from_the_source() -> None:
    assert import_graph.DESIGN.read_text() == import_graph.expected(), (
        "run python scripts/import_graph.py --write"
    )


def test_package_inits_import_nothing() -> None:
    # A part's __init__ runs with any of its modules: importing there would
    # load what an idle host does without (runs, tmux, pyte), and the
    # keeper's isolated interpreter would pay for it.
    for path in sorted((ROOT / "ttyoffer_nvim").rglob("__init__.py")):
        tree = ast.parse(path.read_text())
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))], path


def test_the_session_wrapper_runs_alone() -> None:
    # sessionwrap.py is run by path (-I -S) inside a session: no import of
    # ours could be found there.
    assert import_graph.graph()["ttyoffer_nvim.runs.sessionwrap"] == {}


def test_an_idle_host_loads_no_run_module() -> None:
    # What the bridge imports at load time, in a fresh interpreter: the
    # offer and the terminal holds, neither runs nor pyte.
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, ttyoffer_nvim.bridge; print(' '.join(sorted(sys.modules)))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    ours = {name for name in loaded if name.startswith("ttyoffer_nvim")}
    assert "ttyoffer_nvim.offer.offer" in ours
    assert not [name for name in ours if name.startswith("ttyoffer_nvim.runs.")], ours
    assert "pyte" not in loaded


def test_the_reader_sees_relative_lazy_and_typing_imports(tmp_path: Path) -> None:
    source = tmp_path / "offer.py"
    source.write_text(
        textwrap.dedent(
            """
            from typing import TYPE_CHECKING
            from ..term import procfs
            from .screen import ScreenModel
            import pyte
            if TYPE_CHECKING:
                from ..runs import tmux
            def later():
                from ..runs.runs import RunTable
            """
        )
    )
    known = set(import_graph.sources())
    edges, libraries = import_graph.read("ttyoffer_nvim.offer.offer", source, known)
    assert edges == {
        "ttyoffer_nvim.term.procfs": "now",
        "ttyoffer_nvim.offer.screen": "now",
        "ttyoffer_nvim.runs.tmux": "types",
        "ttyoffer_nvim.runs.runs": "lazily",
    }
    assert libraries == {"pyte"}
    assert import_graph.upward({"ttyoffer_nvim.offer.offer": edges}) == [
        "ttyoffer_nvim.offer.offer (offer) imports ttyoffer_nvim.runs.runs (runs)",
        "ttyoffer_nvim.offer.offer (offer) imports ttyoffer_nvim.runs.tmux (runs)",
    ]
    # A cycle through a typing-only import never runs; a lazy one does.
    assert import_graph.cycles({"a": {"b": "now"}, "b": {"a": "types"}}) == []
    assert import_graph.cycles({"a": {"b": "now"}, "b": {"a": "lazily"}}) == [["a", "b"]]
