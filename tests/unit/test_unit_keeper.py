"""Hermetic: the keeper keeps terminals alive when the host goes away, and
hangs up those whose prompt nobody can answer any more; the host sees the
keeper go, and reaps it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest

from harness import pidfds_of, start_stray, wait_until
from ttyoffer_nvim.term import keeper
from ttyoffer_nvim.term.keeper import KeeperLink
from ttyoffer_nvim.term.procfs import process_gone, stat
from ttyoffer_nvim.term.ptys import open_pty

# The command: its terminal made its controlling one, then the script.
TAKE_TTY = "import os, signal, sys; os.close(os.open(sys.argv[1], os.O_RDWR)); exec(sys.argv[2])"
READY = "print('ready', flush=True); "
OPEN_TTY = "import termios; fd = os.open('/dev/tty', os.O_RDWR); " + READY
# Waits for the answer. A hang-up may wake the read (EIO) before the kernel
# signals the session: the SIGHUP on its way is then waited for, so that
# ending by it tells a hang-up from any other failure.
ANSWER = "\ntry:\n    os.read(fd, 1)\nexcept OSError:\n    signal.pause()\nprint('answered')"
# Asks on its terminal and waits for the answer.
ASK = OPEN_TTY + ANSWER
# The same, after telling, on a line on stdin, that its terminal is still its
# own: a hung-up one would have ended it, or failed the question.
CHECKED_ASK = OPEN_TTY + "input(); termios.tcgetattr(fd); print('alive', flush=True); " + ANSWER
# Never touches its terminal until told to go on (a line on stdin); then
# shows that the terminal is still its own: a hung-up one could not be
# opened any more.
QUIET = READY + "input(); os.close(os.open('/dev/tty', os.O_RDWR)); print('went on')"
# Quiet until told to go on; then asks on its terminal, and waits.
ASK_LATER = READY + "input(); fd = os.open('/dev/tty', os.O_RDWR); os.write(fd, b'Password: '); " + ANSWER


def on_pty(slave: str, script: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", TAKE_TTY, slave, script],
        start_new_session=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_host_gone_quiet_commands_go_on_shown_prompts_end() -> None:
    link = KeeperLink.start()
    assert link is not None
    quiet, asking = open_pty(24, 80), open_pty(24, 80)
    link.hold({1: (quiet.master, quiet.slave_path), 2: (asking.master, asking.slave_path)})
    # One never touches its terminal, one waits for an answer on it; both
    # hold their terminal (as the host's slave copy guarantees in real use).
    went_on = on_pty(quiet.slave_path, QUIET)
    reader = on_pty(asking.slave_path, ASK)
    # And, as gpg-agent's pinentry would, a process outside the command's
    # session has the prompt's terminal open by its path.
    stray = start_stray(asking.slave_path)
    link.shown(2)
    # Then the host dies: its descriptors go, the keeper sees the link close.
    quiet.close()
    asking.close()
    link.close()
    out, _ = reader.communicate(timeout=10)
    # Hung up: it ends instead of waiting forever.
    assert reader.returncode == -signal.SIGHUP and "answered" not in out
    assert stray.wait(timeout=10) == -signal.SIGHUP  # rather than spinning on the dead terminal
    # The quiet one's terminal is kept until its command exits: the keeper
    # waits on it (and has dealt with every terminal it held by then).
    wait_until(lambda: pidfds_of(link.pid) == 1, what="the keeper to watch the quiet command")
    out, _ = went_on.communicate("go\n", timeout=10)
    assert went_on.returncode == 0 and out.strip() == "went on"  # no SIGHUP for it
    wait_until(lambda: process_gone(link.pid), what="the keeper to finish")


def test_dropping_hands_the_hang_up_to_the_keeper() -> None:
    link = KeeperLink.start()
    assert link is not None
    pty = open_pty(24, 80)
    link.hold({7: (pty.master, pty.slave_path)})
    reader = on_pty(pty.slave_path, CHECKED_ASK)
    assert reader.stdin is not None and reader.stdout is not None
    pty.close()  # the host's copies are gone, the keeper's holds the line
    # The hang-up comes with the close of the last master copy, within that
    # close(): were it the host's, the command would be ended by now.
    reader.stdin.write("check\n")
    reader.stdin.flush()
    assert reader.stdout.readline().strip() == "alive"
    link.drop([7])  # declined: now it hangs up
    out, _ = reader.communicate(timeout=10)
    assert reader.returncode == -signal.SIGHUP and "answered" not in out
    link.close()
    wait_until(lambda: process_gone(link.pid), what="the keeper to finish")


def test_host_gone_a_command_that_asks_later_is_hung_up_at_its_first_write() -> None:
    link = KeeperLink.start()
    assert link is not None
    pty = open_pty(24, 80)
    link.hold({3: (pty.master, pty.slave_path)})
    # Quiet when the host dies; it has no descriptor on its terminal then.
    asker = on_pty(pty.slave_path, ASK_LATER)
    assert asker.stdin is not None
    pty.close()
    link.close()
    try:
        wait_until(lambda: pidfds_of(link.pid) == 1, what="the keeper to watch the command")
        # Then it asks: nobody can show the question, so it is hung up at
        # once instead of waiting for an answer forever.
        asker.stdin.write("go\n")
        asker.stdin.flush()
        out, _ = asker.communicate(timeout=10)
        assert asker.returncode == -signal.SIGHUP and "answered" not in out
        wait_until(lambda: process_gone(link.pid), what="the keeper to finish")
    finally:  # a command left waiting must not outlive the test
        asker.kill()
        asker.wait()


def watch(link: KeeperLink, loop: asyncio.AbstractEventLoop) -> asyncio.Future[KeeperLink]:
    lost: asyncio.Future[KeeperLink] = loop.create_future()
    link.watch(loop, lost.set_result)
    return lost


def test_the_host_sees_its_keeper_die_and_reaps_it() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        link = KeeperLink.start()
        assert link is not None
        lost = watch(link, loop)
        os.kill(link.pid, signal.SIGKILL)
        assert await asyncio.wait_for(lost, 10) is link
        # Reaped: no zombie left.
        for _ in range(500):
            if stat(link.pid) is None:
                break
            await asyncio.sleep(0.01)
        assert stat(link.pid) is None
        assert link.returncode == -signal.SIGKILL
        link.hold({1: (0, "/dev/null")})  # sending to a lost keeper does nothing

    asyncio.run(run())


def test_a_keeper_that_cannot_start_is_seen_gone_and_reaped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keeper, "_KEEPER_MAIN", "import sys; sys.exit(3)")

    async def run() -> None:
        link = KeeperLink.start()
        assert link is not None
        assert await asyncio.wait_for(watch(link, asyncio.get_running_loop()), 10) is link
        for _ in range(500):
            if link.returncode is not None:
                break
            await asyncio.sleep(0.01)
        assert link.returncode == 3
        assert stat(link.pid) is None

    asyncio.run(run())
