"""What the editor broadcasts is not the host's business: a GUI's shim
(neovim-qt's rpcnotify(0, 'Dir', getcwd()) on every WinEnter) or a plugin's
rpcnotify(0, …) reaches the host's channel too, and must leave no message
and no hit-enter prompt; a request the host does not handle gets its error,
to the caller. And a hit-enter prompt that comes up as the prompt window
opens does not keep the window from being drawn and answered. On Neovim
0.12-dev and 0.11.4."""

from __future__ import annotations

import time
from pathlib import Path

import pynvim
import pytest

from harness import Editor, Sandbox, editor, nvim_011_binary, wait_until
from tui import Tui

# It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
pytestmark = [pytest.mark.nvim, pytest.mark.versions]

VERSIONS = {"0.12": None, "0.11": nvim_011_binary}


@pytest.fixture(params=sorted(VERSIONS))
def version(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The harness runs this Neovim for the test (TTYOFFER_NVIM)."""
    binary = VERSIONS[request.param]
    if binary is not None:
        monkeypatch.setenv("TTYOFFER_NVIM", binary())
    minor: str = request.param
    return minor


def running_version(ed: Editor) -> str:
    version: str = ed.lua("local v = vim.version() return v.major .. '.' .. v.minor")
    return version


def messages(ed: Editor) -> str:
    text: str = ed.lua("return vim.api.nvim_exec2('messages', { output = true }).output")
    return text


def settled_host(ed: Editor) -> None:
    """The host handles its channel's messages in order, and what it writes
    to the editor comes before its answer: once a request sent after the
    notifications has been answered, twice, anything they made it write has
    reached the editor."""
    for _ in range(2):
        assert ed.host_status()["offers"] is not None


def test_broadcast_notifications_leave_no_trace(version: str, sandbox: Sandbox) -> None:
    with editor(sandbox) as ed:
        assert running_version(ed) == version
        ed.nvim.command("messages clear")
        ed.lua(
            "local chan = require('ttyoffer.host').get_channel() "
            "vim.rpcnotify(0, 'Dir', vim.fn.getcwd()) "
            "vim.rpcnotify(0, 'Gui', 'Foreground') "
            "vim.rpcnotify(0, 'Gui', 'Option', 'Tabline', 1) "
            "vim.rpcnotify(chan, 'SomePlugin:event', { 1, 2 }, 'three') "
            "vim.api.nvim_exec_autocmds('WinEnter', {})"
        )
        settled_host(ed)
        # Nothing shown, nothing waiting for Enter, the host still serves.
        assert ed.nvim.api.get_mode() == {"mode": "n", "blocking": False}
        assert messages(ed) == ""
        assert ed.lua("return require('ttyoffer.host').ready()") is True


def test_an_unknown_request_is_answered_with_an_error(version: str, sandbox: Sandbox) -> None:
    with editor(sandbox) as ed:
        assert running_version(ed) == version
        ed.nvim.command("messages clear")
        ok, err = ed.lua(
            "local chan = require('ttyoffer.host').get_channel() "
            "return { pcall(vim.rpcrequest, chan, 'no_such_method', 1) }"
        )
        assert ok is False
        assert 'no request handler registered for "no_such_method"' in err
        # One of its own, called wrongly: the error goes to the caller too.
        ok, err = ed.lua(
            "local chan = require('ttyoffer.host').get_channel() "
            "return { pcall(vim.rpcrequest, chan, 'ttyoffer_screen') }"
        )
        assert ok is False and "ttyoffer_screen" in err
        settled_host(ed)
        assert ed.nvim.api.get_mode() == {"mode": "n", "blocking": False}
        assert messages(ed) == ""


# A plugin that prints more than the command line holds just as the prompt
# window opens (as neovim-qt's WinEnter broadcast made the stock host do).
CHATTY_PLUGIN = """
vim.api.nvim_create_autocmd('User', { pattern = 'TtyOfferPresent', callback = function()
  vim.api.nvim_echo({ { 'a plugin says hello\\nover two lines\\nor three' } }, true, {})
end })
"""
ASKS = "printf 'Passphrase: ' > /dev/tty; read p < /dev/tty; echo \"got $p\""


@pytest.mark.tui
def test_a_hit_enter_prompt_as_the_window_opens_is_answered(
    version: str, registered_sandbox: Sandbox, tmp_path: Path
) -> None:
    sandbox = Sandbox(tmp_path / "nvim", extra_init=CHATTY_PLUGIN)
    sandbox.manifest.write_text(registered_sandbox.manifest.read_text())
    term = Tui(sandbox, [], 30, 100)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        assert running_version(ed) == version
        term.type(f":Bang {ASKS}\r")
        # The window is drawn, its question in it, and no "Press ENTER" over it.
        term.wait_text("│Passphrase:")
        term.wait_text("— Passphrase")
        assert term.showing("Press ENTER") is None
        assert nvim.api.get_mode() == {"mode": "t", "blocking": False}
        # Typed at a person's pace, every key reaches the command.
        for key in "s3cret\r":
            term.type(key)
            time.sleep(0.05)
        term.wait_text("got s3cret")
        term.wait_text("Press ENTER")  # :Bang's output, as :! shows it
        term.type("\r")
        wait_until(lambda: not nvim.api.get_mode()["blocking"], 15, "the editor to be free")
        done = ed.wait_event("TtyOfferBangDone")[0]["data"]
        assert done["code"] == 0 and done["output"] == ["got s3cret"]
        assert ed.events("TtyOfferUnserved") == []
        # Answered for the user, the plugin's message is where messages go.
        assert "a plugin says hello\nover two lines\nor three" in messages(ed)
    finally:
        nvim.close()
        term.close()
