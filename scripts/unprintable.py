"""Generates the table of unprintable code points in lua/ttyoffer/shared/title.lua
from the rule in ttyoffer_nvim/term/text.py (``python scripts/unprintable.py
--write``); a test checks that the table is current, so both sides of the
plugin apply one rule."""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

from ttyoffer_nvim.term.text import UNPRINTABLE_CATEGORIES, unprintable

TITLE_LUA = Path(__file__).resolve().parent.parent / "lua" / "ttyoffer" / "shared" / "title.lua"
_BEGIN, _END = "-- BEGIN unprintable ranges", "-- END unprintable ranges"


def ranges() -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    start = None
    for cp in range(0x110000):
        if unprintable(chr(cp)):
            if start is None:
                start = cp
        elif start is not None:
            found.append((start, cp - 1))
            start = None
    if start is not None:
        found.append((start, 0x10FFFF))
    return found


def lua_table() -> str:
    rows = "\n".join(f"  {{ 0x{lo:04X}, 0x{hi:04X} }}," for lo, hi in ranges())
    header = (
        f"-- Unicode {unicodedata.unidata_version}, categories {', '.join(sorted(UNPRINTABLE_CATEGORIES))}"
    )
    return f"{_BEGIN} (scripts/unprintable.py)\n{header}\nlocal UNPRINTABLE = {{\n{rows}\n}}\n{_END}"


def current_lua_table(text: str) -> str:
    match = re.search(re.escape(_BEGIN) + r".*?" + re.escape(_END), text, re.S)
    return match.group(0) if match else ""


def main(argv: list[str]) -> int:
    table = lua_table()
    if "--write" in argv:
        text = TITLE_LUA.read_text()
        TITLE_LUA.write_text(text.replace(current_lua_table(text), table))
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
