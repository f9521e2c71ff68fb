"""One terminal's master relayed to a window of the editor, with flow
control, and the keys typed there written back: what a prompt window
(offer.py) and a run's pane (runs.py) share.

Output is read in batches and counted until the editor acknowledges it
(its terminal has taken it). Past RELAY_WINDOW unacknowledged bytes the
master is not read: the kernel's pty buffer fills and the program blocks in
write(), as on any terminal that cannot keep up, instead of the host
queueing without bound. Only what was relayed counts: output a filter drops
whole is never acknowledged, so it never holds the reading up.

Typed input that the terminal cannot take at once waits, in order, up to
MAX_PENDING_INPUT bytes (more is dropped, as a terminal drops what its
full input buffer cannot hold), and goes out when the master is writable.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

from .ptys import READ_SIZE, PtyEOF, read_available

# A pty hands out at most a few KB per read; up to this much is gathered per
# message to the editor, so a flood costs few messages.
BATCH_SIZE = 256 * 1024
# Relayed bytes the editor may not have taken yet. About a pty's own
# buffer: a question written after a flood waits behind no more than it
# would in a native terminal (measured: 7-14 ms after a 30 s flood at 64 KB,
# 44 ms at 256 KB; relay throughput the same as native).
RELAY_WINDOW = 64 * 1024
# Typed input the terminal has not taken yet, at most.
MAX_PENDING_INPUT = 1024 * 1024


class Relay:
    """The flow control and the typed input of one master. `on_readable`
    is called (by the loop) when the master has output and the window has
    room; it calls read_batch() and relayed()."""

    def __init__(self, loop: asyncio.AbstractEventLoop, master: int) -> None:
        self._loop = loop
        self.master = master
        self.on_readable: Callable[[], None] | None = None
        # Relayed to the editor and not acknowledged yet.
        self.unacked = 0
        # Reading paused until the editor acknowledges.
        self.throttled = False
        self.pending_input = bytearray()
        self._watching = False

    # -- output --------------------------------------------------------------

    def watch(self) -> None:
        """Read the master when it has output (again), once the window has
        room."""
        if self.unacked >= RELAY_WINDOW:
            self.throttled = True
            return
        if self.master >= 0 and not self._watching and self.on_readable is not None:
            self._loop.add_reader(self.master, self.on_readable)
            self._watching = True

    def unwatch(self) -> None:
        if self._watching:
            self._loop.remove_reader(self.master)
            self._watching = False

    def read_batch(self) -> tuple[bytes, bool]:
        """What the master has now, at most what the window has room for,
        and whether it reached its end (then it is not read any more)."""
        chunks: list[bytes] = []
        size, eof = 0, False
        room = min(BATCH_SIZE, RELAY_WINDOW - self.unacked)
        while size < room:
            try:
                data = read_available(self.master, READ_SIZE)
            except (PtyEOF, OSError):
                eof = True
                break
            if not data:
                break
            chunks.append(data)
            size += len(data)
        if eof:
            self.unwatch()
        return b"".join(chunks), eof

    def relayed(self, count: int) -> None:
        """`count` bytes went to the editor; a full window pauses reading."""
        self.unacked += count
        if self.unacked >= RELAY_WINDOW:
            self.throttled = True
            self.unwatch()

    def acknowledge(self, count: int, resume: bool = True) -> None:
        """The editor's terminal has taken `count` relayed bytes: reading goes
        on when the window has room again (and `resume` allows it)."""
        self.unacked = max(0, self.unacked - count)
        if self.throttled and self.unacked < RELAY_WINDOW and resume:
            self.throttled = False
            self.watch()

    # -- input ---------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Typed keys, in order after any still waiting."""
        if self.master < 0:
            return
        if self.pending_input:
            if len(self.pending_input) + len(data) <= MAX_PENDING_INPUT:
                self.pending_input += data
            return
        written = self._write_some(data)
        if written < len(data):
            self.pending_input += data[written:]
            self._loop.add_writer(self.master, self._on_writable)

    def drop_input(self) -> None:
        """What was typed and not taken yet goes."""
        if self.pending_input:
            self.pending_input.clear()
            self._loop.remove_writer(self.master)

    def _write_some(self, data: bytes) -> int:
        try:
            return os.write(self.master, data)
        except BlockingIOError:
            return 0
        except OSError:
            return len(data)  # the terminal is gone; the input has nowhere to go

    def _on_writable(self) -> None:
        written = self._write_some(bytes(self.pending_input))
        del self.pending_input[:written]
        if not self.pending_input:
            self._loop.remove_writer(self.master)

    # -- the end ---------------------------------------------------------------

    def stop(self) -> None:
        """Nothing of the master is waited for any more (call before it is
        closed)."""
        self.unwatch()
        self.drop_input()
