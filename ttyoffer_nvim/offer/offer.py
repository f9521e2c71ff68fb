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

A write no command can have made (the pty is nobody's controlling terminal
and no command was bound to it) comes from a process that opened a spare
terminal by its path: gpg-agent's ssh support asks for passphrases on the
terminal the agent was started from, and that may have been an offer's, long
ended, whose number a spare now has. Nobody would ever see that prompt, so
the writer is hung up and the offer stays armed, clean, for its command.

An editor that is blocked (Vimscript's system() or jobwait(), a plugin's
busy loop) serves no notification: the offer's window cannot open, and the
command would wait for an answer forever, the editor perhaps waiting on it.
The same holds for a window that opened just before the editor blocked: it
is not even drawn, and no key reaches it. So while a prompt is on its way
to the user, and its command runs, the editor is asked its mode every half
`blocked_after` (`seen`, the editor's receipt of the `present`, restarts the
count). Neovim answers at once while it waits for the user (a hit-enter
prompt: they will come back to it) and whenever it serves its events; when
it does not answer within the other half, it is blocked: the command is hung
up, as a declined prompt is, and the user told later (`unserved`).

Once the editor says the window is drawn (`drawn`: on screen, the command's
first bytes in its terminal), the user can see the question and is typing
the answer: a busy spell of the editor (a plugin's timer holding it a
second) only delays their keys, which Neovim keeps and hands the window when
it is free. Hanging up then would close the window under the user's fingers,
the rest of a passphrase typed into the document. A drawn prompt is hung up
only when the editor has answered nothing for DRAWN_PATIENCE: no busy spell
lasts that long, and an editor blocked on the very command (a plugin's
jobwait() without a timeout) must not wait for good. Keys typed meanwhile
are dropped when its window goes, as for any prompt that goes.

The Presenter is called on the host's event loop and must return at once.
"""

from __future__ import annotations

import asyncio
import enum
import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from ..term.hangup import hang_up, hang_up_holders, holders
from ..term.keeper import KeeperLink
from ..term.procfs import process_gone, process_name
from ..term.ptys import (
    Pty,
    drain,
    open_pty,
    restore_defaults,
    session_of,
    set_winsize,
)
from ..term.relay import Relay
from ..term.sequences import SequenceFilter
from .burst import Burst, askers
from .screen import ScreenModel

# The prompt in the title is recomputed once output has paused this long:
# a question is asked and then waited on; a flood is not a question.
PROMPT_QUIET = 0.05
# How long the keeper's copies of ended commands' ptys may wait to be let go:
# one message for many commands instead of one each.
KEEPER_BATCH_DELAY = 0.1
# How long a write that no command seems to have made waits for the bind that
# would explain it (a command that wrote and exited before its pid arrived)
# before the writer is taken for a stray and hung up.
STRAY_GRACE = 0.5
# How long a command may wait on a question while the editor serves nothing
# before it is hung up (`configure` sets it): half of it between the checks
# of the editor, half for its answer. Long enough for an editor that is
# merely busy for a moment, short enough that a command waiting on a
# question nobody can see is not left waiting long.
BLOCKED_AFTER = 1.0
# How long an editor may answer nothing while a prompt it has drawn is up:
# far beyond any busy spell (a plugin's timer, a slow redraw), so the user
# typing into it is never cut off; an editor blocked on the very command
# still lets it go, and the user is told.
DRAWN_PATIENCE = 30.0
# The smallest terminal a pty is given. The window's size is the editor's
# to choose (its layout rule lives on the Lua side); this only keeps a size
# that is no size (zero, negative) from reaching the kernel and the screen.
MIN_ROWS = MIN_COLS = 1


def usable_size(rows: int, cols: int) -> tuple[int, int]:
    """The size asked for, where it is a size at all."""
    return max(rows, MIN_ROWS), max(cols, MIN_COLS)


class State(enum.Enum):
    ARMED = "armed"
    PRESENTED = "presented"
    ATTACHED = "attached"
    CLOSED = "closed"


class Presenter(Protocol):
    """Where offers are shown; each method is the protocol event of the same
    name (ttyoffer_nvim/protocol.py)."""

    def present(self, offer: Offer, data: bytes) -> None:
        """The child wrote for the first time. Schedule a window; never wait."""

    def output(self, offer: Offer, data: bytes) -> None:
        """More bytes for an attached offer's window."""

    def prompt(self, offer: Offer, text: str) -> None:
        """The question on screen changed."""

    def closed(self, offer: Offer) -> None:
        """A presented offer's command ended; the window may show it and go."""

    def released(self, offer_ids: list[int]) -> None:
        """These commands' offers are over (exited or declined), in a batch."""

    def turned_away(self, writers: list[str]) -> None:
        """Processes that were given no offer wrote to a spare and were hung up."""

    def unserved(self, offer: Offer, question: str) -> None:
        """The command asked `question` (may be "") while the editor served
        nothing, and is hung up."""

    def declined(self, offer: Offer, question: str) -> None:
        """The command asked `question` (may be ""), one the user declined
        in this burst: it is hung up, with no window."""

    def editor_waits_for_user(self, callback: Callable[[bool | None], None]) -> None:
        """Ask the editor whether it waits for the user: callback(True) if
        so (a hit-enter prompt), (False) if it serves its events, (None) if
        it cannot be asked (it is going away). A blocked editor does not
        answer at all, until it is no longer blocked. Never waits for the
        answer: the callback comes later, on the loop."""


@dataclass(eq=False)
class Offer:
    id: int
    pty: Pty
    rows: int
    cols: int
    screen: ScreenModel
    # The output's flow control and the keys typed in the window.
    relay: Relay
    state: State = State.ARMED
    pid: int = 0
    watch: ExitWatch | None = None
    last_prompt: str = ""
    released: bool = False
    prompt_timer: asyncio.TimerHandle | None = None
    # A first write no command seems to have made, waiting for a bind.
    unexplained: bytes = b""
    stray_timer: asyncio.TimerHandle | None = None
    # What of the command's output a prompt window lets through.
    sequences: SequenceFilter = field(default_factory=SequenceFilter)
    # The editor received the `present` of this offer: it can show it.
    seen: bool = False
    # Its window is on screen with the first bytes in it: the user sees it.
    drawn: bool = False
    editor_check: asyncio.TimerHandle | None = None
    # Never bound (a synchronous system()): the editor said its command
    # ended, and hears back when the offer is over, as for a bound one.
    ended_unbound: bool = False
    # Its first bytes, held back while a burst of declined questions lasts
    # until its question is known: the same one is declined with no window.
    held: bytes | None = None

    @property
    def slave_path(self) -> str:
        return self.pty.slave_path


class ExitWatch:
    """Tells when a process that is not our child has exited.

    The command is Neovim's child, not ours, so waitpid() is not ours to
    call; a pidfd becomes readable when the process exits. Where there is no
    pidfd (old kernels, other systems) the process is polled.
    """

    POLL_INTERVAL = 0.25

    def __init__(self, loop: asyncio.AbstractEventLoop, pid: int, on_exit: Callable[[], None]) -> None:
        self._loop = loop
        self._pid = pid
        self._on_exit: Callable[[], None] | None = on_exit
        self._fd = -1
        self._timer: asyncio.TimerHandle | None = None
        try:
            self._fd = os.pidfd_open(pid)
        except ProcessLookupError:
            loop.call_soon(self._fire)
            return
        except (AttributeError, OSError):
            self._timer = loop.call_later(self.POLL_INTERVAL, self._poll)
            return
        loop.add_reader(self._fd, self._fire)

    def _poll(self) -> None:
        self._timer = None
        if process_gone(self._pid):
            self._fire()
        else:
            self._timer = self._loop.call_later(self.POLL_INTERVAL, self._poll)

    def _fire(self) -> None:
        on_exit = self._on_exit
        self.cancel()
        if on_exit is not None:
            on_exit()

    def cancel(self) -> None:
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._on_exit = None


class OfferTable:
    """All offers of one host. Every method runs on the host's event loop."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, presenter: Presenter, keeper: KeeperLink | None = None
    ) -> None:
        self._loop = loop
        self._presenter = presenter
        self._keeper = keeper
        self._offers: dict[int, Offer] = {}
        self._ids = itertools.count(1)
        self._released: list[int] = []
        # Sent to the keeper once per loop turn, in batches.
        self._keeper_holds: dict[int, tuple[int, str]] = {}
        self._keeper_drops: list[int] = []
        self._keeper_due: asyncio.TimerHandle | None = None
        # Seconds; 0 or less: an offer the editor has not seen is never hung up.
        self.blocked_after = BLOCKED_AFTER
        self._burst = Burst(loop)

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
        if self._keeper:
            self._keeper_holds[offer.id] = (pty.master, pty.slave_path)
            self._keeper_soon()
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
        if offer.stray_timer is not None:
            # The command wrote (and maybe ended) before its pid arrived.
            offer.stray_timer.cancel()
            offer.stray_timer = None
            data, offer.unexplained = offer.unexplained, b""
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
        self._cancel_editor_check(offer)
        self._check_editor_later(offer)

    def drawn(self, offer_id: int) -> None:
        """The editor has drawn the offer's window, the first bytes in its
        terminal: the user sees the question. From now on a busy editor
        only delays the keys typed into it; only one that answers nothing
        for DRAWN_PATIENCE hangs it up."""
        offer = self._offers.get(offer_id)
        if offer is None:
            return
        offer.drawn = True
        self._cancel_editor_check(offer)
        self._check_editor_later(offer)

    def configure(self, blocked_ms: float) -> None:
        """How long a command may wait on a question while the editor serves
        nothing before it is hung up; 0 or less: never."""
        self.blocked_after = blocked_ms / 1000

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
        self._keeper = keeper
        self._keeper_holds, self._keeper_drops = {}, []
        if keeper is None:
            return
        keeper.hold({o.id: (o.pty.master, o.slave_path) for o in self._offers.values() if o.pty.master >= 0})
        keeper.shown(*(o.id for o in self._offers.values() if o.state in (State.PRESENTED, State.ATTACHED)))

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
            offer.unexplained = data
            offer.stray_timer = self._loop.call_later(STRAY_GRACE, self._turn_away, offer)
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
        if self._keeper:
            self._keeper.shown(offer.id)
        # The window first; the prompt for its title follows (parsing the
        # screen costs milliseconds the user would wait for the window).
        self._presenter.present(offer, data)
        self._schedule_prompt(offer)
        self._check_editor_later(offer)

    def _check_editor_later(self, offer: Offer) -> None:
        # Half between checks, half for the mode's answer: blocked_after is
        # the whole wait.
        if self.blocked_after > 0:
            check = self._loop.call_later(self.blocked_after / 2, self._check_editor_serves, offer)
            offer.editor_check = check

    def _waits_for_an_answer(self, offer: Offer) -> bool:
        """Its prompt is on its way to the user or shown, and the command
        still runs: one that has ended waits on nothing (what it wrote
        simply waits in the pty for its window)."""
        return offer.state in (State.PRESENTED, State.ATTACHED) and not offer.released

    def _check_editor_serves(self, offer: Offer) -> None:
        """Whether the editor can still show the prompt and pass it keys.
        Asked its mode, Neovim answers at once while it waits for the user
        (a hit-enter prompt, which serves nothing else meanwhile), and
        otherwise once it serves its events again: never while it is blocked
        in system(), jobwait() or a busy loop. So no answer in time is the
        sign of a blocked editor."""
        offer.editor_check = None
        if not self._waits_for_an_answer(offer):
            return
        # A drawn prompt is the user's: a busy spell only delays their keys.
        patience = max(DRAWN_PATIENCE, self.blocked_after) if offer.drawn else self.blocked_after / 2
        deadline = self._loop.call_later(patience, self._editor_blocked, offer)
        offer.editor_check = deadline

        def answered(waits_for_user: bool | None) -> None:
            if offer.editor_check is not deadline:
                return  # too late: seen, hung up or ended meanwhile
            deadline.cancel()
            offer.editor_check = None
            if waits_for_user is None:
                return  # the editor is going away; so is this host
            # Not blocked. Waiting for the user, who will come back to it;
            # or serving its events again, the offer's `present` among them
            # (sent before the question), and its `seen` on the way. Looked
            # at again later all the same.
            if self._waits_for_an_answer(offer):
                self._check_editor_later(offer)

        self._presenter.editor_waits_for_user(answered)

    def _editor_blocked(self, offer: Offer) -> None:
        """The editor did not even answer for its mode: it serves nothing."""
        offer.editor_check = None
        if self._waits_for_an_answer(offer):
            self._hang_up_unserved(offer)

    def _hang_up_unserved(self, offer: Offer) -> None:
        """The editor is blocked: nobody can answer the command, which would
        wait forever (and the editor perhaps on it). It is hung up as a
        declined prompt is, and the user is told what it asked, first: the
        offer and its screen are gone after."""
        question = offer.screen.prompt(look_above=True) or offer.last_prompt
        self._presenter.unserved(offer, question)
        self._close(offer, declined=True)

    def _turn_away(self, offer: Offer) -> None:
        """Hang up the stray writers of an unbound offer; keep it, clean."""
        offer.stray_timer = None
        offer.unexplained = b""
        if offer.state is not State.ARMED:
            return
        # A command may have been given it meanwhile (its pid on the way):
        # its session is spared, and what it writes is its own.
        command = session_of(offer.pty.master)
        writers = self._hang_up_strays(offer, spare=command)
        if command is None:
            self._wipe_stray_traces(offer)
        self._rearm(offer)
        if writers:  # else the writer had gone: nothing was done to anyone
            self._presenter.turned_away(writers)

    def _hang_up_strays(self, offer: Offer, spare: int | None) -> list[str]:
        """SIGHUP to whatever holds the terminal outside the session `spare`;
        those it was sent to, named for the user."""
        try:
            pids = holders(offer.slave_path, outside_session=spare)
        except OSError:  # no /proc: nobody to name or hang up
            pids = []
        names = {pid: process_name(pid) for pid in pids}
        return [f"{names[pid]} (pid {pid})" for pid in hang_up(pids)]

    def _wipe_stray_traces(self, offer: Offer) -> None:
        """With no command on the terminal, what else the strays wrote goes,
        and the terminal modes they set (raw, no echo) are a fresh pty's."""
        for _ in drain(offer.pty.master):
            pass
        restore_defaults(offer.pty)

    def _rearm(self, offer: Offer) -> None:
        """Watched again for its command's first write, on a blank screen
        (and a fresh filter: a stray may have left a sequence unfinished)."""
        offer.screen = ScreenModel(offer.rows, offer.cols)
        offer.sequences = SequenceFilter()
        offer.relay.watch()

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

    def _keeper_soon(self, delay: float = 0.0) -> None:
        if self._keeper_due is None or (delay == 0.0 and self._keeper_due.when() > self._loop.time()):
            if self._keeper_due is not None:
                self._keeper_due.cancel()
            self._keeper_due = self._loop.call_later(delay, self._flush_keeper)

    def _flush_keeper(self) -> None:
        self._keeper_due = None
        if self._keeper is None:
            return
        if self._keeper_holds:
            # Descriptors must still be open when sent: holds of offers closed
            # since were taken out of the batch by _close.
            holds, self._keeper_holds = self._keeper_holds, {}
            self._keeper.hold(holds)
        if self._keeper_drops:
            drops, self._keeper_drops = self._keeper_drops, []
            self._keeper.drop(drops)

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
        self._let_the_keeper_go(offer, now=declined)
        offer.pty.close()
        self._offers.pop(offer.id, None)

    def _stop_watching(self, offer: Offer) -> None:
        """No exit, timer, read or write of this offer is waited for any more."""
        if offer.watch is not None:
            offer.watch.cancel()
        if offer.prompt_timer is not None:
            offer.prompt_timer.cancel()
            offer.prompt_timer = None
        if offer.stray_timer is not None:
            offer.stray_timer.cancel()
            offer.stray_timer = None
        self._cancel_editor_check(offer)
        if offer.pty.master >= 0:
            offer.relay.stop()

    def _cancel_editor_check(self, offer: Offer) -> None:
        if offer.editor_check is not None:
            offer.editor_check.cancel()
            offer.editor_check = None

    def _hang_up_command(self, offer: Offer) -> None:
        """A declined command is sent its SIGHUP first, as the terminal's
        hang-up would (the last master copy may be the keeper's, let go a
        moment later): it must end hung up, not on what the others do once
        they are. Only its own session's leader: the bound command's, or
        whichever holds an offer not bound yet."""
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

    def _let_the_keeper_go(self, offer: Offer, now: bool) -> None:
        """The keeper's copy of the master is the last: the kernel's hang-up
        happens when it closes it. `now` for a declined prompt; a command
        that has ended hears nothing, so its copies go in a batch a moment
        later. A copy not sent yet is simply not sent."""
        if self._keeper and self._keeper_holds.pop(offer.id, None) is None:
            self._keeper_drops.append(offer.id)
            self._keeper_soon(0.0 if now else KEEPER_BATCH_DELAY)
