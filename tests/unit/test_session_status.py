"""Hermetic: the two session runtimes, this machine's (runs/sessionwrap.py)
and another machine's (the POSIX sh wrapper of runs/remote_sh.py, run here),
write a program's ending down in one status format (ending.Ending's
status_line), read back by one parser, for the same programs alike."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ttyoffer_nvim.runs import remote_sh, sessions, sessionwrap
from ttyoffer_nvim.runs.ending import Ending

# A program, and how it ends: (code, signal, reason).
PROGRAMS = {
    "exits": (["sh", "-c", "exit 3"], (3, 0, "exited")),
    "killed": (["sh", "-c", "kill -TERM $$"], (143, 15, "signal")),
    "missing": (["no-such-program-ttyoffer"], (127, 0, "not_found")),
}


def _local(folder: Path, argv: list[str]) -> None:
    subprocess.run(
        [sys.executable, "-I", "-S", sessions.WRAPPER, str(folder), "s", "/bin/sh", "--", *argv],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=False,
    )


def _group_gone(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid:
                return False
    return True


def _remote(folder: Path, argv: list[str]) -> None:
    """The far side's wrapper, as script(1) runs it there, here."""
    env = {
        **os.environ,
        "TTYOFFER_FOLDER": str(folder),
        "TTYOFFER_NAME": "s",
        "TTYOFFER_ARGV": shlex.join(argv),
    }
    proc = subprocess.Popen(
        ["sh", "-c", remote_sh.wrapper(), "ttyoffer-session"],
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    proc.wait(timeout=30)
    # Its watcher goes at its next tick once the wrapper has: waited for.
    (folder / "s.pid").unlink(missing_ok=True)
    deadline = time.monotonic() + 20
    while not _group_gone(proc.pid):
        assert time.monotonic() < deadline, "the remote wrapper's watcher stayed"
        time.sleep(0.05)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("runtime", ["local", "remote"])
def test_both_runtimes_write_an_ending_down_alike(tmp_path: Path, runtime: str, program: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir(mode=0o700)
    argv, expected = PROGRAMS[program]
    (_local if runtime == "local" else _remote)(folder, argv)
    line = (folder / "s.status").read_text()
    ending = Ending.from_status_line(line)
    assert ending is not None, line
    assert (ending.code, ending.signal, ending.reason) == expected
    assert abs(ending.ended - time.time()) < 120
    assert line.count("\n") == 1 and line.endswith("\n")


@pytest.mark.parametrize(
    "ending",
    [
        Ending(3, 0, "exited", "", 1700000000.5),
        Ending(143, 15, "signal", "", 1700000000),
        Ending(127, 0, "not_found", "no-such: not found\nin  PATH", 1700000000),
    ],
)
def test_the_wrapper_writes_the_line_ending_describes_and_reads(ending: Ending) -> None:
    status = sessionwrap.Status(ending.code, ending.signal, ending.reason, ending.message)
    assert status.line(ending.ended) == ending.status_line()
    read = Ending.from_status_line(ending.status_line())
    assert read is not None
    assert (read.code, read.signal, read.reason, read.ended) == (
        ending.code,
        ending.signal,
        ending.reason,
        1700000000,
    )
    assert read.message == " ".join(ending.message.split())


@pytest.mark.parametrize(
    "text",
    ["", "3 0 exited\n", "3 0 weird 1\n", "x 0 exited 1\n", "3 0 exited 1\n4 0 exited 1\n", '{"code": 0}'],
)
def test_what_is_not_a_status_line_is_no_ending(text: str) -> None:
    assert Ending.from_status_line(text) is None
