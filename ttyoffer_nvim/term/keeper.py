"""The keeper: a second holder of every pty master, so that the host dying does
not hang up the terminals of the commands in flight.

A pty hangs up when its last master descriptor closes. If the host were the
only holder, killing it would send SIGHUP to every command holding an offer,
including those that never touched their terminal. The keeper, a small process
of its own, receives a copy of each master (SCM_RIGHTS) and lets go when the
host says so. When the host goes away, the keeper hangs up the prompts that
were shown (no one can answer them any more) and keeps the other terminals
until their commands exit: those commands go on as they would without us.
But it watches those terminals too: the first time one of these commands
writes to its terminal, it asks something nobody will ever see, and would
wait for the answer forever; the keeper hangs it up at once instead.

The host watches the keeper in turn: when the keeper dies on its own, the
host reaps it and starts another, and gives it a copy of every master again.

This module runs in the keeper process too (standard library only, no site
packages) and provides the host's side, `KeeperLink`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import signal
import socket
import sys
from collections.abc import Callable

from . import procfs
from .hangup import hang_up_holders

# typing.TYPE_CHECKING without importing typing (a megabyte in the keeper);
# mypy takes any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:  # the keeper itself has no event loop and starts nothing: not imported there
    import asyncio
    import subprocess

_MAX_FDS = 200  # SCM_RIGHTS takes at most 253 descriptors a message
_MAX_MESSAGE = 16 * _MAX_FDS
# How often the host waits on a keeper that cannot be waited on by pidfd.
_REAP_INTERVAL = 0.1
# The keeper runs isolated (-I -S: no site packages, no environment), with
# this package importable after the standard library (appended: whatever
# else the package's folder holds must not shadow it).
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_KEEPER_MAIN = (
    "import sys; sys.path.append(sys.argv.pop(1)); "
    "from ttyoffer_nvim.term.keeper import main; sys.exit(main(sys.argv))"
)


class KeeperLink:
    """The host's end. Every call is best-effort: without a keeper the host
    works as before, with hang-ups on its own death."""

    def __init__(self, sock: socket.socket, proc: subprocess.Popen[bytes]) -> None:
        self._sock = sock
        self._proc = proc
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_lost: Callable[[KeeperLink], None] | None = None
        self._watched_fd = -1

    @classmethod
    def start(cls) -> KeeperLink | None:
        try:
            return cls.spawn()
        except OSError:
            return None

    @classmethod
    def spawn(cls) -> KeeperLink:
        """A new keeper; OSError when none can be started."""
        import subprocess  # the host's side only: megabytes the keeper does without

        from .jobsignals import as_for_a_job

        host_end, keeper_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _KEEPER_MAIN, _PACKAGE_PARENT, str(keeper_end.fileno())],
                pass_fds=[keeper_end.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # Not in the host's process group: whatever kills the host's
                # group must leave the keeper to finish its job.
                start_new_session=True,
                # Not the host's blocked SIGTERM (runs.hold_off_sigterm): a
                # keeper started again once runs exist can be ended.
                preexec_fn=as_for_a_job,
            )
        except BaseException:
            host_end.close()
            raise
        finally:
            keeper_end.close()
        return cls(host_end, proc)

    def watch(self, loop: asyncio.AbstractEventLoop, on_lost: Callable[[KeeperLink], None]) -> None:
        """Call `on_lost(self)` on the loop once the keeper has gone (its end
        of the link closed), the process reaped or on its way to be."""
        self._loop, self._on_lost = loop, on_lost
        self._watched_fd = self._sock.fileno()
        loop.add_reader(self._watched_fd, self._on_readable)

    def _on_readable(self) -> None:
        # The keeper sends nothing: readable is its end of the link closed.
        try:
            if self._sock.recv(1, socket.MSG_DONTWAIT):
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        self._lost()

    def _lost(self) -> None:
        if self._loop is None or self._watched_fd < 0:
            return
        self.close()
        self._reap(self._loop)
        on_lost, self._on_lost = self._on_lost, None
        if on_lost is not None:
            on_lost(self)

    def _reap(self, loop: asyncio.AbstractEventLoop) -> None:
        """No zombie left. The link ends as the keeper exits; a keeper that
        closed its end and lives on (it took the host for gone) would hang
        up commands whose prompts the host shows: it is killed."""
        if self._proc.poll() is not None:
            return
        with contextlib.suppress(OSError):
            self._proc.send_signal(signal.SIGKILL)  # not reaped yet: still ours
        try:
            pidfd = os.pidfd_open(self._proc.pid)
        except (AttributeError, OSError):
            loop.call_later(_REAP_INTERVAL, self._poll_reap, loop)
            return

        def reaped() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            self._proc.poll()

        loop.add_reader(pidfd, reaped)

    def _poll_reap(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._proc.poll() is None:
            loop.call_later(_REAP_INTERVAL, self._poll_reap, loop)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    def _send(self, message: str, fds: list[int] | None = None) -> None:
        if self._sock.fileno() < 0:
            return
        try:
            if fds:
                socket.send_fds(self._sock, [message.encode()], fds)
            else:
                self._sock.send(message.encode())
        except OSError:
            if self._loop is None:
                self.close()  # the keeper is gone: carry on without it
            # Watched: its end of the link reads closed, and _lost follows.

    # Messages carry many offers at once: a batch of new ptys, the commands
    # that ended in one turn of the host's loop. Nothing per spawn.

    def hold(self, masters: dict[int, tuple[int, str]]) -> None:
        """offer id -> (master descriptor, slave path)"""
        ids = list(masters)
        for start in range(0, len(ids), _MAX_FDS):
            batch = ids[start : start + _MAX_FDS]
            words = " ".join(f"{i}:{masters[i][1]}" for i in batch)
            self._send("hold " + words, [masters[i][0] for i in batch])

    def shown(self, *offer_ids: int) -> None:
        for start in range(0, len(offer_ids), _MAX_FDS):
            self._send("shown " + " ".join(map(str, offer_ids[start : start + _MAX_FDS])))

    def drop(self, offer_ids: list[int]) -> None:
        for start in range(0, len(offer_ids), _MAX_FDS):
            self._send("drop " + " ".join(map(str, offer_ids[start : start + _MAX_FDS])))

    @property
    def pid(self) -> int:
        return self._proc.pid

    def close(self) -> None:
        if self._loop is not None and self._watched_fd >= 0:
            self._loop.remove_reader(self._watched_fd)
            self._watched_fd = -1
        self._sock.close()


class Keeper:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.selector = selectors.DefaultSelector()
        self.selector.register(sock, selectors.EVENT_READ, self.on_message)
        self.masters: dict[int, int] = {}
        self.slaves: dict[int, str] = {}
        self.shown: set[int] = set()
        self.watches: dict[int, int] = {}  # offer id -> pidfd
        # offer id -> our own descriptor on the slave, while its master is
        # watched for the command's first write.
        self.listening: dict[int, int] = {}
        self.host_alive = True

    def run(self) -> None:
        while self.host_alive or self.masters:
            for key, _ in self.selector.select():
                key.data()

    def on_message(self) -> None:
        try:
            message, fds, _, _ = socket.recv_fds(self.sock, _MAX_MESSAGE, _MAX_FDS)
        except OSError:
            message, fds = b"", []
        if not message:
            self.on_host_gone()
            return
        op, *args = message.decode().split()
        if op == "hold":
            pairs = [arg.split(":", 1) for arg in args]
            for (offer_id, slave), master in zip(pairs, fds):
                self.masters[int(offer_id)] = master
                self.slaves[int(offer_id)] = slave
            fds = fds[len(pairs) :]
        elif op == "shown":
            self.shown.update(int(a) for a in args)
        elif op == "drop":
            for offer_id in args:
                self.let_go(int(offer_id))
        for extra in fds:  # none are expected beyond the holds
            os.close(extra)

    def on_host_gone(self) -> None:
        self.host_alive = False
        self.selector.unregister(self.sock)
        self.sock.close()
        leaders = session_leaders_by_tty()
        for offer_id in list(self.masters):
            pid = leaders.get(procfs.tty_number(self.slaves[offer_id]))
            if offer_id in self.shown or pid is None:
                # A prompt nobody can answer now, or a pty no command holds.
                self.let_go(offer_id, hang_up=True)
                continue
            try:
                pidfd = os.pidfd_open(pid)
            except (OSError, AttributeError):
                self.let_go(offer_id, hang_up=True)
                continue
            self.watches[offer_id] = pidfd
            # Both end the same way: the command's exit, and its first write.
            hang_up = functools.partial(self.let_go, offer_id, True)
            self.selector.register(pidfd, selectors.EVENT_READ, hang_up)
            self.listen(offer_id, hang_up)

    def listen(self, offer_id: int, on_write: Callable[[], None]) -> None:
        """Call `on_write` once the command writes to its terminal.

        The master turns readable when it does; but with no descriptor left
        on the slave (the host's went with it, the command may have none open
        between two uses) it reads as hung up, readable all the time. So the
        keeper opens the slave itself first, by the path the host gave: the
        master it holds keeps that path naming this terminal. Never as its
        controlling terminal. Where that fails, the command's exit is still
        waited for, as without this watch."""
        try:
            slave = os.open(self.slaves[offer_id], os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
        except OSError:
            return
        self.listening[offer_id] = slave
        self.selector.register(self.masters[offer_id], selectors.EVENT_READ, on_write)

    def let_go(self, offer_id: int, hang_up: bool = False) -> None:
        """Close our copy. With `hang_up` (the host is gone, so it could not)
        first hang up whatever else still holds the terminal."""
        master = self.masters.pop(offer_id, None)
        slave = self.slaves.pop(offer_id, None)
        own_slave = self.listening.pop(offer_id, None)
        if own_slave is not None:
            if master is not None:
                self.selector.unregister(master)
            os.close(own_slave)  # before hang_up_holders, which needs it closed
        if master is not None:
            if hang_up and slave is not None:
                hang_up_holders(master, slave)
            os.close(master)
        self.shown.discard(offer_id)
        pidfd = self.watches.pop(offer_id, None)
        if pidfd is not None:
            self.selector.unregister(pidfd)
            os.close(pidfd)


def session_leaders_by_tty() -> dict[int, int]:
    """Controlling tty -> pid of the session leader holding it. The commands
    are session leaders of their own pty (the spawn prologue made them so)."""
    leaders: dict[int, int] = {}
    for pid in procfs.pids():
        info = procfs.stat(pid)
        if info is not None and info.tty_nr and pid == info.session:
            leaders[info.tty_nr] = pid
    return leaders


def main(argv: list[str]) -> int:
    # One descriptor per command in flight, as in the host.
    procfs.raise_fd_limit()
    sock = socket.socket(fileno=int(argv[1]))
    with contextlib.suppress(KeyboardInterrupt):
        Keeper(sock).run()
    return 0
