"""Hermetic: what /proc says about processes, read in one place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from harness import wait_until
from ttyoffer_nvim.term import procfs
from ttyoffer_nvim.term.ptys import open_pty


def test_own_stat() -> None:
    info = procfs.stat(os.getpid())
    assert info is not None
    assert info.state == "R"  # reading its own stat, it runs
    assert (info.ppid, info.pgrp, info.session) == (os.getppid(), os.getpgrp(), os.getsid(0))
    assert os.getpid() in procfs.pids()


def test_a_name_with_parentheses_and_spaces_does_not_shift_the_fields() -> None:
    script = "open('/proc/self/comm', 'w').write(') 1 2 3 (x'); print(flush=True); input()"
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"\n"
        assert procfs.process_name(child.pid) == ") 1 2 3 (x"
        info = procfs.stat(child.pid)
        assert info is not None
        assert (info.ppid, info.pgrp, info.session, info.tty_nr) == (os.getpid(), child.pid, child.pid, 0)
    finally:
        child.kill()
        child.wait()


def test_the_controlling_terminal_by_its_device_number() -> None:
    pty = open_pty(24, 80)
    script = "import os, sys; os.close(os.open(sys.argv[1], os.O_RDWR)); print(flush=True); input()"
    child = subprocess.Popen(
        [sys.executable, "-c", script, pty.slave_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"\n"
        info = procfs.stat(child.pid)
        assert info is not None and info.tty_nr != 0
        assert info.tty_nr == procfs.tty_number(pty.slave_path)
        assert procfs.tty_number("/nonexistent/tty") == -1
    finally:
        child.kill()
        child.wait()
        pty.close()


def test_gone_means_exited_reaped_or_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "input()"], stdin=subprocess.PIPE)
    assert not procfs.process_gone(child.pid)
    assert child.stdin is not None
    child.stdin.close()
    # Exited and not reaped yet: a zombie, gone all the same.
    wait_until(lambda: (lambda i: i is not None and i.state == "Z")(procfs.stat(child.pid)), what="a zombie")
    assert procfs.process_gone(child.pid)
    child.wait()
    assert procfs.process_gone(child.pid)
    assert procfs.stat(child.pid) is None
    assert procfs.process_name(child.pid) == "?"


def test_a_pinned_process_is_signalled_and_never_another_after_it() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        with procfs.pinned(child.pid) as pidfd:
            assert pidfd >= 0
            assert procfs.send_signal(pidfd, signal.SIGTERM)
            assert child.wait(timeout=10) == -signal.SIGTERM
            # Reaped: its pid may be another's now; the pidfd still names it.
            assert not procfs.send_signal(pidfd, signal.SIGTERM)
    finally:
        child.kill()
        child.wait()
    no_such = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    with procfs.pinned(no_such) as none:
        assert none == -1 and not procfs.send_signal(none, signal.SIGTERM)
