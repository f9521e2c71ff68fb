"""Hermetic: the keeper keeps terminals alive when the host goes away, and
hangs up those whose prompt nobody can answer any more."""

from __future__ import annotations

import signal
import subprocess
import sys

from harness import start_stray, wait_until
from ttyoffer_nvim.keeper import KeeperLink
from ttyoffer_nvim.procfs import process_gone
from ttyoffer_nvim.ptys import open_pty

READY = "print('ready', flush=True); "
ASK = "import os; fd = os.open('/dev/tty', os.O_RDWR); " + READY + "os.read(fd, 1); "
TAKE_TTY = "import os, sys; os.close(os.open(sys.argv[1], os.O_RDWR)); exec(sys.argv[2])"


def on_pty(slave: str, script: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", TAKE_TTY, slave, script],
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
    )


def test_host_gone_quiet_commands_go_on_shown_prompts_end() -> None:
    link = KeeperLink.start()
    assert link is not None
    quiet, asking = open_pty(24, 80), open_pty(24, 80)
    link.hold({1: (quiet.master, quiet.slave_path), 2: (asking.master, asking.slave_path)})
    # One never touches its terminal, one waits for an answer on it.
    sleeper = on_pty(quiet.slave_path, "import time; " + READY + "time.sleep(1); print('went on')")
    reader = on_pty(
        asking.slave_path,
        ASK + "print('yes')",
    )
    # And, as gpg-agent's pinentry would, a process outside the command's
    # session has the prompt's terminal open by its path.
    stray = start_stray(asking.slave_path)
    link.shown(2)
    # Both hold their terminal (as the host's slave copy guarantees in real
    # use); then the host dies: its descriptors go, the keeper sees the link close.
    for proc in (sleeper, reader):
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    quiet.close()
    asking.close()
    link.close()
    out, _ = reader.communicate(timeout=10)
    assert reader.returncode != 0 and "yes" not in out  # hung up: it ends instead of waiting forever
    assert stray.wait(timeout=10) == -signal.SIGHUP  # rather than spinning on the dead terminal
    out, _ = sleeper.communicate(timeout=10)
    assert sleeper.returncode == 0 and out.strip() == "went on"  # no SIGHUP for it
    wait_until(lambda: process_gone(link.pid), what="the keeper to finish")


def test_dropping_hands_the_hang_up_to_the_keeper() -> None:
    link = KeeperLink.start()
    assert link is not None
    pty = open_pty(24, 80)
    link.hold({7: (pty.master, pty.slave_path)})
    reader = on_pty(
        pty.slave_path,
        ASK + "print('answered')",
    )
    assert reader.stdout is not None
    assert reader.stdout.readline().strip() == "ready"
    pty.close()  # the host's copies are gone, the keeper's holds the line
    # Absence of a hang-up can only be shown over some time: a bounded wait.
    try:
        reader.wait(timeout=0.3)
        raise AssertionError("hung up while the keeper still held the master")
    except subprocess.TimeoutExpired:
        pass
    link.drop([7])  # declined: now it hangs up
    out, _ = reader.communicate(timeout=10)
    assert "answered" not in out
    link.close()
    wait_until(lambda: process_gone(link.pid), what="the keeper to finish")
