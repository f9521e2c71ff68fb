"""Persistent runs on another machine, over the user's own ssh.

The transport is this module alone: a run on a host is a plain run whose
program is ssh (on the run's own pty, so ssh's questions, a new host key, a
password, a key's passphrase, are asked in the run's pane and answered
there), connecting with the user's own configuration (their ~/.ssh/config,
agent, keys, ProxyJump) and one option set of ours: a ControlMaster in a
private folder (0700), so that the second run to a host, and a list, a kill
or a completion, reuse the connection and ask nothing again.

On the remote side the same design as on this machine: dtach keeps the
session, script(1) records it into NAME.log in the remote user's runtime
folder (`$XDG_RUNTIME_DIR/ttyoffer-remote`, else `/tmp/ttyoffer-remote-UID`,
made 0700 and refused unless it is a folder of theirs alone), and a POSIX sh
wrapper (remote_sh.REMOTE_WRAPPER), the program's parent inside the session,
writes down how it ended (NAME.status, 0600). Nothing is installed there: every
command carries the whole script.

What reaches the remote login shell is one fixed line that any shell reads
the same way (sh, bash, zsh, fish, csh): `exec /bin/sh -c 'eval "$(printf
%b "...")"'`, where "..." is the script with every byte that is not a
letter, a digit or one of ` _.,/:=+-@` written as an octal escape. The
script itself is POSIX sh, and every name and argument in it is one
shlex.quote() made from argv and sanitised names: nothing a user or a
program gave is ever read as shell text.

The remote script tells the editor's side what happens with markers that
carry a nonce made for each connection (an APC string, `ESC _ ttyoffer-NONCE
; WHAT ESC \\`): "attach" just before dtach attaches (what came before it is
the replay, untouched; dtach's clear-screen after it is dropped), and
"end;CODE;SIGNAL;REASON" when the program's ending is known. An ssh that
ends without the end marker lost its connection: that is no ending.

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..term import procfs
from . import remote_sh, rules
from .ending import Ending
from .sessionprocs import unix_sockets
from .sessions import sanitize_name

_DESTINATION = rules.destination_regex()
# A minute after the last run to a host has gone, its connection closes.
CONTROL_PERSIST = "60"
SOCKET_PATH_MAX = 108
# ssh names its control socket %C (40 hex digits) and makes it under a
# temporary name 17 bytes longer.
_CONTROL_NAME_LENGTH = 40 + 17
# The longest command line a remote sh takes as one argument (Linux's
# MAX_ARG_STRLEN is 128 KiB).
COMMAND_MAX_BYTES = 100 * 1024
ACTIONS = ("run", "list", "kill", "check", "signal")
INSTALL = "sudo apt-get install dtach bsdutils (Debian, Ubuntu; script(1) is in bsdutils)"
_LITERAL = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,/:=+-@")


def refusal(dest: object) -> str | None:
    """Why `dest` is not a destination we pass to ssh (None when it is)."""
    if isinstance(dest, str) and len(dest) <= rules.DESTINATION_LENGTH and _DESTINATION.fullmatch(dest):
        return None
    return rules.fill(rules.DESTINATION_REFUSAL, shown=repr(dest))


class ControlFolderError(Exception):
    """The folder of the ssh control sockets cannot be made, or is not the user's alone."""


def control_folder(runtime_dir: str | None) -> Path:
    """`$XDG_RUNTIME_DIR/ttyoffer-ssh`, else `/tmp/ttyoffer-ssh-<uid>`: made
    0700 and refused unless it is a directory of ours that nobody else can
    enter (never tightened, never followed)."""
    folder = None
    if runtime_dir and not re.search(r"\s|%", runtime_dir):
        candidate = Path(runtime_dir) / "ttyoffer-ssh"
        if len(os.fsencode(candidate)) + 1 + _CONTROL_NAME_LENGTH < SOCKET_PATH_MAX:
            folder = candidate
    if folder is None:
        folder = Path("/tmp") / f"ttyoffer-ssh-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise ControlFolderError(f"{folder} is not a folder of yours; remove it and try again")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise ControlFolderError(
            f"{folder} is open to others (mode {stat.S_IMODE(info.st_mode):04o}); remove it and try again"
        )
    return folder


def shared_connections(folder: Path) -> set[int]:
    """The ssh processes that hold our shared connections: each listens on a
    control socket in `folder`. ssh's mux client hands its terminal to that
    master for the session's life, so when a pane goes the master may still
    hold the pane's terminal a moment: it is not a program's leftover to
    hang up (the connection would go with it, and the next attach would ask
    for the password again)."""
    prefix = f"{folder}/"
    listening, _ = unix_sockets()
    wanted = {
        f"socket:[{inode}]"
        for path, inodes in listening.items()
        if path.startswith(prefix)
        for inode in inodes
    }
    found: set[int] = set()
    if not wanted:
        return found
    for pid in procfs.pids():
        fd_dir = f"/proc/{pid}/fd"
        with contextlib.suppress(OSError):
            for fd in os.listdir(fd_dir):
                with contextlib.suppress(OSError):
                    if os.readlink(f"{fd_dir}/{fd}") in wanted:
                        found.add(pid)
                        break
    return found


def encode(script: str) -> str:
    """`script` as printf %b reads it back, in bytes every shell leaves alone
    inside single quotes."""
    raw = script.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in _LITERAL else f"\\0{b:03o}" for b in raw)


def remote_line(script: str) -> str:
    """The one line given to the remote login shell, whatever shell it is."""
    return f'exec /bin/sh -c \'eval "$(printf %b "{encode(script)}")"\''


def script_for(action: str, name: str, argv: list[str], nonce: str) -> str:
    """The remote sh program of `action` (remote_sh.script_for)."""
    return remote_sh.script_for(action, name, argv, nonce, INSTALL)


@dataclass(frozen=True)
class Command:
    argv: list[str]
    nonce: str
    dest: str
    name: str


def command(
    ssh: list[str],
    dest: object,
    action: str,
    name: object = "",
    argv: list[str] | None = None,
    runtime_dir: str | None = None,
) -> Command | str:
    """The local argv that does `action` on `dest`, or why there is none.
    "run" and "check" are for a pane (ssh on its terminal: -tt); "list" and
    "kill" answer without asking (BatchMode: a host that would ask a password
    fails at once, with ssh's words, instead of waiting for nobody)."""
    refused = refusal(dest)
    if refused is not None:
        return refused
    assert isinstance(dest, str)
    if action not in ACTIONS:
        return f"{action!r} is not one of {', '.join(ACTIONS)}"
    if not ssh or not all(isinstance(word, str) and word for word in ssh):
        return "runs.ssh must be the ssh command as a list of words, e.g. { 'ssh' }"
    safe = ""
    if action == "signal":
        # The signal's name, for kill -s (POSIX takes names, not numbers).
        with contextlib.suppress(ValueError, TypeError):
            argv = [signal.Signals(int((argv or ["15"])[0])).name.removeprefix("SIG")]
        if not argv or not argv[0].isalpha():
            return f"{argv!r} is not a signal"
    if action in ("run", "kill", "signal"):
        from .sessions import refusal as name_refusal

        why = name_refusal(name)
        if why is not None:
            return why
        safe = sanitize_name(name)
    try:
        folder = control_folder(runtime_dir)
    except (OSError, ControlFolderError) as err:
        return f"no folder for ssh's connections: {err}"
    nonce = secrets.token_hex(8)
    line = remote_line(
        script_for(action, safe, list(argv or []) if action in ("run", "signal") else [], nonce)
    )
    if len(line.encode()) > COMMAND_MAX_BYTES:
        return "the command is too long to send to the remote shell"
    # Keepalives: a connection that died silently (a laptop asleep, a
    # network gone) is told as "disconnected" within a minute instead of a
    # pane frozen for good. An -o of runs.ssh comes first and wins.
    options = [
        "-o", "ControlMaster=auto",
        "-o", f"ControlPath={folder}/%C",
        "-o", f"ControlPersist={CONTROL_PERSIST}",
        "-o", "ServerAliveInterval=15",
        "-o", "ServerAliveCountMax=4",
    ]  # fmt: skip
    interactive = action in ("run", "check")
    mode = ["-tt"] if interactive else ["-T", "-o", "BatchMode=yes"]
    if action == "run":
        # Not "Shared connection to … closed." after the program's last
        # words: ssh's errors and questions still come.
        mode += ["-o", "LogLevel=ERROR"]
    return Command([*ssh, *options, *mode, "--", dest, line], nonce, dest, safe)


# -- what the remote side tells --------------------------------------------------


class EndMarker(NamedTuple):
    """The far side's end marker, as it said it: its reason is an ending's,
    or what became of the session (gone, detached, unreachable), which
    told_ending puts into the Ending told."""

    code: int
    signal: int
    reason: str


_END_REASONS = (
    "exited",
    "signal",
    "not_found",
    "not_executable",
    "cannot_start",
    "gone",
    "detached",
    "unreachable",
)


class Stream:
    """Takes the markers of one connection out of its output. feed() gives
    the output in order, with "attach" where the attach marker was; the
    ending, once told, is `ending`. A marker split between reads is held
    back until it is whole (at most MARKER_MAX bytes)."""

    MARKER_MAX = 128

    def __init__(self, nonce: str) -> None:
        self._start = f"\x1b_ttyoffer-{nonce};".encode()
        self._held = b""
        self.attached = False
        self.ending: EndMarker | None = None

    def feed(self, data: bytes) -> list[bytes | str]:
        data = self._held + data
        self._held = b""
        out: list[bytes | str] = []
        while data:
            at = data.find(self._start)
            if at < 0:
                # Keep back an end of `data` that could begin a marker.
                keep = 0
                for size in range(min(len(self._start) - 1, len(data)), 0, -1):
                    if self._start.startswith(data[-size:]):
                        keep = size
                        break
                if keep:
                    self._held = data[-keep:]
                    data = data[:-keep]
                if data:
                    out.append(data)
                break
            if at:
                out.append(data[:at])
            close = data.find(b"\x1b\\", at + len(self._start))
            if close < 0:
                if len(data) - at > self.MARKER_MAX:  # not one of ours after all
                    out.append(data[at:])
                else:
                    self._held = data[at:]
                break
            self._take(data[at + len(self._start) : close].decode("ascii", "replace"), out)
            data = data[close + 2 :]
        return out

    def _take(self, what: str, out: list[bytes | str]) -> None:
        if what == "attach":
            self.attached = True
            out.append("attach")
            return
        parts = what.split(";")
        if len(parts) == 4 and parts[0] == "end" and parts[1].isdigit() and parts[2].isdigit():
            reason = parts[3] if parts[3] in _END_REASONS else "exited"
            self.ending = EndMarker(int(parts[1]), int(parts[2]), reason)

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held


def told_ending(stream: Stream, host: str, session: str, code: int | None) -> Ending | None:
    """A remote run's ending: the remote program's own, as the remote side
    told it; an ssh that ended without telling one lost its connection (or
    never had one: ssh said why in the pane; None keeps ssh's own exit)."""
    if stream.ending is None:
        if stream.attached:
            said = f"disconnected from {host}: session {session} goes on there; r re-attaches"
            return Ending(255, 0, "disconnected", said)
        if code == 255:
            return Ending(255, 0, "exited", f"ssh could not reach {host} (its words above)")
        return None
    told, signum, reason = stream.ending
    if reason == "detached":
        return Ending(told, signum, "closed", f"detached: session {session} goes on on {host}")
    if reason == "unreachable":
        said = f"session {session} on {host} runs, but its terminal is gone: "
        said += f":TtyRun kill {host}:{session} ends it"
        return Ending(told, signum, "closed", said)
    if reason == "gone":
        return Ending(
            told, signum, "exited", f"session {session} on {host} ended without its program's ending"
        )
    return Ending(told, signum, reason, f"on {host}")
