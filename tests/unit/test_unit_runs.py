"""Hermetic: a run's host side (ttyoffer_nvim/runs/runs.py, runs/shellenv.py) over real
ptys and real programs, with a fake presenter and no editor."""

from __future__ import annotations

import asyncio
import os
import signal
import stat
from pathlib import Path
from typing import Any

import pytest

from ttyoffer_nvim.runs import runs as runs_module
from ttyoffer_nvim.runs.kinds.base import RunHooks
from ttyoffer_nvim.runs.kinds.dtach import ClearFilter
from ttyoffer_nvim.runs.kinds.pane import PaneKind
from ttyoffer_nvim.runs.program import resolve
from ttyoffer_nvim.runs.runs import Run, RunTable
from ttyoffer_nvim.runs.runspec import RunSpec, run_environment, spec_from
from ttyoffer_nvim.runs.shellenv import MARKER, LoginPath, parse


class FakePresenter:
    def __init__(self) -> None:
        self.output: dict[int, bytearray] = {}
        self.ended: dict[int, Run] = {}
        self.started: dict[int, int] = {}
        self.exit_event = asyncio.Event()

    def run_started(self, run: Run) -> None:
        self.started[run.id] = run.pid

    def run_output(self, run: Run, data: bytes) -> None:
        self.output.setdefault(run.id, bytearray()).extend(data)

    def run_exit(self, run: Run) -> None:
        assert run.id not in self.ended, "told twice"
        self.ended[run.id] = run
        self.exit_event.set()

    def remote_answer(self, dest: str, action: str, name: str, answer: dict[str, Any]) -> None:
        raise AssertionError("no remote run here")


class ClearedPane(PaneKind):
    """A plain run whose pane drops dtach's clear-screen once told to, as
    a persistent run's does on attach."""

    def __init__(self) -> None:
        super().__init__()
        self.clear = ClearFilter()

    def show(self, hooks: RunHooks, run: Run, data: bytes, eof: bool) -> None:
        self.clear.show(hooks, run, data)


def spec(*argv: str, cwd: str = "", env: dict[str, str] | None = None) -> RunSpec:
    return RunSpec(list(argv), cwd, dict(os.environ), env or {}, 24, 80)


async def until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.005)


def table(presenter: FakePresenter) -> RunTable:
    runs = RunTable(asyncio.get_running_loop(), presenter, dict(os.environ))
    # Not the login shell here: the environment's PATH, known at once.
    runs.login_path.value = LoginPath(os.environ["PATH"], "the test's")
    return runs


def test_spec_from_checks_what_the_editor_sent() -> None:
    good = {"argv": ["true"], "cwd": "", "base_env": {}, "env": {}, "rows": 5, "cols": 9}
    assert isinstance(spec_from(good), RunSpec)
    assert spec_from({**good, "argv": []}) == "argv must be a non-empty list of strings"
    assert spec_from({**good, "argv": ["", "x"]}) == "argv must be a non-empty list of strings"
    assert spec_from({**good, "env": {"A": 1}}) == "env must be a table of strings"
    assert spec_from({**good, "rows": 0}) == "rows and cols must be whole numbers greater than 0"
    assert spec_from([1, 2]) == "a run is described by a table"


def test_resolve_tells_not_found_from_not_executable(tmp_path: Path) -> None:
    plain = tmp_path / "tool"
    plain.write_text("#!/bin/sh\n")
    assert resolve("tool", str(tmp_path), "/") == (None, "not_executable", f"tool: not executable ({plain})")
    assert resolve("nothing-here", str(tmp_path), "/")[1] == "not_found"
    assert resolve("./tool", "", str(tmp_path))[1] == "not_executable"
    assert resolve(str(tmp_path), "", "/")[1] == "not_executable"  # a directory
    assert resolve("./missing", "", str(tmp_path))[1] == "not_found"
    plain.chmod(plain.stat().st_mode | stat.S_IXUSR)
    assert resolve("tool", str(tmp_path), "/") == (str(plain), "", "")


def test_the_environment_layers_login_path_then_the_callers_env() -> None:
    base = RunSpec(
        ["x"], "", {"PATH": "/usr/bin", "HOME": "/h", "GPG_TTY": "/dev/pts/0", "TERM": "dumb"}, {}, 1, 1
    )
    env = run_environment(base, "/login/bin:/usr/bin", "/dev/pts/9")
    assert (env["PATH"], env["HOME"], env["TERM"], env["GPG_TTY"]) == (
        "/login/bin:/usr/bin",
        "/h",
        "xterm-256color",
        "/dev/pts/9",
    )
    mine = RunSpec(["x"], "", base.base_env, {"PATH": "/mine", "TERM": "vt100"}, 1, 1)
    env = run_environment(mine, "/login/bin", "/dev/pts/9")
    assert (env["PATH"], env["TERM"]) == ("/mine", "vt100")


def test_the_login_shells_output_is_trusted_only_as_a_path() -> None:
    assert parse(f"hello\n{MARKER}/a/bin:/usr/bin\nbye\n".encode()) == "/a/bin:/usr/bin"
    # Relative entries (the current directory) are not kept.
    assert parse(f"{MARKER}.:bin:/usr/bin\n".encode()) == "/usr/bin"
    assert parse(f"{MARKER}/a\x1b]52;c;x\x07:/b\n".encode()) is None
    assert parse(b"no marker at all\n") is None
    assert parse(f"{MARKER}\n".encode()) is None


async def test_the_exit_is_told_once_with_its_code_and_signal() -> None:
    presenter = FakePresenter()
    runs = table(presenter)
    runs.start(1, spec("sh", "-c", "echo out; exit 3"))
    runs.start(2, spec("sh", "-c", "kill -TERM $$"))
    runs.start(3, spec("no-such-program-ttyoffer"))
    runs.start(4, "argv must be a non-empty list of strings")
    await until(lambda: len(presenter.ended) == 4)
    ended = {
        i: (r.ending.code, r.ending.signal, r.ending.reason) for i, r in presenter.ended.items() if r.ending
    }
    assert ended == {
        1: (3, 0, "exited"),
        2: (143, signal.SIGTERM, "signal"),
        3: (127, 0, "not_found"),
        4: (127, 0, "cannot_start"),
    }
    assert b"out" in presenter.output[1]
    # The panes stay until closed; closing one lets the run go.
    for run_id in (1, 2, 3, 4):
        runs.close(run_id)
    assert len(runs) == 0


async def test_nothing_is_signalled_once_the_program_is_reaped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reaped pid may be any process's soon: no signal goes to it."""
    presenter = FakePresenter()
    runs = table(presenter)
    runs.start(1, spec("sh", "-c", "exit 0"))
    await until(lambda: 1 in presenter.ended)
    run = presenter.ended[1]
    assert run.reaped
    sent: list[Any] = []
    monkeypatch.setattr(os, "killpg", lambda *a: sent.append(("killpg", a)))
    monkeypatch.setattr(os, "kill", lambda *a: sent.append(("kill", a)))
    monkeypatch.setattr(signal, "pidfd_send_signal", lambda *a: sent.append(("pidfd", a)))
    runs.signal(1, signal.SIGTERM)
    runs.close(1)
    runs_module.RunTable.hang_up_all(runs)
    assert sent == []


async def test_closing_a_running_program_hangs_up_then_kills(tmp_path: Path) -> None:
    presenter = FakePresenter()
    runs = table(presenter)
    ready = tmp_path / "ready"
    runs.start(1, spec("sh", "-c", f"trap '' HUP; touch {ready}; while :; do sleep 1; done"))
    await until(ready.exists)
    started = asyncio.get_running_loop().time()
    runs.close(1)
    await until(lambda: 1 in presenter.ended)
    run = presenter.ended[1]
    assert run.ending is not None
    assert (run.ending.code, run.ending.signal, run.ending.reason) == (129, signal.SIGHUP, "closed")
    assert asyncio.get_running_loop().time() - started >= runs_module.KILL_AFTER * 0.9
    await until(lambda: len(runs) == 0)


async def test_the_host_ending_hangs_up_every_run(tmp_path: Path) -> None:
    presenter = FakePresenter()
    runs = table(presenter)
    ready = tmp_path / "ready"
    runs.start(1, spec("sh", "-c", f"trap '' HUP; touch {ready}; while :; do sleep 1; done"))
    runs.start(2, spec("sleep", "100"))
    await until(lambda: ready.exists() and len(presenter.started) == 2)
    pids = list(presenter.started.values())
    runs.hang_up_all()
    for pid in pids:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already
        assert not os.path.exists(f"/proc/{pid}")
    assert len(runs) == 0


async def test_a_held_beginning_of_the_clear_is_shown_when_no_more_comes() -> None:
    """A persistent run's pane holds back what could begin dtach's clear on
    attach; a program that stops right after "ESC [ H" still gets it shown."""
    presenter = FakePresenter()
    runs = table(presenter)
    cleared = ClearedPane()
    argv = ["sh", "-c", "read go; printf 'ready\\033[H'; exec sleep 30"]
    runs.start(1, RunSpec(argv, "", dict(os.environ), {}, 24, 80, cleared))
    await until(lambda: 1 in presenter.started)
    cleared.clear.begin()
    runs.write(1, b"go\r")
    await until(lambda: presenter.output.get(1, b"").endswith(b"ready\x1b[H"))
    runs.close(1)
    await until(lambda: 1 in presenter.ended)


async def test_the_login_path_is_awaited_once_and_a_slow_shell_times_out(tmp_path: Path) -> None:
    """A tmux run waits for the login shell's PATH on the host's loop (not
    by polling from the editor): the real shell's answer, asked once; a
    shell slower than the bound gives None and the question goes on."""
    from ttyoffer_nvim.runs.shellenv import LoginPathCache

    loop = asyncio.get_running_loop()
    env = {"PATH": os.environ["PATH"], "SHELL": "/bin/sh", "HOME": str(tmp_path)}
    cache = LoginPathCache(loop, env)
    first, second = await asyncio.gather(cache.wait(10), cache.wait(10))
    assert first is not None and first is second and first.path
    slow = tmp_path / "slow-shell"
    slow.write_text('#!/bin/sh\nsleep 2\nexec /bin/sh "$@"\n')
    slow.chmod(0o700)
    late = LoginPathCache(loop, {**env, "SHELL": str(slow)})
    assert await late.wait(0.05) is None
    answered = await late.wait(20)
    assert answered is not None and answered.path
