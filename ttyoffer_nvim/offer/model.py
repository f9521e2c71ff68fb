"""One offer: its record, its states, its size, and the Presenter it is
shown through (the state machine over them is ``offer.OfferTable``)."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..term.exitwatch import ExitWatch
from ..term.ptys import Pty
from ..term.relay import Relay
from ..term.sequences import SequenceFilter
from .screen import ScreenModel

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

    @property
    def waits_for_an_answer(self) -> bool:
        """Its prompt is on its way to the user or shown, and the command
        still runs: one that has ended waits on nothing (what it wrote
        simply waits in the pty for its window)."""
        return self.state in (State.PRESENTED, State.ATTACHED) and not self.released
