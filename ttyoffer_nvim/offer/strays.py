"""Strays: processes that write to a spare pty no command was given.

A write no command can have made (the pty is nobody's controlling terminal
and no command was bound to it) comes from a process that opened a spare
terminal by its path: gpg-agent's ssh support asks for passphrases on the
terminal the agent was started from, and that may have been an offer's, long
ended, whose number a spare now has. Nobody would ever see that prompt, so
the writer is hung up and the offer stays armed, clean, for its command.
"""

from __future__ import annotations

import asyncio

from ..term.hangup import hang_up, holders
from ..term.procfs import process_name
from ..term.ptys import drain, restore_defaults, session_of
from ..term.sequences import SequenceFilter
from .model import Offer, Presenter, State
from .screen import ScreenModel

# How long a write that no command seems to have made waits for the bind that
# would explain it (a command that wrote and exited before its pid arrived)
# before the writer is taken for a stray and hung up.
STRAY_GRACE = 0.5


class Strays:
    """The writes of unbound offers that nobody explains yet, and the
    strays hung up once the grace is over."""

    def __init__(self, loop: asyncio.AbstractEventLoop, presenter: Presenter) -> None:
        self._loop = loop
        self._presenter = presenter

    def suspect(self, offer: Offer, data: bytes) -> None:
        """`data`, written to an unbound offer, waits for a bind to explain it."""
        offer.unexplained = data
        offer.stray_timer = self._loop.call_later(STRAY_GRACE, self.turn_away, offer)

    def explained(self, offer: Offer) -> bytes | None:
        """The command's pid arrived: what it wrote (and maybe ended) before,
        if anything waited for it."""
        if offer.stray_timer is None:
            return None
        self.cancel(offer)
        data, offer.unexplained = offer.unexplained, b""
        return data

    def cancel(self, offer: Offer) -> None:
        if offer.stray_timer is not None:
            offer.stray_timer.cancel()
            offer.stray_timer = None

    def turn_away(self, offer: Offer) -> None:
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
