"""The keeper in post: started with the first offer, replaced when it dies,
given up when it keeps dying (the keeper itself: ``keeper``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from .keeper import KeeperLink

# A keeper that dies is replaced, but not more often than this many times
# within KEEPER_RESTART_WINDOW seconds: one that keeps dying is given up.
KEEPER_RESTARTS = 3
KEEPER_RESTART_WINDOW = 60.0


class Keepers:
    """The host's one keeper at a time. `no_keeper(reason)` when there is
    none to be had; `replaced(keeper)` when a new one (or none) takes the
    place of one that died."""

    def __init__(
        self, no_keeper: Callable[[str], None], replaced: Callable[[KeeperLink | None], None]
    ) -> None:
        self._no_keeper = no_keeper
        self._replaced = replaced
        self._loop: asyncio.AbstractEventLoop | None = None
        self._keeper: KeeperLink | None = None
        self._restarts: list[float] = []

    @property
    def pid(self) -> int:
        """The keeper's pid, 0 when there is none."""
        return self._keeper.pid if self._keeper else 0

    def start(self, loop: asyncio.AbstractEventLoop) -> KeeperLink | None:
        """The first keeper, watched on `loop`; None when it cannot start."""
        self._loop = loop
        self._keeper = self._spawn()
        return self._keeper

    def _spawn(self) -> KeeperLink | None:
        assert self._loop is not None
        try:
            keeper = KeeperLink.spawn()
        except OSError as err:
            self._no_keeper(f"cannot start it: {err.strerror or err}")
            return None
        keeper.watch(self._loop, self._lost)
        return keeper

    def _lost(self, keeper: KeeperLink) -> None:
        """The keeper is gone (reaped by its link): another takes its place,
        with a copy of every master, unless keepers keep dying."""
        if keeper is not self._keeper:
            return
        now = time.monotonic()
        self._restarts = [t for t in self._restarts if now - t < KEEPER_RESTART_WINDOW]
        replacement = None
        if len(self._restarts) >= KEEPER_RESTARTS:
            # One that cannot start at all ends here too, a moment later.
            self._no_keeper(f"it died {KEEPER_RESTARTS + 1} times within a minute")
        else:
            self._restarts.append(now)
            replacement = self._spawn()
        self._keeper = replacement
        self._replaced(replacement)
