"""The processes a test run started, found in /proc, and ended by pid.

Every process the suite starts carries a mark in its environment (MARK,
one value per pytest session), passed down to what it starts in turn: an
editor, its host, a tmux server and the shells in its panes, a gpg-agent,
a dtach session. Those still running when the session ends are what the
suite left behind (conftest fails the run listing them); a process started
with an environment of its own (env -i) is found while its parent, a
process of the suite, still is."""

from __future__ import annotations

import os
import secrets
import signal
import time
from contextlib import suppress
from dataclasses import dataclass

MARK = "TTYOFFER_TEST_RUN"


def mark_this_run() -> str:
    """Mark what this process starts from now on; the mark's value."""
    value = f"{os.getpid()}.{secrets.token_hex(6)}"
    os.environ[MARK] = value
    return value


@dataclass(frozen=True)
class Process:
    pid: int
    # Clock ticks after boot: with the pid, one process (a pid is reused).
    started: int
    parent: int
    command: str

    def describe(self) -> str:
        return f"{self.pid} {self.command}"


def _read(pid: int) -> Process | None:
    """The process `pid` as /proc has it; None once gone or a zombie (it
    runs no more: only its parent's wait is missing)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            argv = cmdline.read().rstrip(b"\0").replace(b"\0", b" ")
    except (OSError, IndexError):
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    command = argv.decode("utf-8", "replace")[:200] or "?"
    return Process(pid, int(fields[19]), int(fields[1]), command)


def _marked(pid: int, mark: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return mark in environ.read().split(b"\0")
    except OSError:
        return False  # gone, or another account's


class Census:
    """The processes of this run, read again at each count; what each pid
    was is remembered (a pid's environment is fixed at its exec: a process
    once unmarked is read again only as a new process)."""

    def __init__(self, mark: str, root: int | None = None) -> None:
        self._mark = f"{MARK}={mark}".encode()
        self._root = os.getpid() if root is None else root
        self._known: dict[tuple[int, int], bool] = {}

    def count(self) -> list[Process]:
        """This run's processes now running, but the test runner itself."""
        found: dict[int, Process] = {}
        ours: set[int] = set()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            process = _read(int(name))
            if process is None:
                continue
            found[process.pid] = process
            key = (process.pid, process.started)
            if key not in self._known:
                self._known[key] = _marked(process.pid, self._mark)
            if self._known[key]:
                ours.add(process.pid)
        # A child of ours without the mark (started with an environment of
        # its own) is ours as well.
        for process in found.values():
            seen: set[int] = set()
            parent = process.parent
            while parent in found and parent not in seen and parent != self._root:
                seen.add(parent)
                parent = found[parent].parent
            if parent == self._root:
                ours.add(process.pid)
        self._known = {k: v for k, v in self._known.items() if k[0] in found}
        ours.discard(self._root)
        return sorted((found[pid] for pid in ours), key=lambda p: p.pid)


def still_there(process: Process) -> bool:
    now = _read(process.pid)
    return now is not None and now.started == process.started


def end(processes: list[Process], grace: float = 10.0) -> list[Process]:
    """Wait up to `grace` seconds for `processes` to end on their own, then
    SIGKILL those left (each by its pid, still the same process); those
    that had to be killed."""
    deadline = time.monotonic() + grace
    left = [p for p in processes if still_there(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if still_there(p)]
    for process in left:
        kill(process)
    return left


def kill(process: Process) -> None:
    """SIGKILL to `process` if it still runs: held by a pidfd while its
    start time is compared, so a reused pid is never hit."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:
        return  # gone
    try:
        if still_there(process):
            with suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        os.close(pidfd)


def read(pid: int) -> Process | None:
    """The process `pid` now (None once gone): to end it later by pid."""
    return _read(pid)
