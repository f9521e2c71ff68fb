"""Persistent runs: dtach sessions that outlive the editor, recorded by
script(1) and replayed on the next attach.

dtach keeps the session alive and nothing else: the editor's own terminal
keeps its mouse, scrollback and search. It does not remember the screen, so
the session's output is recorded by script(1) inside it, into a FIFO read by
sessionwrap.py, the program's parent inside the session, which keeps the
last RECORDING_BYTES (NAME.log, NAME.log.1) and writes down how the program
ended (NAME.status). The tail of the recording is shown before the live
screen when a pane attaches; the ending is the run's.

A session name is one sanitize_name() leaves as it is (refusal() says why
another is not): it is the injection boundary, and two names never mean one
session. Nothing about a session is stored by the host: which sessions
exist, whether they live, what they run and their title are read afresh
from the session folder, the process table and the recording on every call.

This module is a session's files; its processes are sessionprocs.py, and a
persistent run's part (attach or make, the ending told, list, kill) is
kinds/dtach.py. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from ..term.text import sanitize
from . import rules
from .ending import STATUS_REASONS, Ending

# Bytes of the recording replayed on attach.
REPLAY_BYTES = 256 * 1024
# The recording's bound, kept while it is written (sessionwrap.Ring: two
# files of half this each).
RECORDING_BYTES = rules.RECORDING_BYTES
# A status file is a few dozen bytes; what is larger is not ours.
STATUS_MAX_BYTES = 4096
WRAPPER = str(Path(__file__).with_name("sessionwrap.py"))
# Of the recording, the part searched for the title the program last set.
TITLE_SEARCH_BYTES = 64 * 1024
TITLE_LENGTH = 120
# Leaves whatever the tail started in (the alternate screen, mouse
# reporting), then resets the terminal: the tail may begin mid-sequence.
REPLAY_RESET = b"\x1b[?1049l\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1bc"

SOCKET_PATH_MAX = 108
# The host makes a session's FIFO before its dtach starts (the editor starts
# it): a FIFO younger than this with no socket beside it may be a session
# being made, by this editor or another, and a list leaves it alone.
MAKING_SECONDS = 30.0
_UNSAFE = re.compile(f"[^{rules.NAME_CHARACTERS}]")
_TITLE = re.compile(rb"\x1b\][02];([^\x07\x1b]*)(?:\x07|\x1b\\)")


def sanitize_name(name: object) -> str:
    """The one way a session name reaches a path or an argument, by the rule
    of rules.py: characters other than NAME_CHARACTERS become '-', dashes at
    either end go, at most NAME_LENGTH are kept, and nothing left means
    DEFAULT_NAME."""
    text = name if isinstance(name, str) else ""
    cleaned = _UNSAFE.sub("-", text).strip("-")[: rules.NAME_LENGTH].strip("-")
    return cleaned or rules.DEFAULT_NAME


def refusal(name: object) -> str | None:
    """Why `name` is not a session name (None when it is one): a name the
    sanitiser would change is refused, with what it would have been, so
    that `my.build` never acts on `my-build`."""
    if isinstance(name, str) and name and sanitize_name(name) == name:
        return None
    shown = json.dumps(name, ensure_ascii=False) if isinstance(name, str) else "that"
    suggested = json.dumps(sanitize_name(name))
    return rules.fill(rules.NAME_REFUSAL, shown=shown, rule=rules.NAME_RULE, suggested=suggested)


class SessionFolderError(Exception):
    """The session folder cannot be made, or is not the user's alone."""


def session_folder(runtime_dir: str | None) -> Path:
    """`$XDG_RUNTIME_DIR/ttyoffer-sessions`, else `/tmp/ttyoffer-sessions-<uid>`:
    made 0700, and refused unless it is a directory of ours that nobody
    else can enter (a folder someone else made first, a symlink, one that
    was open to others: what they may have put in it is never used, and
    it is not tightened into looking safe)."""
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
        raise SessionFolderError(
            f"{folder} is open to others (mode {stat.S_IMODE(info.st_mode):04o}): what is in it may not be "
            "yours; remove it and try again"
        )
    # A socket's path must fit sockaddr_un (108 bytes, its NUL included).
    longest = len(os.fsencode(folder)) + 1 + rules.NAME_LENGTH + len(".sock")
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

    @property
    def folder(self) -> Path:
        return self.socket.parent

    @property
    def previous(self) -> Path:
        """The recording's older half."""
        return self.folder / f"{self.name}.log.1"

    @property
    def fifo(self) -> Path:
        return self.folder / f"{self.name}.fifo"

    @property
    def status(self) -> Path:
        return self.folder / f"{self.name}.status"


def paths(folder: Path, name: object) -> SessionPaths:
    safe = sanitize_name(name)
    return SessionPaths(safe, folder / f"{safe}.sock", folder / f"{safe}.log")


# dtach -r winch: the program redraws on attach; -E -z: no detach or suspend
# key of dtach's (closing the pane detaches).
_DTACH_OPTIONS = ("-r", "winch", "-E", "-z")


def attach_argv(dtach: str, session: SessionPaths) -> list[str]:
    """The argv that attaches to a live session, and only that (dtach -a):
    a session that ended meanwhile is not made again under it."""
    return [dtach, "-a", str(session.socket), *_DTACH_OPTIONS]


def create_argv(
    dtach: str,
    script: str | None,
    session: SessionPaths,
    argv: list[str],
    shell: str,
    python: str = sys.executable,
) -> tuple[list[str], dict[str, str]]:
    """The argv that makes the session running `argv` and attaches to it,
    and what it needs in its environment. Call make_fifo() first.

    The program runs under sessionwrap.py, which tells its ending and keeps
    the recording. script(1) records inside the session into the FIFO; it
    runs its -c string with $SHELL: /bin/sh for that string, which execs
    the wrapper, every word quoted (shlex), never joined unquoted; the
    wrapper puts the user's SHELL back for the program."""
    wrapped = [python, "-I", "-S", WRAPPER, str(session.folder), session.name, shell, "--", *argv]
    base = [dtach, "-A", str(session.socket), *_DTACH_OPTIONS]
    if script is None:
        return [*base, *wrapped], {}
    recorded = [script, "-q", "-f", "-e", "-c", f"exec {shlex.join(wrapped)}", str(session.fifo)]
    return [*base, *recorded], {"SHELL": "/bin/sh"}


def make_fifo(session: SessionPaths) -> None:
    """The FIFO script writes its typescript to, made afresh (0600):
    whatever had its name goes first, never followed."""
    with contextlib.suppress(FileNotFoundError):
        session.fifo.unlink()
    os.mkfifo(session.fifo, 0o600)


def _open_ours(path: Path) -> int | None:
    """A regular file of ours at `path`, opened for reading without
    following a link; None for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        return None
    return fd


def read_ending(session: SessionPaths) -> Ending | None:
    """The session's NAME.status (Ending.status_line), or None when there is
    none (or it is not one of ours)."""
    fd = _open_ours(session.status)
    if fd is None:
        return None
    try:
        raw = os.read(fd, STATUS_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > STATUS_MAX_BYTES:
        return None
    ending = Ending.from_status_line(raw.decode("utf-8", "replace")) or _json_status(raw)
    if ending is None:
        return None
    return Ending(ending.code, ending.signal, ending.reason, sanitize(ending.message, 200), ending.ended)


def _json_status(raw: bytes) -> Ending | None:
    """The JSON status the wrapper wrote before its status line: a session
    started by an earlier version may still be running, and end with it."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    code, signum, reason = data.get("code"), data.get("signal"), data.get("reason")
    message, ended = data.get("message", ""), data.get("ended", 0)
    if not (isinstance(code, int) and isinstance(signum, int) and reason in STATUS_REASONS):
        return None
    when = float(ended) if isinstance(ended, (int, float)) else 0.0
    return Ending(code, signum, str(reason), message if isinstance(message, str) else "", when)


def _read_tail(path: Path, size: int) -> bytes:
    """The last `size` bytes of a file of ours ("" for anything else)."""
    fd = _open_ours(path)
    if fd is None:
        return b""
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        os.lseek(fd, max(0, end - size), os.SEEK_SET)
        chunks = []
        while size > 0 and (chunk := os.read(fd, size)):
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return b""
    finally:
        os.close(fd)


def recorded(session: SessionPaths, size: int) -> bytes:
    """The last `size` bytes of the recording (its older half, then the
    current one)."""
    current = _read_tail(session.recording, size)
    if len(current) >= size:
        return current
    return _read_tail(session.previous, size - len(current)) + current


def recording_size(session: SessionPaths) -> int:
    total = 0
    for path in (session.recording, session.previous):
        with contextlib.suppress(OSError):
            total += os.lstat(path).st_size
    return total


def title_of(session: SessionPaths) -> str:
    """The title the program last set (OSC 0 or 2) in the recording's tail."""
    titles = _TITLE.findall(recorded(session, TITLE_SEARCH_BYTES))
    if not titles:
        return ""
    return sanitize(titles[-1].decode("utf-8", "replace"), TITLE_LENGTH)


_SUFFIXES = (".sock", ".fifo", ".log", ".log.1", ".status")
_WRITING_STATUS = re.compile(r"\.status\.\d+$")


def forget(session: SessionPaths, keep_ending: bool = False) -> None:
    """A session that is gone: its files go (a recording is never replayed
    into a new session). With `keep_ending`, how it ended stays, for the
    next attach to tell."""
    for suffix in _SUFFIXES:
        if keep_ending and suffix == ".status":
            continue
        with contextlib.suppress(FileNotFoundError):
            (session.folder / f"{session.name}{suffix}").unlink()
    # A status its wrapper was killed while writing.
    for writing in session.folder.glob(f"{session.name}.status.*"):
        if _WRITING_STATUS.search(writing.name):
            with contextlib.suppress(FileNotFoundError):
                writing.unlink()


def names(folder: Path) -> list[str]:
    """The session names the folder's entries are of (ours: names the
    sanitiser leaves alone, with one of our suffixes)."""
    found = set()
    with contextlib.suppress(OSError):
        for entry in os.listdir(folder):
            base = _WRITING_STATUS.sub("", entry)
            for suffix in _SUFFIXES:
                if base.endswith(suffix) and refusal(base[: -len(suffix)]) is None:
                    found.add(base[: -len(suffix)])
    return sorted(found)


def fifo_is_young(session: SessionPaths, now: float) -> bool:
    """Whether the session's FIFO was made too recently for its dtach to
    be known not to start."""
    try:
        return now - session.fifo.lstat().st_mtime < MAKING_SECONDS
    except OSError:
        return False


# -- the replay ------------------------------------------------------------------


def replay(session: SessionPaths) -> bytes:
    """What a pane shows before the live screen: the reset, then the
    recording's tail (from its first whole line when it is cut), whatever
    its size."""
    size = recording_size(session)
    tail = recorded(session, REPLAY_BYTES)
    if size > len(tail):
        newline = tail.find(b"\n")
        tail = tail[newline + 1 :] if newline >= 0 else b""
    return REPLAY_RESET + tail.replace(b"\n", b"\r\n").replace(b"\r\r\n", b"\r\n") if tail else b""
