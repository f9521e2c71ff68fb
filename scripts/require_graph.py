"""The Lua side's require graph, read from the source: every
``require('ttyoffer…')`` of each module, at load time (a ``local x =
require(…)`` at the top of the file) or lazily (anywhere else, a click
function's ``luaeval`` string included). ``python scripts/require_graph.py
--write`` writes it into DESIGN.md; tests/test_require_graph.py keeps that
current and fails on a cycle, lazy or not, or on a module other than the
entry points requiring the public façade (``ttyoffer``, init.lua)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LUA = ROOT / "lua" / "ttyoffer"
DESIGN = ROOT / "DESIGN.md"
BEGIN = "<!-- require graph: written by scripts/require_graph.py -->\n"
END = "<!-- /require graph -->\n"
# What may require the façade: the editor's entry points, which hand the
# user's commands to it. Everything else is below it.
FACADE = "ttyoffer"
ENTRY_POINTS = {"plugin/ttyoffer.lua", "ttyoffer.command", "ttyoffer.health"}

_REQUIRE = re.compile(r"""require\(?\s*['"](ttyoffer(?:\.[\w.]+)?)['"]""")
_EAGER = re.compile(r"""^local \w+ = require\(['"](ttyoffer(?:\.[\w.]+)?)['"]\)""")


def _code(source: str) -> list[str]:
    """The lines of a Lua file without its comments (strings kept: a
    luaeval string's require counts)."""
    source = re.sub(r"--\[(=*)\[.*?\]\1\]", "", source, flags=re.S)
    lines = []
    for line in source.splitlines():
        quote = None
        i = 0
        while i < len(line):
            c = line[i]
            if quote:
                if c == "\\":
                    i += 2
                    continue
                if c == quote:
                    quote = None
            elif c in "'\"":
                quote = c
            elif line.startswith("--", i):
                line = line[:i]
                break
            i += 1
        lines.append(line)
    return lines


def module_name(path: Path) -> str:
    if path.parent.name == "plugin":
        return "plugin/" + path.name
    relative = path.relative_to(ROOT / "lua").with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "init":
        parts.pop()
    return ".".join(parts)


def graph() -> dict[str, dict[str, bool]]:
    """module -> {required module: at load time}."""
    found: dict[str, dict[str, bool]] = {}
    for path in sorted([*LUA.rglob("*.lua"), ROOT / "plugin" / "ttyoffer.lua"]):
        name = module_name(path)
        edges: dict[str, bool] = {}
        for line in _code(path.read_text()):
            eager = _EAGER.match(line)
            for target in _REQUIRE.findall(line):
                if target != name:
                    edges[target] = edges.get(target, False) or bool(eager and eager.group(1) == target)
        found[name] = edges
    return found


def cycles(edges: dict[str, dict[str, bool]]) -> list[list[str]]:
    """Every elementary cycle, each once, from its smallest module."""
    found: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for target in edges.get(node, {}):
            if target in path:
                cycle = path[path.index(target) :]
                start = cycle.index(min(cycle))
                found.add(tuple(cycle[start:] + cycle[:start]))
            else:
                walk(target, [*path, target])

    for node in edges:
        walk(node, [node])
    return [list(c) for c in sorted(found)]


def upward(edges: dict[str, dict[str, bool]]) -> list[str]:
    """Modules that require the façade without being an entry point."""
    return sorted(n for n, e in edges.items() if FACADE in e and n not in ENTRY_POINTS)


def short(name: str) -> str:
    if name == FACADE:
        return "init"
    return name.removeprefix("ttyoffer.")


def text(edges: dict[str, dict[str, bool]]) -> str:
    rows = []
    width = max(len(short(n)) for n in edges)
    for name in sorted(edges, key=lambda n: (n != "plugin/ttyoffer.lua", n != FACADE, short(n))):
        now = sorted(short(t) for t, eager in edges[name].items() if eager)
        later = sorted(short(t) for t, eager in edges[name].items() if not eager)
        if not now and not later:
            continue
        said = ", ".join(now)
        if later:
            said += ("; " if said else "") + "lazily " + ", ".join(later)
        rows.append(f"    {short(name).ljust(width)} → {said}")
    return "\n".join(rows) + "\n"


def expected() -> str:
    design = DESIGN.read_text()
    start = design.index(BEGIN) + len(BEGIN)
    stop = design.index(END, start)
    return design[:start] + "\n" + text(graph()) + "\n" + design[stop:]


def main(argv: list[str]) -> int:
    if "--write" in argv:
        DESIGN.write_text(expected())
        return 0
    edges = graph()
    problems = [" -> ".join(c) for c in cycles(edges)] + [f"{n} requires the façade" for n in upward(edges)]
    if DESIGN.read_text() != expected():
        problems.append("DESIGN.md's require graph is not current: python scripts/require_graph.py --write")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
