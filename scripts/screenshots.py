"""The README's pictures, taken from a real run rather than drawn: Neovim's own
TUI in a pty, a throwaway passphrase-protected signing key, gpg's real
pinentry-curses dialog in the prompt window over a file being edited, then
`:TtyOffer status`; then the same dialog in a real GUI, Debian's neovim-qt on
a private Xvfb screen, keys typed into it with xdotool. Run it through
scripts/screenshots, which prepares the virtualenv and the import path
(tests/ for the harness and the GUI, scripts/ for the rest)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pynvim

from fixtures import FixtureError, Keyring, make_keyring, make_signing_repo
from gui import Display, Gui
from harness import Editor, Sandbox, wait_until
from render_screen import save_png
from tui import PtyScreen, Tui

ROOT = Path(__file__).resolve().parent.parent
PASSPHRASE = "ttyoffer"
ROWS, COLS = 30, 100
COMMIT = 'Bang git commit --allow-empty -S -m "signed inside Neovim"'
# What the user is editing when the command asks: something recognisable
# around the window, not an empty screen.
SOURCE_NAME = "greet.py"
SOURCE = '''\
"""Greetings, committed with a signature made inside Neovim."""

import sys


def greet(name: str) -> str:
    return f"Hello, {name}!"


if __name__ == "__main__":
    print(greet(sys.argv[1] if len(sys.argv) > 1 else "world"))
'''
# The GUI's picture: a window about the TUI's picture in size.
GUI_GEOMETRY = "1000x640"
GUI_COMMIT = 'Bang git commit --allow-empty -S -m "signed inside neovim-qt"'
# Colours as a current terminal shows them: Neovim turns 'termguicolors' on
# by itself where the terminal says it can, which pyte cannot answer.
EXTRA_INIT = "vim.o.termguicolors = true\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "doc" / "img", help="folder for the PNGs")
    out = parser.parse_args().out
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ttyoffer-shots.") as folder:
        try:
            written = take_pictures(Path(folder), out)
        except FixtureError as error:
            sys.exit(f"ttyoffer: {error}")
    for path in written:
        print(f"ttyoffer: wrote {path}")
    print(f"ttyoffer: screenshots took {time.monotonic() - started:.1f}s")
    return 0


def take_pictures(folder: Path, out: Path) -> list[Path]:
    keyring = make_keyring(folder / "gnupg", PASSPHRASE)
    try:
        repo = make_signing_repo(folder / "repo", keyring)
        (repo / SOURCE_NAME).write_text(SOURCE)
        sandbox = editor_sandbox(folder / "nvim", keyring)
        with tui_in(sandbox, repo, SOURCE_NAME) as term:
            pictures = [prompt_picture(term, out / "prompt.png"), status_picture(term, out / "status.png")]
        gui_sandbox = editor_sandbox(folder / "nvim-qt", keyring)
        pictures.append(gui_prompt_picture(gui_sandbox, repo, folder, out / "prompt-gui.png"))
        return pictures
    finally:
        keyring.kill_agent()


def editor_sandbox(base: Path, keyring: Keyring) -> Sandbox:
    sandbox = Sandbox(base, extra_init=EXTRA_INIT)
    sandbox.env.update(keyring.env)
    # A GPG_TTY of our own terminal would send pinentry there, not to the window.
    sandbox.env.pop("GPG_TTY", None)
    sandbox.register()
    return sandbox


@contextmanager
def tui_in(sandbox: Sandbox, repo: Path, file: str) -> Iterator[Tui]:
    """Neovim's TUI editing `file` in `repo`, the remote plugin host ready."""
    term = Tui(sandbox, ["-c", f"cd {repo}", str(repo / file)], ROWS, COLS)
    nvim = pynvim.attach("socket", path=term.socket)
    try:
        Editor(nvim).wait_host()
        term.wait_text(SOURCE.splitlines()[0])
        yield term
    finally:
        with suppress(Exception):
            nvim.command("qa!", async_=True)
        with suppress(AssertionError):
            wait_until(lambda: not term.proc.isalive(), 10, "Neovim to quit")
        nvim.close()
        term.close()


def prompt_picture(term: PtyScreen, path: Path) -> Path:
    """The window with pinentry's dialog; answered afterwards, so gpg signs
    and the run ends as a user's would."""
    term.type(f":{COMMIT}\r")
    term.wait_text("Please enter the passphrase", timeout=30)
    # The title names the question once the host has read the screen.
    term.wait_text("— Passphrase")
    picture = snapshot(term, path)
    term.type(PASSPHRASE + "\r")
    term.wait_text("(root-commit)", timeout=30)  # git's "[main (root-commit) 1a2b3c4] signed…"
    term.wait_text("Press ENTER")
    term.type("\r")
    term.wait_gone("╭")  # the window's frame
    return picture


def gui_prompt_picture(sandbox: Sandbox, repo: Path, folder: Path, path: Path) -> Path:
    """pinentry's dialog in the prompt window of neovim-qt, the command
    typed into the GUI's window; answered afterwards, so gpg signs."""
    display = Display(folder / "xvfb.log")
    try:
        gui = Gui(display, sandbox, [SOURCE_NAME], cwd=repo, geometry=GUI_GEOMETRY)
        try:
            gui.editor.wait_host(timeout=60)
            gui.type(f":{GUI_COMMIT}")
            gui.key("Return")
            wait_until(lambda: gui_prompt_drawn(gui), 60, "pinentry in neovim-qt's prompt window")
            picture = settled_screenshot(gui, path)
            gui.type(PASSPHRASE)
            gui.key("Return")
            wait_until(lambda: gui.mode() == {"mode": "r", "blocking": True}, 60, "the commit's output")
            gui.key("Return")
            wait_until(gui.free, 30, "the editor to be free")
            done = gui.editor.events("TtyOfferBangDone")
            if not done or done[-1]["data"]["code"] != 0:
                raise SystemExit(f"ttyoffer: the GUI's commit failed: {done}")
            return picture
        finally:
            gui.close()
    finally:
        display.close()


def settled_screenshot(gui: Gui, path: Path, quiet: float = 0.3, timeout: float = 10.0) -> Path:
    """The GUI paints a moment after the editor has drawn (the title, the
    cursor): taken again until two pictures `quiet` seconds apart agree."""
    gui.screenshot(path)
    previous = path.read_bytes()

    def unchanged() -> bool:
        nonlocal previous
        time.sleep(quiet)
        current = gui.screenshot(path).read_bytes()
        same, previous = current == previous, current
        return same

    wait_until(unchanged, timeout, "neovim-qt's window to settle")
    return path


def gui_prompt_drawn(gui: Gui) -> bool:
    """The dialog is in the window, and its title names the question."""
    if not gui.free() or gui.mode()["mode"] != "t":
        return False
    wins = gui.editor.float_wins()
    if len(wins) != 1 or "Passphrase:" not in gui.editor.buf_text(wins[0]):
        return False
    title: str = gui.lua("return vim.api.nvim_win_get_config(...).title[1][1]", wins[0])
    return "— Passphrase" in title


def status_picture(term: PtyScreen, path: Path) -> Path:
    term.type(":TtyOffer status\r")
    term.wait_text("(ttyoffer) on; host ready")
    term.wait_text("Press ENTER")
    picture = snapshot(term, path)
    term.type("\r")
    term.wait_gone("Press ENTER")
    return picture


def snapshot(term: PtyScreen, path: Path) -> Path:
    settle(term)
    with term.lock:  # the reader thread feeds pyte under this lock
        return save_png(term.screen, path)


def settle(term: PtyScreen, quiet: float = 0.3, timeout: float = 10.0) -> None:
    """Until the program has drawn nothing new for `quiet` seconds: colours,
    the cursor and the window's title land a moment after the text polled for."""
    seen = [len(term.raw), time.monotonic()]

    def quiet_long_enough() -> bool:
        size, now = len(term.raw), time.monotonic()
        if size != seen[0]:
            seen[:] = [size, now]
            return False
        return now - seen[1] >= quiet

    wait_until(quiet_long_enough, timeout, "the screen to settle")


if __name__ == "__main__":
    sys.exit(main())
