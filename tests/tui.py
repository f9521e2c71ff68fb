"""Neovim's real TUI in a pty (ptyprocess), its screen rendered with pyte."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import ptyprocess
import pyte

from harness import Sandbox, nvim_binary, wait_until

T = TypeVar("T")

# How long a wait for the screen may take before it fails: what a loaded
# 2-core machine needs for a program to start and draw (lazygit, pinentry),
# with room to spare. Only a failing wait ever takes it.
SCREEN_WAIT = 30.0


class PtyScreen:
    """Any program in a pty of the given size, its screen rendered with pyte."""

    def __init__(self, argv: list[str], env: dict[str, str], rows: int = 30, cols: int = 100) -> None:
        self.rows, self.cols = rows, cols
        self.proc = ptyprocess.PtyProcess.spawn(argv, env=env, dimensions=(rows, cols))
        self.screen = pyte.Screen(cols, rows)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = self.proc.read(65536)
            except (EOFError, ValueError):  # ended, or closed by close()
                return
            with self.lock:
                self.raw += data
                self.stream.feed(data)

    def lines(self) -> list[str]:
        with self.lock:
            return list(self.screen.display)

    def text(self) -> str:
        return "\n".join(self.lines())

    def type(self, keys: str) -> None:
        self.proc.write(keys.encode())

    def showing(self, needle: str) -> list[str] | None:
        """The screen's lines if `needle` is on it, else None."""
        lines = self.lines()
        return lines if any(needle in line for line in lines) else None

    def wait_text(self, needle: str, timeout: float = SCREEN_WAIT) -> list[str]:
        return self._wait(lambda: self.showing(needle), timeout, f"{needle!r} on the screen")

    def wait_gone(self, needle: str, timeout: float = SCREEN_WAIT) -> None:
        self._wait(lambda: self.showing(needle) is None, timeout, f"{needle!r} gone from the screen")

    def _wait(self, predicate: Callable[[], T | None], timeout: float, what: str) -> T:
        try:
            return wait_until(predicate, timeout, what)
        except AssertionError as timeout_error:
            # What was on the screen instead is the first thing one wants to see.
            raise AssertionError(f"{timeout_error}; the screen:\n{self.text().rstrip()}") from None

    def close(self) -> None:
        if self.proc.isalive():
            self.proc.terminate(force=True)
        self.proc.close(force=True)


class Tui(PtyScreen):
    """Neovim's own TUI under the test sandbox, with an RPC socket for checks."""

    def __init__(
        self, sandbox: Sandbox, args: list[str], rows: int = 30, cols: int = 100, binary: str | None = None
    ) -> None:
        self.socket = str(sandbox.base / "tui.sock")
        env = {**sandbox.env, "TERM": "xterm-256color", "COLORTERM": ""}
        argv = [binary or nvim_binary(), "-u", str(sandbox.init), "--listen", self.socket, *args]
        super().__init__(argv, env, rows, cols)
        wait_listening(self.socket)


def wait_listening(path: str, timeout: float = SCREEN_WAIT) -> None:
    """Until an editor's --listen socket accepts a connection: the file
    appears at bind(), a moment before listen(), so its existence is not
    enough."""

    def accepts() -> bool:
        if not Path(path).exists():
            return False
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
        except OSError:
            return False
        finally:
            probe.close()
        return True

    wait_until(accepts, timeout, f"the RPC socket {path} to accept connections")
