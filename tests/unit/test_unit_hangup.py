"""Hermetic: hanging up what still holds a terminal that is going away."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from harness import start_stray
from ttyoffer_nvim.term.hangup import HANG_UP_MARK, hang_up_holders, slave_held_elsewhere
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


# A holder that waits for its SIGHUP (blocked, so taken by sigwaitinfo) and
# says how it came: si_code and the value sent with it.
SIGINFO_OF_THE_HANG_UP = """
import os, signal, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
print("ready", flush=True)
info = signal.sigwaitinfo({signal.SIGHUP})
print(info.si_code, info.si_status, flush=True)
"""


def test_the_hang_up_is_marked_as_the_terminals(pty: Pty) -> None:
    # The compiled leader tells it from a SIGHUP of kill(2) by this mark (a
    # command it kills ends the leader with 129: test_unit_leader.py).
    holder = subprocess.Popen(
        [sys.executable, "-c", SIGINFO_OF_THE_HANG_UP, pty.slave_path],
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "ready\n"
        pty.close_slave()
        assert hang_up_holders(pty.master, pty.slave_path) == [holder.pid]
        code, value = holder.stdout.readline().split()
        # SI_QUEUE (-1): sigqueue(3); si_status holds the value's int.
        assert (int(code), int(value)) == (-1, HANG_UP_MARK)
        assert holder.wait(timeout=10) == 0
    finally:
        holder.kill()
        holder.wait()
