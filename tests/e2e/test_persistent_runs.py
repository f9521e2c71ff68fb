"""Persistent runs: real dtach and script(1) sessions that outlive the editor,
replayed on the next attach; the list read from the sockets and the process
table; the name sanitiser as the injection boundary."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import select
import shlex
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_unit_runs import FakePresenter, table, until

from harness import Editor, Sandbox, editor, wait_until
from ttyoffer_nvim.runs import sessionprocs, sessions, sessionwrap
from ttyoffer_nvim.runs.kinds import dtach
from ttyoffer_nvim.runs.kinds.dtach import ClearStripper, DtachKind
from ttyoffer_nvim.runs.runspec import RunSpec
from ttyoffer_nvim.runs.sessions import sanitize_name
from ttyoffer_nvim.term import procfs
from users import accounts

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
                dtach.kill_session(found, sock.name[: -len(".sock")])
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
    found: list[dict[str, Any]] = ed.lua("return (require('ttyoffer.runs.kinds.dtach').sessions())")
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
    assert sessionprocs.live(session.socket), "the session ended with the editor"
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
        assert sessionprocs.live(session.socket)
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
        inside = sessionprocs.ProcessTable().descendants(two["pid"])
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


def test_hostile_names_are_refused_and_reach_no_shell_and_no_path(
    persistent_sandbox: Sandbox, runtime_dir: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    with editor(persistent_sandbox) as ed:
        ed.nvim.command(f"cd {workdir}")
        for name in NASTY:
            err = ed.lua(
                "local ok, e = pcall(require('ttyoffer').run, {persist = ..., argv = {'true'}}) return e",
                name,
            )
            assert "is not a session name" in err and f'say "{sanitize_name(name)}"' in err, err
            # The host refuses them too (another caller, an older editor).
            kill = "local a, e = require('ttyoffer.runs.kinds.dtach').kill_session(...) return {a == nil, e}"
            refused, why = ed.lua(kill, name)
            assert refused and "is not a session name" in why, why
        assert listed(ed) == []
    assert not list(workdir.iterdir()), "a command of the name ran"
    assert not Path("/tmp/escape.sock").exists()
    assert not folder_of(runtime_dir).exists() or not list(folder_of(runtime_dir).iterdir())
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
    argv, env = sessions.create_argv(
        "/usr/bin/dtach", "/usr/bin/script", found, ["cat", name], "/bin/fish", python="/usr/bin/python3"
    )
    # The name is in the paths and the wrapper's arguments and nowhere
    # else; the command string holds the wrapper, the program and its
    # arguments, each quoted for the shell.
    wrapper = ["/usr/bin/python3", "-I", "-S", sessions.WRAPPER, str(folder), found.name, "/bin/fish"]
    wrapped = [*wrapper, "--", "cat", name]
    command = f"exec {shlex.join(wrapped)}"
    assert argv == [
        "/usr/bin/dtach", "-A", str(found.socket), "-r", "winch", "-E", "-z",
        "/usr/bin/script", "-q", "-f", "-e", "-c", command, str(found.fifo),
    ]  # fmt: skip
    assert shlex.split(command) == ["exec", *wrapped]
    assert env == {"SHELL": "/bin/sh"}
    assert sessions.attach_argv("/usr/bin/dtach", found) == [
        "/usr/bin/dtach", "-a", str(found.socket), "-r", "winch", "-E", "-z",
    ]  # fmt: skip


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
    clear = dtach.DTACH_CLEAR
    for cut in range(1, len(clear)):
        stripper = ClearStripper(now=0.0)
        out = stripper.feed(b"replayed" + clear[:cut], 0.1) + stripper.feed(clear[cut:] + b"live", 0.2)
        assert out == b"replayedlive", cut
        # A program's own clear, later, is left alone.
        assert stripper.feed(clear, 0.3) == clear
    late = ClearStripper(now=0.0)
    assert late.feed(clear, dtach.CLEAR_WINDOW + 1) == clear
    held = ClearStripper(now=0.0)
    assert held.feed(b"abc\x1b[", 0.1) == b"abc"
    assert held.feed(b"2J", dtach.CLEAR_WINDOW + 1) == b"\x1b[2J"


def test_the_replay_is_the_tail_from_a_whole_line_after_a_reset(tmp_path: Path) -> None:
    session = sessions.paths(tmp_path, "r")
    assert sessions.replay(session) == b""
    # Short output comes back whole, however short.
    session.recording.write_bytes(b"listening on :8080\n")
    assert sessions.replay(session) == sessions.REPLAY_RESET + b"listening on :8080\r\n"
    # Cut: from its first whole line, across the two halves.
    lines = b"".join(b"line %06d\n" % i for i in range(100_000))
    session.previous.write_bytes(lines[: len(lines) // 2])
    session.recording.write_bytes(lines[len(lines) // 2 :])
    shown = sessions.replay(session)
    assert shown.startswith(sessions.REPLAY_RESET)
    body = shown[len(sessions.REPLAY_RESET) :]
    assert body.startswith(b"line ") and len(body) <= sessions.REPLAY_BYTES * 1.2
    assert body.endswith(b"line 099999\r\n")
    # A link where the recording should be is never read.
    session.recording.unlink()
    session.previous.unlink()
    secret = tmp_path / "secret"
    secret.write_bytes(b"not the session's\n")
    session.recording.symlink_to(secret)
    assert sessions.replay(session) == b""


@settings(max_examples=25, deadline=None)
@given(st.text(min_size=0, max_size=60))
def test_any_name_through_create_list_and_kill_stays_in_the_folder(name: str) -> None:
    """Real dtach, arbitrary names: the session made, listed and killed is
    the sanitised one, in the folder; no other file appears anywhere we
    look, and nothing else runs."""
    with tempfile.TemporaryDirectory(prefix="tto-") as runtime, tempfile.TemporaryDirectory() as cwd:
        folder = sessions.session_folder(runtime)
        found = sessions.paths(folder, name)
        argv, _ = sessions.create_argv("dtach", None, found, ["sleep", "60"], "/bin/sh")
        assert argv[1] == "-A"
        argv[1] = "-n"  # made detached: no terminal needed here
        subprocess.run(argv, cwd=cwd, check=True, timeout=10)
        listed_now = wait_until(
            lambda: [s for s in dtach.list_sessions(folder) if s.command == "sleep"], what="the session"
        )
        assert [s.name for s in listed_now] == [sanitize_name(name)]
        assert dtach.kill_session(folder, name) >= 3  # dtach's master, the wrapper and sleep
        assert dtach.list_sessions(folder) == []
        assert list(folder.iterdir()) == [] and os.listdir(cwd) == []
        assert sorted(os.listdir(runtime)) == ["ttyoffer-sessions"]


def test_a_list_while_sessions_are_made_leaves_every_one_whole(runtime_dir: Path) -> None:
    """Lists in a tight loop (a completion, a statusline, another editor)
    while sessions are made one after another, each as the host makes one:
    its FIFO first, then dtach. None of them loses its FIFO or its socket to
    a list that read the folder or the process table at the wrong moment."""
    folder = sessions.session_folder(str(runtime_dir))
    names = sorted(f"made-{i}" for i in range(12))
    stop = threading.Event()
    lists = 0

    def keep_listing() -> None:
        nonlocal lists
        while not stop.is_set():
            dtach.list_sessions(folder)
            lists += 1

    lister = threading.Thread(target=keep_listing, daemon=True)
    lister.start()
    try:
        for name in names:
            made = sessions.paths(folder, name)
            sessions.make_fifo(made)
            # What a busy editor does between the host's FIFO and its dtach.
            time.sleep(0.02)
            argv, _ = sessions.create_argv("dtach", None, made, ["sleep", "60"], "/bin/sh")
            argv[1] = "-n"  # made detached: no terminal needed here
            subprocess.run(argv, check=True, timeout=10)
    finally:
        stop.set()
        lister.join(10)
    assert lists > 0  # (one list takes longer than a make on a loaded machine)
    listed_now = wait_until(
        lambda: (
            sorted(s.name for s in dtach.list_sessions(folder) if s.command == "sleep") == names and names
        ),
        what="every session made",
    )
    assert listed_now == names
    for name in names:
        assert sessions.paths(folder, name).fifo.exists(), name


def test_a_fifo_left_by_a_session_that_never_started_goes_once_it_is_old(runtime_dir: Path) -> None:
    folder = sessions.session_folder(str(runtime_dir))
    young, old = sessions.paths(folder, "young"), sessions.paths(folder, "old")
    sessions.make_fifo(young)
    sessions.make_fifo(old)
    past = time.time() - sessions.MAKING_SECONDS - 5
    os.utime(old.fifo, (past, past), follow_symlinks=False)
    assert dtach.list_sessions(folder) == []
    assert young.fifo.exists() and not old.fifo.exists()


# -- endings, through the host's run table, with real dtach and script(1) ------------


@pytest.fixture
def session_folder(runtime_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The host's XDG_RUNTIME_DIR is the test's."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    return folder_of(runtime_dir)


def persistent(name: str, *argv: str) -> RunSpec:
    return RunSpec(list(argv), "", dict(os.environ), {}, 24, 80, DtachKind(name))


def pid_of(*argv: str) -> int | None:
    """The process of ours running exactly `argv` (each test's arguments
    are its own), read from /proc like a user's pgrep."""
    wanted = b"\0".join(a.encode() for a in argv) + b"\0"
    for pid in procfs.pids():
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
            if f.read() == wanted and not procfs.process_gone(pid):
                return pid
    return None


def recording_bytes(folder: Path, name: str) -> int:
    return sum(p.stat().st_size for p in folder.glob(f"{name}.log*") if not p.is_symlink())


async def test_a_persistent_run_ends_as_its_program_did(session_folder: Path) -> None:
    presenter = FakePresenter()
    runs = table(presenter)
    runs.start(1, persistent("exits", "sh", "-c", "echo out; exit 3"))
    runs.start(2, persistent("missing", "no-such-program-ttyoffer"))
    for run_id, name in ((3, "termed"), (4, "killed"), (5, "closed")):
        runs.start(run_id, persistent(name, "sleep", f"30{run_id}"))
    await until(lambda: all(pid_of("sleep", f"30{i}") for i in (3, 4, 5)), 20)
    termed = pid_of("sleep", "303")
    assert termed is not None
    # Watched through a pidfd: on a loaded machine its pid may be another
    # process's by the time it is looked at again.
    termed_fd = os.pidfd_open(termed)
    runs.signal(3, signal.SIGTERM)  # run:kill('TERM'): the program, not the dtach client
    killed = pid_of("sleep", "304")
    assert killed is not None
    os.kill(killed, signal.SIGKILL)  # from outside
    runs.close(5)
    await until(lambda: len(presenter.ended) == 5, 20)
    ended = {
        i: (r.ending.code, r.ending.signal, r.ending.reason) for i, r in presenter.ended.items() if r.ending
    }
    assert ended == {
        1: (3, 0, "exited"),
        2: (127, 0, "not_found"),
        3: (128 + signal.SIGTERM, signal.SIGTERM, "signal"),
        4: (128 + signal.SIGKILL, signal.SIGKILL, "signal"),
        5: (129, signal.SIGHUP, "closed"),
    }
    assert b"out" in presenter.output[1]
    try:
        assert select.select([termed_fd], [], [], 0)[0] == [termed_fd], "the TERMed program still runs"
    finally:
        os.close(termed_fd)
    # Closing only detached: that session's program goes on. The sessions
    # that ended, seen ending, left nothing; the missing program made none.
    assert pid_of("sleep", "305")
    await until(lambda: {p.name.split(".")[0] for p in session_folder.iterdir()} == {"closed"})


async def test_the_recording_stays_bounded_while_nobody_is_attached(session_folder: Path) -> None:
    """A flood with no pane attached: the recording never passes its bound
    (sampled while it is written), holds the flood's latest lines, and goes
    when its session is found gone."""
    presenter = FakePresenter()
    runs = table(presenter)
    flood = "import itertools, sys\nfor i in itertools.count(): sys.stdout.write(f'flood line {i:012d}\\n')"
    runs.start(1, persistent("flood", sys.executable, "-c", flood))
    await until(lambda: pid_of(sys.executable, "-c", flood), 20)
    runs.close(1)  # detached: nobody reads the session but the recorder
    largest = 0
    deadline = asyncio.get_running_loop().time() + 4
    while asyncio.get_running_loop().time() < deadline:
        with contextlib.suppress(FileNotFoundError):
            largest = max(largest, recording_bytes(session_folder, "flood"))
        await asyncio.sleep(0.02)
    bound = 1024 * 1024
    assert 0 < largest <= bound
    tail = (session_folder / "flood.log").read_bytes()[-4096:].splitlines()[-2]
    printed = int(tail.split()[-1]) * len(b"flood line 000000000000\n")
    assert printed > 5 * bound, f"the flood printed only {printed} bytes"
    program = pid_of(sys.executable, "-c", flood)
    assert program is not None
    os.kill(program, signal.SIGKILL)
    ended = await_ended(session_folder, "flood")
    assert ended == "killed by SIGKILL"
    # The list that found it ended removed what it printed; how it ended stays.
    assert sorted(p.name for p in session_folder.iterdir()) == ["flood.status"]


def result_of(ed: Editor, run_id: int) -> dict[str, Any]:
    result: dict[str, Any] = wait_until(
        lambda: ed.lua("return require('ttyoffer.runs').get(...).result", run_id), 20, "the run's end"
    )
    return result


def await_ended(folder: Path, name: str) -> str:
    def ended() -> str:
        return next(
            (s.ended.describe() for s in dtach.list_sessions(folder) if s.name == name and s.ended), ""
        )

    found: str = wait_until(ended, 20, f"session {name} to be listed as ended")
    return found


def test_a_session_that_ended_while_away_tells_its_ending_and_output_on_return(
    persistent_sandbox: Sandbox, runtime_dir: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    with editor(persistent_sandbox) as ed:
        waits = f"while [ ! -e {go} ]; do sleep 0.05; done"
        ed.nvim.command(f"TtyRun! away sh -c 'echo listening on :8080; {waits}; exit 5'")
        run_id = last_run(ed)
        wait_until(lambda: "listening on :8080" in ed.run_pane(run_id), what="the output")
        ed.nvim.command(f"TtyRun close {run_id}")
        go.touch()  # it ends while no pane is attached
        status, socket = folder_of(runtime_dir) / "away.status", folder_of(runtime_dir) / "away.sock"
        wait_until(lambda: not socket.exists(), what="the session to end")
        assert (status.stat().st_mode & 0o777) == 0o600
        ed.nvim.command("TtyRun! away")
        again = last_run(ed)
        result = result_of(ed, again)
        assert (result["code"], result["reason"]) == (5, "exited")
        wait_until(
            lambda: (
                "listening on :8080" in ed.run_pane(again)
                and "[exited 5: session away had ended]" in ed.run_pane(again)
            ),
            what="what it printed, and how it ended",
        )
        # Seen: nothing of it is left, and the next attach makes a new one.
        assert not list(folder_of(runtime_dir).iterdir())


def test_short_output_comes_back_on_reattach_and_a_shells_prompt_once(
    persistent_sandbox: Sandbox, runtime_dir: Path
) -> None:
    persistent_sandbox.env["PS1"] = "prompt-mark$ "
    with editor(persistent_sandbox) as ed:
        ed.nvim.command("TtyRun! server sh -c 'echo listening on :8080; exec sleep 300'")
        ed.nvim.command("TtyRun! shell bash --norc --noprofile -i")
        server, shell = ed.lua("local l = require('ttyoffer.runs').list() return {l[1].id, l[2].id}")
        wait_until(lambda: "listening on :8080" in ed.run_pane(server), what="the server's line")
        wait_until(lambda: "prompt-mark$" in ed.run_pane(shell), what="the shell's prompt")
        for run_id in (server, shell):
            ed.nvim.command(f"TtyRun close {run_id}")
        wait_until(lambda: len(ed.events("TtyRunExit")) == 2, what="both panes to detach")
        ed.nvim.command("TtyRun! server")
        again = last_run(ed)
        wait_until(lambda: "listening on :8080" in ed.run_pane(again), what="the line, replayed")
        ed.nvim.command("TtyRun! shell")
        shell_again = last_run(ed)
        wait_until(lambda: "prompt-mark$" in ed.run_pane(shell_again), what="the prompt")
        ed.nvim.input("echo typed-$((6*7))<CR>")
        wait_until(lambda: "typed-42" in ed.run_pane(shell_again), what="the shell to answer")
        # The prompt replayed and the redrawn one are one line: never two.
        lines = [line for line in ed.run_pane(shell_again).splitlines() if line.strip()]
        assert lines[0].startswith("prompt-mark$ echo typed"), lines
        assert lines.count("prompt-mark$") <= 1 and ed.run_pane(shell_again).count("prompt-mark$") == 2, lines


def test_names_that_sanitise_alike_never_act_on_each_other(
    persistent_sandbox: Sandbox, runtime_dir: Path, tmp_path: Path
) -> None:
    with editor(persistent_sandbox) as ed:
        for name in ("main", "my-build"):
            ed.lua("require('ttyoffer').run({persist = ..., argv = {'sleep', '300'}})", name)
        wait_until(lambda: [s["command"] for s in listed(ed)] == ["sleep", "sleep"], what="two sessions")
        for command, meant in (("TtyRun kill …", "main"), ("TtyRun kill my.build", "my-build")):
            out = ed.nvim.api.exec2(command, {"output": True})["output"]
            assert "is not a session name" in out and f'say "{meant}"' in out, out
        marker = tmp_path / "ran"
        out = ed.nvim.api.exec2(f"TtyRun! ビルド touch {marker}", {"output": True})["output"]
        assert "is not a session name" in out and 'say "main"' in out, out
        out = ed.nvim.api.exec2(f"TtyRun! my\\ build touch {marker}", {"output": True})["output"]
        assert '"my build" is not a session name' in out and 'say "my-build"' in out, out
        assert ed.lua("return {require('ttyoffer.runs.runcmd').first_word([[my\\ build echo hi]])}") == [
            "my build",
            "echo hi",
        ]
        assert sorted(s["name"] for s in listed(ed)) == ["main", "my-build"]
        assert not marker.exists()
        # Attaching to a live session with a command that will not run says so.
        ed.nvim.command(f"TtyRun! main touch {marker}")
        run_id = last_run(ed)

        def unwrapped() -> str:
            return "".join(ed.run_pane(run_id).splitlines())

        wait_until(
            lambda: (
                "session main is running sleep already" in unwrapped()
                and "the command given was not run" in unwrapped()
            ),
            what="the note",
        )
        assert not marker.exists()


def test_a_loose_session_folder_is_refused_and_nothing_in_a_folder_followed(
    persistent_sandbox: Sandbox, runtime_dir: Path, tmp_path: Path
) -> None:
    """Another account plants links in a session folder open to all: it is
    refused (not tightened into looking safe); links of ours in a folder of
    ours are never followed either."""
    if os.getuid() != 0:
        pytest.skip("needs root: makes another account (useradd) to plant the links")
    folder = folder_of(runtime_dir)
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    runtime_dir.chmod(0o711)
    bashrc = tmp_path / "bashrc"
    bashrc.write_text("original\n")
    start = "return require('ttyoffer').run({persist = 'build', argv = {'sh', '-c', 'echo session-ran'}}).id"
    with accounts("planter") as (planter,):
        for suffix in (".log", ".fifo", ".status", ".log.1"):
            planter.run("ln", "-s", str(bashrc), str(folder / f"build{suffix}"))
        with editor(persistent_sandbox) as ed:
            run_id = ed.lua(start)
            result = result_of(ed, run_id)
            assert (result["code"], result["reason"]) == (127, "cannot_start")
            assert "is open to others (mode 0777)" in result["message"]
            assert "is open to others" in ed.lua(
                "return select(2, require('ttyoffer.runs.kinds.dtach').sessions())"
            )
            ed.nvim.command("checkhealth ttyoffer")
            report = "\n".join(ed.nvim.current.buffer[:])
            assert "Persistent runs (:TtyRun!) cannot start:" in report and "open to others" in report, report
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777
        assert bashrc.read_text() == "original\n"
        for entry in folder.iterdir():
            entry.unlink()
    folder.chmod(0o700)
    for suffix in (".log", ".fifo", ".status", ".log.1", ".sock"):
        (folder / f"build{suffix}").symlink_to(bashrc)
    with editor(persistent_sandbox) as ed:
        run_id = ed.lua(start)
        result = result_of(ed, run_id)
        assert (result["code"], result["reason"]) == (0, "exited"), result
        assert "session-ran" in ed.run_pane(run_id)
    assert bashrc.read_text() == "original\n"
    assert not [p for p in folder.iterdir() if p.is_symlink()]


def test_kill_and_wait_reach_the_sessions_program(persistent_sandbox: Sandbox, runtime_dir: Path) -> None:
    with editor(persistent_sandbox) as ed:
        for name, seconds in (("termed", "401"), ("waited", "402")):
            ed.lua(
                "local name, s = ... _G.r = _G.r or {} "
                "_G.r[name] = require('ttyoffer').run({persist = name, argv = {'sleep', s}})",
                name,
                seconds,
            )
        wait_until(lambda: pid_of("sleep", "401") and pid_of("sleep", "402"), what="the programs")
        termed, waited = pid_of("sleep", "401"), pid_of("sleep", "402")
        assert termed is not None and waited is not None
        result = ed.lua("_G.r.termed:kill('TERM') return _G.r.termed:wait(10000)")
        assert (result["code"], result["signal"], result["reason"]) == (143, signal.SIGTERM, "signal")
        result = ed.lua("return _G.r.waited:wait(1500)")
        assert (result["code"], result["signal"]) == (124, signal.SIGKILL)
        wait_until(lambda: procfs.process_gone(termed) and procfs.process_gone(waited), what="them to end")
        # The README's own example: a failure is not told as success.
        code = ed.lua(
            "local r = require('ttyoffer').run({persist = 'fails', argv = {'sh', '-c', 'exit 3'}}) "
            "return r:wait(10000).code"
        )
        assert code == 3


def test_the_ring_keeps_the_last_of_the_output_in_its_bound(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir(mode=0o700)
    (folder / "r.log").symlink_to(tmp_path / "target")  # never followed: made afresh
    fd = sessionwrap.open_folder(str(folder))
    ring = sessionwrap.Ring(fd, "r", limit=1000)
    written = b"".join(b"%05d\n" % i for i in range(10_000))
    for at in range(0, len(written), 337):
        ring.write(written[at : at + 337])
    session = sessions.paths(folder, "r")
    kept = session.previous.read_bytes() + session.recording.read_bytes()
    assert len(kept) <= 1000 and written.endswith(kept)
    assert not (tmp_path / "target").exists()
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in (session.recording, session.previous))
    # script's own lines are not the program's output.
    recorder = sessionwrap.Recorder(-1, None)
    assert sessionwrap.SCRIPT_HEADER.sub(b"", b'Script started on 2026 [COMMAND="x"]\nout\n') == b"out\n"
    assert (
        sessionwrap.SCRIPT_FOOTER.sub(b"", b'last\r\n\r\nScript done on 2026 [COMMAND_EXIT_CODE="4"]\n')
        == b"last\r\n"
    )
    assert recorder.first
    # The ending: written 0600 by rename, read back; anything else is not one.
    sessionwrap.write_status(fd, "r", sessionwrap.Status(3))
    ending = sessions.read_ending(session)
    assert ending is not None and (ending.code, ending.describe()) == (3, "exited 3")
    assert stat.S_IMODE(session.status.stat().st_mode) == 0o600
    # What the wrapper of an earlier version, still running, writes.
    session.status.write_text('{"code": 143, "signal": 15, "reason": "signal", "message": "", "ended": 1.5}')
    ending = sessions.read_ending(session)
    assert ending is not None and (ending.code, ending.describe(), ending.ended) == (
        143,
        "killed by SIGTERM",
        1.5,
    )
    session.status.unlink()
    session.status.symlink_to(tmp_path / "planted")
    (tmp_path / "planted").write_text("0 0 exited 0\n")
    assert sessions.read_ending(session) is None
    os.close(fd)


def test_refusal_names_the_session_a_name_is_not_taken_for() -> None:
    assert sessions.refusal("build-2_x") is None
    for name, meant in (
        ("my.build", "my-build"),
        ("…", "main"),
        ("-x-", "x"),
        ("", "main"),
        ("x" * 41, "x" * 40),
    ):
        refused = sessions.refusal(name)
        assert refused is not None and f'say "{meant}"' in refused, refused


ASK = (
    "local answer, err = require('ttyoffer.host').request_within(5000, ...) "
    "return {answer = answer or vim.NIL, err = err or vim.NIL}"
)


def test_the_generic_requests_list_and_kill_dtach_sessions(persistent_sandbox: Sandbox) -> None:
    """run_sessions, run_session_kill and run_prepare with kind "dtach"
    list, refuse and end dtach sessions, and an unknown kind is refused."""
    with editor(persistent_sandbox) as ed:
        ed.nvim.command("TtyRun! generic sleep 309")
        run_id = last_run(ed)
        running = [{"name": "generic", "command": "sleep"}]
        wait_until(
            lambda: [{k: s[k] for k in ("name", "command")} for s in listed(ed)] == running, 30, "sleep"
        )
        new = ed.lua(ASK, "run_sessions", "dtach", None, None, 0)["answer"]["sessions"]
        assert [(s["name"], s["command"]) for s in new] == [("generic", "sleep")]
        assert not ed.lua(ASK, "run_prepare", "dtach", {})["answer"]  # {}: nothing made first
        refused = ed.lua(ASK, "run_session_kill", "dtach", None, "gen.eric", None, 0)["err"]
        assert "is not a session name" in refused
        unknown = ed.lua(ASK, "run_sessions", "screen", None, None, 0)["err"]
        assert "not a kind of run" in unknown
        killed = ed.lua(ASK, "run_session_kill", "dtach", None, "generic", None, 0)["answer"]
        assert killed["name"] == "generic" and killed["count"] >= 3, killed
        ended = "return require('ttyoffer.runs').get(...).result"
        wait_until(lambda: ed.lua(ended, run_id), 20, "the run's end")
        assert listed(ed) == []
