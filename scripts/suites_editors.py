"""Every editor scripts/suites.py starts (the suites' runners and the probe
editors), each tracked by its pid from its start, and ended, with what it
started, on every way out of the script: at the end of its run, on a
failure, on Ctrl-C (SIGINT), SIGTERM or SIGHUP of the script.

An editor runs in a session of its own, so the terminal's Ctrl-C never
reaches it, and what it starts (mini.test's child editors, plenary's spec
editors, the commands the plugin leads in sessions of their own) may be in
other process groups: each run's processes carry a mark of their own in
their environment (tests/processes.py), and are ended by pid, a pidfd held
while the process is checked to be the same one.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import processes

# What an editor has, once asked to go (SIGTERM: Neovim stops its jobs and
# exits), before what is left of its run is SIGKILLed by pid.
GRACE = 5.0
# The signals that stop the script as Ctrl-C does.
STOPPING = (signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """The script is stopping: no editor is started any more."""


class Interrupted(Exception):
    """SIGTERM or SIGHUP reached the script (Ctrl-C is KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class Editor:
    proc: subprocess.Popen[bytes]
    # Open from the editor's start (it is not reaped before: its runner's
    # thread is the only one that waits for it), so a signal sent through it
    # reaches that process or none, never a process given its pid since.
    pidfd: int
    mark: str


class Editors:
    """The editors running now, by pid; stop_all() ends them all."""

    def __init__(self, grace: float = GRACE) -> None:
        self.grace = grace
        self._lock = threading.Lock()
        self._running: dict[int, Editor] = {}
        self._stopping = False

    def start(self, argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        """`argv` started in a session of its own, its output piped, its
        processes marked by env[processes.MARK]; Stopped once stop_all()
        has begun (under the same lock: none starts unseen)."""
        with self._lock:
            if self._stopping:
                raise Stopped
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self._running[proc.pid] = Editor(proc, os.pidfd_open(proc.pid), env[processes.MARK])
        return proc

    def end(self, proc: subprocess.Popen[bytes]) -> list[str]:
        """From the thread that runs `proc`, once it ended or to end it:
        SIGTERM to it (the editor stops its jobs), then, after the grace,
        SIGKILL to it and to every process of its run still there, each by
        pid; those that had to be killed, as "pid command"."""
        with self._lock:
            editor = self._running[proc.pid]
        return _end([editor], self.grace)

    def release(self, proc: subprocess.Popen[bytes]) -> list[str]:
        """Every path out of a run of `proc`: it ended (see end()), reaped,
        no longer tracked; what had to be killed."""
        try:
            left = self.end(proc)
        finally:
            with self._lock:
                editor = self._running.pop(proc.pid)
                os.close(editor.pidfd)
            if proc.stdout is not None:
                proc.stdout.close()
        proc.wait()  # SIGKILLed by now if it had not ended
        return left

    def stop_all(self) -> list[str]:
        """No editor starts from now on; those running (in any thread) are
        ended as end() ends one, all at once, by pid; what had to be
        killed. Their own threads still release them."""
        with self._lock:
            self._stopping = True
            # Duplicates: release() may close the originals meanwhile.
            running = [
                Editor(editor.proc, os.dup(editor.pidfd), editor.mark) for editor in self._running.values()
            ]
        try:
            return _end(running, self.grace)
        finally:
            for editor in running:
                os.close(editor.pidfd)

    @contextmanager
    def ended_on_every_path(self, pool: Executor | None = None) -> Iterator[None]:
        """SIGTERM and SIGHUP raise Interrupted in the main thread (as
        Ctrl-C raises KeyboardInterrupt); on the way out, however it goes,
        every editor still running is ended and `pool` gets no new work
        (its threads are waited for: theirs end with their editors). A
        second Ctrl-C meanwhile does not cut that short."""
        # Ctrl-C too, even if the script began with SIGINT ignored (as a
        # background job of a shell without job control begins, and
        # harness.fix_signals then gives it its default action: death, with
        # every editor left running).
        previous = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler)}
        previous.update((signum, signal.signal(signum, _interrupt)) for signum in STOPPING)
        try:
            yield
        finally:
            for signum in previous:
                signal.signal(signum, signal.SIG_IGN)
            try:
                self.stop_all()
                if pool is not None:
                    pool.shutdown(wait=True, cancel_futures=True)
            finally:
                for signum, handler in previous.items():
                    signal.signal(signum, handler)


def run_to_the_end(
    editors: Editors, pool: Executor, body: Callable[[], int], say: Callable[[str], None]
) -> int:
    """`body`'s exit status, every editor it started ended on the way out;
    128 + the signal's number when Ctrl-C, SIGTERM or SIGHUP stopped it.
    The editors should start in `pool`'s threads: the main thread only
    waits, so a signal reaches it between two starts, never halfway into
    one (a process started and not yet tracked)."""
    try:
        with editors.ended_on_every_path(pool):
            return body()
    except (KeyboardInterrupt, Interrupted) as stopped:
        signum = stopped.signum if isinstance(stopped, Interrupted) else signal.SIGINT
        say(f"suites: stopped by {signal.Signals(signum).name}; every editor it started has ended")
        return 128 + signum


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


def _wait_for_exit(pidfds: list[int], timeout: float) -> None:
    """Until every process is gone (a pidfd reads ready when its process
    has exited) or `timeout` seconds passed."""
    poller = select.poll()
    for fd in pidfds:
        poller.register(fd, select.POLLIN)
    waiting = len(pidfds)
    deadline = time.monotonic() + timeout
    while waiting and (remaining := deadline - time.monotonic()) > 0:
        for fd, _ in poller.poll(int(remaining * 1000) + 1):
            poller.unregister(fd)
            waiting -= 1


def _end(editors: list[Editor], grace: float) -> list[str]:
    """SIGTERM to the editors, then after `grace` seconds SIGKILL to them
    and to every process of their runs, by pid; those killed, described."""
    # By pid and start: one process, whoever its parent was when seen.
    found: dict[tuple[int, int], processes.Process] = {}
    for editor in editors:
        # What an editor started with an environment of its own (no mark) is
        # found by its parent, while the editor is there; counted so only if
        # it still runs after the count (its pid was its own throughout).
        by_parent = processes.Census(editor.mark, root=editor.proc.pid).count()
        if not _exited(editor.pidfd):
            found.update(((p.pid, p.started), p) for p in by_parent)
    for editor in editors:
        with suppress(ProcessLookupError):
            signal.pidfd_send_signal(editor.pidfd, signal.SIGTERM)
    deadline = time.monotonic() + grace
    _wait_for_exit([editor.pidfd for editor in editors], grace)
    for editor in editors:
        with suppress(ProcessLookupError):
            signal.pidfd_send_signal(editor.pidfd, signal.SIGKILL)
        # Then by the mark alone (no root): its children are init's now.
        found.update(((p.pid, p.started), p) for p in processes.Census(editor.mark, root=-1).count())
    left = processes.end(list(found.values()), grace=max(0.0, deadline - time.monotonic()))
    return [process.describe() for process in left]


def _exited(pidfd: int) -> bool:
    """Whether the process has exited (its pidfd reads ready), reaped or not."""
    return bool(select.select([pidfd], [], [], 0)[0])
