"""The keeper: a second holder of every pty master, so that the host dying does
not hang up the terminals of the commands in flight.

A pty hangs up when its last master descriptor closes. If the host were the
only holder, killing it would send SIGHUP to every command holding an offer,
including those that never touched their terminal. The keeper, a small process
of its own, receives a copy of each master (SCM_RIGHTS) and lets go when the
host says so. When the host goes away, the keeper hangs up the prompts that
were shown (no one can answer them any more) and keeps the other terminals
until their commands exit: those commands go on as they would without us.

This file runs as a script in the keeper process (stdlib only) and provides
the host's side, `KeeperLink`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import subprocess
import sys

_MAX_MESSAGE = 64


class KeeperLink:
    """The host's end. Every call is best-effort: without a keeper the host
    works as before, with hang-ups on its own death."""

    def __init__(self, sock: socket.socket, proc: subprocess.Popen[bytes]) -> None:
        self._sock = sock
        self._proc = proc

    @classmethod
    def start(cls) -> KeeperLink | None:
        try:
            host_end, keeper_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:
            return None
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__), str(keeper_end.fileno())],
                pass_fds=[keeper_end.fileno()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                # Not in the host's process group: whatever kills the host's
                # group must leave the keeper to finish its job.
                start_new_session=True,
            )
        except OSError:
            host_end.close()
            return None
        finally:
            keeper_end.close()
        return cls(host_end, proc)

    def _send(self, message: str, fds: list[int] | None = None) -> None:
        if self._sock.fileno() < 0:
            return
        try:
            if fds:
                socket.send_fds(self._sock, [message.encode()], fds)
            else:
                self._sock.send(message.encode())
        except OSError:
            self.close()  # the keeper is gone: carry on without it

    def hold(self, offer_id: int, master: int) -> None:
        self._send(f"hold {offer_id}", [master])

    def bind(self, offer_id: int, pid: int) -> None:
        self._send(f"bind {offer_id} {pid}")

    def shown(self, offer_id: int) -> None:
        self._send(f"shown {offer_id}")

    def drop(self, offer_id: int) -> None:
        self._send(f"drop {offer_id}")

    @property
    def pid(self) -> int:
        return self._proc.pid

    def close(self) -> None:
        self._sock.close()


class Keeper:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.selector = selectors.DefaultSelector()
        self.selector.register(sock, selectors.EVENT_READ, None)
        self.masters: dict[int, int] = {}
        self.pids: dict[int, int] = {}
        self.shown: set[int] = set()
        self.watches: dict[int, int] = {}  # offer id -> pidfd
        self.host_alive = True

    def run(self) -> None:
        while self.host_alive or self.masters:
            for key, _ in self.selector.select():
                if key.data is None:
                    self.on_message()
                else:
                    self.let_go(key.data)

    def on_message(self) -> None:
        try:
            message, fds, _, _ = socket.recv_fds(self.sock, _MAX_MESSAGE, 1)
        except OSError:
            message, fds = b"", []
        if not message:
            self.on_host_gone()
            return
        op, *args = message.decode().split()
        offer_id = int(args[0])
        if op == "hold" and fds:
            self.masters[offer_id] = fds[0]
        elif op == "bind":
            self.pids[offer_id] = int(args[1])
        elif op == "shown":
            self.shown.add(offer_id)
        elif op == "drop":
            self.let_go(offer_id)
        for extra in fds[1:] if op == "hold" else fds:
            os.close(extra)

    def on_host_gone(self) -> None:
        self.host_alive = False
        self.selector.unregister(self.sock)
        self.sock.close()
        for offer_id in list(self.masters):
            pid = self.pids.get(offer_id)
            if offer_id in self.shown or pid is None:
                # A prompt nobody can answer now, or a pty no command took.
                self.let_go(offer_id)
                continue
            try:
                pidfd = os.pidfd_open(pid)
            except (OSError, AttributeError):
                self.let_go(offer_id)
                continue
            self.watches[offer_id] = pidfd
            self.selector.register(pidfd, selectors.EVENT_READ, offer_id)

    def let_go(self, offer_id: int) -> None:
        master = self.masters.pop(offer_id, None)
        if master is not None:
            os.close(master)
        self.pids.pop(offer_id, None)
        self.shown.discard(offer_id)
        pidfd = self.watches.pop(offer_id, None)
        if pidfd is not None:
            self.selector.unregister(pidfd)
            os.close(pidfd)


def main(argv: list[str]) -> int:
    sock = socket.socket(fileno=int(argv[1]))
    with contextlib.suppress(KeyboardInterrupt):
        Keeper(sock).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
