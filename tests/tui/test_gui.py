"""A real GUI: Debian's neovim-qt on a private Xvfb screen, keys typed into
its window with xdotool, the editor watched over RPC. neovim-qt's shim
broadcasts rpcnotify(0, 'Dir', getcwd()) on every WinEnter, the prompt
window's too: `:!git commit -S` must still draw pinentry in the window, take
the passphrase typed into it, sign, and leave nothing behind; twice."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from fixtures import Keyring
from gui import Display, Gui, descendants, missing_programs, process_names
from harness import Sandbox, nvim_011_binary, nvim_binary, wait_until

T = TypeVar("T")

pytestmark = [
    pytest.mark.tui,
    pytest.mark.e2e,
    # It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
    pytest.mark.versions,
    # Qt's start and two signatures, on a loaded machine.
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        bool(missing_programs()),
        reason=f"the GUI tests need {', '.join(missing_programs())} (scripts/bootstrap.sh installs them)",
    ),
]

# A plugin that prints more than the command line holds just as the prompt
# window opens: a hit-enter prompt over the window.
CHATTY_PLUGIN = """
vim.api.nvim_create_autocmd('User', { pattern = 'TtyOfferPresent', callback = function()
  vim.api.nvim_echo({ { 'a plugin says hello\\nover two lines\\nor three' } }, true, {})
end })
"""


@pytest.fixture(params=["0.12", "0.11"])
def nvim(request: pytest.FixtureRequest) -> str:
    return nvim_binary() if request.param == "0.12" else nvim_011_binary()


@pytest.fixture
def display(tmp_path: Path) -> Iterator[Display]:
    screen = Display(tmp_path / "xvfb.log")
    try:
        yield screen
    finally:
        screen.close()


@pytest.fixture
def gui_factory(
    sandbox: Sandbox, signing: tuple[Keyring, Path], display: Display, nvim: str
) -> Iterator[Callable[[str], Gui]]:
    """neovim-qt in the signing repository, with the keyring, the host ready;
    `extra_init` goes into the sandbox's init first."""
    keyring, repo = signing
    sandbox.env.update(keyring.env)
    # A GPG_TTY of the test's own terminal would send pinentry there.
    sandbox.env.pop("GPG_TTY", None)
    started: list[Gui] = []

    def start(extra_init: str = "") -> Gui:
        sandbox.init.write_text(sandbox.init.read_text() + extra_init)
        gui = Gui(display, sandbox, [], cwd=repo, nvim=nvim)
        started.append(gui)
        gui.editor.wait_host(timeout=60)
        assert gui.lua("return vim.fn.getcwd()") == str(repo)
        return gui

    try:
        yield start
    finally:
        for gui in started:
            gui.close()


def agent_pid(keyring: Keyring) -> int:
    out = subprocess.run(
        ["gpg-connect-agent", "GETINFO pid", "/bye"],
        env={**os.environ, **keyring.env},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return int(next(line.split()[1] for line in out.splitlines() if line.startswith("D ")))


def verified(keyring: Keyring, repo: Path) -> str:
    env = {**os.environ, **keyring.env}
    verify = subprocess.run(
        ["git", "verify-commit", "HEAD"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stderr
    message = subprocess.run(
        ["git", "log", "-1", "--format=%s"], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return message.stdout.strip()


def watch(gui: Gui, shots: Path, predicate: Callable[[], T | None], timeout: float, what: str) -> T:
    """wait_until, with a screenshot of the GUI when it times out."""
    try:
        return wait_until(predicate, timeout, what)
    except AssertionError as error:
        picture = gui.screenshot(shots / f"timeout-{what.replace(' ', '-')}.png")
        raise AssertionError(f"{error} (the screen: {picture})") from None


def prompt_window_text(gui: Gui) -> str | None:
    """What pinentry drew in the prompt window, once it is focused in
    Terminal mode; None until then (or while the editor waits for the user:
    a hit-enter prompt that stays up over the window is what fails here)."""
    if not gui.free():
        return None
    wins = gui.editor.float_wins()
    if len(wins) != 1 or gui.mode()["mode"] != "t":
        return None
    text = gui.editor.buf_text(wins[0])
    return text if "Passphrase:" in text else None


def sign(gui: Gui, keyring: Keyring, repo: Path, message: str, shots: Path) -> None:
    """`:!git commit -S` typed into the GUI, the passphrase typed into the
    window pinentry draws in; the commit verifies and nothing is left."""
    before = descendants(gui.proc.pid)
    done_before = len(gui.editor.events("TtyOfferBangDone"))
    gui.type(f":!git commit --allow-empty -S -m {message}")
    gui.key("Return")
    text = watch(gui, shots, lambda: prompt_window_text(gui), 60, "pinentry in the prompt window")
    assert "Please enter the passphrase" in text
    title = gui.lua("return vim.api.nvim_win_get_config(...).title[1][1]", gui.editor.float_wins()[0])
    assert f"git commit --allow-empty -S -m {message}" in title
    gui.type(keyring.passphrase)
    gui.key("Return")
    # Like :!, the command's output waits for Enter.
    watch(
        gui, shots, lambda: gui.mode() == {"mode": "r", "blocking": True}, 60, "the output's hit-enter prompt"
    )
    gui.key("Return")
    watch(gui, shots, gui.free, 30, "the editor to be free")
    done = gui.editor.events("TtyOfferBangDone")
    assert len(done) == done_before + 1
    assert done[-1]["data"]["code"] == 0, done[-1]["data"]
    assert gui.editor.events("TtyOfferUnserved") == []
    messages = gui.lua("return vim.api.nvim_exec2('messages', { output = true }).output")
    assert "shell returned" not in messages
    assert "handler registered" not in messages
    assert verified(keyring, repo) == message
    assert gui.editor.float_wins() == []
    # Nothing left running: no pinentry under this test's gpg-agent, no git,
    # gpg or wrapper under the editor.
    agent = agent_pid(keyring)
    watch(gui, shots, lambda: not descendants(agent), 20, "pinentry to end")

    def left_over() -> dict[int, str]:
        return process_names(descendants(gui.proc.pid) - before)

    watch(gui, shots, lambda: not left_over(), 20, "the command's processes to end")


def test_a_commit_signed_in_neovim_qt(
    gui_factory: Callable[[str], Gui], signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    keyring, repo = signing
    gui = gui_factory("")
    # neovim-qt's shim is loaded: its broadcasts reach the host too.
    assert gui.lua("return vim.fn.exists('#guiDirEvents#WinEnter')") == 1
    sign(gui, keyring, repo, "first", tmp_path / "shots")
    # And right after, again.
    sign(gui, keyring, repo, "second", tmp_path / "shots")


def test_a_hit_enter_prompt_as_the_window_opens(
    gui_factory: Callable[[str], Gui], signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    keyring, repo = signing
    gui = gui_factory(CHATTY_PLUGIN)
    sign(gui, keyring, repo, "chatty", tmp_path / "shots")
    # Answered for the user, the plugin's message is where messages go.
    messages = gui.lua("return vim.api.nvim_exec2('messages', { output = true }).output")
    assert "a plugin says hello\nover two lines\nor three" in messages
