"""The only module that talks to Neovim: RPC entry points and the Presenter.

Everything here runs on the host's event loop. Calls towards Neovim are
notifications (``async_=True``): the host never waits on the editor, because
the editor may itself be blocked in a spawn that is waiting on us. The one
request, the editor's mode, is not waited for either: an answer that does
not come is how a blocked editor is told (NvimPresenter.editor_waits_for_user).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import socket
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import greenlet  # type: ignore[import-untyped]  # pynvim's own dependency; ships no types

from .hostsetup import install_log_redaction, raise_fd_limit
from .offer.offer import Offer, OfferTable, State
from .protocol import EVENTS, REQUESTS, arguments, event_call
from .term.keepers import Keepers

# Runs, sessions and tmux are imported when first used: an idle host, which
# most hosts are, does without their megabyte.
if TYPE_CHECKING:
    from .runs.kinds.base import RunKind
    from .runs.runs import Run, RunTable
    from .term.keeper import KeeperLink

log = logging.getLogger(__name__)

# The most spare ptys one refill may ask for (the editor's stock grows to
# this after bursts of spawns; lua/ttyoffer/host/stock.lua STOCK_MAX).
MAX_BATCH = 256

# The chunk for each event, built once.
_EVENT_CALLS = {name: event_call(name) for name in EVENTS}


def send_event(nvim: Any, event: str, *args: Any) -> None:
    """One event of the protocol to the editor, as a notification: the host
    never waits on the editor."""
    try:
        nvim.exec_lua(_EVENT_CALLS[event], *args, async_=True)
    except Exception:  # the editor is going away; nothing to show anything on
        log.debug("ttyoffer: could not notify the editor", exc_info=False)


class NvimPresenter:
    """The Presenter of the offers: each call is the protocol event of the
    same name."""

    def __init__(self, nvim: Any) -> None:
        self._nvim = nvim
        self._knock: socket.socket | None = None

    def knock_at(self, path: str) -> None:
        """Connect to the editor's knock socket (lua/ttyoffer/host/knock.lua), in
        place of any before. A Unix socket that listens accepts a connect at
        once: nothing here waits."""
        self._close_knock()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        sock.setblocking(False)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            log.debug("ttyoffer: cannot connect to the editor's knock socket")
            return
        self._knock = sock

    def _close_knock(self) -> None:
        if self._knock is not None:
            self._knock.close()
            self._knock = None

    def present(self, offer: Offer, data: bytes) -> None:
        send_event(self._nvim, "present", offer.id, data)
        # After the notification: a wait that serves fast events only reads
        # this, and serves the editor's events until the `present` is in.
        self.knock(offer)

    def knock(self, offer: Offer) -> None:
        """The offer's id on the knock socket, if there is one."""
        if self._knock is not None:
            try:
                self._knock.send(b"%d\n" % offer.id, socket.MSG_NOSIGNAL)
            except BlockingIOError:
                pass  # megabytes of ids unread: the editor serves anyway
            except OSError:
                self._close_knock()  # the editor closed it

    def output(self, offer: Offer, data: bytes) -> None:
        send_event(self._nvim, "output", offer.id, data)

    def prompt(self, offer: Offer, text: str) -> None:
        send_event(self._nvim, "prompt", offer.id, text)

    def closed(self, offer: Offer) -> None:
        send_event(self._nvim, "closed", offer.id)

    def released(self, offer_ids: list[int]) -> None:
        send_event(self._nvim, "released", offer_ids)

    def turned_away(self, writers: list[str]) -> None:
        send_event(self._nvim, "turned_away", writers)

    def no_keeper(self, reason: str) -> None:
        send_event(self._nvim, "no_keeper", reason)

    def unserved(self, offer: Offer, question: str) -> None:
        send_event(self._nvim, "unserved", offer.id, question)

    def declined(self, offer: Offer, question: str) -> None:
        send_event(self._nvim, "declined", offer.id, question)

    def run_started(self, run: Run) -> None:
        send_event(self._nvim, "run_started", run.id, run.pid, run.session)

    def run_output(self, run: Run, data: bytes) -> None:
        send_event(self._nvim, "run_output", run.id, data)

    def run_exit(self, run: Run) -> None:
        from .runs.ending import Ending

        result = (run.ending or Ending(255)).as_dict()
        # Not the result's: what the pane does with the keys still typed.
        result["typing_secret"] = run.typing_secret
        send_event(self._nvim, "run_exit", run.id, result)

    def remote_answer(self, dest: str, action: str, name: str, answer: dict[str, Any]) -> None:
        send_event(self._nvim, "remote_answer", dest, action, name, answer)

    def editor_waits_for_user(self, callback: Callable[[bool | None], None]) -> None:
        """nvim_get_mode: `blocking` is true while Neovim waits for the user.
        It answers at once then (a hit-enter prompt), and otherwise once it
        processes its event queue: while it is blocked (system(), jobwait(),
        a busy loop) the answer does not come, and the table's deadline
        tells.

        The one request the host makes, and it must not hold the loop up: it
        runs in a greenlet of its own, as pynvim runs its handlers, whose
        request yields to the loop and resumes when the answer arrives (if
        ever: a greenlet waiting on an editor that stays blocked is all it
        costs)."""

        def ask() -> None:
            waits_for_user: bool | None
            try:
                waits_for_user = bool(self._nvim.api.get_mode().get("blocking"))
            except Exception:  # the editor is going away
                waits_for_user = None
            try:
                callback(waits_for_user)
            except Exception:
                # Resumed from pynvim's reading of the answer: what escapes
                # here would end up there, in the host's message loop.
                log.exception("ttyoffer: handling the editor's mode failed")

        greenlet.greenlet(ask).switch()


class TtyOfferHost:
    """Plain class behind the rplugin shell; one per host process."""

    def __init__(self, nvim: Any) -> None:
        self._nvim = nvim
        self._presenter = NvimPresenter(nvim)
        self._table: OfferTable | None = None
        self._runs: RunTable | None = None
        self._keepers = Keepers(self._presenter.no_keeper, self._keeper_replaced)
        self._asked: set[asyncio.Future[Any]] = set()
        raise_fd_limit()
        install_log_redaction()

    @property
    def table(self) -> OfferTable:
        if self._table is None:
            keeper = self._keepers.start(self._nvim.loop)
            self._table = OfferTable(self._nvim.loop, self._presenter, keeper)
        return self._table

    @property
    def runs(self) -> RunTable:
        if self._runs is None:
            from .runs.runs import RunTable

            self._runs = RunTable(self._nvim.loop, self._presenter, dict(os.environ))
        return self._runs

    def _keeper_replaced(self, keeper: KeeperLink | None) -> None:
        if self._table is not None:
            self._table.use_keeper(keeper)

    def _allocate(self, count: int, rows: int, cols: int) -> tuple[list[list[Any]], str]:
        ptys: list[list[Any]] = []
        for _ in range(max(0, min(count, MAX_BATCH))):
            try:
                offer = self.table.open(rows, cols)
            except OSError as err:
                return ptys, f"cannot open a pty: {err.strerror or err}"
            ptys.append([offer.id, offer.slave_path])
        return ptys, ""

    def handle(self, name: str, args: tuple[Any, ...]) -> Any:
        """Method `name` of the protocol, as the remote-plugin shell calls it:
        each argument taken as protocol.py declares it, and a request whose
        value comes from a coroutine waited for (answer_now). Below, every
        handler gets its arguments so taken."""
        value = getattr(self, name)(*arguments(name, args))
        if inspect.iscoroutine(value):
            return self.answer_now(value)
        return value

    # -- requests (a value is returned) -------------------------------------

    def status(self) -> dict[str, Any]:
        offers = [
            {
                "id": o.id,
                "pid": o.pid,
                "state": o.state.value,
                "prompt": o.last_prompt,
                "tty": o.slave_path,
                "unacked": o.relay.unacked,
            }
            for o in self.table
        ]
        return {
            "pid": os.getpid(),
            "keeper_pid": self._keepers.pid,
            "offers": offers,
            "fds": len(os.listdir("/proc/self/fd")),
        }

    def screen(self, offer_id: int) -> str:
        offer = self.table.get(offer_id)
        return offer.screen.text() if offer else ""

    def run_path(self) -> dict[str, Any]:
        login = self.runs.login_path
        if login.value is None:
            login.get(lambda _: None)  # ask now; the answer is kept
            return {"pending": True}
        return {"path": login.value.path, "source": login.value.source}

    # -- what every kind of run answers: `kind` is its name ("dtach", "tmux",
    # "remote"), `where` where its sessions are (nothing for dtach, the tmux
    # server's name, the ssh destination), `ssh` the ssh command's words
    # (remote); each kind's answer is its own (runs/kinds/) ----------------

    def _kind(self, name: Any) -> type[RunKind] | str:
        from .runs.kinds.choose import named

        return named(name)

    async def run_sessions(self, kind: Any, where: Any, ssh: Any, wait_ms: int) -> dict[str, Any]:
        found = self._kind(kind)
        if isinstance(found, str):
            return {"error": found}
        return await found.sessions(self.runs, where, ssh, wait_ms / 1000)

    async def run_session_kill(
        self, kind: Any, where: Any, name: Any, ssh: Any, wait_ms: int
    ) -> dict[str, Any]:
        found = self._kind(kind)
        if isinstance(found, str):
            return {"error": found}
        return await found.kill_session(self.runs, where, name, ssh, wait_ms / 1000)

    async def run_prepare(self, kind: Any, spec: Any) -> dict[str, Any]:
        found = self._kind(kind)
        if isinstance(found, str):
            return {"error": found}
        return await found.prepare(self.runs, spec)

    def run_check(self, kind: Any, where: Any, ssh: Any) -> dict[str, Any]:
        found = self._kind(kind)
        if isinstance(found, str):
            return {"error": found}
        return found.check(where, ssh)

    def answer_now(self, value: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
        """A request's value, for pynvim's synchronous handlers: one that
        comes from a coroutine is waited for in the handler's greenlet (the
        loop runs meanwhile), as pynvim waits for its own requests."""
        task = asyncio.ensure_future(value, loop=self._nvim.loop)
        current = greenlet.getcurrent()
        if current.parent is None:  # not in a handler's greenlet: cannot wait
            task.cancel()
            return {"error": "not answerable here"}
        task.add_done_callback(lambda _: current.switch())
        current.parent.switch()
        return task.result()

    # -- notifications --------------------------------------------------------

    def ask(self, token: int, name: Any, args: Any) -> None:
        """A request that the editor waits for with a bound of its own
        (host.lua): the answer comes back as the `answer` event, when it is
        there, and never holds the loop up meanwhile."""
        if name not in REQUESTS:
            send_event(self._nvim, "answer", token, None, f"{name!r} is not a request of the host")
            return
        try:
            value = getattr(self, str(name))(*arguments(str(name), args))
        except Exception as err:
            log.debug("ttyoffer: request %s failed", name, exc_info=True)
            send_event(self._nvim, "answer", token, None, f"{name} failed: {err}")
            return
        if not inspect.isawaitable(value):
            send_event(self._nvim, "answer", token, value, "")
            return

        def done(task: asyncio.Future[Any]) -> None:
            if task.cancelled() or task.exception() is not None:
                send_event(self._nvim, "answer", token, None, f"{name} failed: {task.exception()}")
            else:
                send_event(self._nvim, "answer", token, task.result(), "")

        task = asyncio.ensure_future(value, loop=self._nvim.loop)
        self._asked.add(task)  # the loop holds tasks weakly only
        task.add_done_callback(self._asked.discard)
        task.add_done_callback(done)

    def refill(self, count: int, rows: int, cols: int) -> None:
        ptys, error = self._allocate(count, rows, cols)
        send_event(self._nvim, "stock", ptys, error)

    def bind(self, offer_id: int, pid: int) -> None:
        self.table.bind(offer_id, pid)

    def dismiss(self, offer_id: int) -> None:
        self.table.dismiss(offer_id)

    def dismiss_all(self, offer_ids: list[int]) -> None:
        self.table.dismiss_all(offer_ids)

    def retire(self, offer_ids: list[int]) -> None:
        for offer_id in offer_ids:
            self.table.retire(offer_id)

    def attach(self, offer_id: int, rows: int, cols: int) -> None:
        self.table.attach(offer_id, rows, cols)

    def input(self, offer_id: int, data: bytes) -> None:
        self.table.write(offer_id, data)

    def ack(self, offer_id: int, count: int) -> None:
        self.table.acknowledge(offer_id, count)

    def resize(self, offer_id: int, rows: int, cols: int) -> None:
        self.table.resize(offer_id, rows, cols)

    def resize_armed(self, rows: int, cols: int) -> None:
        self.table.resize_armed(rows, cols)

    def seen(self, offer_id: int) -> None:
        self.table.seen(offer_id)

    def release_unbound(self, offer_id: int) -> None:
        self.table.release_unbound(offer_id)

    def drawn(self, offer_id: int) -> None:
        self.table.drawn(offer_id)

    def knock(self, path: str) -> None:
        self._presenter.knock_at(path)
        # A command that asked before the socket was known (the editor's
        # first wrapped vim.system() makes it, after the spawn) is knocked
        # for now: its wait would otherwise serve fast events only, and its
        # `present` wait unserved until it is hung up.
        for offer in self._table or ():
            if offer.state is State.PRESENTED:
                self._presenter.knock(offer)

    def configure(self, blocked_ms: float) -> None:
        self.table.configure(blocked_ms)

    def run_start(self, run_id: int, spec: Any) -> None:
        from .runs.runspec import spec_from

        self.runs.start(run_id, spec_from(spec))

    def run_input(self, run_id: int, data: bytes) -> None:
        self.runs.write(run_id, data)

    def run_ack(self, run_id: int, count: int) -> None:
        self.runs.acknowledge(run_id, count)

    def run_resize(self, run_id: int, rows: int, cols: int) -> None:
        self.runs.resize(run_id, rows, cols)

    def run_close(self, run_id: int) -> None:
        self.runs.close(run_id)

    def run_signal(self, run_id: int, signum: int) -> None:
        self.runs.signal(run_id, signum)
