"""The host's state is read through functions (lua/ttyoffer/host/init.lua:
get_state, get_pid, ...): no module reads the fields it had before it was
split by its jobs (they are gone: such a read is nil, never the state)."""

from __future__ import annotations

import re

from harness import ROOT

FORMER_FIELDS = ("state", "chan", "job", "pid", "error", "stderr", "python", "dry", "retired", "shrink_delay")
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
    assert readers_of_former_fields() == set()
