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
import shutil
import signal
import termios
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..term import jobsignals
from ..term.hangup import hang_up_holders, holders, slave_held_elsewhere
from ..term.ptys import Pty, open_pty, set_winsize
from ..term.relay import Relay
from ..term.sequences import SequenceFilter
from . import remote, sessions
from . import tmux as tmux_runs
from .ending import Ending
from .shellenv import LoginPath, LoginPathCache, login_shell

# Seconds between the hang-up of a closed run's process group and its kill.
KILL_AFTER = 0.2
# Seconds an exit waits for output still on its way (a throttled relay).
DRAIN_GRACE = 0.25
# Seconds the start of what could be dtach's clear-screen is held back
# waiting for the rest of it (it comes in the same write, or just after).
HELD_FOR = 0.05
CLOSED_CODE = 128 + signal.SIGHUP
# Seconds a tmux run's client is left to the pane-died hook once its program
# is seen gone, before it is hung up.
TMUX_HOOK_GRACE = 0.3
NOT_STARTED_CODE = 127
TERM = "xterm-256color"


class RunPresenter(Protocol):
    def run_started(self, run: Run) -> None: ...

    def run_output(self, run: Run, data: bytes) -> None: ...

    def run_exit(self, run: Run) -> None: ...


@dataclass
class RunSpec:
    argv: list[str]
    cwd: str
    # The editor's environment, and the caller's on top of it.
    base_env: dict[str, str]
    env: dict[str, str]
    rows: int
    cols: int
    # A persistent run: the session's name as the caller gave it (it goes
    # through sessions.sanitize_name before any use); "" for a plain run.
    persist: str = ""
    # A tmux run (its program is a tmux client attached to the pane of the
    # user's program): {server, pane}; None for others.
    tmux: dict[str, str] | None = None
    # A persistent run on another machine: the ssh destination, and the
    # ssh command (runs.ssh) that reaches it.
    host: str = ""
    ssh: list[str] = field(default_factory=lambda: ["ssh"])


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
    # A persistent run: its session's name and files, and the stripper of
    # dtach's clear-screen on attach.
    session: str = ""
    session_paths: sessions.SessionPaths | None = None
    clear_stripper: sessions.ClearStripper | None = None
    # A tmux run: the server, and the pane whose program's ending is told.
    tmux: tmux_runs.Tmux | None = None
    tmux_pane: str = ""
    tmux_asked: bool = False
    # The pane's program, watched through a pidfd of its own: tmux does not
    # always see it die (tmux.zombie_ending).
    tmux_pidfd: int = -1
    tmux_ending: Ending | None = None
    # A run on another machine: the markers of its connection.
    remote: remote.Stream | None = None
    # Keys were typed into its terminal with echo off in line mode (a
    # password being asked), and since then neither a line typed with echo
    # on nor a raw terminal (a session begun): the keys still being typed
    # when it ends are a secret (the next password, typed ahead of a
    # question that never comes).
    typing_secret: bool = False

    @property
    def throttled(self) -> bool:
        return self.relay is not None and self.relay.throttled

    @property
    def running(self) -> bool:
        return self.pid > 0 and not self.reaped


def run_environment(spec: RunSpec, login_path: str, slave_path: str) -> dict[str, str]:
    """The editor's environment, the login shell's PATH, the caller's `env`
    over both; TERM for the pane's terminal unless the caller names one, and
    GPG_TTY always the run's own terminal (never the editor's screen)."""
    env = dict(spec.base_env)
    env["PATH"] = login_path
    env.update(spec.env)
    env.setdefault("TERM", TERM)
    if "TERM" not in spec.env:
        env["TERM"] = TERM
    env["GPG_TTY"] = slave_path
    return env


def line_mode(master: int) -> tuple[bool, bool]:
    """(echo, canonical) of the terminal: its own mode, read through the
    master (Linux gives the pair's termios there). A program asking a
    password turns echo off and keeps lines (getpass, readpassphrase); one
    reading keys (an editor, ssh's session) turns both off."""
    try:
        lflag = termios.tcgetattr(master)[3]
    except (OSError, termios.error):
        return True, True
    return bool(lflag & termios.ECHO), bool(lflag & termios.ICANON)


def resolve(program: str, path: str, cwd: str) -> tuple[str | None, str, str]:
    """(the file to execute, or None; the reason; a message for the pane)."""
    if "/" in program:
        candidate = program if os.path.isabs(program) else os.path.join(cwd, program)
        if not os.path.exists(candidate):
            return None, "not_found", f"{program}: no such file"
        if os.path.isdir(candidate) or not os.access(candidate, os.X_OK):
            return None, "not_executable", f"{program}: not executable"
        return candidate, "", ""
    found = shutil.which(program, path=path)
    if found is None:
        # Something by that name that cannot be executed says more than
        # "not found".
        for entry in path.split(":"):
            candidate = os.path.join(entry, program)
            if entry and os.path.isfile(candidate):
                return None, "not_executable", f"{program}: not executable ({candidate})"
        return None, "not_found", f"{program}: not found in PATH"
    return found, "", ""


def spawn_on_terminal(
    executable: str, argv: list[str], env: dict[str, str], cwd: str, slave_path: str
) -> int:
    """Start `executable` as the leader of a new session whose controlling
    terminal is the pty at `slave_path`; its pid.

    posix_spawn (a vfork underneath) rather than a fork of the whole host:
    the difference is most of the time to the program's first output.
    glibc runs setsid() before the file actions, so opening the terminal
    (without O_NOCTTY) makes it the controlling one. Python 3.11's
    posix_spawn has no chdir action: the host, single-threaded on its loop,
    stands in `cwd` for the call and goes back."""
    back = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.chdir(cwd)
        return os.posix_spawn(
            executable,
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, slave_path, os.O_RDWR, 0),
                (os.POSIX_SPAWN_DUP2, 0, 1),
                (os.POSIX_SPAWN_DUP2, 0, 2),
            ],
            setsid=True,
            # The signals a job starts with (jobsignals), not the host's.
            setsigmask=(),
            setsigdef=jobsignals.RESET,
        )
    finally:
        os.fchdir(back)
        os.close(back)


def hold_off_sigterm() -> None:
    """The host keeps SIGTERM blocked once it has runs. Neovim ending closes
    the host's stdin and sends it SIGTERM at about the same time; the host's
    loop stops at either, and the runs are hung up on the way out
    (hang_up_all, at exit). A SIGTERM delivered then would end the host in
    the middle of it and leave a program that ignores SIGHUP running for
    good; blocked, it never is, and the closed stdin ends the host instead.
    (Neovim sends SIGKILL to a child that has not ended 2 s later: the runs'
    terminals then close with the host, and the kernel hangs them up.)"""
    if threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


class RunTable:
    """All runs of one host. Every method runs on the host's event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, presenter: RunPresenter, env: dict[str, str]) -> None:
        self._loop = loop
        self._presenter = presenter
        self._runs: dict[int, Run] = {}
        self._tmux_tasks: set[asyncio.Task[object]] = set()
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
        run.relay = Relay(self._loop, run.pty.master)
        run.relay.on_readable = lambda: self._on_readable(run)
        env = run_environment(spec, login.path, run.pty.slave_path)
        if spec.tmux is not None and not self._tmux_target(run, spec.tmux):
            return
        program = self._program(run, spec.argv or [login_shell(env), "-l"], env, cwd)
        if program is None:
            return
        argv, first = program
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
        self._watch(run, first)

    def _program(
        self, run: Run, argv: list[str], env: dict[str, str], cwd: str
    ) -> tuple[list[str], bytes] | None:
        """What the pane's terminal runs, and what it shows first: the
        program itself; or ssh, for a run on another machine; or the dtach
        client of a persistent session. None when the run has ended already
        (it could not start, or its session had ended before)."""
        spec = run.spec
        if spec.host:
            built = remote.command(
                spec.ssh, spec.host, "run", spec.persist, spec.argv, os.environ.get("XDG_RUNTIME_DIR")
            )
            if isinstance(built, str):
                self._not_started(run, "cannot_start", built)
                return None
            # The run's program is ssh; the session is the remote one.
            run.session, run.remote = built.name, remote.Stream(built.nonce)
            return built.argv, b""
        if not spec.persist:
            return argv, b""
        persistent = self._persistent(run, argv, env, cwd)
        if isinstance(persistent, Ending):
            self._ended_before(run, persistent)
            return None
        if isinstance(persistent[1], str):
            self._not_started(run, persistent[0], persistent[1])
            return None
        return persistent[0], persistent[1]

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
            self._loop.add_reader(run.pidfd, self._check_exit, run)
        else:  # no pidfds (old kernel): poll
            self._poll_exit(run)
        run.relay.watch()
        if run.tmux is not None:
            self._tmux_task(self._tmux_watch(run))
        self._presenter.run_started(run)
        if first:
            self._relay(run, first)

    def _persistent(
        self, run: Run, argv: list[str], env: dict[str, str], cwd: str
    ) -> tuple[list[str], bytes] | tuple[str, str] | Ending:
        """The argv that attaches to (or creates) the run's dtach session,
        and what to show first; (reason, message) when there can be none;
        the Ending of a session whose program ended while nobody looked,
        when no command was given (the run is that ending). Without dtach
        the run goes on as a plain one, and says so."""
        dtach = shutil.which("dtach", path=env["PATH"])
        if dtach is None:
            note = "(ttyoffer) no dtach: this run ends with the editor (sudo apt-get install dtach)\r\n"
            return argv, note.encode()
        refused = sessions.refusal(run.spec.persist)
        if refused is not None:
            return "cannot_start", refused
        try:
            folder = sessions.session_folder(os.environ.get("XDG_RUNTIME_DIR"))
        except (OSError, sessions.SessionFolderError) as err:
            return "cannot_start", f"no session folder: {err}"
        session = sessions.paths(folder, run.spec.persist)
        run.session, run.session_paths = session.name, session
        # The session's programs have a terminal of their own (script's, or
        # dtach's): this pane's, which goes at the next detach, is not it.
        env.pop("GPG_TTY", None)
        table = sessions.ProcessTable()
        if table.master(session.socket) is not None:
            first = b""
            if run.spec.argv:
                running = table.foreground_command(table.master(session.socket) or 0) or "its program"
                first = (
                    f"(ttyoffer) session {session.name} is running {running} already: attached to it; "
                    f"the command given was not run\r\n"
                ).encode()
            # dtach clears the screen as the pane attaches: not over the tail.
            run.clear_stripper = sessions.ClearStripper(time.monotonic())
            return sessions.attach_argv(dtach, session), first + sessions.replay(session)
        if table.holders(session.socket):
            return "cannot_start", f"session {session.name} is being made by another editor; try again"
        ending = sessions.read_ending(session)
        if ending is not None and not run.spec.argv:
            return ending
        # Made afresh: what an earlier session of the name left goes first.
        sessions.forget(session)
        executable, reason, message = resolve(argv[0], env["PATH"], cwd)
        if executable is None:
            return reason, message
        try:
            sessions.make_fifo(session)
        except OSError as err:
            return "cannot_start", f"cannot make {session.fifo}: {err.strerror or err}"
        script = shutil.which("script", path=env["PATH"])
        attach, extra_env = sessions.create_argv(dtach, script, session, argv, login_shell(env))
        env.update(extra_env)
        return attach, b""

    def _ended_before(self, run: Run, ending: Ending) -> None:
        """The session's program ended while no pane was attached: the run
        is that ending, after what it printed; its files go (it was seen)."""
        assert run.session_paths is not None
        tail = sessions.replay(run.session_paths)
        sessions.forget(run.session_paths)
        if run.pty is not None:
            run.pty.close()
        note = f"session {run.session} had ended"
        message = f"{ending.message} ({note})" if ending.message else note
        run.ending = Ending(ending.code, ending.signal, ending.reason, message)
        self._presenter.run_started(run)
        self._relay(run, tail)
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
            self._signal_group(run, signal.SIGHUP)
            run.timers.append(self._loop.call_later(KILL_AFTER, self._signal_group, run, signal.SIGKILL))
            return  # the rest when it has gone (_reaped)
        self._let_go(run)

    def signal(self, run_id: int, signum: int) -> None:
        """run:kill(sig): to the program itself, while it is unreaped (a
        persistent run's: the session's program, not the dtach client)."""
        run = self._runs.get(run_id)
        if run is None or not run.running:
            return
        if run.session_paths is not None:
            sessions.signal_program(run.session_paths, signum)
            return
        if run.tmux is not None:
            # The program is the pane's, not the client's.
            self._tmux_task(tmux_runs.signal_pane(run.tmux, run.tmux_pane, signum))
            return
        with contextlib.suppress(OSError, ValueError):
            if run.pidfd >= 0:
                signal.pidfd_send_signal(run.pidfd, signum)
            else:
                os.kill(run.pid, signum)

    def hang_up_all(self) -> None:
        """The host is ending: every run still going is hung up, and killed
        KILL_AFTER later if it is still there. Blocks that long at most."""
        running = [run for run in self._runs.values() if run.running]
        for run in running:
            self._signal_group(run, signal.SIGHUP)
        deadline = time.monotonic() + KILL_AFTER
        while running and time.monotonic() < deadline:
            running = [run for run in running if not self._reap(run)]
            if running:
                time.sleep(0.01)
        for run in running:
            self._signal_group(run, signal.SIGKILL)
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

    # -- internals -----------------------------------------------------------

    def _on_readable(self, run: Run) -> None:
        if run.relay is None or run.pty is None or run.pty.master < 0:
            return
        data, eof = run.relay.read_batch()
        run.eof = run.eof or eof
        if run.typing_secret and data and not line_mode(run.pty.master)[1]:
            run.typing_secret = False  # raw: a session began (the password was taken)
        if run.remote is not None:
            for part in run.remote.feed(data) + ([run.remote.flush()] if run.eof else []):
                if isinstance(part, str):
                    # What came before was the replay; dtach's clear follows.
                    run.clear_stripper = sessions.ClearStripper(time.monotonic())
                else:
                    self._strip_and_relay(run, part)
            return
        self._strip_and_relay(run, data)

    def _strip_and_relay(self, run: Run, data: bytes) -> None:
        if run.clear_stripper is not None:
            data = run.clear_stripper.feed(data, time.monotonic())
            if run.clear_stripper.done:
                run.clear_stripper = None
            elif run.clear_stripper.holding:
                # A program that stops after "ESC [ H" (cursor home) must not
                # wait for its next write to have it shown.
                run.timers.append(self._loop.call_later(HELD_FOR, self._release_held, run))
        self._relay(run, data)

    def _release_held(self, run: Run) -> None:
        if run.clear_stripper is not None and run.clear_stripper.holding:
            self._relay(run, run.clear_stripper.flush())

    def _relay(self, run: Run, data: bytes) -> None:
        data = run.sequences.feed(data) if data else b""
        if data:
            if run.relay is not None:
                run.relay.relayed(len(data))
            self._presenter.run_output(run, data)

    def _poll_exit(self, run: Run) -> None:
        if not self._check_exit(run):
            run.timers.append(self._loop.call_later(0.05, self._poll_exit, run))

    def _check_exit(self, run: Run) -> bool:
        if not self._reap(run):
            return False
        if run.pidfd >= 0:
            self._loop.remove_reader(run.pidfd)
            os.close(run.pidfd)
            run.pidfd = -1
        self._reaped(run)
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
        if run.ending is None and run.session_paths is not None:
            self._session_ending(run, run.session_paths)
        if run.ending is None:  # a closed run keeps the ending it was closed with
            run.ending = Ending(255) if info is None else Ending.of_wait(info.si_code, info.si_status)
        return True

    def _session_ending(self, run: Run, session: sessions.SessionPaths) -> None:
        """The dtach client ended by itself: the session's program's ending
        (written by its wrapper before dtach's master, then the client,
        went), and the session's files go; or, with none written, what
        became of the session."""
        ending = sessions.read_ending(session)
        if ending is not None:
            run.ending = ending
            # Its program has ended: the session is over (its master may
            # still be on its way out), and this pane saw the end.
            sessions.forget(session)
            return
        if sessions.live(session.socket):
            run.ending = Ending(
                CLOSED_CODE, signal.SIGHUP, "closed", f"detached: session {run.session} goes on"
            )
        else:
            run.ending = Ending(255, 0, "exited", f"session {run.session} ended without its program's ending")
            sessions.forget(session)

    def _reaped(self, run: Run) -> None:
        """The program is gone: tell, once what it wrote before is relayed."""
        if run.told:
            self._finish_if_forgotten(run)
            return
        if run.tmux is not None and not run.closing and not run.tmux_asked:
            # The client ended: how the pane's program did, tmux knows.
            run.tmux_asked = True
            self._tmux_task(self._tmux_ending(run))
            return
        self._on_readable(run)  # what it wrote last, within the window
        if run.throttled:
            run.timers.append(self._loop.call_later(DRAIN_GRACE, self._tell_exit, run))
        else:
            self._tell_exit(run)

    def _tell_exit(self, run: Run) -> None:
        if run.told:
            return
        if run.remote is not None and (run.ending is None or run.ending.reason != "closed"):
            code = None if run.ending is None else run.ending.code
            told = remote.told_ending(run.remote, run.spec.host, run.session, code)
            if told is not None:
                run.ending = told
        run.told = True
        self._presenter.run_exit(run)
        self._finish_if_forgotten(run)

    def _finish_if_forgotten(self, run: Run) -> None:
        if run.forgotten:
            self._let_go(run)

    def _signal_group(self, run: Run, signum: int) -> None:
        """To the program's process group, only while the program is unreaped.
        A persistent run's program is the dtach client alone: the session's
        master is its child until it has left the group (setsid), and a
        hang-up then must not end the session it is making."""
        if run.running and not self._reap(run):
            with contextlib.suppress(OSError):
                if run.session:
                    os.kill(run.pid, signum)
                else:
                    os.killpg(run.pid, signum)

    def _let_go(self, run: Run, now: bool = False) -> None:
        """Every descriptor and timer of the run goes. What still holds its
        terminal (a background process the program left) is hung up first,
        and killed KILL_AFTER later if it holds it still: the master stays
        open until then, so the terminal's path names no other terminal
        and what is found holding it is still ours to kill."""
        for timer in run.timers:
            timer.cancel()
        run.timers.clear()
        self._tmux_unwatch(run)
        if run.pidfd >= 0:
            self._loop.remove_reader(run.pidfd)
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
        spare = self._shared_connections(run)
        if not hang_up_holders(pty.master, pty.slave_path, spare) or now:
            pty.close()
            return
        self._loop.call_later(KILL_AFTER, self._kill_holders, pty, spare)

    def _kill_holders(self, pty: Pty, spare: frozenset[int] = frozenset()) -> None:
        with contextlib.suppress(OSError, ValueError):
            if slave_held_elsewhere(pty.master):
                for pid in holders(pty.slave_path):
                    if pid not in spare:
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)
        pty.close()

    @staticmethod
    def _shared_connections(run: Run) -> frozenset[int]:
        """A remote run's shared ssh connections, which may still hold its
        terminal a moment and are no leftover of its program
        (remote.shared_connections)."""
        if run.remote is None:
            return frozenset()
        with contextlib.suppress(OSError, ValueError, remote.ControlFolderError):
            folder = remote.control_folder(os.environ.get("XDG_RUNTIME_DIR"))
            return frozenset(remote.shared_connections(folder))
        return frozenset()

    # -- tmux runs: the program is a tmux client; the ending told, and what
    # kill() signals, are the program's in its pane (tmux.py) ---------------

    def _tmux_task(self, work: Coroutine[Any, Any, object]) -> None:
        """Run `work` on the loop, held until done (the loop holds tasks
        weakly only)."""
        task = self._loop.create_task(work)
        self._tmux_tasks.add(task)
        task.add_done_callback(self._tmux_tasks.discard)

    def _tmux_target(self, run: Run, target: dict[str, str]) -> bool:
        try:
            run.tmux = tmux_runs.for_server(target.get("server", ""), dict(os.environ))
            run.tmux_pane = tmux_runs.pane_id(target.get("pane", ""))
        except tmux_runs.TmuxError as err:
            self._not_started(run, "cannot_start", str(err))
            return False
        return True

    async def _tmux_watch(self, run: Run) -> None:
        """Watch the pane's program itself (a pidfd), once it is known to
        be the tmux server's child: its end ends the run even where tmux
        does not see it (the client would stay attached to a dead pane)."""
        assert run.tmux is not None
        with contextlib.suppress(tmux_runs.TmuxError):
            state = await tmux_runs.pane_state(run.tmux, run.tmux_pane)
            if state is None or state.dead or not run.running or run.forgotten:
                return
            try:
                pidfd = os.pidfd_open(state.pid)
            except OSError:
                return
            if not state.server_pid or tmux_runs.server_of(state.pid) != state.server_pid:
                os.close(pidfd)  # not the program any more
                return
            run.tmux_pidfd = pidfd
            self._loop.add_reader(pidfd, self._tmux_program_ended, run)

    def _tmux_unwatch(self, run: Run) -> None:
        if run.tmux_pidfd >= 0:
            self._loop.remove_reader(run.tmux_pidfd)
            with contextlib.suppress(OSError):
                os.close(run.tmux_pidfd)
            run.tmux_pidfd = -1

    def _tmux_program_ended(self, run: Run) -> None:
        self._tmux_unwatch(run)
        self._tmux_task(self._tmux_program_gone(run))

    async def _tmux_program_gone(self, run: Run) -> None:
        assert run.tmux is not None
        with contextlib.suppress(tmux_runs.TmuxError):
            _, ending = await tmux_runs.pane_ending(run.tmux, run.tmux_pane, ended=True)
            if run.tmux_ending is None:
                run.tmux_ending = ending
        # The hook detaches the client; where tmux missed the death, this
        # (a moment later: the hook's "[detached]" says less than "[lost tty]").
        await asyncio.sleep(TMUX_HOOK_GRACE)
        if run.running and not run.told:
            self._signal_group(run, signal.SIGHUP)

    async def _tmux_ending(self, run: Run) -> None:
        assert run.tmux is not None
        present, ending, failed = True, run.tmux_ending, ""
        if ending is None:
            try:
                present, ending = await tmux_runs.pane_ending(run.tmux, run.tmux_pane)
            except tmux_runs.TmuxError as err:
                present, ending, failed = False, None, str(err)
        if run.closing:
            pass  # closed meanwhile: 129, as closed
        elif ending is not None:
            run.ending = ending
            screen = await tmux_runs.last_screen(run.tmux, run.tmux_pane)
            # The client's last words first (it leaves the alternate screen,
            # which would take the screen with it): they reach the master a
            # moment after the client has gone, up to its end of file.
            deadline = time.monotonic() + DRAIN_GRACE
            while not run.eof and not run.throttled and time.monotonic() < deadline:
                self._on_readable(run)
                if not run.eof:
                    await asyncio.sleep(0.01)
            self._relay(run, screen)
            await tmux_runs.forget_pane(run.tmux, run.tmux_pane)  # told: the pane goes
        elif present:
            # Detached (from tmux, or by another client): the program runs on.
            run.ending = Ending(CLOSED_CODE, 0, "detached", "detached: the program goes on in tmux")
        else:
            said = failed or "its tmux session or pane was killed"
            run.ending = Ending(CLOSED_CODE, signal.SIGHUP, "signal", said)
        self._reaped(run)


def spec_from(args: object) -> RunSpec | str:
    """The editor's description of a run, checked again on this side; a
    message when it is not one."""
    if not isinstance(args, dict):
        return "a run is described by a table"
    persist = args.get("persist") or ""
    if not isinstance(persist, str):
        return "persist must be a session name"
    argv = args.get("argv") or []
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "argv must be a non-empty list of strings"
    # A persistent run without argv gets the login shell.
    if (not argv and not persist) or (argv and not argv[0]):
        return "argv must be a non-empty list of strings"
    cwd = args.get("cwd") or ""
    if not isinstance(cwd, str):
        return "cwd must be a string"
    envs: list[dict[str, str]] = []
    for key in ("base_env", "env"):
        value = args.get(key) or {}
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            return f"{key} must be a table of strings"
        envs.append(dict(value))
    rows, cols = args.get("rows"), args.get("cols")
    if not isinstance(rows, int) or not isinstance(cols, int) or rows < 1 or cols < 1:
        return "rows and cols must be whole numbers greater than 0"
    target = args.get("tmux")
    if target is not None and not (
        isinstance(target, dict) and all(isinstance(target.get(k, ""), str) for k in ("server", "pane"))
    ):
        return "tmux must be a table {server, pane}"
    host = args.get("host") or ""
    ssh = args.get("ssh") or ["ssh"]
    if not isinstance(host, str) or (host and not persist):
        return "host must be an ssh destination, with persist naming the session"
    if not isinstance(ssh, list) or not all(isinstance(a, str) and a for a in ssh):
        return "ssh must be a non-empty list of strings"
    return RunSpec(list(argv), cwd, envs[0], envs[1], rows, cols, persist, target, host, list(ssh))
