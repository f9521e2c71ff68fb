"""Persistent runs: real dtach and script(1) sessions that outlive the editor,
replayed on the next attach; the list read from the sockets and the process
table; the name sanitiser as the injection boundary."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Editor, Sandbox, editor, wait_until
from ttyoffer_nvim import sessions
from ttyoffer_nvim.sessions import ClearStripper, sanitize_name

pytestmark = pytest.mark.e2e


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """A short $XDG_RUNTIME_DIR of the test's own (a socket's path must fit
    108 bytes); every session in it is killed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="tto-"))
    try:
        yield folder
    finally:
        found = folder / "ttyoffer-sessions"
        if found.is_dir():
            for sock in found.glob("*.sock"):
                sessions.kill_session(found, sock.name[: -len(".sock")])
        for path in sorted(folder.rglob("*"), reverse=True):
            path.unlink() if not path.is_dir() else path.rmdir()
        folder.rmdir()


@pytest.fixture
def persistent_sandbox(sandbox: Sandbox, runtime_dir: Path) -> Sandbox:
    sandbox.env["XDG_RUNTIME_DIR"] = str(runtime_dir)
    return sandbox


def last_run(ed: Editor) -> int:
    newest = "local l = require('ttyoffer.runs').list() return l[#l] and l[#l].id"
    run_id: int = wait_until(lambda: ed.lua(newest))
    return run_id


def listed(ed: Editor) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ed.lua("return (require('ttyoffer.runs').sessions())")
    return found


def folder_of(runtime_dir: Path) -> Path:
    return runtime_dir / "ttyoffer-sessions"


def test_a_session_outlives_the_editor_and_is_replayed_on_return(
    persistent_sandbox: Sandbox, runtime_dir: Path
) -> None:
    with editor(persistent_sandbox) as ed:
        ed.nvim.command("TtyRun! work sh -c 'seq 1 300; echo before-the-quit; exec cat'")
        run_id = last_run(ed)
        wait_until(lambda: "before-the-quit" in ed.run_pane(run_id), what="the first output")
        assert ed.lua("return require('ttyoffer.runs').get(...).session", run_id) == "work"
        nvim_pid = ed.lua("return vim.fn.getpid()")
        ed.nvim.command("qa!", async_=True)
        wait_until(lambda: not os.path.exists(f"/proc/{nvim_pid}"), what="the editor to end")
    session = sessions.paths(folder_of(runtime_dir), "work")
    assert sessions.live(session.socket), "the session ended with the editor"
    assert (folder_of(runtime_dir).stat().st_mode & 0o777) == 0o700
    assert (session.recording.stat().st_mode & 0o077) == 0

    with editor(persistent_sandbox) as ed:
        names = [s["name"] for s in listed(ed)]
        assert names == ["work"]
        assert listed(ed)[0]["command"] == "cat"
        ed.nvim.command("TtyRun! work")
        run_id = last_run(ed)
        # The earlier output, replayed before the live screen.
        wait_until(lambda: "before-the-quit" in ed.run_pane(run_id), what="the replay")
        assert "300" in ed.run_pane(run_id)
        # And the program is the same, still running: it answers.
        wait_until(lambda: ed.mode() == "t", what="terminal mode")
        ed.nvim.input("still here<CR>")
        wait_until(lambda: ed.run_pane(run_id).count("still here") >= 2, what="cat to echo")
        # Closing the pane detaches; the session goes on.
        ed.nvim.command(f"TtyRun close {run_id}")
        wait_until(lambda: ed.events("TtyRunExit"), what="the pane's run to end")
        assert sessions.live(session.socket)
        out = ed.nvim.api.exec2("TtyRun kill work", {"output": True})["output"]
        assert "session work ended" in out
        wait_until(lambda: not listed(ed), what="the list to be empty")
    assert not session.socket.exists() and not session.recording.exists()


def test_the_list_shows_the_foreground_command_and_the_programs_title(
    persistent_sandbox: Sandbox, runtime_dir: Path
) -> None:
    with editor(persistent_sandbox) as ed:
        ed.lua(
            "require('ttyoffer').run({persist = 'titled', argv = {'sh', '-c', ...}})",
            "printf '\\033]0;building \\033[31mthe\\a\\033]2;nightly build\\a'; sh -c 'exec sleep 300'",
        )
        found = wait_until(
            lambda: [s for s in listed(ed) if s["command"] == "sleep" and s["title"]], what="the session"
        )[0]
        assert found["name"] == "titled"
        assert found["title"] == "nightly build"
        lines = ed.nvim.api.exec2("TtyRun list", {"output": True})["output"]
        assert re.search(r"titled\s+\d+s\s+sleep\s+nightly build", lines), lines


def test_kill_ends_that_session_only_and_one_killed_outside_leaves_the_list(
    persistent_sandbox: Sandbox, runtime_dir: Path
) -> None:
    with editor(persistent_sandbox) as ed:
        for name in ("one", "two", "three"):
            ed.lua("require('ttyoffer').run({persist = ..., argv = {'sleep', '300'}})", name)
        wait_until(lambda: len(listed(ed)) == 3, what="three sessions")
        ed.nvim.command("TtyRun kill one")
        assert sorted(s["name"] for s in listed(ed)) == ["three", "two"]
        # Killed from outside: gone at the next look, its files with it.
        two = next(s for s in listed(ed) if s["name"] == "two")
        inside = sessions.ProcessTable().descendants(two["pid"])
        os.kill(two["pid"], signal.SIGKILL)
        wait_until(lambda: [s["name"] for s in listed(ed)] == ["three"], what="two to leave the list")
        assert not (folder_of(runtime_dir) / "two.sock").exists()
        assert not (folder_of(runtime_dir) / "two.log").exists()
        for pid, _ in inside:  # what the session ran outlives its master
            os.kill(pid, signal.SIGKILL)


NASTY = [
    "; touch PWNED",
    "$(touch PWNED)",
    "`touch PWNED`",
    "../../../tmp/escape",
    "name with spaces\nand a newline",
    "-rf",
    "",
    "é🎉",
    "x" * 200,
]


def test_hostile_names_reach_no_shell_and_no_path_outside(
    persistent_sandbox: Sandbox, runtime_dir: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    with editor(persistent_sandbox) as ed:
        ed.nvim.command(f"cd {workdir}")
        for name in NASTY:
            ed.lua("require('ttyoffer').run({persist = ..., argv = {'sleep', '300'}})", name)
        expected = {sanitize_name(name) for name in NASTY}
        wait_until(lambda: {s["name"] for s in listed(ed)} == expected, what="every session listed")
        assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,40}", name) for name in expected)
        assert sorted(p.name for p in folder_of(runtime_dir).iterdir()) == sorted(
            f"{n}{ext}" for n in expected for ext in (".sock", ".log")
        )
        for name in NASTY:
            ed.lua("return require('ttyoffer.runs').kill_session(...)", name)
        wait_until(lambda: not listed(ed), what="every session to be gone")
    assert not list(workdir.iterdir()), "a command of the name ran"
    assert not Path("/tmp/escape.sock").exists()
    # Besides the session folder only the editor's own server socket.
    others = [p.name for p in runtime_dir.iterdir() if p != folder_of(runtime_dir)]
    assert all(name.startswith("nvim.") for name in others), others


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_the_sanitiser_gives_a_safe_name_inside_the_folder(name: str) -> None:
    safe = sanitize_name(name)
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", safe)
    assert not safe.startswith("-") and not safe.endswith("-")
    folder = Path("/run/user/1000/ttyoffer-sessions")
    found = sessions.paths(folder, name)
    for path in (found.socket, found.recording):
        assert path.parent == folder and path.resolve().parent == folder.resolve()
    argv, env = sessions.attach_argv("/usr/bin/dtach", "/usr/bin/script", found, ["cat", name], "/bin/sh")
    # The name is in the two paths and nowhere else; the command string
    # holds the program and its arguments, each quoted for the shell.
    command = f"SHELL=/bin/sh; export SHELL; exec {shlex.join(['cat', name])}"
    assert argv == [
        "/usr/bin/dtach", "-A", str(found.socket), "-r", "winch", "-E", "-z",
        "/usr/bin/script", "-q", "-a", "-f", "-e", "-c", command, str(found.recording),
    ]  # fmt: skip
    assert shlex.split(command)[-2:] == ["cat", name]
    assert env == {"SHELL": "/bin/sh"}


def test_without_dtach_a_persistent_run_runs_plainly_and_says_so(persistent_sandbox: Sandbox) -> None:
    with editor(persistent_sandbox) as ed:
        run_id = ed.lua(
            "return require('ttyoffer').run({persist = 'p', argv = {'/bin/sh', '-c', 'echo ran anyway'}, "
            "env = {PATH = '/nonexistent'}}).id"
        )
        wait_until(lambda: "ran anyway" in ed.run_pane(run_id), what="the program's output")
        assert "sudo apt-get install dtach" in ed.run_pane(run_id)


# -- the clear stripper and the replay, hermetically --------------------------------


def test_the_clear_on_attach_is_dropped_once_even_split_between_reads() -> None:
    clear = sessions.DTACH_CLEAR
    for cut in range(1, len(clear)):
        stripper = ClearStripper(now=0.0)
        out = stripper.feed(b"replayed" + clear[:cut], 0.1) + stripper.feed(clear[cut:] + b"live", 0.2)
        assert out == b"replayedlive", cut
        # A program's own clear, later, is left alone.
        assert stripper.feed(clear, 0.3) == clear
    late = ClearStripper(now=0.0)
    assert late.feed(clear, sessions.CLEAR_WINDOW + 1) == clear
    held = ClearStripper(now=0.0)
    assert held.feed(b"abc\x1b[", 0.1) == b"abc"
    assert held.feed(b"2J", sessions.CLEAR_WINDOW + 1) == b"\x1b[2J"


def test_the_replay_is_the_tail_from_a_whole_line_after_a_reset(tmp_path: Path) -> None:
    recording = tmp_path / "r.log"
    recording.write_bytes(b"x" * 100)
    assert sessions.replay(recording) == b""  # too little to be worth it
    recording.write_bytes(b"".join(b"line %06d\n" % i for i in range(100_000)))
    shown = sessions.replay(recording)
    assert shown.startswith(sessions.REPLAY_RESET)
    body = shown[len(sessions.REPLAY_RESET) :]
    assert body.startswith(b"line ") and len(body) <= sessions.REPLAY_BYTES * 1.2
    assert body.endswith(b"line 099999\r\n")
    # Past 4 MB the recording is cut to its last 1 MB.
    recording.write_bytes(b"y" * (sessions.MAX_RECORDING_BYTES + 10) + b"\nend\n")
    sessions.replay(recording)
    assert recording.stat().st_size == sessions.TRIM_TO
    assert recording.read_bytes().endswith(b"\nend\n")


@settings(max_examples=25, deadline=None)
@given(st.text(min_size=0, max_size=60))
def test_any_name_through_create_list_and_kill_stays_in_the_folder(name: str) -> None:
    """Real dtach, arbitrary names: the session made, listed and killed is
    the sanitised one, in the folder; no other file appears anywhere we
    look, and nothing else runs."""
    with tempfile.TemporaryDirectory(prefix="tto-") as runtime, tempfile.TemporaryDirectory() as cwd:
        folder = sessions.session_folder(runtime)
        found = sessions.paths(folder, name)
        argv, _ = sessions.attach_argv("dtach", None, found, ["sleep", "60"], "/bin/sh")
        assert argv[1] == "-A"
        argv[1] = "-n"  # made detached: no terminal needed here
        subprocess.run(argv, cwd=cwd, check=True, timeout=10)
        listed_now = wait_until(lambda: sessions.list_sessions(folder), what="the session")
        assert [s.name for s in listed_now] == [sanitize_name(name)]
        assert listed_now[0].command == "sleep"
        assert sessions.kill_session(folder, name) >= 2  # dtach's master and sleep
        assert sessions.list_sessions(folder) == []
        assert list(folder.iterdir()) == [] and os.listdir(cwd) == []
        assert sorted(os.listdir(runtime)) == ["ttyoffer-sessions"]
