"""What the kernel says about processes (/proc), and the descriptor limit.

Standard library only: the keeper process imports this too, isolated (no
site packages).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
from collections.abc import Iterator

# How many descriptors a process of ours asks to be allowed: the host holds
# two per command in flight (master and slave), the keeper one, and the soft
# limit of 1024 would cap them at a few hundred commands. Not more than this
# even where the hard limit allows millions: children inherit the soft limit,
# and programs that close every descriptor up to it before they exec would
# spend a loop of that length on each spawn.
FD_CEILING = 65536


class Stat:
    """The fields of /proc/PID/stat that follow the command's name.

    A plain class (not typing.NamedTuple): typing costs the keeper, which
    imports this module, a megabyte."""

    __slots__ = ("state", "ppid", "pgrp", "session", "tty_nr", "tpgid")

    def __init__(self, state: str, ppid: int, pgrp: int, session: int, tty_nr: int, tpgid: int) -> None:
        self.state = state  # "R", "S", ..., "Z" for a zombie
        self.ppid = ppid
        self.pgrp = pgrp
        self.session = session
        self.tty_nr = tty_nr  # the controlling terminal's device number, 0 for none
        self.tpgid = tpgid  # the controlling terminal's foreground process group, -1 for none


def stat(pid: int) -> Stat | None:
    """/proc/PID/stat, or None if the process is gone (or not ours to read).

    The command's name is in parentheses and may itself hold ") " or spaces:
    the fields are what follows its last ") ".
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b") ", 1)[1].split()
        return Stat(
            fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[4]), int(fields[5])
        )
    except (OSError, IndexError, ValueError, UnicodeDecodeError):
        return None


def tty_number(path: str) -> int:
    """The device number of a terminal as Stat.tty_nr spells it; -1 if the
    path names nothing."""
    try:
        rdev = os.stat(path).st_rdev
    except OSError:
        return -1
    major, minor = os.major(rdev), os.minor(rdev)
    return (minor & 0xFF) | (major << 8) | ((minor & ~0xFF) << 12)


def pids() -> list[int]:
    """Every process /proc lists. OSError where there is no /proc."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def process_gone(pid: int) -> bool:
    """Whether the process has exited: no such process, or a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    info = stat(pid)
    return info is not None and info.state == "Z"


def start_time(pid: int) -> int:
    """When the process started, in clock ticks since boot (field 22 of
    /proc/PID/stat); -1 if it is gone or not ours to read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b") ", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return -1


def executable(pid: int) -> str:
    """The program the process runs: its executable's path, else its name."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return process_name(pid)


def process_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except OSError:
        return "?"


def raise_fd_limit(ceiling: int = FD_CEILING) -> bool:
    """Raise the soft descriptor limit towards `ceiling`, within the hard
    limit (the system's say). Whether the limit is now as asked."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = ceiling if hard == resource.RLIM_INFINITY else min(hard, ceiling)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return True
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return True
    return False


@contextlib.contextmanager
def pinned(pid: int) -> Iterator[int]:
    """A pidfd of `pid` while the block runs (-1 when there is none): what
    is sent through it reaches that process, never one given its pid since."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        pidfd = -1
    try:
        yield pidfd
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def send_signal(pidfd: int, signum: int) -> bool:
    """`signum` through `pidfd`; whether it was sent."""
    if pidfd < 0:
        return False
    try:
        signal.pidfd_send_signal(pidfd, signum)
    except OSError:
        return False
    return True
