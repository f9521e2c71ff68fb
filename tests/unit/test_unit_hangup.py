"""Hermetic: hanging up what still holds a terminal that is going away."""

from __future__ import annotations

import os
import resource
import signal
from collections.abc import Iterator

import pytest

from harness import start_stray
from ttyoffer_nvim.term.hangup import hang_up_holders, slave_held_elsewhere
from ttyoffer_nvim.term.ptys import Pty, open_pty


@pytest.fixture
def pty() -> Iterator[Pty]:
    pty = open_pty(24, 80)
    yield pty
    pty.close()


def test_nobody_else_nothing_to_do(pty: Pty) -> None:
    pty.close_slave()
    assert slave_held_elsewhere(pty.master) is False
    assert hang_up_holders(pty.master, pty.slave_path) == []


def test_buffered_output_is_not_taken_for_a_holder(pty: Pty) -> None:
    os.write(pty.slave, b"left unread\r\n" * 100)
    pty.close_slave()
    assert slave_held_elsewhere(pty.master) is False


def test_a_holder_is_hung_up(pty: Pty) -> None:
    stray = start_stray(pty.slave_path)
    try:
        pty.close_slave()
        assert slave_held_elsewhere(pty.master) is True
        assert hang_up_holders(pty.master, pty.slave_path) == [stray.pid]
        assert stray.wait(timeout=10) == -signal.SIGHUP
    finally:
        stray.kill()
        stray.wait()


def test_a_master_numbered_beyond_1024(pty: Pty) -> None:
    # A host with a thousand commands in flight has such descriptors, and
    # select() cannot take them: the teardown must not break there.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    high = 1500
    if soft != resource.RLIM_INFINITY and soft <= high:
        resource.setrlimit(resource.RLIMIT_NOFILE, (high + 1, hard))
    try:
        os.dup2(pty.master, high)
        stray = start_stray(pty.slave_path)
        try:
            pty.close_slave()
            assert hang_up_holders(high, pty.slave_path) == [stray.pid]
            assert stray.wait(timeout=10) == -signal.SIGHUP
            assert slave_held_elsewhere(high) is False
        finally:
            stray.kill()
            stray.wait()
            os.close(high)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
