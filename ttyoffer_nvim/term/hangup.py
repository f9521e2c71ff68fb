"""Hanging up whatever still has a terminal open when the terminal goes away.

Closing a pty's master hangs up its slave: the kernel sends SIGHUP to the
command's session, and any other process that opened the terminal by its path
only sees its reads fail. pinentry-curses is such a process: gpg-agent starts
it on the terminal GPG_TTY names, outside the command's session. On a
vanished terminal it spins at full CPU instead of exiting, and gpg-agent waits
for it, so every later signature would hang. Before a terminal is let go, the
processes that still hold it are therefore sent SIGHUP, as a terminal's
hang-up sends it to its session.

Each SIGHUP sent here is marked as the terminal's hang-up (sigqueue(3) with
HANG_UP_MARK), as the kernel's own is by its SI_KERNEL: the compiled leader
(libexec/ttyoffer-lead.c) then ends a command this hang-up killed with 129,
a failure however its caller reads it, and mirrors any other SIGHUP as it is.

Standard library only: the keeper process imports this too.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import select
import signal
from collections.abc import Callable

from . import procfs
from .ptys import DRAIN_READS, READ_SIZE


def slave_held_elsewhere(master: int) -> bool:
    """Whether some process still has the slave open.

    The caller's own slave descriptor must be closed already: Linux then fails
    reads on the master with EIO exactly when no slave descriptor is left.
    Buffered output is read and dropped on the way. Never blocks.
    """
    # poll(), not select(): a host with a thousand commands in flight has
    # descriptors beyond select()'s limit of 1024.
    poller = select.poll()
    poller.register(master, select.POLLIN)
    # What is still buffered is read before the master can tell.
    for _ in range(DRAIN_READS):
        try:
            if not poller.poll(0):
                return True  # open on the other side, and quiet
            if not os.read(master, READ_SIZE):
                return False
        except BlockingIOError:
            return True
        except OSError as err:
            return err.errno != errno.EIO
    return True


def holders(slave_path: str, outside_session: int | None = None) -> list[int]:
    """The processes (other than this one) with a descriptor on the slave;
    with `outside_session`, only those that are not in that session.

    Matched by the slave's path: what the command's own processes opened as
    /dev/tty shows as that, and is theirs, hung up by the kernel with the
    session. Outsiders can only have opened the terminal by its path. The
    device is compared too: in a container, another /dev/pts/N is another
    terminal.
    """
    skip = None if outside_session is None else (lambda pid: _session(pid) == outside_session)
    return holders_of([slave_path], skip).get(slave_path, [])


def holders_of(slave_paths: list[str], skip: Callable[[int], bool] | None = None) -> dict[str, list[int]]:
    """For each slave path, the processes (other than this one, and those
    `skip` says) with a descriptor on it: one walk of /proc for them all."""
    me = os.getpid()
    ours = {}
    for path in slave_paths:
        with contextlib.suppress(OSError):
            ours[path] = os.stat(path)
    found: dict[str, list[int]] = {path: [] for path in ours}
    if not ours:
        return found
    for pid in procfs.pids():
        if pid == me or (skip is not None and skip(pid)):
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:  # gone, or not ours to look at
            continue
        held = set()
        for fd in fds:
            link = f"{fd_dir}/{fd}"
            with contextlib.suppress(OSError):
                target = os.readlink(link)
                if target in ours and target not in held and _same_file(os.stat(link), ours[target]):
                    held.add(target)
                    found[target].append(pid)
    return found


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino, a.st_rdev) == (b.st_dev, b.st_ino, b.st_rdev)


def _session(pid: int) -> int | None:
    info = procfs.stat(pid)
    return info.session if info is not None else None


# The value that marks a SIGHUP as the plugin's hang-up of a terminal: the
# same as LEAD_HANG_UP_MARK of libexec/ttyoffer-lead.c (a test holds them
# equal). Sent and compared as a whole word.
HANG_UP_MARK = 0x74746875


@functools.cache
def _sigqueue() -> Callable[[int, int, int], int] | None:
    """libc's sigqueue(pid, sig, value) (errno kept for ctypes.get_errno),
    or None where there is none. ctypes is imported here, at the first
    hang-up, not with the host or the keeper (a few milliseconds)."""
    import ctypes

    try:
        function = ctypes.CDLL(None, use_errno=True).sigqueue
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    function.restype = ctypes.c_int
    return function


def send_hang_up(pid: int) -> None:
    """SIGHUP to `pid`, marked as the terminal's hang-up; OSError if it
    cannot be sent. Without sigqueue(3), unmarked (as kill(2))."""
    sigqueue = _sigqueue()
    if sigqueue is None:
        os.kill(pid, signal.SIGHUP)
        return
    if sigqueue(pid, signal.SIGHUP, HANG_UP_MARK) != 0:
        import ctypes

        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def hang_up(pids: list[int]) -> list[int]:
    """SIGHUP (the hang-up's, marked) to each; those it could be sent to."""
    sent = []
    for pid in pids:
        with contextlib.suppress(OSError):
            send_hang_up(pid)
            sent.append(pid)
    return sent


def hang_up_holders(master: int, slave_path: str, spare: frozenset[int] = frozenset()) -> list[int]:
    """SIGHUP to every other process still holding the slave (but those in
    `spare`); their pids.

    Call it with this process's own slave copy closed and the master still
    open, so that the slave's path cannot name another terminal yet. The
    common case, nobody left, costs a poll and a read; only otherwise is /proc
    searched.
    """
    try:
        if master < 0 or not slave_held_elsewhere(master):
            return []
        pids = [pid for pid in holders(slave_path) if pid not in spare]
    except (OSError, ValueError):  # best effort: never in the way of a teardown
        return []
    return hang_up(pids)
