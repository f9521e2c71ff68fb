"""Writes the editor's protocol.lua from the one declaration of the
protocol, ttyoffer_nvim/protocol.py (``python scripts/protocol_lua.py
--write``); tests/nvim/test_protocol.py checks that the file is current, so the
editor's side names what the host's declares."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from ttyoffer_nvim import protocol

ROOT = Path(__file__).resolve().parent.parent


def lua_path() -> Path:
    """The editor's protocol module, wherever its folder puts it."""
    found = sorted((ROOT / "lua" / "ttyoffer").rglob("protocol.lua"))
    if len(found) != 1:
        raise SystemExit(f"expected one protocol.lua under lua/ttyoffer, found {found}")
    return found[0]


HEADER = """\
-- The protocol between the editor and the Python host, declared once, in
-- ttyoffer_nvim/protocol.py: this file is written from it by
-- scripts/protocol_lua.py (a test holds it current; edit the declaration).
local M = {}

--- Host -> editor: notifications, each served by the function of the same
--- name in `ttyoffer.events`, with these arguments in this order.
M.events = {
"""

METHODS_HEADER = """\
}

--- Editor -> host: RPC methods ('ttyoffer_' .. name), their arguments, and
--- whether a value comes back (request) or not (notify).
M.methods = {
"""

FOOTER = """\
}

--- The RPC method name of `name`; raises for a name the protocol lacks, so a
--- typo fails where it is written, not as a silently ignored message.
--- @param name string
--- @param kind 'request'|'notify'
--- @return string
function M.method(name, kind)
  local spec = M.methods[name]
  if not spec or spec.kind ~= kind then
    error(string.format('(ttyoffer) %s is not a %s of the host protocol', name, kind), 2)
  end
  return 'ttyoffer_' .. name
end

return M
"""


def _comment(doc: str) -> str:
    if not doc:
        return ""
    return textwrap.fill(doc, width=78, initial_indent="  -- ", subsequent_indent="  -- ") + "\n"


def _names(args: tuple[str, ...]) -> str:
    return "{ " + ", ".join(f"'{a}'" for a in args) + " }" if args else "{}"


def text() -> str:
    out = [HEADER]
    for name, message in protocol.EVENT_MESSAGES.items():
        out.append(_comment(message.doc) + f"  {name} = {_names(message.args)},\n")
    out.append(METHODS_HEADER)
    for name, message in protocol.METHODS.items():
        out.append(
            _comment(message.doc)
            + f"  {name} = {{ kind = '{message.kind}', args = {_names(message.args)} }},\n"
        )
    out.append(FOOTER)
    return "".join(out)


def main(argv: list[str]) -> int:
    path = lua_path()
    if "--write" in argv:
        path.write_text(text())
        return 0
    if path.read_text() != text():
        print(f"{path.relative_to(ROOT)} is not current: python scripts/protocol_lua.py --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
