"""A tmux run: the user's program in a pane of a tmux session
`ttyoffer-<name>` (runs/tmux.py), that real terminals can attach to as
well; the pane's terminal runs a tmux client attached to it.

Before the pane opens, `prepare` makes the program's pane (or finds the one
to re-attach to), so that what tmux refuses reaches the caller first. The
ending told, and where run:kill() signals, are the program's in its pane,
not the client's: tmux is asked once the client ends, and the program is
watched through a pidfd of its own (tmux does not always see it die).

tmux runs off the host's loop. Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...term import procfs
from ...term.exitwatch import ExitWatch
from ...term.text import sanitize
from .. import tmux as tmux_runs
from ..ending import Ending
from ..program import CLOSED_CODE, NOT_STARTED_CODE, resolve
from ..sessions import sanitize_name
from .base import NotStarted, Program, RunHooks, RunKind, Start

if TYPE_CHECKING:
    from ..runs import Run

# Seconds a list may take (the editor waits 0.5 s at most: a stopped
# server never holds it longer).
LIST_TIMEOUT = 0.4
# Lines of a program's last screen (and history) shown once it has ended.
LAST_LINES = 200
# Seconds a run's client is left to the pane-died hook once its program is
# seen gone, before it is hung up.
HOOK_GRACE = 0.3
# Seconds the client's last words are waited for once the ending is known.
DRAIN_GRACE = 0.25
# Seconds a prepare waits for the login shell's PATH (then the host's).
LOGIN_PATH_WAIT = 3.0


async def list_sessions(tmux: tmux_runs.Tmux, timeout: float = LIST_TIMEOUT) -> list[tmux_runs.TmuxSession]:
    """Our sessions as tmux has them now (none when no server runs)."""
    result = await tmux_runs.call(tmux.panes(), timeout=timeout)
    if result.returncode != 0:
        return []
    return tmux_runs.parse_panes(result.stdout)


@dataclass(frozen=True)
class Prepared:
    session: str
    pane: str
    attach: list[str]
    # The program had ended already (a session re-attached to).
    ending: Ending | None


async def prepare_pane(
    tmux: tmux_runs.Tmux,
    name: object,
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    rows: int,
    cols: int,
    server_env: dict[str, str] | None = None,
) -> Prepared:
    """Make the pane of a run's program: a new session's (`argv`, or the
    default shell), a new window of the session that exists (`argv`), or
    the pane of the session's program (no `argv`: re-attach). `server_env`
    is the environment tmux commands run with, so a server they start
    has it. Raises tmux_runs.TmuxError."""
    session = tmux_runs.session_name(name)

    async def made(step: list[str], what: str) -> str:
        result = await tmux_runs.call(step, server_env, cwd)
        if result.returncode != 0:
            raise tmux_runs.TmuxError(f"tmux could not {what}: {tmux_runs.said(result)}")
        return result.stdout

    found = await tmux_runs.list_panes(tmux, session, env=server_env)
    standing = tmux_runs.run_pane(found)
    if standing is not None and not argv:
        if standing.ending is not None:
            # Told with this answer: the pane goes (its session with it,
            # when it was the last).
            await forget_pane(tmux, standing.pane)
        elif not standing.marked:
            await made(tmux.adopt_pane(session, standing.pane), f"adopt {session}")
        return Prepared(session, standing.pane, tmux.attach(session, standing.pane), standing.ending)
    if found:
        pane_text = await made(tmux.new_window(session), f"make a window in {session}")
    else:
        step = tmux.new_session(session, rows, cols, placeholder=bool(argv))
        pane_text = await made(step, f"make session {session}")
    pane = tmux_runs.pane_id(pane_text)
    if argv:
        await made(tmux.start_program(session, pane, env, argv), f"start the program in {session}")
    else:
        # The user's shell, as tmux starts it (their tmux.conf's): an
        # interactive shell does not end before its options are set.
        await made(tmux.adopt_pane(session, pane), f"keep the ending of {session}")
    return Prepared(session, pane, tmux.attach(session, pane), None)


async def last_screen(tmux: tmux_runs.Tmux, pane: str) -> bytes:
    """What the pane of a program that ended shows (its text, without
    tmux's own "Pane is dead" line), for the run's pane: the tmux client
    leaves the alternate screen as it goes, and takes all that with it.
    Its history too, up to LAST_LINES: the pane is the program's own, and
    tmux scrolls lines there (to write its line at the bottom, or as a
    smaller client attaches)."""
    with contextlib.suppress(tmux_runs.TmuxError):
        result = await tmux_runs.call(tmux.argv("capture-pane", "-p", "-J", "-S", "-", "-t", pane))
        if result.returncode == 0:
            lines = result.stdout.rstrip("\n").split("\n")
            if lines and lines[-1].startswith("Pane is dead"):
                lines.pop()
            while lines and not lines[-1].strip():
                lines.pop()
            lines = lines[-LAST_LINES:]
            while lines and not lines[0].strip():
                lines.pop(0)
            return "\r\n".join(lines).encode() + b"\r\n" if lines else b""
    return b""


async def forget_pane(tmux: tmux_runs.Tmux, pane: str) -> None:
    """A pane whose ending was told goes (and its session, when it was the
    last)."""
    with contextlib.suppress(tmux_runs.TmuxError):
        await tmux_runs.call(tmux.kill_pane(pane))


async def signal_pane(tmux: tmux_runs.Tmux, pane: str, signum: int) -> bool:
    """Send `signum` to the program of `pane` while it runs. The pid is
    pinned with a pidfd, then tmux is asked again that the pane still
    runs: a pid tmux has reaped (and that may be another process's now) is
    never signalled."""
    state = await tmux_runs.pane_state(tmux, pane)
    if state is None or state.dead:
        return False
    with procfs.pinned(state.pid) as pidfd:
        if pidfd < 0:
            return False
        present, ending = await tmux_runs.pane_ending(tmux, pane)
        return present and ending is None and procfs.send_signal(pidfd, signum)


async def kill(tmux: tmux_runs.Tmux, session: str) -> bool:
    """End one of our sessions; refuses any other name."""
    name = session.removeprefix(tmux_runs.PREFIX)
    if not session.startswith(tmux_runs.PREFIX) or sanitize_name(name) != name:
        raise tmux_runs.TmuxError(
            f"{sanitize(session, 80)!r} is not a session of ttyoffer's (they are named {tmux_runs.PREFIX}…)"
        )
    return (await tmux_runs.call(tmux.kill(session))).returncode == 0


def server(name: object) -> tmux_runs.Tmux:
    """The tmux of the host's PATH, on the server `name` names."""
    return tmux_runs.for_server(str(name or ""), dict(os.environ))


class TmuxKind(RunKind):
    name = "tmux"

    def __init__(self, target: dict[str, str]) -> None:
        super().__init__()
        self.target = target
        self.tmux: tmux_runs.Tmux | None = None
        self.pane = ""
        self.asked = False
        # The pane's program, watched for its exit on its own: tmux does
        # not always see it die (tmux.zombie_ending).
        self.watch: ExitWatch | None = None
        self.ending: Ending | None = None

    @classmethod
    def claims(cls, args: dict[str, Any]) -> bool:
        return args.get("tmux") is not None

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> RunKind | str:
        target = args.get("tmux")
        if not (
            isinstance(target, dict) and all(isinstance(target.get(k, ""), str) for k in ("server", "pane"))
        ):
            return "tmux must be a table {server, pane}"
        return cls(dict(target))

    def program(self, hooks: RunHooks, run: Run, argv: list[str], env: dict[str, str], cwd: str) -> Program:
        """`argv` is the client that attaches to the prepared pane."""
        try:
            self.tmux = server(self.target.get("server", ""))
            self.pane = tmux_runs.pane_id(self.target.get("pane", ""))
        except tmux_runs.TmuxError as err:
            return NotStarted("cannot_start", str(err))
        return Start(argv)

    def started(self, hooks: RunHooks, run: Run) -> None:
        hooks.task(self._watch(hooks, run))

    async def _watch(self, hooks: RunHooks, run: Run) -> None:
        """Watch the pane's program itself (ExitWatch), once it is known to
        be the tmux server's child: its end ends the run even where tmux
        does not see it (the client would stay attached to a dead pane).
        A program already gone by then (killed as the pane opened, on a
        loaded machine) is as one seen going: tmux may not have seen it."""
        assert self.tmux is not None
        with contextlib.suppress(tmux_runs.TmuxError):
            state = await tmux_runs.pane_state(self.tmux, self.pane)
            if state is None or not run.running or run.forgotten:
                return
            if state.dead:
                self._program_ended(hooks, run)
                return
            watch = ExitWatch(hooks.loop, state.pid, lambda: self._program_ended(hooks, run))
            if not state.server_pid or tmux_runs.server_of(state.pid) != state.server_pid:
                watch.cancel()  # its pid is not the program's any more: it has gone
                self._program_ended(hooks, run)
                return
            self.watch = watch

    def let_go(self, hooks: RunHooks, run: Run) -> None:
        if self.watch is not None:
            self.watch.cancel()
            self.watch = None

    def _program_ended(self, hooks: RunHooks, run: Run) -> None:
        self.let_go(hooks, run)
        hooks.task(self._program_gone(hooks, run))

    async def _program_gone(self, hooks: RunHooks, run: Run) -> None:
        assert self.tmux is not None
        with contextlib.suppress(tmux_runs.TmuxError):
            _, ending = await tmux_runs.pane_ending(self.tmux, self.pane, ended=True)
            if self.ending is None:
                self.ending = ending
        # The hook detaches the client; where tmux missed the death, this
        # (a moment later: the hook's "[detached]" says less than "[lost tty]").
        await asyncio.sleep(HOOK_GRACE)
        if run.running and not run.told:
            hooks.signal_group(run, signal.SIGHUP)

    def asks_ending(self, hooks: RunHooks, run: Run) -> bool:
        """The client ended: how the pane's program did, tmux knows."""
        if run.closing or self.asked or self.tmux is None:
            return False
        self.asked = True
        hooks.task(self._ask_ending(hooks, run))
        return True

    async def _ask_ending(self, hooks: RunHooks, run: Run) -> None:
        assert self.tmux is not None
        present, ending, failed = True, self.ending, ""
        if ending is None:
            try:
                present, ending = await tmux_runs.pane_ending(self.tmux, self.pane)
            except tmux_runs.TmuxError as err:
                present, ending, failed = False, None, str(err)
        if run.closing:
            pass  # closed meanwhile: 129, as closed
        elif ending is not None:
            run.ending = ending
            screen = await last_screen(self.tmux, self.pane)
            # The client's last words first (it leaves the alternate screen,
            # which would take the screen with it): they reach the master a
            # moment after the client has gone, up to its end of file.
            deadline = time.monotonic() + DRAIN_GRACE
            while not run.eof and not run.throttled and time.monotonic() < deadline:
                hooks.read(run)
                if not run.eof:
                    await asyncio.sleep(0.01)
            hooks.relay(run, screen)
            await forget_pane(self.tmux, self.pane)  # told: the pane goes
        elif present:
            # Detached (from tmux, or by another client): the program runs on.
            run.ending = Ending(CLOSED_CODE, 0, "detached", "detached: the program goes on in tmux")
        else:
            said = failed or "its tmux session or pane was killed"
            run.ending = Ending(CLOSED_CODE, signal.SIGHUP, "signal", said)
        hooks.reaped(run)

    def signal(self, hooks: RunHooks, run: Run, signum: int) -> None:
        """The program is the pane's, not the client's."""
        if self.tmux is not None:
            hooks.task(signal_pane(self.tmux, self.pane, signum))

    # -- the sessions --------------------------------------------------------

    @classmethod
    async def sessions(cls, hooks: RunHooks, where: object, ssh: object, wait: float) -> dict[str, Any]:
        try:
            found = await list_sessions(server(where))
        except tmux_runs.TmuxError as err:
            return {"error": str(err)}
        return {"sessions": [s.as_dict() for s in found]}

    @classmethod
    async def kill_session(
        cls, hooks: RunHooks, where: object, name: object, ssh: object, wait: float
    ) -> dict[str, Any]:
        try:
            return {"name": str(name), "ended": await kill(server(where), str(name))}
        except tmux_runs.TmuxError as err:
            return {"error": str(err)}

    @classmethod
    async def prepare(cls, hooks: RunHooks, spec: object) -> dict[str, Any]:
        """Make the pane of a tmux run's program, or find the one to
        re-attach to; the errors reach the caller before any pane opens."""
        if not isinstance(spec, dict):
            return {"error": "a tmux run is described by a table"}
        try:
            tmux = server(spec.get("server"))
            argv = [str(a) for a in spec.get("argv") or []]
            # The login shell's PATH is the session's: asked once, waited
            # for here (the editor waits for this answer anyway).
            login = await hooks.login_path.wait(LOGIN_PATH_WAIT)
            env = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
            env.setdefault("PATH", login.path if login else os.environ.get("PATH", os.defpath))
            # The user's environment as it was before the editor and the
            # plugin added theirs: a server these commands start keeps it.
            given = spec.get("server_env")
            server_env = (
                {str(k): str(v) for k, v in given.items()} if isinstance(given, dict) else dict(os.environ)
            )
            server_env.pop("TMUX", None)
            cwd = str(spec.get("cwd") or os.getcwd())
            if not os.path.isdir(cwd):
                raise tmux_runs.TmuxError(f"cwd {cwd!r} is not a folder")
            rows, cols = int(spec.get("rows") or 24), int(spec.get("cols") or 80)
            if argv:
                # As for any run: a program that cannot start is told apart
                # (127, not found or not executable) before anything is made.
                executable, reason, message = resolve(argv[0], env["PATH"], cwd)
                if executable is None:
                    ending = Ending(NOT_STARTED_CODE, 0, reason, message)
                    return {"session": tmux_runs.session_name(spec.get("name")), "ended": ending.as_dict()}
            prepared = await prepare_pane(tmux, spec.get("name"), argv, cwd, env, rows, cols, server_env)
        except (tmux_runs.TmuxError, ValueError, TypeError) as err:
            return {"error": str(err)}
        answer: dict[str, Any] = {
            "session": prepared.session,
            "pane": prepared.pane,
            "attach": prepared.attach,
        }
        if prepared.ending is not None:
            answer["ended"] = prepared.ending.as_dict()
        return answer
