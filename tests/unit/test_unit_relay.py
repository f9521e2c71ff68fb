"""Hermetic: the relay the prompt window and the run pane share, over a real
pty (ttyoffer_nvim/term/relay.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import termios
import tty

from ttyoffer_nvim.term.ptys import open_pty
from ttyoffer_nvim.term.relay import RELAY_WINDOW, Relay


async def test_reading_pauses_on_a_full_window_and_goes_on_when_acknowledged() -> None:
    loop = asyncio.get_running_loop()
    pty = open_pty(24, 80)
    tty.setraw(pty.slave)
    relay = Relay(loop, pty.master)
    got = bytearray()
    woke = asyncio.Event()

    def readable() -> None:
        data, _ = relay.read_batch()
        got.extend(data)
        relay.relayed(len(data))
        woke.set()

    relay.on_readable = readable
    relay.watch()
    try:
        written = 0
        chunk = b"x" * 4096
        # The slave side fills until the kernel's buffer and our window do.
        os.set_blocking(pty.slave, False)
        while not relay.throttled:
            with contextlib.suppress(BlockingIOError):
                written += os.write(pty.slave, chunk)
            woke.clear()
            await asyncio.wait_for(woke.wait(), 10)
        assert len(got) >= RELAY_WINDOW and relay.unacked == len(got)
        before = len(got)
        await asyncio.sleep(0.05)
        assert len(got) == before, "read on while the window was full"
        relay.acknowledge(len(got))
        assert not relay.throttled and relay.unacked == 0
        pending = b"more"
        while pending:
            try:
                pending = pending[os.write(pty.slave, pending) :]
            except BlockingIOError:
                await asyncio.sleep(0.001)
        for _ in range(1000):
            if got.endswith(b"more"):
                break
            await asyncio.sleep(0.01)
        assert got.endswith(b"more")
    finally:
        relay.stop()
        pty.close()


async def test_output_dropped_whole_never_throttles() -> None:
    """Only what was relayed counts: a batch a filter drops entirely is
    never acknowledged, so it must not pause the reading."""
    loop = asyncio.get_running_loop()
    pty = open_pty(24, 80)
    tty.setraw(pty.slave)
    relay = Relay(loop, pty.master)
    seen = asyncio.Event()
    tail = bytearray()

    def readable() -> None:
        data, _ = relay.read_batch()
        tail.extend(data)
        del tail[:-8]  # "end" may come split between reads
        if tail.endswith(b"end"):
            seen.set()
        relay.relayed(0)  # everything dropped

    relay.on_readable = readable
    relay.watch()
    try:
        os.set_blocking(pty.slave, False)
        # Never a blocking write: the reader runs on this same loop.
        pending = b"t" * (4 * RELAY_WINDOW) + b"end"
        while pending:
            try:
                pending = pending[os.write(pty.slave, pending[:4096]) :]
            except BlockingIOError:
                await asyncio.sleep(0.001)
        await asyncio.wait_for(seen.wait(), 10)
        assert not relay.throttled and relay.unacked == 0
    finally:
        relay.stop()
        pty.close()


async def test_typed_input_waits_in_order_and_drop_input_forgets_it() -> None:
    loop = asyncio.get_running_loop()
    pty = open_pty(24, 80)
    attrs = termios.tcgetattr(pty.slave)
    attrs[3] &= ~(termios.ICANON | termios.ECHO)
    termios.tcsetattr(pty.slave, termios.TCSANOW, attrs)
    relay = Relay(loop, pty.master)
    try:
        # More than the terminal's input buffer takes at once: the rest waits.
        typed = bytes(range(97, 123)) * 4000
        relay.write(typed)
        relay.write(b"!")
        assert relay.pending_input
        received = bytearray()
        os.set_blocking(pty.slave, False)
        for _ in range(2000):
            try:
                received += os.read(pty.slave, 65536)
            except BlockingIOError:
                await asyncio.sleep(0.005)
            if len(received) == len(typed) + 1:
                break
        assert bytes(received) == typed + b"!"
        relay.write(b"y" * 200_000)
        relay.drop_input()
        assert not relay.pending_input
    finally:
        relay.stop()
        pty.close()
