"""What the keeper is told of the offers' masters: copies to hold, prompts
shown, copies to let go, sent in batches (one message for many commands)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..term.keeper import KeeperLink

# How long the keeper's copies of ended commands' ptys may wait to be let go:
# one message for many commands instead of one each.
KEEPER_BATCH_DELAY = 0.1


class KeeperCopies:
    """The keeper's copies of the offers' masters, or nothing without one."""

    def __init__(self, loop: asyncio.AbstractEventLoop, keeper: KeeperLink | None) -> None:
        self._loop = loop
        self._keeper = keeper
        # Sent to the keeper once per loop turn, in batches.
        self._holds: dict[int, tuple[int, str]] = {}
        self._drops: list[int] = []
        self._due: asyncio.TimerHandle | None = None

    def hold(self, offer_id: int, master: int, slave_path: str) -> None:
        """A new offer's master, to be copied into the keeper soon."""
        if self._keeper:
            self._holds[offer_id] = (master, slave_path)
            self._soon()

    def shown(self, offer_id: int) -> None:
        """The offer's prompt was shown: the keeper answers for it if the
        host dies."""
        if self._keeper:
            self._keeper.shown(offer_id)

    def let_go(self, offer_id: int, now: bool) -> None:
        """The keeper's copy of the master is the last: the kernel's hang-up
        happens when it closes it. `now` for a declined prompt; a command
        that has ended hears nothing, so its copies go in a batch a moment
        later. A copy not sent yet is simply not sent."""
        if self._keeper and self._holds.pop(offer_id, None) is None:
            self._drops.append(offer_id)
            self._soon(0.0 if now else KEEPER_BATCH_DELAY)

    def replace(
        self, keeper: KeeperLink | None, holds: dict[int, tuple[int, str]], shown: Iterable[int]
    ) -> None:
        """A new keeper in place of one that died, or none: given a copy of
        every master held now (`holds`), and told which prompts were shown.
        What was still to be sent to the dead one is moot."""
        self._keeper = keeper
        self._holds, self._drops = {}, []
        if keeper is None:
            return
        keeper.hold(holds)
        keeper.shown(*shown)

    def _soon(self, delay: float = 0.0) -> None:
        if self._due is None or (delay == 0.0 and self._due.when() > self._loop.time()):
            if self._due is not None:
                self._due.cancel()
            self._due = self._loop.call_later(delay, self._flush)

    def _flush(self) -> None:
        self._due = None
        if self._keeper is None:
            return
        if self._holds:
            # Descriptors must still be open when sent: holds of offers closed
            # since were taken out of the batch by let_go.
            holds, self._holds = self._holds, {}
            self._keeper.hold(holds)
        if self._drops:
            drops, self._drops = self._drops, []
            self._keeper.drop(drops)
