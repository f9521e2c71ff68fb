"""Writes the configuration reference from its one source, the defaults
table of lua/ttyoffer/config.lua: each option's entry in :help
ttyoffer-config (from the comment above its key, and its type from the
validators there), and the setup() example of the help and of the README
(the defaults themselves). ``python scripts/config_reference.py --write``
rewrites both files; without it, the differences are printed and the exit
is 1. tests/unit/test_config_reference.py keeps both current."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG_LUA = ROOT / "lua" / "ttyoffer" / "config.lua"
HELP = ROOT / "doc" / "ttyoffer.txt"
README = ROOT / "README.md"

HELP_BEGIN = "                        changed. Calling setup() is optional. >lua\n"
HELP_END = "\n==============================================================================\n"
README_BEGIN = "<!-- config: written by scripts/config_reference.py from lua/ttyoffer/config.lua -->\n"
README_END = "<!-- /config -->\n"
TEXT_COLUMN = 16  # where an entry's text starts in the help
WIDTH = 78  # :help help-writing


@dataclass
class Option:
    path: str  # "float.width"
    doc: list[str]  # the comment lines above the key, markup and all
    value: str | None = None  # the Lua literal of a leaf; None for a table
    children: list[Option] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]


def parse(text: str) -> list[Option]:
    """The options of `M.defaults = { … }`: one key a line, a comment above
    each, nested tables opening with `key = {` and closing with `},`."""
    body = text[text.index("M.defaults = {\n") :]
    lines = body.splitlines()[1:]
    top: list[Option] = []
    stack: list[list[Option]] = [top]
    prefix: list[str] = []
    doc: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped == "}":
            break
        if stripped.startswith("--"):
            doc.append(stripped[3:] if stripped.startswith("-- ") else stripped[2:])
            continue
        if stripped == "},":
            stack.pop()
            prefix.pop()
            continue
        match = re.fullmatch(r"(\w+) = (.+?),?", stripped)
        if not match:
            raise ValueError(f"config.lua: cannot read {line!r}")
        key, value = match.groups()
        path = ".".join([*prefix, key])
        if not doc:
            raise ValueError(f"config.lua: option {path} has no comment to document it")
        if value == "{":
            option = Option(path, doc)
            stack[-1].append(option)
            stack.append(option.children)
            prefix.append(key)
        else:
            stack[-1].append(Option(path, doc, value))
        doc = []
    return top


def types(text: str) -> dict[str, str]:
    """Each option's accepted types, in words, from the validators table."""
    found: dict[str, str] = {}
    block = text[text.index("local validators = {") :]
    block = block[: block.index("\n}\n") + 1]
    for path, listed, rest in re.findall(r"\[?'?([\w.]+)'?\]? = \{ (\{[^}]*\}|'\w+')(.*?) \},?\n", block):
        names = re.findall(r"'(\w+)'", listed)
        if "key_or_false" in rest:
            names = ["false" if n == "boolean" else n for n in names]
        found[path] = " or ".join("list" if n == "table" else n for n in names)
    return found


def shown(value: str) -> str:
    """A Lua literal as the help shows a default."""
    if value.startswith("'") and value.endswith("'"):
        return '"' + value[1:-1] + '"'
    return value


def help_text(options: list[Option], kinds: dict[str, str]) -> str:
    out: list[str] = []

    def entry(option: Option, depth: int) -> None:
        tag = f"*ttyoffer-config-{option.path}*"
        out.append(tag.rjust(WIDTH))
        name = "  " * depth + option.name
        kind = "table" if option.value is None else f"{kinds[option.path]} (default {shown(option.value)})"
        head = name.ljust(TEXT_COLUMN - 1) + " " + kind
        out.append(head)
        for line in option.doc:
            if line == "<":
                out.append("<")
            else:
                out.append((" " * TEXT_COLUMN + line).rstrip())
        for child in option.children:
            entry(child, depth + 1)

    for option in options:
        entry(option, 0)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def lua_call(options: list[Option], indent: str, width: int) -> str:
    """The setup() call with every default, one top-level key a line; a
    table's keys go on as many lines as `width` needs, aligned."""
    lines = [f"{indent}require('ttyoffer').setup({{"]
    for option in options:
        if option.value is None:
            head = f"{indent}  {option.name} = {{ "
            items = [f"{child.name} = {child.value}" for child in option.children]
            line = head
            for i, item in enumerate(items):
                piece = item + (", " if i < len(items) - 1 else " },")
                if line != head and len(line + piece.rstrip()) > width:
                    lines.append(line.rstrip())
                    line = " " * len(head)
                line += piece
            lines.append(line)
        else:
            lines.append(f"{indent}  {option.name} = {option.value},")
    lines.append(f"{indent}}})")
    return "\n".join(lines) + "\n"


def help_section(options: list[Option], kinds: dict[str, str]) -> str:
    section = lua_call(options, "    ", WIDTH) + "<\n" + help_text(options, kinds)
    for line in section.splitlines():
        if len(line) > WIDTH:
            raise ValueError(f"help line over {WIDTH} columns: {line!r}")
    return section


def readme_block(options: list[Option]) -> str:
    return "```lua\n" + lua_call(options, "", 100) + "```\n"


def replace_between(text: str, begin: str, end: str, new: str, where: str) -> str:
    start = text.index(begin) + len(begin) if begin in text else -1
    if start < 0:
        raise ValueError(f"{where}: no {begin.strip()!r} marker")
    stop = text.index(end, start)
    return text[:start] + new + text[stop:]


def expected() -> dict[Path, str]:
    source = CONFIG_LUA.read_text()
    options, kinds = parse(source), types(source)
    help_text = help_section(options, kinds)
    readme_text = readme_block(options)
    return {
        HELP: replace_between(HELP.read_text(), HELP_BEGIN, HELP_END, help_text, "help"),
        README: replace_between(README.read_text(), README_BEGIN, README_END, readme_text, "README"),
    }


def main(argv: list[str]) -> int:
    stale = [path for path, text in expected().items() if path.read_text() != text]
    if "--write" in argv:
        for path, text in expected().items():
            path.write_text(text)
        return 0
    for path in stale:
        print(f"{path.relative_to(ROOT)} is not current: run python scripts/config_reference.py --write")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
