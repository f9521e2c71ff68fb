"""The host's state is read through functions (lua/ttyoffer/host/init.lua:
get_state, get_pid, ...): no module reads the fields it had before it was
split by its jobs. The façade still serves them to READERS, which may only
shrink, until they move to the functions."""

from __future__ import annotations

import re

from harness import ROOT

FORMER_FIELDS = ("state", "chan", "job", "pid", "error", "stderr", "python", "dry", "retired", "shrink_delay")
# Modules that still read a former field. None may join (the runs, the last
# ones, moved to the functions with their kinds).
READERS: set[str] = set()
# `host.state`, not `host.state()` nor a module `ttyoffer.host.python`.
_FIELD = re.compile(r"(?<![\w.])host\.(" + "|".join(FORMER_FIELDS) + r")\b(?!\s*\()")


def readers_of_former_fields() -> set[str]:
    found = set()
    for path in sorted((ROOT / "lua").rglob("*.lua")) + [ROOT / "plugin" / "ttyoffer.lua"]:
        code = "\n".join(line.split("--", 1)[0] for line in path.read_text().splitlines())
        if _FIELD.search(code):
            found.add(str(path.relative_to(ROOT)))
    return found


def test_no_new_reader_of_the_hosts_former_fields() -> None:
    assert readers_of_former_fields() - READERS == set()


def test_the_readers_list_only_shrinks() -> None:
    # A module that moved to the functions leaves the list.
    assert READERS - readers_of_former_fields() == set()
