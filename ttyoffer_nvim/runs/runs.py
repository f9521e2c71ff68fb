"""Runs: one interactive program on a terminal of its own, and how it ended.

The host is the program's parent: it allocates the pty, starts the program
as the leader of a new session with the pty as its controlling terminal,
relays the terminal to the editor's pane (with the offers' flow control) and
learns the program's own exit through a pidfd, not the terminal's: a
background process the program left holding the terminal cannot hide it.

How a run ends, as the editor is told (an ending.Ending's `reason`):

* ``exited``: the program's exit status;
* ``signal``: killed by a signal: 128 + its number, and the number;
* ``not_found`` / ``not_executable`` / ``cannot_start``: 127, nothing ran;
* ``closed``: the user closed the pane while it ran: its process group is
  hung up, killed KILL_AFTER later if it is still there, and 129 is told
  whatever it died of.

Signals go to a process only while it is unreaped (a zombie keeps its pid
and its group's id from being used again), and reaping happens on the same
loop that signals, so a signal can never reach a recycled pid. When the host
ends (the editor quit or was killed), every run still going is hung up the
same way before the host exits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from ..term.hangup import hang_up_holders, holders, slave_held_elsewhere
from ..term.ptys import Pty, open_pty, set_winsize
from ..term.relay import Relay
from ..term.sequences import SequenceFilter
from .ending import Ending
from .kinds.base import EndedBefore, NotStarted, RunKind
from .program import CLOSED_CODE, NOT_STARTED_CODE, hold_off_sigterm, line_mode, resolve, spawn_on_terminal
from .runspec import RunSpec, run_environment
from .shellenv import LoginPath, LoginPathCache, login_shell

# Seconds between the hang-up of a closed run's process group and its kill.
KILL_AFTER = 0.2
# Seconds an exit waits for output still on its way (a throttled relay).
DRAIN_GRACE = 0.25

T = TypeVar("T")


class RunPresenter(Protocol):
    def run_started(self, run: Run) -> None: ...

    def run_output(self, run: Run, data: bytes) -> None: ...

    def run_exit(self, run: Run) -> None: ...

    def remote_answer(self, dest: str, action: str, name: str, answer: dict[str, Any]) -> None: ...


@dataclass
class Run:
    id: int
    spec: RunSpec
    pty: Pty | None = None
    pid: int = 0
    pidfd: int = -1
    reaped: bool = False
    # Set once the end is known: what is told.
    ending: Ending | None = None
    told: bool = False
    closing: bool = False
    forgotten: bool = False
    # The output's flow control and the keys typed in the pane, once the
    # pty is open.
    relay: Relay | None = None
    eof: bool = False
    sequences: SequenceFilter = field(default_factory=SequenceFilter)
    timers: list[asyncio.TimerHandle] = field(default_factory=list)
    # Keys were typed into its terminal with echo off in line mode (a
    # password being asked), and since then neither a line typed with echo
    # on nor a raw terminal (a session begun): the keys still being typed
    # when it ends are a secret (the next password, typed ahead of a
    # question that never comes).
    typing_secret: bool = False

    @property
    def kind(self) -> RunKind:
        """What kind of run it is (kinds/), with what the kind keeps of it."""
        return self.spec.kind

    @property
    def session(self) -> str:
        """Its session's name as the editor is told it ('' for none)."""
        return self.spec.kind.session

    @property
    def throttled(self) -> bool:
        return self.relay is not None and self.relay.throttled

    @property
    def running(self) -> bool:
        return self.pid > 0 and not self.reaped


class RunTable:
    """All runs of one host. Every method runs on the host's event loop.
    It is the kinds' RunHooks: what it lends them is public."""

    def __init__(self, loop: asyncio.AbstractEventLoop, presenter: RunPresenter, env: dict[str, str]) -> None:
        self.loop = loop
        self.presenter = presenter
        self._runs: dict[int, Run] = {}
        self._tasks: set[asyncio.Task[object]] = set()
        self._shared: dict[str, Any] = {}
        self.login_path = LoginPathCache(loop, env)
        atexit.register(self.hang_up_all)

    # -- lifecycle ---------------------------------------------------------

    def start(self, run_id: int, spec: RunSpec | str) -> None:
        """Start it once the login shell's PATH is known (asked once per
        host). `spec` is a message when the editor's description was not
        one: the run ends at once with 127 and that message."""
        if run_id in self._runs:
            return
        if isinstance(spec, str):
            self._not_started(Run(run_id, RunSpec([], "", {}, {}, 1, 1)), "cannot_start", spec)
            return
        run = Run(run_id, spec)
        self._runs[run_id] = run
        hold_off_sigterm()
        self.login_path.get(lambda login: self._spawn(run, login))

    def _spawn(self, run: Run, login: LoginPath) -> None:
        if run.forgotten:
            return
        spec = run.spec
        cwd = spec.cwd or os.getcwd()
        if not os.path.isdir(cwd):
            self._not_started(run, "cannot_start", f"{cwd}: not a directory")
            return
        try:
            run.pty = open_pty(spec.rows, spec.cols)
        except OSError as err:
            self._not_started(run, "cannot_start", f"cannot open a pty: {err.strerror or err}")
            return
        run.relay = Relay(self.loop, run.pty.master)
        run.relay.on_readable = lambda: self.read(run)
        env = run_environment(spec, login.path, run.pty.slave_path)
        # What the pane's terminal runs, and what it shows first: the
        # program itself, or its kind's client (dtach, tmux, ssh).
        program = run.kind.program(self, run, spec.argv or [login_shell(env), "-l"], env, cwd)
        if isinstance(program, NotStarted):
            self._not_started(run, program.reason, program.message)
            return
        if isinstance(program, EndedBefore):
            self._ended_before(run, program)
            return
        argv = program.argv
        executable, reason, message = resolve(argv[0], env["PATH"], cwd)
        if executable is None:
            self._not_started(run, reason, message)
            return
        try:
            run.pid = spawn_on_terminal(executable, argv, env, cwd, run.pty.slave_path)
        except OSError as err:
            reason = "not_executable" if isinstance(err, PermissionError) else "cannot_start"
            self._not_started(run, reason, f"{argv[0]}: {err.strerror or err}")
            return
        self._watch(run, program.first)

    def _watch(self, run: Run, first: bytes) -> None:
        """The program started: its exit and its output are watched from now
        on, and the pane told."""
        assert run.pty is not None and run.relay is not None
        # Held until the program had it open: a pty whose slave nobody has
        # open reads as hung up. Ours no longer: EOF on the master now means
        # nobody holds the terminal any more.
        run.pty.close_slave()
        try:
            run.pidfd = os.pidfd_open(run.pid)
        except OSError:
            run.pidfd = -1
        if run.pidfd >= 0:
            self.loop.add_reader(run.pidfd, self._check_exit, run)
        else:  # no pidfds (old kernel): poll
            self._poll_exit(run)
        run.relay.watch()
        run.kind.started(self, run)
        self.presenter.run_started(run)
        if first:
            self.relay(run, first)

    def _ended_before(self, run: Run, ended: EndedBefore) -> None:
        """The run's session had ended while no pane was attached: the run
        is that ending, after what it printed."""
        if run.pty is not None:
            run.pty.close()
        run.ending = ended.ending
        self.presenter.run_started(run)
        self.relay(run, ended.tail)
        self._tell_exit(run)

    def _not_started(self, run: Run, reason: str, message: str) -> None:
        run.ending = Ending(NOT_STARTED_CODE, 0, reason, message)
        if run.pty is not None:
            run.pty.close()
        self._tell_exit(run)

    def close(self, run_id: int) -> None:
        """The pane is closed: hang up what still runs, and forget the run."""
        run = self._runs.get(run_id)
        if run is None:
            return
        run.forgotten = True
        if run.running:
            if not run.told:
                run.ending = Ending(CLOSED_CODE, signal.SIGHUP, "closed")
            run.closing = True
            self.signal_group(run, signal.SIGHUP)
            self.later(run, KILL_AFTER, self.signal_group, run, signal.SIGKILL)
            return  # the rest when it has gone (reaped)
        self._let_go(run)

    def signal(self, run_id: int, signum: int) -> None:
        """run:kill(sig): to the program itself, while it is unreaped (where
        that is, its kind knows: a session's program, not its client)."""
        run = self._runs.get(run_id)
        if run is not None and run.running:
            run.kind.signal(self, run, signum)

    def hang_up_all(self) -> None:
        """The host is ending: every run still going is hung up, and killed
        KILL_AFTER later if it is still there. Blocks that long at most."""
        running = [run for run in self._runs.values() if run.running]
        for run in running:
            self.signal_group(run, signal.SIGHUP)
        deadline = time.monotonic() + KILL_AFTER
        while running and time.monotonic() < deadline:
            running = [run for run in running if not self._reap(run)]
            if running:
                time.sleep(0.01)
        for run in running:
            self.signal_group(run, signal.SIGKILL)
            self._reap(run, block=True)
        for run in list(self._runs.values()):
            self._let_go(run, now=True)

    # -- relay ---------------------------------------------------------------

    def write(self, run_id: int, data: bytes) -> None:
        run = self._runs.get(run_id)
        if run is not None and run.relay is not None and run.pty is not None and run.pty.master >= 0:
            echo, canonical = line_mode(run.pty.master)
            if canonical and not echo:
                run.typing_secret = True
            elif not canonical or b"\r" in data or b"\n" in data:
                run.typing_secret = False
            run.relay.write(data)

    def acknowledge(self, run_id: int, count: int) -> None:
        run = self._runs.get(run_id)
        if run is not None and run.relay is not None:
            run.relay.acknowledge(count, resume=run.pty is not None and run.pty.master >= 0)

    def resize(self, run_id: int, rows: int, cols: int) -> None:
        run = self._runs.get(run_id)
        if run is not None and run.pty is not None and run.pty.master >= 0 and rows > 0 and cols > 0:
            with contextlib.suppress(OSError):
                set_winsize(run.pty.master, rows, cols)

    # -- queries -------------------------------------------------------------

    def get(self, run_id: int) -> Run | None:
        return self._runs.get(run_id)

    def __len__(self) -> int:
        return len(self._runs)

    # -- what the kinds are lent (kinds.base.RunHooks) -------------------------

    def read(self, run: Run) -> None:
        """What the terminal holds now, shown as the run's kind shows it."""
        if run.relay is None or run.pty is None or run.pty.master < 0:
            return
        data, eof = run.relay.read_batch()
        run.eof = run.eof or eof
        if run.typing_secret and data and not line_mode(run.pty.master)[1]:
            run.typing_secret = False  # raw: a session began (the password was taken)
        run.kind.show(self, run, data, run.eof)

    def relay(self, run: Run, data: bytes) -> None:
        data = run.sequences.feed(data) if data else b""
        if data:
            if run.relay is not None:
                run.relay.relayed(len(data))
            self.presenter.run_output(run, data)

    def later(self, run: Run, delay: float, callback: Callable[..., object], *args: object) -> None:
        run.timers.append(self.loop.call_later(delay, callback, *args))

    def task(self, work: Coroutine[Any, Any, object]) -> None:
        """Run `work` on the loop, held until done (the loop holds tasks
        weakly only)."""
        task = self.loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def shared(self, name: str, make: Callable[[], T]) -> T:
        if name not in self._shared:
            self._shared[name] = make()
        found: T = self._shared[name]
        return found

    def signal_group(self, run: Run, signum: int) -> None:
        """To the program's process group, only while the program is unreaped.
        A session's client (a persistent run's dtach, a remote run's ssh) is
        signalled alone: the session's master is its child until it has
        left the group (setsid), and a hang-up then must not end the session
        it is making."""
        if run.running and not self._reap(run):
            with contextlib.suppress(OSError):
                if run.kind.client_alone:
                    os.kill(run.pid, signum)
                else:
                    os.killpg(run.pid, signum)

    def reaped(self, run: Run) -> None:
        """The program is gone: tell, once what it wrote before is relayed."""
        if run.told:
            self._finish_if_forgotten(run)
            return
        if run.kind.asks_ending(self, run):
            return  # asked: this comes again once it is known
        self.read(run)  # what it wrote last, within the window
        if run.throttled:
            self.later(run, DRAIN_GRACE, self._tell_exit, run)
        else:
            self._tell_exit(run)

    # -- internals -----------------------------------------------------------

    def _poll_exit(self, run: Run) -> None:
        if not self._check_exit(run):
            self.later(run, 0.05, self._poll_exit, run)

    def _check_exit(self, run: Run) -> bool:
        if not self._reap(run):
            return False
        if run.pidfd >= 0:
            self.loop.remove_reader(run.pidfd)
            os.close(run.pidfd)
            run.pidfd = -1
        self.reaped(run)
        return True

    def _reap(self, run: Run, block: bool = False) -> bool:
        """Reap the program if it has ended, noting how; whether it has."""
        if run.reaped:
            return True
        if run.pid <= 0:
            return False
        try:
            info = os.waitid(os.P_PID, run.pid, os.WEXITED | (0 if block else os.WNOHANG))
        except ChildProcessError:
            info = None  # reaped elsewhere: ended, how is not known
        except OSError:
            return False
        else:
            if info is None:  # WNOHANG, and it has not ended
                return False
        run.reaped = True
        if run.ending is None:
            run.ending = run.kind.ending_when_reaped(run)
        if run.ending is None:  # a closed run keeps the ending it was closed with
            run.ending = Ending(255) if info is None else Ending.of_wait(info.si_code, info.si_status)
        return True

    def _tell_exit(self, run: Run) -> None:
        if run.told:
            return
        told = run.kind.told_ending(run)
        if told is not None:
            run.ending = told
        run.told = True
        self.presenter.run_exit(run)
        self._finish_if_forgotten(run)

    def _finish_if_forgotten(self, run: Run) -> None:
        if run.forgotten:
            self._let_go(run)

    def _let_go(self, run: Run, now: bool = False) -> None:
        """Every descriptor and timer of the run goes. What still holds its
        terminal (a background process the program left) is hung up first,
        and killed KILL_AFTER later if it holds it still: the master stays
        open until then, so the terminal's path names no other terminal
        and what is found holding it is still ours to kill."""
        for timer in run.timers:
            timer.cancel()
        run.timers.clear()
        run.kind.let_go(self, run)
        if run.pidfd >= 0:
            self.loop.remove_reader(run.pidfd)
            with contextlib.suppress(OSError):
                os.close(run.pidfd)
            run.pidfd = -1
        self._runs.pop(run.id, None)
        pty = run.pty
        if pty is None or pty.master < 0:
            return
        if run.relay is not None:
            run.relay.stop()
        pty.close_slave()
        spare = run.kind.spare_holders()
        if not hang_up_holders(pty.master, pty.slave_path, spare) or now:
            pty.close()
            return
        self.loop.call_later(KILL_AFTER, self._kill_holders, pty, spare)

    def _kill_holders(self, pty: Pty, spare: frozenset[int] = frozenset()) -> None:
        with contextlib.suppress(OSError, ValueError):
            if slave_held_elsewhere(pty.master):
                for pid in holders(pty.slave_path):
                    if pid not in spare:
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)
        pty.close()
