"""The one interface every kind of run answers (RunKind), and what the run
table lends a kind (RunHooks).

A kind is an object of its own for each run: it keeps what only that kind
needs (a session's files, a tmux pane, a connection's markers) and answers,
for the table, the questions where kinds differ: what the pane's terminal
runs and shows first, what of the output is shown, how the program ended,
where a signal goes, what may still hold the terminal when the run goes.
Its class answers for the sessions of that kind, run or not: the list, the
kill, what is made before a pane opens (prepare) and the check of what it
needs (check). A plain pane's way is the default of each.

Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from ..ending import Ending

if TYPE_CHECKING:
    from ..runs import Run, RunPresenter
    from ..shellenv import LoginPathCache

T = TypeVar("T")


class RunHooks(Protocol):
    """What the run table lends the kinds (runs.RunTable)."""

    loop: asyncio.AbstractEventLoop
    login_path: LoginPathCache
    presenter: RunPresenter

    def relay(self, run: Run, data: bytes) -> None:
        """Show `data` in the run's pane (after the pane's own filters)."""

    def read(self, run: Run) -> None:
        """Read what the terminal holds now, and show it."""

    def reaped(self, run: Run) -> None:
        """The run's program is gone: tell its ending (once)."""

    def later(self, run: Run, delay: float, callback: Callable[..., object], *args: object) -> None:
        """Call `callback(*args)` `delay` seconds from now, unless the run goes first."""

    def task(self, work: Coroutine[Any, Any, object]) -> None:
        """Run `work` on the loop, held until done."""

    def signal_group(self, run: Run, signum: int) -> None:
        """To the program (the kind's client_alone says which part), while unreaped."""

    def shared(self, name: str, make: Callable[[], T]) -> T:
        """The one object of `name` for this host, made at the first ask."""


@dataclass(frozen=True)
class Start:
    """What the pane's terminal runs, and the bytes shown before it."""

    argv: list[str]
    first: bytes = b""


@dataclass(frozen=True)
class NotStarted:
    """Nothing can run: the reason (an ending's) and what the pane says."""

    reason: str
    message: str


@dataclass(frozen=True)
class EndedBefore:
    """The run's session had ended while nobody looked: the run is that
    ending, after what it printed."""

    ending: Ending
    tail: bytes


Program = Start | NotStarted | EndedBefore


class RunKind:
    """A plain pane: the program itself on the pane's terminal. Every other
    kind overrides what it does otherwise."""

    # The name the editor and the protocol use for the kind.
    name: ClassVar[str] = "pane"
    # A run of the kind may come without argv (the login shell, or the
    # session's program already running).
    argv_optional: ClassVar[bool] = False
    # The program on the terminal is a session's client: a signal of the
    # table (a hang-up, a kill) reaches the client alone, never its group,
    # where the session it is making may still be.
    client_alone: bool = False

    def __init__(self) -> None:
        # The session's name as the editor is told it ('' for none).
        self.session = ""

    # -- the kind's part of the editor's description -------------------------

    @classmethod
    def claims(cls, args: dict[str, Any]) -> bool:
        """Whether the editor's description asks for a run of this kind."""
        return True

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> RunKind | str:
        """The kind of one run, from its description; a message when the
        kind's part of it is not one."""
        return cls()

    # -- one run -------------------------------------------------------------

    def program(self, hooks: RunHooks, run: Run, argv: list[str], env: dict[str, str], cwd: str) -> Program:
        """What the pane's terminal runs (`argv` is the run's, or the login
        shell); `env` may be changed for it."""
        return Start(argv)

    def started(self, hooks: RunHooks, run: Run) -> None:
        """The program started: watch what the kind watches besides it."""

    def show(self, hooks: RunHooks, run: Run, data: bytes, eof: bool) -> None:
        """What the terminal wrote: what of it the pane shows."""
        hooks.relay(run, data)

    def ending_when_reaped(self, run: Run) -> Ending | None:
        """The program was reaped: its ending, when the kind knows better
        than the exit status (None: the exit status)."""
        return None

    def asks_ending(self, hooks: RunHooks, run: Run) -> bool:
        """The program is gone: True when the ending must first be asked
        (the kind calls hooks.reaped again once it is known)."""
        return False

    def told_ending(self, run: Run) -> Ending | None:
        """The ending told, when it is not the one known at the reaping."""
        return None

    def signal(self, hooks: RunHooks, run: Run, signum: int) -> None:
        """run:kill(sig): to the program itself, while it runs."""
        with contextlib.suppress(OSError, ValueError):
            if run.pidfd >= 0:
                signal.pidfd_send_signal(run.pidfd, signum)
            else:
                os.kill(run.pid, signum)

    def spare_holders(self) -> frozenset[int]:
        """Processes that may still hold the terminal when the run goes and
        are no leftover of its program (never hung up nor killed)."""
        return frozenset()

    def let_go(self, hooks: RunHooks, run: Run) -> None:
        """The run goes: what the kind watches goes with it."""

    # -- the sessions of the kind --------------------------------------------

    @classmethod
    async def sessions(cls, hooks: RunHooks, where: object, ssh: object, wait: float) -> dict[str, Any]:
        """{sessions}, or {error} (and, for what is asked afar, {stale, known_at})."""
        return {"error": f"{cls.name} runs have no sessions"}

    @classmethod
    async def kill_session(
        cls, hooks: RunHooks, where: object, name: object, ssh: object, wait: float
    ) -> dict[str, Any]:
        """{name, ended or count}, {name, pending}, or {error}."""
        return {"error": f"{cls.name} runs have no sessions"}

    @classmethod
    async def prepare(cls, hooks: RunHooks, spec: object) -> dict[str, Any]:
        """What is made before the pane opens, for the editor's run spec: {} for none."""
        return {}

    @classmethod
    def check(cls, where: object, ssh: object) -> dict[str, Any]:
        """What checks the kind's needs where it runs: {argv} for a pane
        to run, {} when nothing is to be checked, or {error}."""
        return {}


def words(value: object) -> list[Any]:
    """The ssh command words as the editor gave them ([] for none; each is
    checked where it is used)."""
    return list(value) if isinstance(value, list) else []
