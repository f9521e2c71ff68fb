"""The Python side's import graph, read from the source: every import of a
``ttyoffer_nvim`` module by each module of the package and by the
remote-plugin shell, at load time (a statement at the top of the module),
lazily (inside a function) or for the type checker only (under ``if
TYPE_CHECKING``). ``python scripts/import_graph.py --write`` writes it into
DESIGN.md; tests/unit/test_import_graph.py keeps that current and fails on a
cycle, on a part importing one it may not, or on a library imported outside
the part allowed it.

The parts are the package's folders (``ttyoffer_nvim/term``, ``offer``,
``runs``); the modules at its root, with the shell, are the edge. Imports
run one way: edge → offer, runs → term, and offer and runs never import
each other."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "ttyoffer_nvim"
SHELL = ROOT / "rplugin" / "python3" / "ttyoffer" / "__init__.py"
DESIGN = ROOT / "DESIGN.md"
BEGIN = "<!-- import graph: written by scripts/import_graph.py -->\n"
END = "<!-- /import graph -->\n"
SHELL_NAME = "rplugin shell"

# What each part may import of ours, besides its own modules.
MAY_IMPORT = {
    "edge": {"offer", "runs", "term"},
    "offer": {"term"},
    "runs": {"term"},
    "term": set(),
}
# What each part may import besides the standard library and ours: pynvim
# (and its greenlet) at the edge alone, pyte for the screen model alone. The
# keeper runs the terminal part isolated (-I -S): the standard library only.
LIBRARIES = {
    "edge": {"pynvim", "greenlet"},
    "offer": {"pyte"},
    "runs": set(),
    "term": set(),
}


def sources() -> dict[str, Path]:
    """module name -> file, the shell included (packages' __init__ as the
    package's name)."""
    found = {SHELL_NAME: SHELL}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def part(module: str) -> str:
    """The part a module belongs to: its folder, or the edge at the root."""
    if module == SHELL_NAME:
        return "edge"
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 2 else "edge"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with how it runs: "now", "lazily", "types"."""
    found: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def visit(node: ast.AST, how: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, how))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, "types" if how == "types" else "lazily")
            elif isinstance(child, ast.If) and _is_type_checking(child):
                for statement in child.body:
                    visit(ast.Module(body=[statement], type_ignores=[]), "types")
                for statement in child.orelse:
                    visit(ast.Module(body=[statement], type_ignores=[]), how)
            else:
                visit(child, how)

    visit(tree, "now")
    return found


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name `from X import` refers to."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def read(module: str, path: Path, known: set[str]) -> tuple[dict[str, str], set[str]]:
    """({module of ours imported: how}, {top-level libraries imported})."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py" and module != SHELL_NAME
    edges: dict[str, str] = {}
    libraries: set[str] = set()
    rank = {"now": 0, "lazily": 1, "types": 2}

    def add(target: str, how: str) -> None:
        if target != module and (target not in edges or rank[how] < rank[edges[target]]):
            edges[target] = how

    for node, how in _imports(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            origin = _resolve(module, is_package, node)
            # `from package import module` names the module; anything else
            # is a name in the module imported from.
            names = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
        for name in names:
            top = name.split(".")[0]
            if top == PACKAGE:
                if name in known:
                    add(name, how)
            elif top and top != "__future__" and top not in sys.stdlib_module_names:
                libraries.add(top)
    return edges, libraries


def graph() -> dict[str, dict[str, str]]:
    """module -> {imported module: how}."""
    found = sources()
    known = set(found) - {SHELL_NAME}
    return {name: read(name, path, known)[0] for name, path in found.items()}


def libraries() -> dict[str, set[str]]:
    found = sources()
    known = set(found) - {SHELL_NAME}
    return {name: read(name, path, known)[1] for name, path in found.items()}


def cycles(edges: dict[str, dict[str, str]]) -> list[list[str]]:
    """Every elementary cycle, each once, from its smallest module (imports
    for the type checker left out: they never run)."""
    found: set[tuple[str, ...]] = set()

    def walk(node: str, path: list[str]) -> None:
        for target, how in edges.get(node, {}).items():
            if how == "types":
                continue
            if target in path:
                cycle = path[path.index(target) :]
                start = cycle.index(min(cycle))
                found.add(tuple(cycle[start:] + cycle[:start]))
            else:
                walk(target, [*path, target])

    for node in edges:
        walk(node, [node])
    return [list(c) for c in sorted(found)]


def upward(edges: dict[str, dict[str, str]]) -> list[str]:
    """Imports from one part into a part it may not import, types included."""
    wrong = []
    for name, targets in sorted(edges.items()):
        for target in sorted(targets):
            if part(target) != part(name) and part(target) not in MAY_IMPORT[part(name)]:
                wrong.append(f"{name} ({part(name)}) imports {target} ({part(target)})")
    return wrong


def foreign(found: dict[str, set[str]]) -> list[str]:
    """Libraries imported outside the part allowed them."""
    return [
        f"{name} ({part(name)}) imports {library}"
        for name, imported in sorted(found.items())
        for library in sorted(imported - LIBRARIES[part(name)])
    ]


def short(name: str) -> str:
    return name if name == SHELL_NAME else name.removeprefix(PACKAGE + ".")


def _order(name: str) -> tuple[int, str]:
    layers = ["edge", "offer", "runs", "term"]
    return (0 if name == SHELL_NAME else 1 + layers.index(part(name)), short(name))


def text(edges: dict[str, dict[str, str]]) -> str:
    rows = []
    shown = [n for n in sorted(edges, key=_order) if edges[n]]
    width = max(len(short(n)) for n in shown)
    for name in shown:
        said = []
        for how, word in (("now", ""), ("lazily", "lazily "), ("types", "for types ")):
            targets = sorted(short(t) for t, h in edges[name].items() if h == how)
            if targets:
                said.append(word + ", ".join(targets))
        rows.append(f"    {short(name).ljust(width)} → {'; '.join(said)}")
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
    problems = [" -> ".join(c) for c in cycles(edges)] + upward(edges) + foreign(libraries())
    if DESIGN.read_text() != expected():
        problems.append("DESIGN.md's import graph is not current: python scripts/import_graph.py --write")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
