"""Writes the editor's lua/ttyoffer/runs/rules.lua from the runs' rules,
declared once in ttyoffer_nvim/runs/rules.py and ending.py (``python
scripts/rules_lua.py --write``); tests/unit/test_rules_lua.py checks that the
file is current, so what the editor checks up front is what the host
applies."""

from __future__ import annotations

import sys
from pathlib import Path

from ttyoffer_nvim.runs import ending, rules

ROOT = Path(__file__).resolve().parent.parent
LUA_PATH = ROOT / "lua" / "ttyoffer" / "runs" / "rules.lua"

HEADER = """\
-- The runs' rules the editor must know up front (completion, an instant
-- error before any pane opens), declared once, in ttyoffer_nvim/runs/rules.py
-- and ending.py: this file is written from them by scripts/rules_lua.py (a
-- test holds it current; edit the declaration). The host applies every rule
-- again and answers with an error the editor shows.
local M = {}

"""

FOOTER = """\
--- `template` with its {names} filled from `values` (as rules.fill does).
--- @param template string
--- @param values table<string, any>
--- @return string
function M.fill(template, values)
  return (template:gsub('{([%w_]+)}', function(name)
    return tostring(values[name])
  end))
end

return M
"""


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _lua_class(punctuation: str, extra: str = "") -> str:
    """A Lua pattern's character class: letters, digits and `punctuation`."""
    return "[%w" + "".join("%" + c for c in punctuation + extra) + "]"


def _table(name: str, doc: str, fields: dict[str, object]) -> str:
    out = [f"--- {doc}\nM.{name} = {{\n"]
    for key, value in fields.items():
        shown = _string(value) if isinstance(value, str) else str(value)
        out.append(f"  {key} = {shown},\n")
    out.append("}\n\n")
    return "".join(out)


def text() -> str:
    return "".join(
        [
            HEADER,
            _table(
                "session_name",
                "Session names (sessions.sanitize_name): other characters than these become '-'.",
                {
                    "unsafe": f"[^{rules.NAME_CHARACTERS}]",
                    "length": rules.NAME_LENGTH,
                    "default": rules.DEFAULT_NAME,
                    "rule": rules.NAME_RULE,
                    "refusal": rules.NAME_REFUSAL,
                },
            ),
            _table(
                "destination",
                "ssh destinations (remote.refusal): the first character, then the rest.",
                {
                    "first": _lua_class(rules.DESTINATION_PUNCTUATION),
                    "rest": _lua_class(rules.DESTINATION_PUNCTUATION, "-"),
                    "length": rules.DESTINATION_LENGTH,
                    "refusal": rules.DESTINATION_REFUSAL,
                },
            ),
            _table(
                "signals", "The signals run:kill() takes by name, and their numbers.", dict(rules.signals())
            ),
            _table(
                "words",
                "How an ending is described, by its reason (ending.WORDS); the host sends its\n"
                "--- own words as `said`, these are for the endings the editor makes.",
                dict(ending.WORDS),
            ),
            FOOTER,
        ]
    )


def main(argv: list[str]) -> int:
    if "--write" in argv:
        LUA_PATH.write_text(text())
        return 0
    if not LUA_PATH.exists() or LUA_PATH.read_text() != text():
        print(f"{LUA_PATH.relative_to(ROOT)} is not current: python scripts/rules_lua.py --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
