"""A persistent run: a dtach session on this machine (sessions.py), that
outlives the pane and the editor, recorded and replayed on the next attach.

The pane's terminal runs the dtach client that attaches to the session, or
makes it running the program (under sessionwrap.py, which writes down its
ending); the client is what the host started, so its hang-up or kill
reaches it alone (the session's master may still be in its group, on its
way out of it). What the pane shows first is the recording's tail, without
dtach's clear-screen on attach (ClearStripper). The ending told is the
program's, from the session's status; a client that ended without one was
detached (the session goes on) or lost its session.

Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...term import procfs
from .. import sessionprocs, sessions
from ..ending import Ending
from ..program import CLOSED_CODE, resolve
from ..shellenv import login_shell
from .base import EndedBefore, NotStarted, Program, RunHooks, RunKind, Start

if TYPE_CHECKING:
    from ..runs import Run

# What dtach writes when a client attaches ("Clear the screen. This assumes
# VT100."): it would wipe the replay it follows.
DTACH_CLEAR = b"\x1b[H\x1b[J"
# Seconds after an attach within which dtach's clear-screen is dropped.
CLEAR_WINDOW = 5.0
# Seconds the start of what could be dtach's clear-screen is held back
# waiting for the rest of it (it comes in the same write, or just after).
HELD_FOR = 0.05


@dataclass(frozen=True)
class Session:
    name: str
    created: float
    command: str
    title: str
    pid: int
    # How its program ended, for a session that has; None while it runs.
    ended: Ending | None = None

    def as_dict(self) -> dict[str, object]:
        entry: dict[str, object] = {
            "name": self.name,
            "created": int(self.created),
            "command": self.command,
            "title": self.title,
            "pid": self.pid,
        }
        if self.ended is not None:  # as a tmux or remote list's: the one wire shape
            entry["ended"] = self.ended.as_dict()
        return entry


def list_sessions(folder: Path) -> list[Session]:
    """The sessions in the folder, read now: the live ones, and those whose
    program ended (with how; their recording is removed on the way: what a
    session printed does not outlive it). A session gone with no ending
    written leaves no trace (but for one whose FIFO is made and whose dtach
    has not started yet: that is left to its maker)."""
    found = []
    # The folder is read before the process table: a socket there was
    # bound by a dtach that /proc/net/unix, read after, still shows bound,
    # unless it has died. (The process scan alone can miss a dtach that
    # forks while it reads.)
    sockets = {name: os.path.lexists(sessions.paths(folder, name).socket) for name in sessions.names(folder)}
    table = sessionprocs.ProcessTable()
    now = time.time()
    for name, had_socket in sockets.items():
        session = sessions.paths(folder, name)
        master = table.master(session.socket)
        if master is None:
            if table.holders(session.socket) or str(session.socket) in table.bound:
                continue  # being made
            ending = sessions.read_ending(session)
            if ending is None and not had_socket and sessions.fifo_is_young(session, now):
                continue  # its FIFO made, its dtach not started yet
            sessions.forget(session, keep_ending=ending is not None)
            if ending is not None:
                found.append(Session(name, ending.ended, "", "", 0, ending))
            continue
        try:
            created = session.socket.stat().st_mtime
        except OSError:
            continue
        command = table.foreground_command(master)
        found.append(Session(name, created, command, sessions.title_of(session), master))
    return found


def kill_session(folder: Path, name: object, grace: float = 0.2) -> int:
    """End the session `name` (one refusal() accepts): its dtach processes
    (those that serve or attach to its socket) and everything its master
    runs get SIGTERM, and SIGKILL if still there `grace` seconds later
    (script(1) blocks the signals it handles and goes on while its program
    does); its files go, its ending too. How many processes were signalled."""
    session = sessions.paths(folder, name)
    table = sessionprocs.ProcessTable()
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
    sessions.forget(session)
    return len(pids)


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


class ClearFilter:
    """What a pane attached to a dtach session shows: its output without
    dtach's clear-screen, once an attach began (`begin`)."""

    def __init__(self) -> None:
        self.stripper: ClearStripper | None = None

    def begin(self) -> None:
        self.stripper = ClearStripper(time.monotonic())

    def show(self, hooks: RunHooks, run: Run, data: bytes) -> None:
        if self.stripper is not None:
            data = self.stripper.feed(data, time.monotonic())
            if self.stripper.done:
                self.stripper = None
            elif self.stripper.holding:
                # A program that stops after "ESC [ H" (cursor home) must not
                # wait for its next write to have it shown.
                hooks.later(run, HELD_FOR, self._release_held, hooks, run)
        hooks.relay(run, data)

    def _release_held(self, hooks: RunHooks, run: Run) -> None:
        if self.stripper is not None and self.stripper.holding:
            hooks.relay(run, self.stripper.flush())


def folder() -> Path:
    """The session folder (sessions.session_folder): raises OSError or
    SessionFolderError."""
    return sessions.session_folder(os.environ.get("XDG_RUNTIME_DIR"))


class DtachKind(RunKind):
    name = "dtach"
    argv_optional = True

    def __init__(self, persist: str) -> None:
        super().__init__()
        # The session's name as the caller gave it: it goes through the
        # sanitiser's refusal before any use.
        self.persist = persist
        self.paths: sessions.SessionPaths | None = None
        self.clear = ClearFilter()

    @classmethod
    def claims(cls, args: dict[str, Any]) -> bool:
        return bool(args.get("persist"))

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> RunKind | str:
        persist = args.get("persist")
        return cls(persist) if isinstance(persist, str) else "persist must be a session name"

    def program(self, hooks: RunHooks, run: Run, argv: list[str], env: dict[str, str], cwd: str) -> Program:
        """The dtach client that attaches to (or makes) the session, and
        the replay to show first; the session's ending when it ended while
        nobody looked and no command was given. Without dtach the run goes
        on as a plain one, and says so."""
        dtach = shutil.which("dtach", path=env["PATH"])
        if dtach is None:
            note = "(ttyoffer) no dtach: this run ends with the editor (sudo apt-get install dtach)\r\n"
            return Start(argv, note.encode())
        refused = sessions.refusal(self.persist)
        if refused is not None:
            return NotStarted("cannot_start", refused)
        try:
            session = sessions.paths(folder(), self.persist)
        except (OSError, sessions.SessionFolderError) as err:
            return NotStarted("cannot_start", f"no session folder: {err}")
        self.session, self.paths = session.name, session
        self.client_alone = True
        # The session's programs have a terminal of their own (script's, or
        # dtach's): this pane's, which goes at the next detach, is not it.
        env.pop("GPG_TTY", None)
        table = sessionprocs.ProcessTable()
        master = table.master(session.socket)
        if master is not None:
            first = b""
            if run.spec.argv:
                running = table.foreground_command(master) or "its program"
                first = (
                    f"(ttyoffer) session {session.name} is running {running} already: attached to it; "
                    f"the command given was not run\r\n"
                ).encode()
            # dtach clears the screen as the pane attaches: not over the tail.
            self.clear.begin()
            return Start(sessions.attach_argv(dtach, session), first + sessions.replay(session))
        if table.holders(session.socket):
            return NotStarted(
                "cannot_start", f"session {session.name} is being made by another editor; try again"
            )
        ending = sessions.read_ending(session)
        if ending is not None and not run.spec.argv:
            return self._ended_before(session, ending)
        # Made afresh: what an earlier session of the name left goes first.
        sessions.forget(session)
        executable, reason, message = resolve(argv[0], env["PATH"], cwd)
        if executable is None:
            return NotStarted(reason, message)
        try:
            sessions.make_fifo(session)
        except OSError as err:
            return NotStarted("cannot_start", f"cannot make {session.fifo}: {err.strerror or err}")
        script = shutil.which("script", path=env["PATH"])
        attach, extra_env = sessions.create_argv(dtach, script, session, argv, login_shell(env))
        env.update(extra_env)
        return Start(attach)

    def _ended_before(self, session: sessions.SessionPaths, ending: Ending) -> EndedBefore:
        """The session's program ended while no pane was attached: the run
        is that ending, after what it printed; its files go (it was seen)."""
        tail = sessions.replay(session)
        sessions.forget(session)
        note = f"session {session.name} had ended"
        message = f"{ending.message} ({note})" if ending.message else note
        return EndedBefore(Ending(ending.code, ending.signal, ending.reason, message), tail)

    def show(self, hooks: RunHooks, run: Run, data: bytes, eof: bool) -> None:
        self.clear.show(hooks, run, data)

    def ending_when_reaped(self, run: Run) -> Ending | None:
        """The dtach client ended by itself: the session's program's ending
        (written by its wrapper before dtach's master, then the client,
        went), and the session's files go; or, with none written, what
        became of the session."""
        session = self.paths
        if session is None:
            return None
        ending = sessions.read_ending(session)
        if ending is not None:
            # Its program has ended: the session is over (its master may
            # still be on its way out), and this pane saw the end.
            sessions.forget(session)
            return ending
        if sessionprocs.live(session.socket):
            return Ending(CLOSED_CODE, signal.SIGHUP, "closed", f"detached: session {self.session} goes on")
        sessions.forget(session)
        return Ending(255, 0, "exited", f"session {self.session} ended without its program's ending")

    def signal(self, hooks: RunHooks, run: Run, signum: int) -> None:
        """The session's program, not the dtach client (where no dtach is,
        the run is a plain one)."""
        if self.paths is None:
            super().signal(hooks, run, signum)
        else:
            sessionprocs.signal_program(self.paths, signum)

    # -- the sessions --------------------------------------------------------

    @classmethod
    async def sessions(cls, hooks: RunHooks, where: object, ssh: object, wait: float) -> dict[str, Any]:
        """Read in a thread: a pass over /proc (a millisecond a session)
        never stalls a prompt's relay."""
        try:
            found = await asyncio.get_running_loop().run_in_executor(None, list_sessions, folder())
        except (OSError, sessions.SessionFolderError) as err:
            return {"error": str(err)}
        return {"sessions": [s.as_dict() for s in found]}

    @classmethod
    async def kill_session(
        cls, hooks: RunHooks, where: object, name: object, ssh: object, wait: float
    ) -> dict[str, Any]:
        """{name, count}, or {error} for a name that is not one (it is never
        taken for the session the sanitiser would make of it). The kill,
        which waits for its processes to go, runs in a thread."""
        refused = sessions.refusal(name)
        if refused is not None:
            return {"error": refused}
        try:
            count = await asyncio.get_running_loop().run_in_executor(None, kill_session, folder(), name)
        except (OSError, sessions.SessionFolderError) as err:
            return {"error": str(err)}
        return {"name": name, "count": count}
