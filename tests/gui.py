"""A real GUI for tests: Debian's neovim-qt on a private Xvfb screen, keys
typed into its window with xdotool (XTEST, as a keyboard types them), the
editor watched over its --listen socket.

While Neovim shows a hit-enter prompt it serves no RPC request but the mode
(nvim_get_mode): every other request waits until the prompt is answered.
Gui.lua therefore asks the mode first and refuses while the editor waits
for the user, rather than hang the test on it.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import pynvim

from harness import Editor, Sandbox, nvim_binary, wait_until
from tui import wait_listening

PROGRAMS = ("nvim-qt", "Xvfb", "xdotool")
# A person's pace between keys (ms); xdotool's own default is 12.
KEY_DELAY_MS = 40
# Generous: a loaded 2-core machine starts Qt slowly.
START_TIMEOUT = 60.0


def missing_programs() -> list[str]:
    return [name for name in PROGRAMS if shutil.which(name) is None]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End a process this module started (its own session), by its pid."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


class Display:
    """A private X server: Xvfb picks a free display number itself
    (-displayfd), listens on no TCP port, and goes with close()."""

    def __init__(self, log: Path, width: int = 1280, height: int = 800) -> None:
        read_end, write_end = os.pipe()
        try:
            with open(log, "wb") as out:
                self.proc = subprocess.Popen(
                    ["Xvfb", "-displayfd", str(write_end), "-screen", "0", f"{width}x{height}x24",
                     "-nolisten", "tcp"],
                    pass_fds=(write_end,), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )  # fmt: skip
            os.close(write_end)
            write_end = -1
            number = self._read_number(read_end, log)
        except BaseException:
            if write_end >= 0:
                os.close(write_end)
            if hasattr(self, "proc"):
                _stop(self.proc)
            raise
        finally:
            os.close(read_end)
        self.name = f":{number}"

    def _read_number(self, fd: int, log: Path) -> str:
        """Xvfb writes the display's number once it accepts clients."""
        data = b""
        deadline = time.monotonic() + START_TIMEOUT
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError(f"Xvfb gave no display number: {log.read_text()[-2000:]}")
            chunk = os.read(fd, 64)
            if not chunk:
                raise AssertionError(f"Xvfb ended: {log.read_text()[-2000:]}")
            data += chunk
        return data.decode().strip()

    @property
    def env(self) -> dict[str, str]:
        return {"DISPLAY": self.name}

    def close(self) -> None:
        _stop(self.proc)


class Gui:
    """neovim-qt running the sandbox's Neovim (`--nvim`, the harness's
    binary unless told), its window found, an RPC client attached."""

    def __init__(
        self,
        display: Display,
        sandbox: Sandbox,
        args: list[str],
        cwd: Path,
        nvim: str | None = None,
        geometry: str = "1000x640",
    ) -> None:
        self.display = display
        self.socket = str(sandbox.base / "gui.sock")
        self.log = sandbox.base / "nvim-qt.log"
        # Qt wants its runtime folder private.
        Path(sandbox.env["XDG_RUNTIME_DIR"]).chmod(0o700)
        self.env = {**sandbox.env, **display.env, "QT_QPA_PLATFORM": "xcb"}
        self.env.pop("WAYLAND_DISPLAY", None)
        argv = [
            "nvim-qt", "--nofork", "--geometry", geometry, "--nvim", nvim or nvim_binary(),
            "--", "--listen", self.socket, "-u", str(sandbox.init), *args,
        ]  # fmt: skip
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                argv, env=self.env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.nvim: pynvim.Nvim | None = None
        try:
            found = self.xdotool("search", "--sync", "--onlyvisible", "--pid", str(self.proc.pid))
            self.window = found.split()[0]
            wait_listening(self.socket, START_TIMEOUT)
            self.nvim = pynvim.attach("socket", path=self.socket)
        except BaseException as error:
            self.close()
            if isinstance(error, Exception):
                why = f"neovim-qt did not come up: {error}; its log: {self.log_tail()}"
                raise AssertionError(why) from error
            raise
        self.editor = Editor(self.nvim)

    def log_tail(self) -> str:
        with suppress(OSError):
            return self.log.read_text(errors="replace")[-2000:]
        return "(none)"

    def xdotool(self, *args: str, timeout: float = START_TIMEOUT) -> str:
        run = subprocess.run(
            ["xdotool", *args], env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if run.returncode != 0:
            raise AssertionError(f"xdotool {' '.join(args)} failed: {run.stderr.strip()}")
        return run.stdout

    def type(self, text: str) -> None:
        """Typed into the window, key by key, as the keyboard sends them."""
        self.xdotool("windowfocus", "--sync", self.window)
        self.xdotool("type", "--delay", str(KEY_DELAY_MS), "--", text)

    def key(self, *names: str) -> None:
        """Keys by their X names: Return, Escape, ctrl+c."""
        self.xdotool("windowfocus", "--sync", self.window)
        self.xdotool("key", "--delay", str(KEY_DELAY_MS), "--", *names)

    def mode(self) -> dict[str, Any]:
        """Answered even while the editor waits for the user."""
        assert self.nvim is not None
        mode: dict[str, Any] = self.nvim.api.get_mode()
        return mode

    def free(self) -> bool:
        """Whether the editor serves requests (no hit-enter prompt, no
        getchar() waiting)."""
        return not self.mode()["blocking"]

    def lua(self, code: str, *args: Any) -> Any:
        """exec_lua, only while the editor serves requests: under a hit-enter
        prompt the request would wait until someone pressed Enter."""
        if not self.free():
            raise AssertionError(f"the editor waits for the user ({self.mode()}): see the screenshot")
        return self.editor.lua(code, *args)

    def wait_free(self, timeout: float = 30.0) -> None:
        wait_until(self.free, timeout, "the editor to serve requests")

    def wait_hit_enter(self, timeout: float = 60.0) -> None:
        wait_until(lambda: self.mode() == {"mode": "r", "blocking": True}, timeout, "a hit-enter prompt")

    def geometry(self) -> tuple[int, int, int, int]:
        """x, y, width, height of the window on the screen."""
        values = dict(
            line.split("=", 1) for line in self.xdotool("getwindowgeometry", "--shell", self.window).split()
        )
        return int(values["X"]), int(values["Y"]), int(values["WIDTH"]), int(values["HEIGHT"])

    def screenshot(self, path: Path) -> Path:
        """The window as the X server shows it, to PNG (Pillow's X grab)."""
        from PIL import ImageGrab

        x, y, width, height = self.geometry()
        path.parent.mkdir(parents=True, exist_ok=True)
        ImageGrab.grab(bbox=(x, y, x + width, y + height), xdisplay=self.display.name).save(path)
        return path

    def close(self) -> None:
        if self.nvim is not None:
            with suppress(Exception):
                self.nvim.command("qa!", async_=True)
            with suppress(Exception):
                self.nvim.close()
            self.nvim = None
        with suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        _stop(self.proc)


def descendants(pid: int) -> set[int]:
    """Every living process below `pid` (by parent links in /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with suppress(OSError, IndexError, ValueError):
            stat = Path(f"/proc/{entry}/stat").read_text()
            # The name may hold spaces and parentheses: fields follow the last ')'.
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def process_names(pids: set[int]) -> dict[int, str]:
    names = {}
    for pid in pids:
        with suppress(OSError):
            names[pid] = (
                Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
    return names
