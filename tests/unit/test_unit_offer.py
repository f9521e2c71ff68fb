"""Hermetic: the offer state machine over real ptys, with a fake presenter."""

from __future__ import annotations

import asyncio
import gc
import os
import select
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from harness import STRAY_PROMPT, start_stray
from ttyoffer_nvim.offer import blocked
from ttyoffer_nvim.offer.offer import Offer, OfferTable, State
from ttyoffer_nvim.term.ptys import READ_SIZE, get_winsize, session_of
from ttyoffer_nvim.term.relay import BATCH_SIZE, RELAY_WINDOW


def open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


@pytest.fixture(autouse=True)
def settled_descriptors() -> None:
    """Objects of earlier tests (a pynvim session, its pipes) may still be
    waiting for the garbage collector to close their descriptors; let them,
    so that the counts taken here see only this test's own."""
    gc.collect()


class FakePresenter:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, Any]] = []
        self.presented = asyncio.Event()
        self.closed_event = asyncio.Event()
        self.released_event = asyncio.Event()
        self.turned_away_event = asyncio.Event()
        self.unserved_event = asyncio.Event()
        # The editor's answer when asked whether it waits for the user. None:
        # it could not be asked, and nothing is done (the tests that are not
        # about a blocked editor see nothing of the check).
        self.waits_for_user: bool | None = None
        # False: blocked, as Neovim in system(): no answer comes, the
        # questions wait in `unanswered`.
        self.answering = True
        self.unanswered: list[Callable[[bool | None], None]] = []
        self.mode_asks = 0

    def present(self, offer: Offer, data: bytes) -> None:
        self.calls.append(("present", offer.id, data))
        self.presented.set()

    def output(self, offer: Offer, data: bytes) -> None:
        self.calls.append(("output", offer.id, data))

    def prompt(self, offer: Offer, text: str) -> None:
        self.calls.append(("prompt", offer.id, text))

    def closed(self, offer: Offer) -> None:
        self.calls.append(("closed", offer.id, None))
        self.closed_event.set()

    def released(self, offer_ids: list[int]) -> None:
        self.calls.append(("released", 0, offer_ids))
        self.released_event.set()

    def turned_away(self, writers: list[str]) -> None:
        self.calls.append(("turned_away", 0, writers))
        self.turned_away_event.set()

    def unserved(self, offer: Offer, question: str) -> None:
        self.calls.append(("unserved", offer.id, question))
        self.unserved_event.set()

    def declined(self, offer: Offer, question: str) -> None:
        self.calls.append(("declined", offer.id, question))

    def editor_waits_for_user(self, callback: Callable[[bool | None], None]) -> None:
        self.mode_asks += 1
        if not self.answering:
            self.unanswered.append(callback)
            return
        # Later, as the editor's answer comes: never within the call.
        asyncio.get_running_loop().call_soon(callback, self.waits_for_user)

    def kinds(self) -> list[str]:
        return [c[0] for c in self.calls]

    def received(self) -> bytes:
        return b"".join(c[2] for c in self.calls if c[0] in ("present", "output"))


def spawn_on(offer: Offer, script: str, **popen: Any) -> subprocess.Popen[bytes]:
    """A child that takes the offer's pty as its controlling terminal, as the
    spawner does: a new session opening the slave without O_NOCTTY."""
    prologue = (
        "import os, sys; fd = os.open(sys.argv[1], os.O_RDWR); os.close(fd); "
        "exec(compile(sys.argv[2], 'child', 'exec'))"
    )
    argv = [sys.executable, "-c", prologue, offer.slave_path, script]
    return subprocess.Popen(argv, start_new_session=True, **popen)


async def wait_exit(proc: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    loop = asyncio.get_running_loop()
    return await asyncio.wait_for(loop.run_in_executor(None, proc.wait), timeout)


async def test_no_write_means_no_present_and_no_fd_left() -> None:
    before = open_fds()
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    assert get_winsize(offer.pty.master) == (24, 80)
    proc = spawn_on(offer, "print('stdout only')")
    assert await wait_exit(proc) == 0
    table.release(offer.id)
    assert presenter.calls == []
    assert len(table) == 0
    assert open_fds() == before


async def test_first_write_presents_exactly_once_and_nothing_is_lost() -> None:
    before = open_fds()
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    script = (
        "import os; fd = os.open('/dev/tty', os.O_RDWR)\n"
        "for i in range(200): os.write(fd, b'line %d\\n' % i)\n"
        "os.write(fd, b'Password: ')\n"
        "os.read(fd, 100)\n"
    )
    proc = spawn_on(offer, script)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    assert offer.state is State.PRESENTED
    table.attach(offer.id, 24, 80)
    deadline = asyncio.get_running_loop().time() + 10
    while b"Password: " not in presenter.received():
        assert asyncio.get_running_loop().time() < deadline, presenter.received()[-200:]
        await asyncio.sleep(0.01)
    # Once the output pauses, the prompt on screen is reported for the title.
    while ("prompt", offer.id, "Password") not in presenter.calls:
        assert asyncio.get_running_loop().time() < deadline, presenter.calls[-3:]
        await asyncio.sleep(0.01)
    table.write(offer.id, b"x\r")
    assert await wait_exit(proc) == 0
    table.release(offer.id)
    await asyncio.wait_for(presenter.closed_event.wait(), 5)
    assert presenter.kinds().count("present") == 1
    # The tty turns \\n into \\r\\n (ONLCR), as any terminal would show it.
    expected = b"".join(b"line %d\r\n" % i for i in range(200)) + b"Password: "
    assert presenter.received().startswith(expected)
    assert ("closed", offer.id, None) in presenter.calls
    assert open_fds() == before


async def test_a_dialog_torn_down_after_the_answer_keeps_its_title() -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    # pinentry-curses' shape: a question in a frame, buttons below, and on
    # exit curses' endwin() parks the cursor at the bottom left.
    script = (
        "import os; fd = os.open('/dev/tty', os.O_RDWR)\n"
        "os.write(fd, b'\\x1b[2J\\x1b[5;3H| Passphrase: ______ |\\x1b[7;3H|  <OK>  <Cancel>  |\\x1b[5;17H')\n"
        "os.read(fd, 100)\n"
        "os.write(fd, b'\\x1b[24;1Htorn down')\n"
        "os.write(fd, b'\\x1b[24;1H')\n"
        "os.read(fd, 100)\n"
    )
    proc = spawn_on(offer, script)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    table.attach(offer.id, 24, 80)
    loop = asyncio.get_running_loop()

    async def settled(marker: bytes) -> None:
        deadline = loop.time() + 10
        while marker not in presenter.received() or offer.prompt_timer is not None:
            assert loop.time() < deadline, presenter.calls[-3:]
            await asyncio.sleep(0.01)

    await settled(b"Passphrase")
    table.write(offer.id, b"secret\r")
    await settled(b"torn down")
    prompts = [c[2] for c in presenter.calls if c[0] == "prompt"]
    assert prompts == ["Passphrase"]
    table.write(offer.id, b"\r")
    assert await wait_exit(proc) == 0
    table.release(offer.id)


async def test_close_before_any_write_presents_nothing() -> None:
    before = open_fds()
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    table.dismiss(offer.id)
    await asyncio.sleep(0)  # one loop turn: a stale reader would fire here
    assert presenter.calls == []
    assert open_fds() == before


async def test_write_just_before_exit_is_still_presented() -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    # The child writes and exits; release arrives before the loop saw the byte.
    table._loop.remove_reader(offer.pty.master)
    proc = spawn_on(offer, "import os; os.write(os.open('/dev/tty', os.O_WRONLY), b'bye')")
    assert await wait_exit(proc) == 0
    table.release(offer.id)
    assert presenter.kinds() == ["present"]
    assert presenter.calls[0][2] == b"bye"
    # The window comes up for it, shows the end and is told it is over.
    table.attach(offer.id, 24, 80)
    assert presenter.kinds() == ["present", "closed"]
    assert len(table) == 0


async def test_dismiss_while_waiting_hangs_the_child_up() -> None:
    before = open_fds()
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    script = "import os; fd = os.open('/dev/tty', os.O_RDWR); os.write(fd, b'Answer: '); os.read(fd, 10)"
    proc = spawn_on(offer, script)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    table.attach(offer.id, 24, 80)
    table.dismiss(offer.id)
    # Hung up, as by the terminal's own hang-up: not a hang, not an error of
    # its read, not success.
    assert await wait_exit(proc, 10) == -signal.SIGHUP
    assert len(table) == 0
    assert open_fds() == before


@pytest.mark.parametrize("ending", ["dismissed", "command ended"])
async def test_what_else_holds_the_terminal_is_hung_up_too(ending: str) -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    stray = start_stray(offer.slave_path)
    try:
        if ending == "dismissed":
            script = (
                "import os; fd = os.open('/dev/tty', os.O_RDWR); os.write(fd, b'Answer: '); os.read(fd, 10)"
            )
            proc = spawn_on(offer, script)
            await asyncio.wait_for(presenter.presented.wait(), 10)
            table.attach(offer.id, 24, 80)
            table.dismiss(offer.id)
            assert await wait_exit(proc) == -signal.SIGHUP
        else:
            proc = spawn_on(offer, "print('done')", stdout=subprocess.DEVNULL)
            assert await wait_exit(proc) == 0
            table.release(offer.id)
        # Without the hang-up it would spin on the dead terminal forever (and
        # gpg-agent would wait for it).
        assert await wait_exit(stray) == -signal.SIGHUP
    finally:
        stray.kill()
        stray.wait()
    assert len(table) == 0


# A command that asks on its terminal, opened by the path it was given (as
# GPG_TTY names it), and tells the terminal's mode.
ASK_WITH_MODES = (
    "import os, sys, termios; fd = os.open(sys.argv[1], os.O_RDWR)\n"
    "canonical = bool(termios.tcgetattr(fd)[3] & termios.ICANON)\n"
    "os.write(fd, b'canonical=%d Answer: ' % canonical)\n"
    "print(os.read(fd, 100))\n"
)


async def test_a_write_no_command_made_is_turned_away_and_the_offer_kept_clean() -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    stray = subprocess.Popen([sys.executable, "-c", STRAY_PROMPT, offer.slave_path], start_new_session=True)
    try:
        await asyncio.wait_for(presenter.turned_away_event.wait(), 10)
        assert await wait_exit(stray) == -signal.SIGHUP
    finally:
        stray.kill()
        stray.wait()
    assert presenter.kinds() == ["turned_away"]
    writers = presenter.calls[0][2]
    assert len(writers) == 1 and writers[0].endswith(f"(pid {stray.pid})")
    assert offer.state is State.ARMED
    # The command later given this terminal finds it as a fresh one.
    proc = spawn_on(offer, ASK_WITH_MODES, stdout=subprocess.PIPE)
    table.bind(offer.id, proc.pid)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    first = presenter.calls[1][2]
    assert first.startswith(b"canonical=1 Answer: ") and b"stray" not in first
    table.attach(offer.id, 24, 80)
    table.write(offer.id, b"yes\r")
    assert await wait_exit(proc) == 0
    table.release(offer.id)


async def test_a_command_given_the_terminal_during_the_grace_is_spared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Long enough for the command to be sure to hold its terminal by then.
    monkeypatch.setattr("ttyoffer_nvim.offer.strays.STRAY_GRACE", 30.0)
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    stray = subprocess.Popen([sys.executable, "-c", STRAY_PROMPT, offer.slave_path], start_new_session=True)
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while offer.stray_timer is None:
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        # The spare goes to a command before the stray is dealt with, and the
        # command's pid is not known yet when it is.
        proc = spawn_on(offer, ASK_WITH_MODES, stdout=subprocess.PIPE)
        while session_of(offer.pty.master) != proc.pid:
            assert loop.time() < deadline
            await asyncio.sleep(0.01)
        timer = offer.stray_timer
        assert timer is not None
        timer.cancel()  # the grace is over now
        table._strays.turn_away(offer)
        await asyncio.wait_for(presenter.turned_away_event.wait(), 10)
        assert await wait_exit(stray) == -signal.SIGHUP
    finally:
        stray.kill()
        stray.wait()
    assert proc.poll() is None  # spared
    await asyncio.wait_for(presenter.presented.wait(), 10)
    assert presenter.calls[-1][2].startswith(b"canonical=")  # its own bytes, none of the stray's
    table.bind(offer.id, proc.pid)
    table.attach(offer.id, 24, 80)
    table.write(offer.id, b"yes\r")
    assert await wait_exit(proc) == 0
    table.release(offer.id)


async def test_a_command_that_wrote_and_ended_before_its_bind_is_still_presented() -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    proc = spawn_on(offer, "import os; os.write(os.open('/dev/tty', os.O_RDWR), b'quick note')")
    # Blocking the loop on purpose: the first read happens only once the
    # command (its session with it) is gone, and its pid is not known yet.
    assert proc.wait(timeout=10) == 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while offer.stray_timer is None:
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    table.bind(offer.id, proc.pid)
    assert presenter.kinds()[0] == "present"
    assert presenter.calls[0][2] == b"quick note"
    assert "turned_away" not in presenter.kinds()
    # Its window comes up for it, shows the end and is told it is over.
    await asyncio.sleep(0)
    table.attach(offer.id, 24, 80)
    await asyncio.wait_for(presenter.closed_event.wait(), 10)


async def test_what_a_command_wrote_before_ending_unseen_waits_for_its_window() -> None:
    # The window was held back (the user typing); the command wrote more and
    # ended meanwhile. Nothing of it is dropped: it is all shown when the
    # window comes, and then the end.
    presenter = FakePresenter()
    loop = asyncio.get_running_loop()
    table = OfferTable(loop, presenter)
    offer = table.open(24, 80)
    script = (
        "import os, time; fd = os.open('/dev/tty', os.O_RDWR)\n"
        "os.write(fd, b'IMPORTANT'); time.sleep(0.2); os.write(fd, b' and more')"
    )
    proc = spawn_on(offer, script)
    table.bind(offer.id, proc.pid)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    assert await wait_exit(proc) == 0
    deadline = loop.time() + 10
    while not offer.released:
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    assert "closed" not in presenter.kinds() and table.get(offer.id) is offer
    table.attach(offer.id, 24, 80)
    assert presenter.received() == b"IMPORTANT and more"
    assert presenter.kinds()[-1] == "closed" and len(table) == 0


async def test_the_relay_waits_for_the_editor_to_take_what_it_was_sent() -> None:
    # A flood into an attached window: without acknowledgements the host
    # sends at most a window's worth and stops reading (the child blocks in
    # write, as on a terminal that cannot keep up); each acknowledgement
    # lets more through, and nothing is lost.
    presenter = FakePresenter()
    loop = asyncio.get_running_loop()
    table = OfferTable(loop, presenter)
    offer = table.open(24, 80)
    total = 8 * RELAY_WINDOW
    script = f"import os; fd = os.open('/dev/tty', os.O_RDWR); os.write(fd, b'x' * {total})"
    proc = spawn_on(offer, script)
    table.bind(offer.id, proc.pid)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    table.attach(offer.id, 24, 80)
    deadline = loop.time() + 10
    while not offer.relay.throttled:
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    sent = len(presenter.received())
    assert RELAY_WINDOW <= sent < RELAY_WINDOW + BATCH_SIZE + READ_SIZE
    for _ in range(5):  # held: no reading while nothing is acknowledged
        await asyncio.sleep(0.01)
    assert len(presenter.received()) == sent and proc.poll() is None
    while proc.poll() is None or len(presenter.received()) < total:
        assert loop.time() < deadline + 20
        table.acknowledge(offer.id, offer.relay.unacked)
        await asyncio.sleep(0.01)
    assert presenter.received().replace(b"\r\n", b"\n").count(b"x") == total


async def test_cancel_all_while_armed_is_clean() -> None:
    before = open_fds()
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offers = [table.open(24, 80) for _ in range(20)]
    assert len({o.slave_path for o in offers}) == 20
    table.close_all()
    assert presenter.calls == []
    assert open_fds() == before


async def test_queued_offer_holds_output_in_the_kernel_until_attached() -> None:
    presenter = FakePresenter()
    loop = asyncio.get_running_loop()
    table = OfferTable(loop, presenter)
    offer = table.open(24, 80)
    script = (
        "import os, sys; fd = os.open('/dev/tty', os.O_RDWR); os.write(fd, b'A'); os.read(fd, 10)\n"
        "os.write(fd, b'B'); print('wrote B', flush=True); os.read(fd, 10)\n"
    )
    proc = spawn_on(offer, script, stdout=subprocess.PIPE)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    table.write(offer.id, b"1\n")
    assert proc.stdout is not None
    line = await asyncio.wait_for(loop.run_in_executor(None, proc.stdout.readline), 10)
    assert line == b"wrote B\n"
    # The kernel has the B for the master to read: a live reader would fire
    # in the next loop turns.
    poller = select.poll()
    poller.register(offer.pty.master, select.POLLIN)
    assert poller.poll(10_000)
    for _ in range(3):
        await asyncio.sleep(0)
    assert "output" not in presenter.kinds()
    table.attach(offer.id, 30, 100)
    assert get_winsize(offer.pty.master) == (30, 100)
    deadline = loop.time() + 10
    while b"B" not in presenter.received():
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    table.write(offer.id, b"2\n")
    assert await wait_exit(proc) == 0
    table.release(offer.id)


async def test_resize_sets_the_pty_size() -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    table.resize_armed(40, 120)
    assert get_winsize(offer.pty.master) == (40, 120)
    table.close_all()


async def test_the_size_is_the_editors_only_nonsense_is_refused() -> None:
    table = OfferTable(asyncio.get_running_loop(), FakePresenter())
    # The window's size is chosen on the Lua side; a small one is taken as is.
    small = table.open(1, 3)
    assert get_winsize(small.pty.master) == (1, 3)
    assert small.screen.lines() == [""]
    # No size at all becomes the smallest there is.
    none = table.open(0, -5)
    assert get_winsize(none.pty.master) == (1, 1)
    table.resize(small.id, -1, 0)
    assert get_winsize(small.pty.master) == (1, 1)
    table.resize(small.id, 5, 20)
    assert get_winsize(small.pty.master) == (5, 20)
    table.close_all()


async def test_bound_offer_is_released_when_its_process_exits() -> None:
    before = open_fds()
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offers = [table.open(24, 80) for _ in range(3)]
    procs = [spawn_on(offer, "import sys; sys.stdin.read()", stdin=subprocess.PIPE) for offer in offers]
    for offer, proc in zip(offers, procs):
        table.bind(offer.id, proc.pid)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
    for proc in procs:
        assert await wait_exit(proc) == 0
    await asyncio.wait_for(presenter.released_event.wait(), 10)
    while sum(len(c[2]) for c in presenter.calls if c[0] == "released") < 3:
        presenter.released_event.clear()
        await asyncio.wait_for(presenter.released_event.wait(), 10)
    released = [i for c in presenter.calls if c[0] == "released" for i in c[2]]
    assert sorted(released) == sorted(o.id for o in offers)
    assert "present" not in presenter.kinds()
    assert len(table) == 0
    assert open_fds() == before


async def test_binding_a_process_that_is_already_gone_releases_at_once() -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    proc = subprocess.Popen(["true"])
    proc.wait()  # reaped: the pid names no process any more
    table.bind(offer.id, proc.pid)
    await asyncio.wait_for(presenter.released_event.wait(), 10)
    assert presenter.calls == [("released", 0, [offer.id])]


async def settled_prompt(presenter: FakePresenter, offer: Offer, marker: bytes) -> None:
    """Until `marker` was relayed and the prompt after it computed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while marker not in presenter.received() or offer.prompt_timer is not None:
        assert loop.time() < deadline, presenter.calls[-3:]
        await asyncio.sleep(0.01)


async def test_a_long_title_then_a_prompt_shows_and_names_the_prompt_only() -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    # Longer than the screen model's tail: cut anywhere inside it, its
    # payload would read as text before the question.
    script = (
        "import os; fd = os.open('/dev/tty', os.O_RDWR)\n"
        "os.write(fd, b'\\x1b]0;' + b'T' * 10240 + b'\\x07')\n"
        "os.write(fd, b'\\x1b]52;c;' + b'QUFB' * 4096 + b'\\x1b\\\\Password: ')\n"
        "os.read(fd, 100)\n"
    )
    proc = spawn_on(offer, script)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    table.attach(offer.id, 24, 80)
    await settled_prompt(presenter, offer, b"Password: ")
    assert presenter.received() == b"Password: "
    assert [c[2] for c in presenter.calls if c[0] == "prompt"] == ["Password"]
    assert offer.screen.prompt() == "Password"
    table.write(offer.id, b"x\r")
    assert await wait_exit(proc) == 0
    table.release(offer.id)


@pytest.mark.parametrize("linger", [0.0, 0.2])
async def test_a_write_that_leaves_nothing_to_show_shows_no_window(linger: float) -> None:
    before = open_fds()
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    script = (
        "import os, time; fd = os.open('/dev/tty', os.O_RDWR)\n"
        "os.write(fd, b'\\x1b]0;a title\\x07\\x1b]52;c;cHduZWQ=\\x07')\n"
        f"time.sleep({linger})\n"
    )
    # Read while the command runs (lingering), or only once it has ended.
    proc = spawn_on(offer, script)
    table.bind(offer.id, proc.pid)
    assert await wait_exit(proc) == 0
    await asyncio.wait_for(presenter.released_event.wait(), 10)
    assert presenter.kinds() == ["released"]
    assert len(table) == 0
    assert open_fds() == before


async def test_a_stray_that_left_a_sequence_open_does_not_hide_the_commands_prompt() -> None:
    presenter = FakePresenter()
    table = OfferTable(asyncio.get_running_loop(), presenter)
    offer = table.open(24, 80)
    stray = (
        "import os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\n"
        "os.write(fd, b'stray Passphrase: \\x1b]0;never ended')\n"
        "os.read(fd, 100)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", stray, offer.slave_path], start_new_session=True)
    try:
        await asyncio.wait_for(presenter.turned_away_event.wait(), 10)
        assert await wait_exit(proc) == -signal.SIGHUP
    finally:
        proc.kill()
        proc.wait()
    command = spawn_on(offer, ASK_WITH_MODES, stdout=subprocess.PIPE)
    table.bind(offer.id, command.pid)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    assert presenter.calls[-1][2].startswith(b"canonical=1 Answer: ")
    table.attach(offer.id, 24, 80)
    table.write(offer.id, b"yes\r")
    assert await wait_exit(command) == 0
    table.release(offer.id)


# A command that asks on its terminal and waits for the answer.
ASK_AND_WAIT = (
    "import os; fd = os.open('/dev/tty', os.O_RDWR); os.write(fd, b'Passphrase: '); os.read(fd, 100)"
)
# Short, so that the tests of a blocked editor do not wait long.
BLOCKED_MS = 100


async def asking(
    presenter: FakePresenter, blocked_ms: int = BLOCKED_MS, script: str = ASK_AND_WAIT
) -> tuple[OfferTable, Offer, subprocess.Popen[bytes]]:
    """A table that watches for a blocked editor, and a command bound to one
    of its offers that has written to its terminal."""
    table = OfferTable(asyncio.get_running_loop(), presenter)
    table.configure(blocked_ms)
    offer = table.open(24, 80)
    proc = spawn_on(offer, script)
    table.bind(offer.id, proc.pid)
    await asyncio.wait_for(presenter.presented.wait(), 10)
    return table, offer, proc


async def until(condition: Callable[[], bool], what: str = "") -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not condition():
        assert loop.time() < deadline, what
        await asyncio.sleep(0.01)


async def test_a_question_the_blocked_editor_never_saw_is_hung_up_and_told() -> None:
    before = open_fds()
    presenter = FakePresenter()
    presenter.answering = False  # blocked in system(), jobwait() or a busy loop
    table, offer, proc = await asking(presenter)
    await asyncio.wait_for(presenter.unserved_event.wait(), 10)
    # Hung up, as a declined prompt is, instead of waiting forever.
    assert await wait_exit(proc) == -signal.SIGHUP
    await asyncio.wait_for(presenter.released_event.wait(), 10)
    # What it asked is told first: the offer and its screen go right after.
    told = [c for c in presenter.calls if c[0] != "prompt"]  # the title's, meanwhile
    assert [c[0] for c in told] == ["present", "unserved", "released"]
    assert told[1] == ("unserved", offer.id, "Passphrase")
    assert presenter.mode_asks == 1
    # The editor, no longer blocked, answers at last: too late to matter.
    presenter.unanswered[0](False)
    assert presenter.kinds().count("unserved") == 1
    assert len(table) == 0
    assert open_fds() == before


async def test_a_question_the_editor_saw_waits_for_its_window() -> None:
    presenter = FakePresenter()
    presenter.waits_for_user = False  # it answers: it serves its events
    table, offer, proc = await asking(presenter)
    # The editor received the present (its window held back: the user typing).
    table.seen(offer.id)
    # Well past the time it had to be seen in, it is still asked about, and
    # answers: nothing is done to the command.
    await until(lambda: presenter.mode_asks >= 2, "asked while the window waits")
    assert proc.poll() is None
    table.attach(offer.id, 24, 80)
    table.write(offer.id, b"yes\r")
    assert await wait_exit(proc) == 0
    await until(lambda: "closed" in presenter.kinds(), "closed")
    assert "unserved" not in presenter.kinds()


async def test_a_window_the_editor_blocked_right_after_opening_is_hung_up() -> None:
    # Opened, then the editor blocked (a jobwait() in the next callback): the
    # window is not even drawn, and no key reaches it.
    presenter = FakePresenter()
    presenter.waits_for_user = False
    table, offer, proc = await asking(presenter)
    table.seen(offer.id)
    table.attach(offer.id, 24, 80)
    presenter.answering = False
    await asyncio.wait_for(presenter.unserved_event.wait(), 10)
    assert await wait_exit(proc) == -signal.SIGHUP
    assert ("unserved", offer.id, "Passphrase") in presenter.calls


async def test_a_drawn_window_outlasts_a_blocked_editor() -> None:
    # Drawn, the question in it: the user sees it and types. A plugin then
    # holds the editor (a timer's busy loop): their keys wait in Neovim and
    # reach the window when it is free. Hanging up would close the window
    # under their fingers and send the rest of the secret to the document.
    presenter = FakePresenter()
    presenter.waits_for_user = False
    table, offer, proc = await asking(presenter)
    table.seen(offer.id)
    table.attach(offer.id, 24, 80)
    table.drawn(offer.id)
    presenter.answering = False
    await asyncio.sleep(5 * BLOCKED_MS / 1000)
    assert proc.poll() is None and "unserved" not in presenter.kinds()
    table.write(offer.id, b"yes\r")
    assert await wait_exit(proc) == 0
    await until(lambda: "closed" in presenter.kinds(), "closed")
    assert "unserved" not in presenter.kinds()


async def test_a_drawn_window_goes_when_the_editor_never_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    # A plugin blocked on the very command (jobwait() without a timeout):
    # however long the user looks at the prompt, nothing reaches it. Past
    # DRAWN_PATIENCE it is hung up and the user told, never left hanging.
    monkeypatch.setattr(blocked, "DRAWN_PATIENCE", 0.5)
    presenter = FakePresenter()
    presenter.waits_for_user = False
    table, offer, proc = await asking(presenter)
    table.seen(offer.id)
    table.attach(offer.id, 24, 80)
    table.drawn(offer.id)
    presenter.answering = False
    await asyncio.wait_for(presenter.unserved_event.wait(), 10)
    assert await wait_exit(proc) == -signal.SIGHUP
    assert ("unserved", offer.id, "Passphrase") in presenter.calls


@pytest.mark.parametrize("waits_for_user", [True, False], ids=["hit-enter prompt", "serving its events"])
async def test_an_editor_that_answers_is_not_blocked(waits_for_user: bool) -> None:
    # At a hit-enter prompt Neovim serves nothing but says it waits for the
    # user, who will come back to it; in getchar() or :sleep it serves its
    # events, the offer's among them. Only once it stops answering (blocked
    # in system() after the user answered) is it taken for blocked.
    presenter = FakePresenter()
    presenter.waits_for_user = waits_for_user
    table, offer, proc = await asking(presenter)
    await until(lambda: presenter.mode_asks >= 3, "asked again while the editor answers")
    assert proc.poll() is None and "unserved" not in presenter.kinds()
    presenter.answering = False
    await asyncio.wait_for(presenter.unserved_event.wait(), 10)
    assert await wait_exit(proc) == -signal.SIGHUP
    assert ("unserved", offer.id, "Passphrase") in presenter.calls


async def test_seen_while_the_editor_was_being_asked_is_not_hung_up() -> None:
    presenter = FakePresenter()
    presenter.answering = False
    table, offer, proc = await asking(presenter, 60_000)  # the deadline is the test's to pass, below
    timer = offer.editor_check
    assert timer is not None
    timer.cancel()  # the time to be seen in is over now
    table._editor_check.serves(offer)
    assert presenter.mode_asks == 1
    # The editor came back: its `seen` arrives before its answer.
    table.seen(offer.id)
    assert offer.editor_check is not timer  # no deadline left to hang it up
    presenter.unanswered[0](False)
    assert offer.state is State.PRESENTED and "unserved" not in presenter.kinds()
    table.attach(offer.id, 24, 80)
    table.write(offer.id, b"yes\r")
    assert await wait_exit(proc) == 0


async def test_a_command_that_ended_unseen_is_not_hung_up() -> None:
    # Nothing waits on an answer any more; what it wrote waits for its window.
    presenter = FakePresenter()
    presenter.answering = False
    table, offer, proc = await asking(
        presenter, 60_000, "import os; os.write(os.open('/dev/tty', os.O_RDWR), b'a note')"
    )  # the check is made below, once the exit is known
    assert await wait_exit(proc) == 0
    await until(lambda: offer.released, "released")
    timer = offer.editor_check
    assert timer is not None
    timer.cancel()  # the time to be seen in is over now
    table._editor_check.serves(offer)
    assert presenter.mode_asks == 0 and offer.editor_check is None
    assert offer.state is State.PRESENTED and "unserved" not in presenter.kinds()
    table.attach(offer.id, 24, 80)
    assert presenter.received() == b"a note"
    assert presenter.kinds()[-1] == "closed" and len(table) == 0


@pytest.mark.parametrize("blocked_ms", [0, -1])
async def test_an_editor_configured_so_never_hangs_anything_up(blocked_ms: int) -> None:
    presenter = FakePresenter()
    presenter.answering = False
    table, offer, proc = await asking(presenter, blocked_ms)
    # No check is even scheduled: nothing can hang it up.
    assert offer.editor_check is None
    await settled_prompt(presenter, offer, b"Passphrase: ")
    assert presenter.mode_asks == 0 and proc.poll() is None
    table.attach(offer.id, 24, 80)
    table.write(offer.id, b"yes\r")
    assert await wait_exit(proc) == 0
    assert "unserved" not in presenter.kinds()


async def test_a_storm_declined_at_once_declines_the_same_question_again_with_no_window() -> None:
    """dismiss_all hangs up every offer given; while the burst lasts, an
    offer whose program asks the same question is hung up with no present,
    and one that asks another is presented as ever."""
    presenter = FakePresenter()
    loop = asyncio.get_running_loop()
    table = OfferTable(loop, presenter)

    def asking(question: str) -> tuple[Offer, subprocess.Popen[bytes]]:
        offer = table.open(24, 80)
        script = f"import os\nfd = os.open('/dev/tty', os.O_RDWR)\nos.write(fd, {question.encode()!r})\n"
        script += "os.read(fd, 9)"
        proc = spawn_on(offer, script)
        table.bind(offer.id, proc.pid)
        return offer, proc

    storm = [asking("Enter passphrase for key 'k': ") for _ in range(3)]
    for offer, _ in storm:
        while offer.state is not State.PRESENTED or offer.prompt_timer is not None:
            await asyncio.sleep(0.01)
    table.dismiss_all([offer.id for offer, _ in storm])
    assert [await wait_exit(proc) for _, proc in storm] == [-signal.SIGHUP] * 3
    presents = presenter.kinds().count("present")
    again, proc = asking("Enter passphrase for key 'k': ")
    assert await wait_exit(proc) == -signal.SIGHUP
    assert ("declined", again.id, "Enter passphrase for key 'k'") in presenter.calls
    other, proc = asking("Password: ")
    deadline = loop.time() + 10
    while presenter.kinds().count("present") == presents:
        assert loop.time() < deadline, presenter.calls[-3:]
        await asyncio.sleep(0.01)
    assert ("present", other.id, b"Password: ") in presenter.calls
    table.dismiss(other.id)
    assert await wait_exit(proc) == -signal.SIGHUP
