"""Persistent runs: dtach sessions that outlive the editor, recorded by
script(1) and replayed on the next attach.

dtach keeps the session alive and nothing else: the editor's own terminal
keeps its mouse, scrollback and search. It does not remember the screen, so
the session's output is recorded by script(1) inside it, and the tail of
that recording is shown before the live screen when a pane attaches.

Every session name goes through sanitize_name() before it reaches a path or
an argument: it is the injection boundary. Nothing about a session is
stored: which sessions exist, whether they live, what they run and their
title are read afresh from the session folder, the process table and the
recording on every call.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from . import procfs
from .text import sanitize

NAME_LENGTH = 40
DEFAULT_NAME = "main"
# Bytes of the recording replayed on attach, and below which nothing is
# (a session just made has recorded its prompt, which the redraw paints).
REPLAY_BYTES = 256 * 1024
REPLAY_MIN_BYTES = 512
# Past this size the recording is cut to its last TRIM_TO bytes on attach.
MAX_RECORDING_BYTES = 4 * 1024 * 1024
TRIM_TO = 1024 * 1024
# Of the recording, the part searched for the title the program last set.
TITLE_SEARCH_BYTES = 64 * 1024
TITLE_LENGTH = 120
# Leaves whatever the tail started in (the alternate screen, mouse
# reporting), then resets the terminal: the tail may begin mid-sequence.
REPLAY_RESET = b"\x1b[?1049l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1bc"
# What dtach writes when a client attaches ("Clear the screen. This assumes
# VT100."): it would wipe the replay it follows.
DTACH_CLEAR = b"\x1b[H\x1b[J"
CLEAR_WINDOW = 5.0

SOCKET_PATH_MAX = 108
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_TITLE = re.compile(rb"\x1b\][02];([^\x07\x1b]*)(?:\x07|\x1b\\)")


def sanitize_name(name: object) -> str:
    """The one way a session name reaches a path or an argument: characters
    other than [A-Za-z0-9_-] become '-', dashes at either end go, at most 40
    characters are kept, and nothing left means "main"."""
    text = name if isinstance(name, str) else ""
    cleaned = _UNSAFE.sub("-", text).strip("-")[:NAME_LENGTH].strip("-")
    return cleaned or DEFAULT_NAME


class SessionFolderError(Exception):
    """The session folder cannot be made, or is not the user's alone."""


def session_folder(runtime_dir: str | None) -> Path:
    """`$XDG_RUNTIME_DIR/ttyoffer-sessions`, else `/tmp/ttyoffer-sessions-<uid>`:
    made 0700, and refused unless it is a directory of ours that nobody
    else can enter (a folder someone else made first, a symlink)."""
    if runtime_dir:
        folder = Path(runtime_dir) / "ttyoffer-sessions"
    else:
        folder = Path("/tmp") / f"ttyoffer-sessions-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise SessionFolderError(f"{folder} is not a folder of yours; remove it and try again")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(folder, 0o700)
    # A socket's path must fit sockaddr_un (108 bytes, its NUL included).
    longest = len(os.fsencode(folder)) + 1 + NAME_LENGTH + len(".sock")
    if longest >= SOCKET_PATH_MAX:
        raise SessionFolderError(
            f"{folder} is too long a path for a session's socket; set XDG_RUNTIME_DIR to a shorter folder"
        )
    return folder


@dataclass(frozen=True)
class SessionPaths:
    name: str
    socket: Path
    recording: Path


def paths(folder: Path, name: object) -> SessionPaths:
    safe = sanitize_name(name)
    return SessionPaths(safe, folder / f"{safe}.sock", folder / f"{safe}.log")


def attach_argv(
    dtach: str, script: str | None, session: SessionPaths, argv: list[str], shell: str
) -> tuple[list[str], dict[str, str]]:
    """The argv that attaches to the session, creating it with `argv` when it
    does not exist, and what it needs in its environment.

    dtach -A: attach or create; -r winch: the program redraws on attach; -E
    -z: no detach or suspend key of dtach's (closing the pane detaches).
    script(1) records inside it, appending (O_APPEND: the recording can be
    trimmed under it). script runs its -c string with $SHELL: /bin/sh for
    that string, which puts the user's own SHELL back before it execs the
    program, quoted word by word (shlex), never joined unquoted."""
    base = [dtach, "-A", str(session.socket), "-r", "winch", "-E", "-z"]
    if script is None:
        return [*base, *argv], {}
    private_file(session.recording)
    command = f"SHELL={shlex.quote(shell)}; export SHELL; exec {shlex.join(argv)}"
    recorded = [script, "-q", "-a", "-f", "-e", "-c", command, str(session.recording)]
    return [*base, *recorded], {"SHELL": "/bin/sh"}


def private_file(path: Path) -> None:
    """Make `path` if it is not there, readable by its owner alone (script
    would make it with the session's umask); a link is not followed."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))


# -- what the process table says ---------------------------------------------------


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
        self.listening = _listening_sockets()

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
            if name in ("dtach", "script"):
                continue
            best, best_depth = name, depth
        return sanitize(best, TITLE_LENGTH)


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _is_dtach(argv: list[str]) -> bool:
    return bool(argv) and os.path.basename(argv[0]) == "dtach"


# /proc/net/unix's flag of a listening socket (__SO_ACCEPTCON).
_ACCEPTCON = 0x10000


def _listening_sockets() -> dict[str, set[str]]:
    """Path -> inodes of the Unix sockets listening there (/proc/net/unix)."""
    found: dict[str, set[str]] = {}
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as f:
            next(f, None)
            for line in f:
                fields = line.rstrip("\n").split(None, 7)
                if len(fields) == 8 and int(fields[3], 16) & _ACCEPTCON:
                    found.setdefault(fields[7], set()).add(fields[6])
    except (OSError, ValueError):
        pass
    return found


def live(socket_path: Path) -> bool:
    return socket_path.exists() and ProcessTable().master(socket_path) is not None


def gone(socket_path: Path) -> bool:
    """Whether the session at the socket is gone for good: no dtach process
    of ours names it. (One that names it but does not listen yet is being
    made, between its bind() and its listen(): not gone.)"""
    return not ProcessTable().holders(socket_path)


def _tail(path: Path, size: int) -> bytes | None:
    """The last `size` bytes of the file, or None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(0, end - size))
            return f.read()
    except OSError:
        return None


def title_of(recording: Path) -> str:
    """The title the program last set (OSC 0 or 2) in the recording's tail."""
    titles = _TITLE.findall(_tail(recording, TITLE_SEARCH_BYTES) or b"")
    if not titles:
        return ""
    return sanitize(titles[-1].decode("utf-8", "replace"), TITLE_LENGTH)


@dataclass(frozen=True)
class Session:
    name: str
    created: float
    command: str
    title: str
    pid: int

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "created": int(self.created),
            "command": self.command,
            "title": self.title,
            "pid": self.pid,
        }


def forget(session: SessionPaths) -> None:
    """A session that is gone: its socket and recording go too (a recording
    is never replayed into a new shell)."""
    for path in (session.socket, session.recording):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def list_sessions(folder: Path) -> list[Session]:
    """The live sessions in the folder, read now. A socket nobody serves is
    a session gone: it and its recording are removed on the way."""
    found = []
    table: ProcessTable | None = None
    for entry in sorted(folder.glob("*.sock")):
        name = entry.name[: -len(".sock")]
        if sanitize_name(name) != name:
            continue  # not one of ours
        table = table or ProcessTable()
        session = paths(folder, name)
        master = table.master(session.socket)
        if master is None:
            if not table.holders(session.socket):
                forget(session)  # gone; one still being made is left alone
            continue
        try:
            created = session.socket.stat().st_mtime
        except OSError:
            continue
        command = table.foreground_command(master)
        found.append(Session(name, created, command, title_of(session.recording), master))
    return found


def kill_session(folder: Path, name: object, grace: float = 0.2) -> int:
    """End the session `name` (after the sanitiser): its dtach processes
    (those that serve or attach to its socket) and everything its master
    runs get SIGTERM, and SIGKILL if still there `grace` seconds later
    (script(1) blocks the signals it handles and goes on while its program
    does); its files go. How many processes were signalled."""
    session = paths(folder, name)
    table = ProcessTable()
    pids = table.holders(session.socket)
    for master in table.masters(session.socket):
        pids += [pid for pid, _ in table.descendants(master)]
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    left = pids
    while left and time.monotonic() < deadline:
        time.sleep(0.01)
        left = [pid for pid in left if not procfs.process_gone(pid)]
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    forget(session)
    return len(pids)


# -- the replay ------------------------------------------------------------------


def replay(recording: Path) -> bytes:
    """What a pane shows before the live screen: the reset, then the
    recording's tail from its first whole line. Nothing below
    REPLAY_MIN_BYTES. A recording past MAX_RECORDING_BYTES is first cut to
    its last TRIM_TO bytes (script appends with O_APPEND, so it goes on
    writing at the new end)."""
    try:
        size = recording.stat().st_size
    except OSError:
        return b""
    if size < REPLAY_MIN_BYTES:
        return b""
    if size > MAX_RECORDING_BYTES:
        trim(recording)
    tail = _tail(recording, REPLAY_BYTES) or b""
    newline = tail.find(b"\n")
    tail = tail[newline + 1 :] if newline >= 0 else b""
    return REPLAY_RESET + tail.replace(b"\n", b"\r\n").replace(b"\r\r\n", b"\r\n") if tail else b""


def trim(recording: Path) -> None:
    tail = _tail(recording, TRIM_TO)
    if tail is None:
        return
    with contextlib.suppress(OSError):
        fd = os.open(recording, os.O_WRONLY | os.O_APPEND)
        try:
            os.truncate(fd, 0)
            os.write(fd, tail)
        finally:
            os.close(fd)


class ClearStripper:
    """Drops dtach's clear-screen on attach from a session's output: once,
    and only within CLEAR_WINDOW seconds of the attach, so a program's own
    clears later are never touched. The sequence may be split between reads:
    a chunk that ends in a beginning of it keeps that beginning back until
    the next chunk (or until the window is over)."""

    def __init__(self, now: float, window: float = CLEAR_WINDOW) -> None:
        self._deadline = now + window
        self._done = False
        self._held = b""

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, chunk: bytes, now: float) -> bytes:
        if self._done:
            return chunk
        data = self._held + chunk
        self._held = b""
        if now > self._deadline:
            self._done = True
            return data
        at = data.find(DTACH_CLEAR)
        if at >= 0:
            self._done = True
            return data[:at] + data[at + len(DTACH_CLEAR) :]
        # Keep back the longest end of `data` that begins the sequence.
        for keep in range(min(len(DTACH_CLEAR) - 1, len(data)), 0, -1):
            if DTACH_CLEAR.startswith(data[-keep:]):
                self._held = data[-keep:]
                return data[:-keep]
        return data

    @property
    def holding(self) -> bool:
        return bool(self._held)

    def flush(self) -> bytes:
        """What is held back, given up on: no more of the sequence came."""
        held, self._held = self._held, b""
        return held
