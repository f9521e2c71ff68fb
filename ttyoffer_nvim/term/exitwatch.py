"""Telling when a process that is not our child has exited."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from .procfs import process_gone


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
