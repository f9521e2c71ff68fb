"""Pseudo-terminal allocation and window size, ptyprocess-style discipline.

Both ends are opened close-on-exec and with O_NOCTTY: the host is itself a
session leader without a controlling terminal (Neovim setsid()s its jobs), so
opening the slave without O_NOCTTY would make the pty the *host's* controlling
terminal and the child could never acquire it.

Standard library only: the keeper process imports this too (through hangup).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import sys
import termios
from collections.abc import Iterator

# Bytes asked for per read of a master: a pty hands out at most a few KiB a
# read (its line discipline's buffer), so asking for more costs nothing and
# one read always takes what one read can.
READ_SIZE = 64 * 1024
# Reads spent emptying what a master has buffered. A writer that has finished
# leaves a few reads' worth (the kernel stops a writer at some tens of KiB);
# one still writing (a grandchild that kept the terminal) must not keep the
# caller reading for as long as it likes.
DRAIN_READS = 64


class Pty:
    # A plain class, not a dataclass: dataclasses imports inspect (and ast,
    # dis, tokenize), megabytes in the keeper, which imports this module.
    __slots__ = ("master", "slave", "slave_path")

    def __init__(self, master: int, slave: int, slave_path: str) -> None:
        self.master = master
        self.slave = slave
        self.slave_path = slave_path

    def close_slave(self) -> None:
        if self.slave >= 0:
            _close_quietly(self.slave)
            self.slave = -1

    def close(self) -> None:
        self.close_slave()
        if self.master >= 0:
            _close_quietly(self.master)
            self.master = -1


def _close_quietly(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def open_pty(rows: int, cols: int) -> Pty:
    """Allocate a pty whose size is already right before any child sees it."""
    # openpty(3) opens both ends O_NOCTTY; Python makes them non-inheritable.
    master, slave = os.openpty()
    pty = Pty(master, slave, "")
    try:
        pty.slave_path = os.ttyname(slave)
        os.set_blocking(master, False)
        set_winsize(master, rows, cols)
    except BaseException:
        pty.close()
        raise
    return pty


def restore_defaults(pty: Pty) -> None:
    """Give the pty a fresh one's terminal modes again: a program killed
    while it had the terminal in raw mode leaves it so."""
    if pty.slave < 0:
        return
    try:
        fresh_master, fresh_slave = os.openpty()
    except OSError:  # none to be had: the modes stay as they are
        return
    try:
        termios.tcsetattr(pty.slave, termios.TCSANOW, termios.tcgetattr(fresh_slave))
    except termios.error:
        pass
    finally:
        os.close(fresh_master)
        os.close(fresh_slave)


def set_winsize(fd: int, rows: int, cols: int) -> None:
    """TIOCSWINSZ on the master: the kernel sends SIGWINCH to the foreground group."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def get_winsize(fd: int) -> tuple[int, int]:
    rows, cols, _, _ = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    return rows, cols


# TIOCGSID, which Python's termios does not name: the generic Linux value
# (x86, ARM, RISC-V, s390, LoongArch); MIPS, SPARC, PowerPC and Alpha differ.
_TIOCGSID = 0x5429
_GENERIC_IOCTLS = os.uname().machine.startswith(
    ("x86", "i386", "i686", "aarch64", "arm", "riscv", "s390", "loongarch")
)


def session_of(master: int) -> int | None:
    """The session that has the pty as its controlling terminal, if any.

    Commands given an offer make it theirs before they run (the spawn
    prologue), and keep it until their session leader exits. Elsewhere than
    Linux (or where its number is not known) the question is not asked, and
    the answer is "some": -1.
    """
    if not (sys.platform.startswith("linux") and _GENERIC_IOCTLS):
        return -1
    try:
        answer = fcntl.ioctl(master, _TIOCGSID, b"\0\0\0\0")
    except OSError:
        return None  # ENOTTY: no session
    return int(struct.unpack("i", answer)[0])


class PtyEOF(Exception):
    """Every slave descriptor is closed (Linux reports this as EIO)."""


def read_available(fd: int, size: int = READ_SIZE) -> bytes:
    """One non-blocking read. b"" means nothing to read now; EIO means EOF."""
    try:
        data = os.read(fd, size)
    except BlockingIOError:
        return b""
    except OSError as err:
        if err.errno == errno.EIO:
            raise PtyEOF from None
        raise
    if not data:
        raise PtyEOF
    return data


def drain(fd: int) -> Iterator[bytes]:
    """What the master has buffered now, read by read, at most DRAIN_READS
    reads; ends early at nothing left, EOF or an error. Never blocks."""
    for _ in range(DRAIN_READS):
        try:
            data = read_available(fd, READ_SIZE)
        except (PtyEOF, OSError):
            return
        if not data:
            return
        yield data
