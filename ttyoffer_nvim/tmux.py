"""Runs on tmux: a run is a tmux session `ttyoffer-<name>` that real
terminals can attach to as well (`tmux attach -t ttyoffer-<name>`).

Nothing about these sessions is stored: list and get ask tmux every time, so
a session killed from outside (or a tmux server that crashed and came back)
is seen as it is at the next read. Starting is create-or-adopt: a session
that exists and sits at a shell prompt has the command typed into it
(literally, never read as tmux key names); one that runs something else is
adopted when only a pane is asked for, and refused when a command was to be
delivered: nothing is ever typed over a busy program. Only sessions named
with our prefix are ever killed.

Every argument list is built here. Text that comes from the caller (a
program's arguments, the line typed into a shell) always follows `--`, so
that text starting with '-' can never be read as an option of tmux, and an
argument ending in ';' is escaped, so that it never ends a tmux command and
starts another (literal()).

Standard library only.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass

from .sessions import sanitize_name
from .text import sanitize

PREFIX = "ttyoffer-"
# Commands that mean "an idle shell prompt: safe to type a command into".
SHELLS = frozenset({"sh", "bash", "zsh", "fish", "dash", "ksh", "csh", "tcsh"})
# Seconds one tmux command may take.
TIMEOUT = 5.0
TITLE_LENGTH = 120
_FIELDS = (
    "#{session_name}",
    "#{session_created}",
    "#{session_attached}",
    "#{window_active}#{pane_active}",
    "#{pane_in_mode}",
    "#{pane_pid}",
    "#{pane_current_command}",
    "#{pane_title}",
)
FORMAT = "\t".join(_FIELDS)


class TmuxError(Exception):
    """What tmux said when it refused, or why nothing was asked of it."""


def session_name(name: object) -> str:
    """`ttyoffer-` and the name after the persistent runs' sanitiser."""
    return PREFIX + sanitize_name(name)


def server_args(server: str, env: dict[str, str]) -> list[str]:
    """Which tmux server: `server` names one (a path: -S, else -L); none
    named, the one the editor runs inside ($TMUX), else the default."""
    if server.startswith("/"):
        return ["-S", server]
    if server:
        return ["-L", server]
    inside = env.get("TMUX", "").split(",")[0]
    return ["-S", inside] if inside.startswith("/") else []


def literal(arg: str) -> str:
    """`arg` as tmux takes it from its command line: an argument that ends
    in ';' there ends a tmux command (`new-session … sh -c 'x;' kill-server`
    would run both), unless the ';' is escaped; tmux then turns the
    backslash before it into the ';'. So a final ';' is written '\\;'."""
    return arg[:-1] + "\\;" if arg.endswith(";") else arg


@dataclass(frozen=True)
class Tmux:
    """One tmux server: the program and how to reach that server."""

    program: str
    server: list[str]

    def argv(self, *args: str) -> list[str]:
        return [self.program, *(literal(arg) for arg in (*self.server, *args))]

    def new_session(
        self, session: str, cwd: str, env: dict[str, str], rows: int, cols: int, argv: list[str]
    ) -> list[str]:
        assigned: list[str] = []
        for key, value in env.items():
            assigned += ["-e", f"{key}={value}"]
        size = ["-x", str(cols), "-y", str(rows)]
        return self.argv("new-session", "-d", "-s", session, "-c", cwd, *size, *assigned, "--", *argv)

    def panes(self, session: str | None = None) -> list[str]:
        where = ["-s", "-t", f"={session}"] if session else ["-a"]
        return self.argv("list-panes", *where, "-F", FORMAT)

    def leave_copy_mode(self, session: str) -> list[str]:
        return self.argv("send-keys", "-t", f"={session}:", "-X", "cancel")

    def type_text(self, session: str, text: str) -> list[str]:
        """The text as literal keys (-l): never read as key names."""
        return self.argv("send-keys", "-t", f"={session}:", "-l", "--", text)

    def press_enter(self, session: str) -> list[str]:
        return self.argv("send-keys", "-t", f"={session}:", "Enter")

    def attach(self, session: str) -> list[str]:
        return self.argv("attach-session", "-t", f"={session}")

    def kill(self, session: str) -> list[str]:
        return self.argv("kill-session", "-t", f"={session}")


@dataclass(frozen=True)
class TmuxSession:
    name: str
    created: int
    attached: int
    command: str
    in_mode: bool
    title: str

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "created": self.created,
            "attached": self.attached,
            "command": self.command,
            "title": self.title,
        }


def parse_panes(output: str) -> list[TmuxSession]:
    """One entry per session of ours, from its active pane."""
    found: dict[str, TmuxSession] = {}
    for line in output.splitlines():
        fields = line.split("\t", len(_FIELDS) - 1)
        if len(fields) != len(_FIELDS):
            continue
        name, created, attached, active, in_mode, _pid, command, title = fields
        if not name.startswith(PREFIX) or (name in found and active != "11"):
            continue
        try:
            entry = TmuxSession(
                name,
                int(created),
                int(attached),
                sanitize(command, TITLE_LENGTH),
                in_mode == "1",
                sanitize(title, TITLE_LENGTH),
            )
        except ValueError:
            continue
        found[name] = entry
    return sorted(found.values(), key=lambda s: s.name)


def call(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one tmux command; TmuxError when it cannot be run at all."""
    try:
        return subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIMEOUT,
            env=env,
            start_new_session=True,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise TmuxError(f"{argv[0]}: {err}") from None


def said(result: subprocess.CompletedProcess[str]) -> str:
    return sanitize(result.stderr.strip() or f"exit {result.returncode}", 300)


def list_sessions(tmux: Tmux, session: str | None = None) -> list[TmuxSession]:
    """Our sessions as tmux has them now (none when no server runs)."""
    result = call(tmux.panes(session))
    if result.returncode != 0:
        return []  # no server, or no such session
    return parse_panes(result.stdout)


def prepare(
    tmux: Tmux, name: object, argv: list[str], cwd: str, env: dict[str, str], rows: int, cols: int
) -> str:
    """Create or adopt the session for `name`; the session's name. Raises
    TmuxError, naming what runs there, rather than type over a program."""
    session = session_name(name)
    found = list_sessions(tmux, session)
    if not found:
        result = call(tmux.new_session(session, cwd, env, rows, cols, argv))
        if result.returncode != 0:
            raise TmuxError(f"tmux could not make session {session}: {said(result)}")
        return session
    pane = found[0]
    if not argv:
        return session  # adopted: only the pane was asked for
    if pane.command not in SHELLS:
        raise TmuxError(
            f"tmux session {session} runs {pane.command or 'something'}: not typing over it; "
            f"attach to it without a command, or use another name"
        )
    if pane.in_mode:
        call(tmux.leave_copy_mode(session))
    for step in (tmux.type_text(session, shlex.join(argv)), tmux.press_enter(session)):
        result = call(step)
        if result.returncode != 0:
            raise TmuxError(f"tmux could not type into {session}: {said(result)}")
    return session


def kill(tmux: Tmux, session: str) -> bool:
    """End one of our sessions; refuses any other name."""
    if not session.startswith(PREFIX) or sanitize_name(session[len(PREFIX) :]) != session[len(PREFIX) :]:
        raise TmuxError(
            f"{sanitize(session, 80)!r} is not a session of ttyoffer's (they are named {PREFIX}…)"
        )
    return call(tmux.kill(session)).returncode == 0


def find(env: dict[str, str]) -> str | None:
    for entry in env.get("PATH", os.defpath).split(":"):
        candidate = os.path.join(entry, "tmux")
        if entry and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None
