"""Rooms a newcomer can hold: no product file past LIMIT lines, but those
listed in LONG, each at most its ceiling. The list only shrinks: a file
that got shorter lowers its ceiling to its new length, and one back under
LIMIT leaves the list (what is split stays split)."""

from __future__ import annotations

from pathlib import Path

from harness import ROOT

LIMIT = 450
# What the product is: the editor's side, the host's, the shell and the
# programs beside them (tests, scripts and benchmarks are not product).
PRODUCT = ("lua", "ttyoffer_nvim", "rplugin", "libexec", "plugin")
# Files still past LIMIT, each with its length when it was listed as its
# ceiling: lengths may go down, never up.
LONG = {
    "libexec/ttyoffer-lead.c": 628,  # the C leader: one program, one file
}


def product_lengths() -> dict[str, int]:
    """Each product text file (by its path from the root) and its lines."""
    lengths = {}
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:  # a built binary (the leader), not source
                continue
            lengths[str(path.relative_to(ROOT))] = text.count("\n")
    return lengths


def test_no_product_file_past_the_limit_unless_listed() -> None:
    long = {name: n for name, n in product_lengths().items() if n > LIMIT and name not in LONG}
    assert long == {}, f"split these by job (at most {LIMIT} lines each)"


def test_listed_files_never_grow() -> None:
    lengths = product_lengths()
    grown = {
        name: (lengths[name], ceiling) for name, ceiling in LONG.items() if lengths.get(name, 0) > ceiling
    }
    assert grown == {}, "(length, ceiling): a listed file may only get shorter"


def test_the_list_only_shrinks() -> None:
    # A shorter file lowers its ceiling; one at LIMIT or under leaves the
    # list, so that it cannot grow back past it unseen.
    lengths = product_lengths()
    stale = {name: lengths.get(name, 0) for name, ceiling in LONG.items() if lengths.get(name, 0) < ceiling}
    assert stale == {}, f"set these ceilings to their lengths, or take them off LONG when at most {LIMIT}"


def test_lengths_are_read_from_the_product() -> None:
    # The check reads what it should: the sources of every part, no test.
    lengths = product_lengths()
    assert "lua/ttyoffer/host/init.lua" in lengths
    assert "ttyoffer_nvim/offer/offer.py" in lengths
    assert "plugin/ttyoffer.lua" in lengths
    assert not any(Path(name).parts[0] in ("tests", "scripts", "bench") for name in lengths)
