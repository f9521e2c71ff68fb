"""Runs on tmux: a run is a tmux session `ttyoffer-<name>` that real
terminals can attach to as well (`tmux attach -t ttyoffer-<name>`).

Nothing about these sessions is stored: list and get ask tmux every time, so
a session killed from outside (or a tmux server that crashed and came back)
is seen as it is at the next read. Only sessions named with our prefix are
ever killed.

The run's program lives in a pane of its own: a new session's first pane,
or a new window of a session that exists. Nothing is ever typed into a
pane. The pane is first made running a placeholder, given its options
(remain-on-exit, so that its ending stays readable as #{pane_dead_status}
and #{pane_dead_signal}; a pane-died hook that detaches the session's
clients, so that the pane's tmux client, the run's program on the host,
ends; the mark @ttyoffer_run), and only then respawned with the program: a
program that ends at once cannot end before its ending is kept. It runs
through `/bin/sh -c 'exec "$@"'`, so one argument is one program (tmux
hands a command of one word to `sh -c`) and a program that cannot start
ends 127.

No text of ours or the caller's is ever read by tmux as a format: the
start directory is the tmux command's own working directory (not `-c`,
which tmux expands), values go with `-e` (not expanded), the formats we
pass are constants, and a hook names the session after the sanitiser.

Every argument list is built here. Text that comes from the caller always
follows `--`, so that text starting with '-' can never be read as an option
of tmux, and an argument ending in ';' is escaped, so that it never ends a
tmux command and starts another (literal()).

tmux is run off the host's loop (asyncio subprocesses), each command
bounded. This module is tmux itself; a tmux run's part (the pane made
before the pane opens, its ending told, its signal, list and kill) is
kinds/tmux.py. Standard library only.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass

from ..term.jobsignals import as_for_a_job
from ..term.text import sanitize
from . import offloop
from .ending import Ending
from .sessions import sanitize_name

PREFIX = "ttyoffer-"
# Seconds one tmux command may take.
TIMEOUT = 3.0
TITLE_LENGTH = 120
# The user option that marks the pane of a run's program.
MARK = "@ttyoffer_run"
# One argument is one program: what tmux runs in the pane.
EXEC = ["/bin/sh", "-c", 'exec "$@"', "ttyoffer"]
# What the pane runs while its options are set.
PLACEHOLDER = ["/bin/sh", "-c", "exec sleep 86400"]
SEPARATOR = object()
PRINT_PANE = ["-P", "-F", "#{pane_id}"]
PANE_STATE = "#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_pid}"
_PANE_ID = re.compile(r"%[0-9]+")
_FIELDS = (
    "#{session_name}",
    "#{session_created}",
    "#{session_attached}",
    "#{window_active}#{pane_active}",
    "#{pane_in_mode}",
    "#{pane_pid}",
    "#{pane_current_command}",
    "#{pane_id}",
    "#{pane_dead}",
    "#{pane_dead_status}",
    "#{pane_dead_signal}",
    "#{" + MARK + "}",
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


def pane_id(text: str) -> str:
    """A pane id as tmux printed it (`%12`), or TmuxError."""
    text = text.strip()
    if not _PANE_ID.fullmatch(text):
        raise TmuxError(f"tmux gave no pane id ({sanitize(text, 40)!r})")
    return text


def ending_of(dead: str, status: str, signum: str) -> Ending | None:
    """From #{pane_dead}, #{pane_dead_status}, #{pane_dead_signal}: None
    while the program runs, or while tmux has no status for it."""
    if dead != "1":
        return None
    if signum.isdigit() and int(signum) > 0:
        return Ending(128 + int(signum), int(signum), "signal")
    if status.isdigit():
        return Ending(int(status), 0, "exited")
    return None


UNKNOWN_ENDING = Ending(255, 0, "exited", "tmux did not say how it ended")


def dead_ending(dead: str, status: str, signum: str, pid: int) -> Ending | None:
    """ending_of, and for a dead pane without a status its zombie's."""
    if dead != "1":
        return None
    return ending_of(dead, status, signum) or zombie_ending(pid, server_of(pid)) or UNKNOWN_ENDING


@dataclass(frozen=True)
class Tmux:
    """One tmux server: the program and how to reach that server."""

    program: str
    server: list[str]

    def argv(self, *args: str | object) -> list[str]:
        """tmux and its arguments; SEPARATOR between two commands."""
        out = [self.program, *(literal(arg) for arg in self.server)]
        for arg in args:
            out.append(";" if arg is SEPARATOR else literal(str(arg)))
        return out

    def new_session(self, session: str, rows: int, cols: int, placeholder: bool = True) -> list[str]:
        """A detached session whose one pane runs the placeholder (or, with
        no program to come, tmux's default command: the user's shell, as
        their tmux.conf has it); prints the pane's id."""
        size = ["-x", str(cols), "-y", str(rows)]
        command = ["--", *PLACEHOLDER] if placeholder else []
        return self.argv("new-session", "-d", "-s", session, *size, *PRINT_PANE, *command)

    def new_window(self, session: str) -> list[str]:
        return self.argv(
            "new-window", "-d", "-t", f"={session}:", "-P", "-F", "#{pane_id}", "--", *PLACEHOLDER
        )

    def keep_ending(self, session: str, pane: str) -> list[object]:
        """The pane's options: it stays when its program ends (so that the
        ending can be read), it detaches the session's clients then, and it
        is marked as a run's."""
        return [
            *("set-option", "-p", "-t", pane, "remain-on-exit", "on", SEPARATOR),
            *("set-option", "-p", "-t", pane, MARK, "1", SEPARATOR),
            *("set-hook", "-p", "-t", pane, "pane-died", f"detach-client -s ={session}"),
        ]

    def start_program(self, session: str, pane: str, env: dict[str, str], argv: list[str]) -> list[str]:
        assigned: list[str] = []
        for key, value in env.items():
            assigned += ["-e", f"{key}={value}"]
        respawn = ["respawn-pane", "-k", "-t", pane, *assigned, "--", *EXEC, *argv]
        return self.argv(*self.keep_ending(session, pane), SEPARATOR, *respawn)

    def adopt_pane(self, session: str, pane: str) -> list[str]:
        return self.argv(*self.keep_ending(session, pane))

    def panes(self, session: str | None = None) -> list[str]:
        where = ["-s", "-t", f"={session}"] if session else ["-a"]
        return self.argv("list-panes", *where, "-F", FORMAT)

    def pane_state(self, pane: str) -> list[str]:
        return self.argv(
            "display-message",
            "-p",
            "-t",
            pane,
            "#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{pane_pid}",
        )

    def attach(self, session: str, pane: str) -> list[str]:
        """Attach to the pane's session, showing the pane; a pane that has
        ended already detaches the client at once (the pane-died hook only
        sees clients attached when it dies)."""
        return self.argv(
            *("attach-session", "-t", pane, SEPARATOR),
            *("if-shell", "-F", "-t", pane, "#{pane_dead}", "detach-client"),
        )

    def kill_pane(self, pane: str) -> list[str]:
        return self.argv("kill-pane", "-t", pane)

    def kill(self, session: str) -> list[str]:
        return self.argv("kill-session", "-t", f"={session}")


@dataclass(frozen=True)
class TmuxPane:
    session: str
    created: int
    attached: int
    active: bool
    in_mode: bool
    pid: int
    command: str
    pane: str
    ending: Ending | None
    marked: bool
    title: str


@dataclass(frozen=True)
class TmuxSession:
    name: str
    created: int
    attached: int
    command: str
    in_mode: bool
    title: str
    # The ending of the run's program, once it has ended.
    ending: Ending | None = None

    def as_dict(self) -> dict[str, object]:
        entry: dict[str, object] = {
            "name": self.name,
            "created": self.created,
            "attached": self.attached,
            "command": self.command,
            "title": self.title,
        }
        if self.ending is not None:
            entry["ended"] = self.ending.as_dict()
        return entry


def parse_pane_lines(output: str) -> list[TmuxPane]:
    panes: list[TmuxPane] = []
    for line in output.splitlines():
        fields = line.split("\t", len(_FIELDS) - 1)
        if len(fields) != len(_FIELDS):
            continue
        name, created, attached, active, in_mode, pid, command, pane, dead, status, signum, mark, title = (
            fields
        )
        if not name.startswith(PREFIX) or not _PANE_ID.fullmatch(pane):
            continue
        try:
            panes.append(
                TmuxPane(
                    name,
                    int(created),
                    int(attached),
                    active == "11",
                    in_mode == "1",
                    int(pid or 0),
                    sanitize(command, TITLE_LENGTH),
                    pane,
                    dead_ending(dead, status, signum, int(pid or 0)),
                    mark == "1",
                    sanitize(title, TITLE_LENGTH),
                )
            )
        except ValueError:
            continue
    return panes


def run_pane(panes: list[TmuxPane]) -> TmuxPane | None:
    """The pane that stands for a session: a run's program still running
    (the active one first), else one that has ended, else the active pane."""
    marked = [p for p in panes if p.marked]
    for group in ([p for p in marked if p.ending is None], marked, [p for p in panes if p.active], panes):
        if group:
            return sorted(group, key=lambda p: not p.active)[0]
    return None


def parse_panes(output: str) -> list[TmuxSession]:
    """One entry per session of ours, from the pane that stands for it."""
    by_session: dict[str, list[TmuxPane]] = {}
    for entry in parse_pane_lines(output):
        by_session.setdefault(entry.session, []).append(entry)
    found = []
    for name, panes in by_session.items():
        pane = run_pane(panes)
        assert pane is not None
        found.append(
            TmuxSession(
                name, pane.created, pane.attached, pane.command, pane.in_mode, pane.title, pane.ending
            )
        )
    return sorted(found, key=lambda s: s.name)


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str


async def call(
    argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None, timeout: float = TIMEOUT
) -> Result:
    """Run one tmux command off the loop (offloop.call: output to files, as
    a stopped server holds a pipe open); TmuxError when it cannot be run at
    all or does not end within `timeout` seconds (a stopped server)."""
    try:
        # The client that starts a server is forked into it: the server and
        # every pane's shell start with the signals a job would, not the
        # host's (SIGTERM blocked, which made the server deaf to kill-server).
        done = await offloop.call(argv, timeout, env, cwd, preexec_fn=as_for_a_job)
    except OSError as err:
        raise TmuxError(f"{argv[0]}: {err.strerror or err}") from None
    if done is None:
        raise TmuxError(f"tmux did not answer within {timeout:g} s (is its server stopped?)")
    return Result(*done)


def said(result: Result) -> str:
    return sanitize(result.stderr.strip() or f"exit {result.returncode}", 300)


async def list_panes(
    tmux: Tmux, session: str | None = None, timeout: float = TIMEOUT, env: dict[str, str] | None = None
) -> list[TmuxPane]:
    result = await call(tmux.panes(session), env, timeout=timeout)
    if result.returncode != 0:
        return []  # no server, or no such session
    return parse_pane_lines(result.stdout)


@dataclass(frozen=True)
class PaneState:
    dead: bool
    ending: Ending | None
    pid: int
    server_pid: int


async def pane_state(tmux: Tmux, pane: str) -> PaneState | None:
    """The pane as tmux has it now; None when it is gone."""
    result = await call(tmux.pane_state(pane))
    fields = result.stdout.strip("\n").split("\t") if result.returncode == 0 else []
    if len(fields) != 4 or not fields[3].isdigit():
        return None
    pid = int(fields[3])
    return PaneState(fields[0] == "1", ending_of(*fields[:3]), pid, server_of(pid))


def server_of(pid: int) -> int:
    """The tmux server whose child `pid` is (0 when it is not one's)."""
    parent = parent_of(pid)
    try:
        with open(f"/proc/{parent}/comm", "rb") as comm:
            return parent if parent > 1 and comm.read().startswith(b"tmux") else 0
    except OSError:
        return 0


def zombie_ending(pid: int, parent: int) -> Ending | None:
    """The ending of `pid` while it is a zombie of `parent` (the tmux
    server), from /proc/PID/stat's exit_code. tmux 3.3a sometimes never
    reaps a pane's program that dies while a client is attached (measured:
    1 in 8, the program left a zombie, the pane dead without a status and
    no pane-died hook); the kernel still has its status."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # fields[0] is the state (field 3 of proc(5)), fields[49] exit_code (52).
    if not parent or len(fields) < 50 or fields[0] != b"Z" or int(fields[1]) != parent:
        return None
    status = int(fields[49])
    if status & 0x7F:
        return Ending(128 + (status & 0x7F), status & 0x7F, "signal")
    return Ending((status >> 8) & 0xFF, 0, "exited")


def parent_of(pid: int) -> int:
    """The parent of `pid` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


# Seconds a pane known to have ended is asked again for its status.
ENDING_RETRY, ENDING_TRIES = 0.05, 20


async def pane_ending(tmux: Tmux, pane: str, ended: bool = False) -> tuple[bool, Ending | None]:
    """(whether the pane is there, how its program ended or None while it
    runs). `ended`: its program is known to have ended (its pidfd said so),
    so a pane tmux has not seen die yet is asked again, a few times."""
    for _ in range(ENDING_TRIES):
        state = await pane_state(tmux, pane)
        if state is None:
            return False, None
        if state.ending is not None:
            return True, state.ending
        if state.dead or ended:
            found = zombie_ending(state.pid, state.server_pid)
            if found is not None:
                return True, found
        elif not ended:
            return True, None
        await asyncio.sleep(ENDING_RETRY)
    return True, UNKNOWN_ENDING


def for_server(server: str, env: dict[str, str]) -> Tmux:
    """The tmux of `env`'s PATH and the server `server` names."""
    program = find(env)
    if program is None:
        raise TmuxError("tmux is not installed: sudo apt-get install tmux")
    return Tmux(program, server_args(server, env))


def find(env: dict[str, str]) -> str | None:
    for entry in env.get("PATH", os.defpath).split(":"):
        candidate = os.path.join(entry, "tmux")
        if entry and os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    return None
