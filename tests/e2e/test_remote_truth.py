"""Remote sessions told as their far-side processes are, and replayed as the
program printed them: a real sshd on 127.0.0.1 logging into a throwaway
account (test_remote_runs' remote machine); script(1) and dtach's master
killed there as anything else on that machine could kill them."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import test_remote_runs
from test_remote_runs import KEYED, Remote, last_run, remote_processes, result, shown

from harness import Editor, Sandbox, editor, wait_until
from ttyoffer_nvim.runs import remote

pytestmark = pytest.mark.e2e

remote_host = test_remote_runs.remote_host
remote_sandbox = test_remote_runs.remote_sandbox


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def session_parts(remote_host: Remote, name: str) -> tuple[int, int, int]:
    """(the wrapper, script(1), dtach's master) of session `name`, found in
    the process table: the wrapper is the sh started for the session's
    name, script its parent, the master script's."""

    def wrapper() -> int | None:
        for pid in remote_host.account.processes():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"ttyoffer-session" in argv and f"TTYOFFER_NAME={name}".encode() in environ:
                return pid
        return None

    found = wait_until(wrapper, 30, f"the wrapper of session {name}")
    script = parent(found)
    master = parent(script)
    assert Path(f"/proc/{script}/cmdline").read_bytes().split(b"\0")[0].endswith(b"script")
    assert Path(f"/proc/{master}/cmdline").read_bytes().split(b"\0")[0].endswith(b"dtach")
    return found, script, master


def listing(ed: Editor) -> str:
    out: str = ed.nvim.api.exec2(f"TtyRun list {KEYED}", {"output": True})["output"]
    return out


def test_a_session_whose_script_is_killed_remotely_tells_how_its_program_ended(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f"TtyRun! {KEYED}:cut sh -c 'echo cut-is-up; exec sleep 311'")
        run_id = last_run(ed)
        shown(ed, run_id, "cut-is-up", 30, "the program")
        _, script, _ = session_parts(remote_host, "cut")
        os.kill(script, signal.SIGKILL)
        # Its terminal gone, the program is hung up, as a terminal's are.
        ended = wait_until(lambda: result(ed, run_id), 30, "the run to end")
        assert (ended["code"], ended["signal"], ended["reason"]) == (129, 1, "signal"), ended
        wait_until(lambda: not remote_processes(remote_host.account, "311"), 10, "the program to end")
        assert "cut" not in listing(ed).replace(f"on {KEYED}", "")
    assert not list(remote_host.folder.glob("cut.*"))


def test_a_session_whose_dtach_master_is_killed_is_listed_and_killed_while_its_program_runs(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    program = "trap '' HUP; echo deaf-is-up; exec sleep 312"
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f'TtyRun! {KEYED}:deaf sh -c "{program}"')
        run_id = last_run(ed)
        shown(ed, run_id, "deaf-is-up", 30, "the program")
        _, _, master = session_parts(remote_host, "deaf")
        os.kill(master, signal.SIGKILL)
        ended = wait_until(lambda: result(ed, run_id), 30, "the run to end")
        # Not "detached": nothing can attach to it any more.
        assert "terminal is gone" in ended["message"], ended
        assert remote_processes(remote_host.account, "312"), "the program that ignores SIGHUP ended"
        listed = listing(ed)
        assert "deaf" in listed and "unreachable" in listed, listed
        # Attaching says so at once, every time.
        ed.nvim.command(f"TtyRun! {KEYED}:deaf")
        again = last_run(ed, run_id)
        told = wait_until(lambda: result(ed, again), 30, "the attach to be told")
        assert "terminal is gone" in told["message"], told
        out = ed.nvim.api.exec2(f"TtyRun kill {KEYED}:deaf", {"output": True})["output"]
        assert "ended" in out, out
        wait_until(lambda: not remote_processes(remote_host.account, "312"), 10, "the program to be killed")
        assert "deaf" not in listing(ed).replace(f"on {KEYED}", "")
    assert not list(remote_host.folder.glob("deaf.*"))


def pane_lines(ed: Editor, run_id: int) -> list[str]:
    return [line.rstrip() for line in ed.run_pane(run_id).splitlines() if line.strip()]


def test_the_replay_is_what_the_program_printed_and_keeps_no_argument(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    secret = "TOKEN=s3cr3t-in-argv"
    printed = ["printed-one", "printed-two", "printed-three"]
    program = "printf '%s\\n' " + " ".join(printed) + "; sleep 2; exit 3"
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f'TtyRun! {KEYED}:rec sh -c "{program}" sh {secret}')
        run_id = last_run(ed)
        shown(ed, run_id, "printed-three", 30, "the program")
        ed.nvim.command(f"TtyRun close {run_id}")
        wait_until(lambda: (remote_host.folder / "rec.status").exists(), 20, "the remote ending")
        recording = b"".join(path.read_bytes() for path in remote_host.folder.glob("rec.log*"))
        assert printed[0].encode() in recording
        assert secret.encode() not in recording, recording
        ed.nvim.command(f"TtyRun! {KEYED}:rec")
        again = last_run(ed, run_id)
        ended = wait_until(lambda: result(ed, again), 30, "the ending to be told")
        assert (ended["code"], ended["reason"]) == (3, "exited"), ended
        wait_until(lambda: any(line.startswith("[exited 3") for line in pane_lines(ed, again)), 10, "the end")
        lines = pane_lines(ed, again)
        assert lines[: lines.index(next(x for x in lines if x.startswith("[exited 3")))] == printed, lines


def timed(call: Callable[[], object]) -> tuple[float, object]:
    start = time.monotonic()
    value = call()
    return time.monotonic() - start, value


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


# What the editor may be held by a run command or a completion while
# something stalls: about half a second is meant; the bound holds on a loaded
# machine, against 15 s (a stopped connection) and 2 s (a stopped host).
HELD_AT_MOST = 1.5


def test_a_stalled_connection_or_host_never_holds_the_editor(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f"TtyRun! {KEYED}:stall sleep 314")
        run_id = last_run(ed)
        wait_until(lambda: remote_processes(remote_host.account, "314"), 30, "the remote program")
        assert "stall" in listing(ed)
        folder = remote.control_folder(str(remote_host.runtime))
        masters = sorted(remote.shared_connections(folder))
        assert len(masters) == 1, masters
        with stopped(masters[0]):
            took, out = timed(lambda: listing(ed))
            assert took < HELD_AT_MOST, (took, out)
            assert "has not answered yet" in str(out) and "stall" in str(out), out
            for _ in range(3):
                took, names = timed(
                    lambda: ed.lua("return vim.fn.getcompletion(...)", f"TtyRun! {KEYED}:", "cmdline")
                )
                assert took < HELD_AT_MOST, took
                assert names == [f"{KEYED}:stall"], names
            took, out = timed(
                lambda: ed.nvim.api.exec2(f"TtyRun kill {KEYED}:stall", {"output": True})["output"]
            )
            assert took < HELD_AT_MOST and "asking" in str(out), (took, out)
            # The editor answers meanwhile.
            took, _ = timed(lambda: ed.lua("return 1"))
            assert took < HELD_AT_MOST
        # The answers come once the connection does.

        def messages() -> str:
            said: str = ed.nvim.api.exec2("messages", {"output": True})["output"]
            return said

        wait_until(lambda: f"session stall on {KEYED} ended" in messages(), 30, "the kill's late answer")
        wait_until(lambda: result(ed, run_id), 30, "the run to end")
        wait_until(lambda: not remote_processes(remote_host.account, "314"), 10, "the program to end")
        host_pid = ed.host_status()["pid"]
        with stopped(host_pid):
            took, out = timed(lambda: ed.nvim.api.exec2("TtyRun list", {"output": True})["output"])
            assert took < HELD_AT_MOST, (took, out)
            took, out = timed(lambda: listing(ed))
            assert took < HELD_AT_MOST, (took, out)
            took, _ = timed(
                lambda: ed.lua("return vim.fn.getcompletion(...)", f"TtyRun! {KEYED}:", "cmdline")
            )
            assert took < HELD_AT_MOST
            # An attach opens its pane at once; its ssh starts when the host is back.
            took, _ = timed(lambda: ed.nvim.command(f"TtyRun! {KEYED}:later sleep 315"))
            assert took < HELD_AT_MOST, took
        wait_until(
            lambda: remote_processes(remote_host.account, "315"), 30, "the attach once the host is back"
        )
