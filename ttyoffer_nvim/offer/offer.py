"""Offers: one private pty per spawned command, watched until it is needed.

State machine of one offer::

    armed ──first byte──> presented ──attach──> attached
      │                       │                    │
      └──release/dismiss──────┴────────────────────┴──> closed

* armed: the pty exists and the master is watched with ``loop.add_reader``
  (no thread, no task per offer).
* presented: the child wrote; the Presenter got the first bytes exactly once.
  Reading pauses, so the kernel holds further output (and the child blocks on
  a full pty) until the window is really there: nothing is lost while the
  offer waits in the editor's queue.
* attached: a window shows it; output is relayed, input written back.
* closed: every descriptor is gone.

Every byte read from a master passes the offer's SequenceFilter
(term/sequences.py) before anything else sees it, the screen model and the window
alike: a command draws and asks in its window, and reaches nothing beyond it
(titles, the clipboard, a terminal behind the editor's). A write that leaves
nothing to show (a title alone) shows no window.

The parts of it, one job each: the offer's record and the Presenter
(``model``), a write no command made (``strays``), whether a blocked editor
still serves a prompt (``blocked``), and the keeper's copies of the masters
(``keepercopies``).

The Presenter is called on the host's event loop and must return at once.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

from ..term.exitwatch import ExitWatch
from ..term.hangup import hang_up, hang_up_holders
from ..term.keeper import KeeperLink
from ..term.ptys import drain, open_pty, session_of, set_winsize
from ..term.relay import Relay
from .blocked import EditorCheck
from .burst import Burst, askers
from .keepercopies import KeeperCopies
from .model import Offer, Presenter, State, usable_size
from .screen import ScreenModel
from .strays import Strays

__all__ = ["Offer", "OfferTable", "Presenter", "State"]

# The prompt in the title is recomputed once output has paused this long:
# a question is asked and then waited on; a flood is not a question.
PROMPT_QUIET = 0.05


class OfferTable:
    """All offers of one host. Every method runs on the host's event loop."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, presenter: Presenter, keeper: KeeperLink | None = None
    ) -> None:
        self._loop = loop
        self._presenter = presenter
        self._keeper = KeeperCopies(loop, keeper)
        self._strays = Strays(loop, presenter)
        self._editor_check = EditorCheck(loop, presenter, self._hang_up_unserved)
        self._offers: dict[int, Offer] = {}
        self._ids = itertools.count(1)
        self._released: list[int] = []
        self._burst = Burst(loop)

    @property
    def blocked_after(self) -> float:
        """Seconds; 0 or less: an offer the editor has not seen is never hung up."""
        return self._editor_check.blocked_after

    # -- lifecycle ---------------------------------------------------------

    def open(self, rows: int, cols: int) -> Offer:
        rows, cols = usable_size(rows, cols)
        pty = open_pty(rows, cols)
        offer = Offer(
            next(self._ids), pty, rows, cols, ScreenModel(rows, cols), Relay(self._loop, pty.master)
        )
        offer.relay.on_readable = lambda: self._on_readable(offer)
        self._offers[offer.id] = offer
        offer.relay.watch()
        self._keeper.hold(offer.id, pty.master, pty.slave_path)
        return offer

    def bind(self, offer_id: int, pid: int) -> None:
        """The offer went to the command with this pid: release it when that
        process exits. (An exit callback per job in Neovim would cost memory
        Neovim never gives back.)"""
        offer = self._offers.get(offer_id)
        if offer is None or offer.watch is not None:
            return
        offer.pid = pid
        offer.watch = ExitWatch(self._loop, pid, lambda: self.release(offer_id))
        # The command wrote (and maybe ended) before its pid arrived.
        data = self._strays.explained(offer)
        if data is not None:
            self._present(offer, data)

    def release_unbound(self, offer_id: int) -> None:
        """The editor says the command of an offer it never bound to a pid
        has ended (a synchronous system(), whose pid it never learns). It
        forgets the offer when `released` comes back: after everything sent
        about it before (its `present`, an `unserved`), which it may not
        have served yet."""
        offer = self._offers.get(offer_id)
        if offer is None:  # closed already: hung up while the editor was blocked
            self._note_released(offer_id)
            return
        offer.ended_unbound = True
        self.release(offer_id)

    def release(self, offer_id: int) -> None:
        """The command ended: nothing can ask any more. Show what is left, close."""
        offer = self._offers.get(offer_id)
        if offer is None:
            return
        offer.released = True
        offer.pty.close_slave()
        if offer.state is State.ARMED:
            # The child may have written just before it exited, unseen so far.
            if not self._read_once(offer):
                self._close(offer)
            return
        if offer.state is State.PRESENTED:
            # Its window has not opened yet (the user was typing, or another
            # prompt is up): what it wrote waits in the pty until it does,
            # and attach() shows it and the end. Nothing is dropped unseen.
            return
        self._drain(offer)
        self._finish(offer)

    def dismiss(self, offer_id: int) -> None:
        """The user declined: closing the master hangs the child's tty up."""
        offer = self._offers.get(offer_id)
        if offer is not None:
            self._close(offer, declined=True)

    def dismiss_all(self, offer_ids: list[int]) -> None:
        """The user declined these at once (the prompt on screen and those
        waiting behind it): each is hung up, and the same questions are
        declined, with no window, for the rest of the burst (burst.py).
        Offers presented but not yet in the editor's list (in flight) that
        ask the same are declined too."""
        offers = [
            o for o in map(self._offers.get, offer_ids) if o is not None and o.state is not State.CLOSED
        ]
        asked = self._questions(offers)
        self._burst.decline(asked.values())
        for offer in offers:
            self._close(offer, declined=True)
        in_flight = [o for o in self if o.state is State.PRESENTED and o.held is None]
        for offer, question in self._questions(in_flight).items():
            if self._burst.declines(question):
                self._decline_again(offer, question[1])

    def _questions(self, offers: list[Offer]) -> dict[Offer, tuple[str, str]]:
        """Who asks what, for each offer (burst.py)."""
        if not offers:
            return {}
        programs = askers([o.slave_path for o in offers])
        return {
            o: (programs.get(o.slave_path, ""), o.screen.prompt(look_above=True) or o.last_prompt)
            for o in offers
        }

    def _decline_again(self, offer: Offer, question: str) -> None:
        self._presenter.declined(offer, question)
        self._close(offer, declined=True)

    def retire(self, offer_id: int) -> None:
        """A spare the editor gave back: closed, unless a command has it
        after all (bound, or written to by one not bound yet)."""
        offer = self._offers.get(offer_id)
        if offer is not None and not offer.pid and offer.state is State.ARMED and offer.stray_timer is None:
            self._close(offer)

    def seen(self, offer_id: int) -> None:
        """The editor has received the offer's `present`: it serves its
        events now, and the window is its to open when it can (the user may
        be typing)."""
        offer = self._offers.get(offer_id)
        if offer is None:
            return
        offer.seen = True
        # It serves its events now: the next check starts from here.
        self._editor_check.restart(offer)

    def drawn(self, offer_id: int) -> None:
        """The editor has drawn the offer's window, the first bytes in its
        terminal: the user sees the question. From now on a busy editor
        only delays the keys typed into it; only one that answers nothing
        for DRAWN_PATIENCE hangs it up."""
        offer = self._offers.get(offer_id)
        if offer is None:
            return
        offer.drawn = True
        self._editor_check.restart(offer)

    def configure(self, blocked_ms: float) -> None:
        """How long a command may wait on a question while the editor serves
        nothing before it is hung up; 0 or less: never."""
        self._editor_check.blocked_after = blocked_ms / 1000

    def attach(self, offer_id: int, rows: int, cols: int) -> None:
        offer = self._offers.get(offer_id)
        if offer is None or offer.state is not State.PRESENTED:
            return
        self.resize(offer_id, rows, cols)
        offer.state = State.ATTACHED
        if offer.released:
            self._drain(offer)
            self._finish(offer)
        else:
            offer.relay.watch()

    def acknowledge(self, offer_id: int, count: int) -> None:
        """The editor's terminal has taken `count` relayed bytes."""
        offer = self._offers.get(offer_id)
        if offer is None:
            return
        offer.relay.acknowledge(count, resume=offer.state is State.ATTACHED)

    def close_all(self) -> None:
        for offer in list(self._offers.values()):
            self._close(offer)

    def use_keeper(self, keeper: KeeperLink | None) -> None:
        """A new keeper in place of one that died, or none when none could be
        had: it is given a copy of every master held now, and told which
        prompts were shown, so that the host's death is survived as before.
        What was still to be sent to the dead one is moot."""
        self._keeper.replace(
            keeper,
            {o.id: (o.pty.master, o.slave_path) for o in self._offers.values() if o.pty.master >= 0},
            [o.id for o in self._offers.values() if o.state in (State.PRESENTED, State.ATTACHED)],
        )

    # -- relay -------------------------------------------------------------

    def write(self, offer_id: int, data: bytes) -> None:
        offer = self._offers.get(offer_id)
        if offer is not None and offer.pty.master >= 0:
            offer.relay.write(data)

    def resize(self, offer_id: int, rows: int, cols: int) -> None:
        offer = self._offers.get(offer_id)
        if offer is None or offer.pty.master < 0:
            return
        rows, cols = usable_size(rows, cols)
        if (rows, cols) != (offer.rows, offer.cols):
            set_winsize(offer.pty.master, rows, cols)
            offer.rows, offer.cols = rows, cols
            offer.screen.resize(rows, cols)

    def resize_armed(self, rows: int, cols: int) -> None:
        """New editor size: ptys nobody has seen yet start at the new float size."""
        for offer in self._offers.values():
            if offer.state is State.ARMED:
                self.resize(offer.id, rows, cols)

    # -- queries -----------------------------------------------------------

    def get(self, offer_id: int) -> Offer | None:
        return self._offers.get(offer_id)

    def __len__(self) -> int:
        return len(self._offers)

    def __iter__(self) -> Iterator[Offer]:
        return iter(list(self._offers.values()))

    # -- internals ---------------------------------------------------------

    def _on_readable(self, offer: Offer) -> None:
        if offer.state is State.ARMED:
            self._read_once(offer)
            return
        # Never more in flight than the window: a question written after a
        # flood waits behind at most that much, as behind a terminal's own
        # buffer.
        raw, _ = offer.relay.read_batch()
        data = offer.sequences.feed(raw) if raw else b""
        if data:
            offer.screen.feed(data)
            self._relay(offer, data)
            self._schedule_prompt(offer)

    def _relay(self, offer: Offer, data: bytes) -> None:
        offer.relay.relayed(len(data))
        self._presenter.output(offer, data)

    def _read_once(self, offer: Offer) -> bool:
        """The first read that leaves something to show: present exactly
        once. Returns whether it did. What is dropped whole (a title) is
        read past, a bounded number of reads, and the offer stays armed."""
        data = b""
        for chunk in drain(offer.pty.master):
            data = offer.sequences.feed(chunk)
            if data:
                break
        if not data:
            return False
        # Pause until the window is attached; the kernel keeps the rest.
        offer.relay.unwatch()
        if not (offer.pid or offer.released) and session_of(offer.pty.master) is None:
            self._strays.suspect(offer, data)
            return False
        self._present(offer, data)
        return True

    def _present(self, offer: Offer, data: bytes) -> None:
        offer.state = State.PRESENTED
        offer.screen.feed(data)
        if self._burst.active():
            # Shown once its question is known (_update_prompt), unless it
            # is one the user declined in this burst.
            offer.held = data
            self._schedule_prompt(offer)
            return
        self._show(offer, data)

    def _show(self, offer: Offer, data: bytes) -> None:
        self._keeper.shown(offer.id)
        # The window first; the prompt for its title follows (parsing the
        # screen costs milliseconds the user would wait for the window).
        self._presenter.present(offer, data)
        self._schedule_prompt(offer)
        self._editor_check.later(offer)

    def _hang_up_unserved(self, offer: Offer) -> None:
        """The editor is blocked: nobody can answer the command, which would
        wait forever (and the editor perhaps on it). It is hung up as a
        declined prompt is, and the user is told what it asked, first: the
        offer and its screen are gone after."""
        question = offer.screen.prompt(look_above=True) or offer.last_prompt
        self._presenter.unserved(offer, question)
        self._close(offer, declined=True)

    def _drain(self, offer: Offer) -> None:
        """Relay what is left to read. Bounded: a grandchild still holding
        the tty must not keep us here."""
        for chunk in drain(offer.pty.master):
            data = offer.sequences.feed(chunk)
            if data:
                offer.screen.feed(data)
                self._relay(offer, data)

    def _schedule_prompt(self, offer: Offer) -> None:
        if offer.prompt_timer is not None:
            offer.prompt_timer.cancel()
        offer.prompt_timer = self._loop.call_later(PROMPT_QUIET, self._update_prompt, offer)

    def _update_prompt(self, offer: Offer) -> None:
        offer.prompt_timer = None
        if offer.state is State.CLOSED:
            return
        if offer.held is not None:
            data, offer.held = offer.held, None
            question = self._questions([offer])[offer]
            if self._burst.declines(question):
                self._decline_again(offer, question[1])
                return
            self._show(offer, data)
        # Once a question has been named, only a new one where the cursor
        # waits replaces it: a program tearing its dialog down (curses'
        # endwin() parks the cursor at the bottom left) must not retitle the
        # window with whatever text is left above, such as pinentry's buttons.
        prompt = offer.screen.prompt(look_above=not offer.last_prompt)
        if prompt and prompt != offer.last_prompt:
            offer.last_prompt = prompt
            self._presenter.prompt(offer, prompt)

    def _note_released(self, offer_id: int) -> None:
        # One message per loop turn, however many commands ended in it.
        if not self._released:
            self._loop.call_soon(self._flush_released)
        self._released.append(offer_id)

    def _flush_released(self) -> None:
        ids, self._released = self._released, []
        self._presenter.released(ids)

    def _finish(self, offer: Offer) -> None:
        self._close(offer)
        self._presenter.closed(offer)

    def _close(self, offer: Offer, declined: bool = False) -> None:
        """The offer ends: what holds its terminal is hung up in order, then
        every descriptor goes. `declined`: the user turned the prompt down,
        and the command is to end now."""
        if offer.state is State.CLOSED:
            return
        offer.state = State.CLOSED
        self._stop_watching(offer)
        if offer.pid or offer.ended_unbound:
            self._note_released(offer.id)
        if declined:
            self._hang_up_command(offer)
        self._hang_up_outsiders(offer)
        self._keeper.let_go(offer.id, now=declined)
        offer.pty.close()
        self._offers.pop(offer.id, None)

    def _stop_watching(self, offer: Offer) -> None:
        """No exit, timer, read or write of this offer is waited for any more."""
        if offer.watch is not None:
            offer.watch.cancel()
        if offer.prompt_timer is not None:
            offer.prompt_timer.cancel()
            offer.prompt_timer = None
        self._strays.cancel(offer)
        self._editor_check.cancel(offer)
        if offer.pty.master >= 0:
            offer.relay.stop()

    def _hang_up_command(self, offer: Offer) -> None:
        """A declined command is sent its SIGHUP first, as the terminal's
        hang-up would (the last master copy may be the keeper's, let go a
        moment later): it must end hung up, not on what the others do once
        they are. Marked as the hang-up's (term/hangup.py), so that the
        compiled leader ends with 129, a failure. Only its own session's
        leader: the bound command's, or whichever holds an offer not bound
        yet."""
        leader = session_of(offer.pty.master)
        if leader is not None and leader > 0 and offer.pid in (0, leader):
            hang_up([leader])

    def _hang_up_outsiders(self, offer: Offer) -> None:
        """Whatever else still holds the terminal is sent SIGHUP too: what
        opened it by its path outside the command's session (gpg-agent's
        pinentry) hears of no hang-up otherwise. Before the pty can go, and
        its path name another terminal."""
        offer.pty.close_slave()
        hang_up_holders(offer.pty.master, offer.pty.slave_path)
