"""The editor's description of a run (lua/ttyoffer/runs/runspec.lua),
checked again on this side: what every run has, and its kind (kinds/), each
kind checking its own part of the description.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .kinds.base import RunKind
from .kinds.choose import kind_of

TERM = "xterm-256color"


@dataclass
class RunSpec:
    argv: list[str]
    cwd: str
    # The editor's environment, and the caller's on top of it.
    base_env: dict[str, str]
    env: dict[str, str]
    rows: int
    cols: int
    # What kind of run it is, with what that kind keeps of it (one object
    # per run: the run's own, Run.kind); RunKind itself is a plain pane.
    kind: RunKind = field(default_factory=RunKind)


def run_environment(spec: RunSpec, login_path: str, slave_path: str) -> dict[str, str]:
    """The editor's environment, the login shell's PATH, the caller's `env`
    over both; TERM for the pane's terminal unless the caller names one, and
    GPG_TTY always the run's own terminal (never the editor's screen)."""
    env = dict(spec.base_env)
    env["PATH"] = login_path
    env.update(spec.env)
    env.setdefault("TERM", TERM)
    if "TERM" not in spec.env:
        env["TERM"] = TERM
    env["GPG_TTY"] = slave_path
    return env


def spec_from(args: object) -> RunSpec | str:
    """The editor's description of a run, checked again on this side; a
    message when it is not one."""
    if not isinstance(args, dict):
        return "a run is described by a table"
    kind = kind_of(args)
    if isinstance(kind, str):
        return kind
    argv = args.get("argv") or []
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "argv must be a non-empty list of strings"
    # Some kinds start the login shell (or find the program running) without argv.
    if (not argv and not kind.argv_optional) or (argv and not argv[0]):
        return "argv must be a non-empty list of strings"
    cwd = args.get("cwd") or ""
    if not isinstance(cwd, str):
        return "cwd must be a string"
    envs: list[dict[str, str]] = []
    for key in ("base_env", "env"):
        value = args.get(key) or {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            return f"{key} must be a table of strings"
        envs.append(dict(value))
    rows, cols = args.get("rows"), args.get("cols")
    if not isinstance(rows, int) or not isinstance(cols, int) or rows < 1 or cols < 1:
        return "rows and cols must be whole numbers greater than 0"
    return RunSpec(list(argv), cwd, envs[0], envs[1], rows, cols, kind)
