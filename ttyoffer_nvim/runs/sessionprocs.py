"""The processes of the persistent sessions (sessions.py), read from /proc:
which dtach serves or attaches to a session's socket, which listens on it,
what its program is and what it runs in the foreground.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..term import procfs
from ..term.text import sanitize
from .sessions import TITLE_LENGTH, SessionPaths


class ProcessTable:
    """One reading of the user's own processes (argv and /proc/PID/stat),
    and of the listening Unix sockets: every question of one list or kill
    is answered from it, so a list costs one pass over /proc, not one per
    session."""

    def __init__(self) -> None:
        uid = os.getuid()
        self.argv: dict[int, list[str]] = {}
        self.stat: dict[int, procfs.Stat] = {}
        self.children: dict[int, list[int]] = {}
        for pid in procfs.pids():
            try:
                if os.stat(f"/proc/{pid}").st_uid != uid:
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    raw = f.read()
            except OSError:
                continue
            info = procfs.stat(pid)
            if info is None:
                continue
            self.argv[pid] = [part.decode("utf-8", "surrogateescape") for part in raw.split(b"\0") if part]
            self.stat[pid] = info
            self.children.setdefault(info.ppid, []).append(pid)
        self.listening, self.bound = unix_sockets()

    def holders(self, socket_path: Path) -> list[int]:
        """The dtach processes that serve or attach to the socket: its path
        is one of their arguments, exactly."""
        wanted = str(socket_path)
        return [
            pid
            for pid, argv in self.argv.items()
            if argv and os.path.basename(argv[0]) == "dtach" and wanted in argv
        ]

    def masters(self, socket_path: Path) -> list[int]:
        """The dtach processes that listen on a socket at that path (a client
        attached from a pane only connects to it). One, but for two panes
        that made the same session at the same moment: then the socket file
        is the last one's, and the other master listens on a name no
        longer there."""
        targets = {f"socket:[{inode}]" for inode in self.listening.get(str(socket_path), ())}
        found = []
        for pid in self.holders(socket_path) if targets else []:
            fd_dir = f"/proc/{pid}/fd"
            with contextlib.suppress(OSError):
                if any(_readlink(f"{fd_dir}/{fd}") in targets for fd in os.listdir(fd_dir)):
                    found.append(pid)
        return found

    def master(self, socket_path: Path) -> int | None:
        found = self.masters(socket_path)
        return found[0] if found else None

    def descendants(self, pid: int) -> list[tuple[int, int]]:
        """(pid, depth) of every descendant of `pid`."""
        found = []
        stack = [(child, 1) for child in self.children.get(pid, [])]
        while stack:
            child, depth = stack.pop()
            found.append((child, depth))
            stack.extend((grandchild, depth + 1) for grandchild in self.children.get(child, []))
        return found

    def foreground_command(self, master: int) -> str:
        """The name of the deepest descendant of the master that is in its
        terminal's foreground process group, dtach and script left out:
        what the session is running now."""
        best, best_depth = "", 0
        for pid, depth in self.descendants(master):
            info = self.stat.get(pid)
            if info is None or info.tty_nr == 0 or info.pgrp != info.tpgid or depth < best_depth:
                continue
            name = procfs.process_name(pid) or ""
            if name in ("dtach", "script") or _is_wrapper(self.argv.get(pid, [])):
                continue
            best, best_depth = name, depth
        return sanitize(best, TITLE_LENGTH)

    def program(self, session: SessionPaths) -> int | None:
        """The session's program: the child of its sessionwrap.py (the one
        under the session's master that names its folder and name)."""
        master = self.master(session.socket)
        if master is None:
            return None
        for pid, _ in self.descendants(master):
            argv = self.argv.get(pid, [])
            if _is_wrapper(argv) and argv[4:6] == [str(session.folder), session.name]:
                children = self.children.get(pid, [])
                return children[0] if len(children) == 1 else None
        return None


def _is_wrapper(argv: list[str]) -> bool:
    return len(argv) > 6 and os.path.basename(argv[3]) == "sessionwrap.py" and argv[1:3] == ["-I", "-S"]


def signal_program(session: SessionPaths, signum: int) -> bool:
    """Send `signum` to the session's program; whether it was sent. Through
    a pidfd taken, then checked to still be the wrapper's child: never to a
    pid that was recycled in between."""
    table = ProcessTable()
    pid = table.program(session)
    if pid is None:
        return False
    parent = table.stat[pid].ppid
    with procfs.pinned(pid) as pidfd:
        info = procfs.stat(pid)
        return info is not None and info.ppid == parent and procfs.send_signal(pidfd, signum)


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


# /proc/net/unix's flag of a listening socket (__SO_ACCEPTCON).
_ACCEPTCON = 0x10000


def unix_sockets() -> tuple[dict[str, set[str]], set[str]]:
    """Path -> inodes of the Unix sockets listening there, and every path a
    socket is bound to, listening or not yet (/proc/net/unix)."""
    listening: dict[str, set[str]] = {}
    bound: set[str] = set()
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as f:
            next(f, None)
            for line in f:
                fields = line.rstrip("\n").split(None, 7)
                if len(fields) != 8:
                    continue
                bound.add(fields[7])
                if int(fields[3], 16) & _ACCEPTCON:
                    listening.setdefault(fields[7], set()).add(fields[6])
    except (OSError, ValueError):
        pass
    return listening, bound


def live(socket_path: Path) -> bool:
    return socket_path.exists() and ProcessTable().master(socket_path) is not None


def gone(socket_path: Path) -> bool:
    """Whether the session at the socket is gone for good: no dtach process
    of ours names it. (One that names it but does not listen yet is being
    made, between its bind() and its listen(): not gone.)"""
    return not ProcessTable().holders(socket_path)
