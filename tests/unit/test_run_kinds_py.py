"""Hermetic: the Python side asks a run's kind (ttyoffer_nvim/runs/kinds/)
instead of branching on it. Outside the modules of a kind, no code names a
kind: no comparison with, or literal of, a kind's name or a spec key only a
kind reads, no read of a kind's own attribute, no kind class by name (an
isinstance check), no import of a kind's modules. A branch that appears
there fails this test; its place is the kind's module."""

from __future__ import annotations

import ast
from pathlib import Path

from harness import ROOT

PACKAGE = ROOT / "ttyoffer_nvim"
# Each kind's modules: the kind itself, and the library only it uses.
KIND_MODULES = {
    "pane": ("runs/kinds/pane.py",),
    "dtach": ("runs/kinds/dtach.py", "runs/sessions.py", "runs/sessionprocs.py", "runs/sessionwrap.py"),
    "tmux": ("runs/kinds/tmux.py", "runs/tmux.py"),
    "remote": ("runs/kinds/remote.py", "runs/remote.py", "runs/remote_sh.py", "runs/remote_calls.py"),
}
# Modules that may name every kind, and why. Keep this tiny.
ALLOWED = {
    # The one list of the kinds, in the order they claim a description.
    "runs/kinds/choose.py": "the kinds by name",
}
KIND_NAMES = frozenset(KIND_MODULES) - {"pane"}
# Keys of the editor's run description that only a kind reads.
SPEC_KEYS = frozenset({"persist", "tmux", "host", "ssh"})
KIND_ATTRIBUTES = frozenset(
    {"tmux", "persist", "host", "remote", "ssh", "dtach", "session_paths", "clear_stripper", "stream"}
)
KIND_PREFIXES = ("tmux_", "remote_", "dtach_", "session_")
KIND_CLASSES = frozenset({"PaneKind", "DtachKind", "TmuxKind", "RemoteKind"})
KIND_IMPORTS = frozenset(
    {"tmux", "sessions", "sessionprocs", "sessionwrap", "remote", "remote_sh", "remote_calls"}
    | {"pane", "dtach"}
)


def generic_modules(package: Path = PACKAGE) -> list[Path]:
    """Every module of the package outside the kinds' and the allowed ones."""
    own = {name for names in KIND_MODULES.values() for name in names} | set(ALLOWED)
    return [
        path
        for path in sorted(package.rglob("*.py"))
        if str(path.relative_to(package)) not in own and "__pycache__" not in path.parts
    ]


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The last names of the modules an import brings in."""
    if isinstance(node, ast.Import):
        return [alias.name.rsplit(".", 1)[-1] for alias in node.names]
    # `from .tmux import x` brings in tmux; `from .runs import tmux` too.
    module = (node.module or "").rsplit(".", 1)[-1]
    return [module, *(alias.name for alias in node.names)]


def kind_branches(path: Path) -> list[str]:
    """Each place of the module that names a kind: 'line: what'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in KIND_NAMES | SPEC_KEYS:
                found.append(f"{line}: the literal {node.value!r}")
        elif isinstance(node, ast.Attribute):
            if node.attr in KIND_ATTRIBUTES or node.attr.startswith(KIND_PREFIXES):
                found.append(f"{line}: reads .{node.attr}")
        elif isinstance(node, ast.Name) and node.id in KIND_CLASSES:
            found.append(f"{line}: names {node.id}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [f"{line}: imports {name}" for name in _imported(node) if name in KIND_IMPORTS]
    return found


def all_branches(package: Path = PACKAGE) -> dict[str, list[str]]:
    found = {str(path.relative_to(package)): kind_branches(path) for path in generic_modules(package)}
    return {name: places for name, places in found.items() if places}


def test_no_module_outside_a_kind_branches_on_the_kind() -> None:
    assert all_branches() == {}, "ask the run's kind (runs/kinds/) instead"


def test_every_kind_module_and_allowed_one_is_there() -> None:
    # A module renamed or moved would leave the lists naming nothing.
    named = {name for names in KIND_MODULES.values() for name in names} | set(ALLOWED)
    assert sorted(name for name in named if not (PACKAGE / name).is_file()) == []


def test_the_check_sees_each_way_of_branching(tmp_path: Path) -> None:
    module = tmp_path / "bridge.py"
    module.write_text(
        "from .runs import tmux\n"
        "from .runs.kinds.remote import RemoteKind\n"
        "def f(run, kind):\n"
        "    if kind == 'tmux' or run.session_paths or run.spec.persist:\n"
        "        return isinstance(run.kind, RemoteKind)\n"
        "    return run.tmux_pane\n"
    )
    assert sorted(kind_branches(module)) == [
        "1: imports tmux",
        "2: imports remote",
        "4: reads .persist",
        "4: reads .session_paths",
        "4: the literal 'tmux'",
        "5: names RemoteKind",
        "6: reads .tmux_pane",
    ]
