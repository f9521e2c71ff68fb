"""The Lua side's require graph, read from the source: every
``require('ttyoffer…')`` of each module, at load time (a ``local x =
require(…)`` at the top of the file) or lazily (anywhere else, a click
function's ``luaeval`` string included). ``python scripts/require_graph.py
--write`` writes it into DESIGN.md; tests/unit/test_require_graph.py keeps that
current and fails on a cycle, lazy or not, on a module other than the
entry points requiring the public façade (``ttyoffer``, init.lua), on a
require of a module no file holds, or on a require back up the chain of
parts (PARTS)."""

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
# The parts, bottom first: a module requires only modules of its own part or
# of a part below it. `config` (the one table) and shared/ are below all;
# the entry points (the façade, the commands, health, the host's events)
# are above all. Each folder is one part; a new module goes into one.
PARTS = (
    ("shared", ("ttyoffer.config", "ttyoffer.shared")),
    ("host", ("ttyoffer.host",)),
    ("offer", ("ttyoffer.offer",)),
    ("routes", ("ttyoffer.routes",)),
    ("runs", ("ttyoffer.runs",)),
    ("entry", ("plugin/ttyoffer.lua", FACADE, "ttyoffer.command", "ttyoffer.health", "ttyoffer.events")),
)

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


def part(name: str) -> int | None:
    """The rank of a module's part in PARTS (0 the bottom), None if in none."""
    for rank, (_, prefixes) in enumerate(PARTS):
        if any(name == p or (p != FACADE and name.startswith(p + ".")) for p in prefixes):
            return rank
    return None


def unplaced(edges: dict[str, dict[str, bool]]) -> list[str]:
    """Modules in no part."""
    return sorted(n for n in {*edges, *(t for e in edges.values() for t in e)} if part(n) is None)


def missing(edges: dict[str, dict[str, bool]]) -> list[str]:
    """Requires of a module no file holds (a path a move left behind)."""
    return sorted(
        f"{n} requires {t}, which is no module" for n, e in edges.items() for t in e if t not in edges
    )


def against_the_chain(edges: dict[str, dict[str, bool]]) -> list[str]:
    """Requires from a part up to a part above it, lazy ones included."""
    found = []
    for name, targets in sorted(edges.items()):
        for target in sorted(targets):
            here, there = part(name), part(target)
            if here is not None and there is not None and there > here:
                found.append(f"{name} ({PARTS[here][0]}) requires {target} ({PARTS[there][0]})")
    return found


def short(name: str) -> str:
    if name == FACADE:
        return "init"
    return name.removeprefix("ttyoffer.")


def text(edges: dict[str, dict[str, bool]]) -> str:
    rows = []
    width = max(len(short(n)) for n in edges)

    # From the top of the chain down: the entry points, then each part.
    def order(name: str) -> tuple[int, bool, bool, str]:
        rank = part(name)
        height = len(PARTS) if rank is None else rank
        return (-height, name != "plugin/ttyoffer.lua", name != FACADE, short(name))

    for name in sorted(edges, key=order):
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
    problems += against_the_chain(edges) + [f"{n} is in no part (PARTS)" for n in unplaced(edges)]
    problems += missing(edges)
    if DESIGN.read_text() != expected():
        problems.append("DESIGN.md's require graph is not current: python scripts/require_graph.py --write")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
