"""The real TUI: the float is drawn centered, keys go to the child, the
editor's own screen comes back intact."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pynvim
import pytest

from fixtures import make_ssh_key
from harness import Editor, Sandbox, wait_until
from tui import Tui

pytestmark = pytest.mark.tui

ROWS, COLS = 30, 100


@pytest.fixture
def tui(sandbox: Sandbox, tmp_path: Path) -> Iterator[tuple[Tui, Editor]]:
    doc = tmp_path / "notes.txt"
    doc.write_text("first line of the notes\nsecond line stays put\n")
    term = Tui(sandbox, [str(doc)], ROWS, COLS)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        term.wait_text("first line of the notes")
        yield term, ed
    finally:
        nvim.close()
        term.close()


def test_prompt_float_in_the_tui(tui: tuple[Tui, Editor]) -> None:
    term, ed = tui
    term.type(":Bang printf 'Passphrase: ' > /dev/tty; read p < /dev/tty; echo \"got $p\"\r")
    term.wait_text("│Passphrase:")
    # The title names the prompt once the screen has been read.
    lines = term.wait_text("— Passphrase")
    # Centered: the frame's corners sit where the float geometry puts them.
    top = next(i for i, line in enumerate(lines) if "╭" in line)
    bottom = next(i for i, line in enumerate(lines) if "╰" in line)
    left, right = lines[top].index("╭"), lines[top].index("╮")
    width, height = right - left - 1, bottom - top - 1
    usable = ROWS - 1  # cmdheight
    assert (width, height) == (min(80, COLS - 4), min(24, usable - 4))
    assert left == (COLS - width - 2) // 2
    assert top == (usable - height - 2) // 2
    assert "Passphrase" in lines[top]  # the title names the prompt
    assert lines[top + 1][left + 1 :].startswith("Passphrase:")
    # Typed the moment the prompt is visible: every key reaches the child.
    term.type("s3cret-Ω\r")
    # Like :!, the output waits for Enter (and the editor for the user).
    term.wait_text("got s3cret-Ω")
    term.wait_text("Press ENTER")
    term.type("\r")
    done = ed.wait_event("TtyOfferBangDone")[0]["data"]
    assert done["code"] == 0
    assert done["output"] == ["got s3cret-Ω"]
    ed.wait_event("TtyOfferClose")
    # The edited buffer got none of it, and the screen is the editor's again.
    assert ed.nvim.current.buffer[:] == ["first line of the notes", "second line stays put"]
    assert ed.nvim.current.buffer.options["modified"] is False
    term.wait_gone("╭")  # the float
    screen = term.lines()
    assert screen[0].startswith("first line of the notes")
    assert screen[1].startswith("second line stays put")
    assert all(line.startswith("~") for line in screen[2:20])
    assert not any("\x1b" in line or "[?" in line for line in screen)


def test_bang_says_it_is_still_running(tui: tuple[Tui, Editor]) -> None:
    term, ed = tui
    ed.lua("require('ttyoffer').setup({bang = {notice_delay = 100}})")
    term.type(":Bang sleep 30\r")
    lines = term.wait_text("(running, pid")
    assert lines[-1].startswith("(running, pid") and ":!sleep 30" in lines[-1]
    assert ed.float_wins() == []


def test_a_long_bang_never_stops_the_user_and_its_window_always_goes(sandbox: Sandbox) -> None:
    # 120 columns and a command longer than that: the "still running" notice
    # is cut to the command line, where a wrapped one raised a hit-enter
    # prompt under the window; and the window of a command that ended goes
    # before :Bang's output (which asks for Enter, like :!) is shown.
    term = Tui(sandbox, [], 30, 120)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        ed.lua("require('ttyoffer').setup({bang = {notice_delay = 100}})")
        long = "sleep 0.5; printf 'Passphrase: ' > /dev/tty; read p < /dev/tty; echo " + "done-" * 25
        term.type(f":Bang {long}\r")
        notice = next(line for line in term.wait_text("(running, pid") if "(running, pid" in line)
        assert notice.startswith("(running, pid") and ":!sleep 0.5" in notice
        assert notice.rstrip().endswith("…") and len(notice.rstrip()) < 120
        assert term.showing("Press ENTER") is None
        term.wait_text("│Passphrase:")
        assert term.showing("Press ENTER") is None
        term.type("pw\r")
        # (No RPC while :Bang's output waits for Enter: Neovim serves none.)
        term.wait_text("Press ENTER")
        term.type("\r")
        assert ed.wait_event("TtyOfferBangDone")[0]["data"]["code"] == 0
        # The window had gone before the output was shown.
        order = [e["pattern"] for e in ed.events() if e["pattern"] in ("TtyOfferClose", "TtyOfferBangDone")]
        assert order == ["TtyOfferClose", "TtyOfferBangDone"]
        assert ed.float_wins() == []
    finally:
        nvim.close()
        term.close()


def test_what_a_command_wrote_while_the_user_typed_is_shown(tui: tuple[Tui, Editor]) -> None:
    # Typed and entered: the window waits for the typing pause, and the
    # command has ended by then. What it wrote is shown all the same.
    term, ed = tui
    term.type(":Bang sh -c 'echo IMPORTANT > /dev/tty; echo and this too > /dev/tty'\r")
    term.wait_text("IMPORTANT")
    term.wait_text("and this too")
    term.wait_text("[Process exited 0]")
    ed.wait_event("TtyOfferClose")
    term.wait_gone("╭")
    assert ed.float_wins() == []


def test_typed_bang_right_as_the_editor_appears(sandbox: Sandbox, tmp_path: Path) -> None:
    # Typed the moment the editor shows its first screen, before the host
    # can be up: :! waits for it and the prompt is shown all the same.
    doc = tmp_path / "notes.txt"
    doc.write_text("first line of the notes\n")
    term = Tui(sandbox, [str(doc)], ROWS, COLS)
    try:
        term.wait_text("first line of the notes")
        term.type(":!printf 'Name: ' > /dev/tty; read n < /dev/tty; echo \"hello $n\"\r")
        term.wait_text("│Name:")
        term.type("early bird\r")
        term.wait_text("hello early bird")
        lines = term.wait_text("Press ENTER")
        # Shown as :! shows it: the command, its output.
        assert any(line.startswith(":!printf 'Name: '") for line in lines)
        term.type("\r")
        term.wait_gone("Press ENTER")
        nvim = pynvim.attach("socket", path=term.socket)
        try:
            ed = Editor(nvim)
            done = ed.wait_event("TtyOfferBangDone")[0]["data"]
            assert (done["code"], done["output"]) == (0, ["hello early bird"])
            assert nvim.funcs.histget(":", -1).startswith("!printf 'Name: '")
            assert nvim.current.buffer[:] == ["first line of the notes"]
        finally:
            nvim.close()
        term.wait_gone("╭")
        assert not any("\x1b" in line or "[?" in line for line in term.lines())
    finally:
        term.close()


def test_a_prompt_waits_for_the_user_at_a_hit_enter_prompt(tui: tuple[Tui, Editor]) -> None:
    # At a hit-enter prompt Neovim serves nothing, but the user is there and
    # will come back: unlike a blocked editor, the command is not hung up.
    term, ed = tui
    ed.lua("require('ttyoffer').setup({ blocked_timeout = 300 })")
    marker = "hit-enter-asker"
    term.type(f":Bang sleep 0.3; printf 'Key: ' > /dev/tty; read k < /dev/tty; echo \"{marker} $k\"\r")
    term.type(':echo "one\\ntwo"\r')
    term.wait_text("Press ENTER")

    def asker_alive() -> bool:
        found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
        return found.returncode == 0

    wait_until(asker_alive, what="the command to start")
    # Several times blocked_timeout at the hit-enter prompt: still waiting.
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        assert asker_alive()
        assert term.showing("Press ENTER")
        time.sleep(0.1)
    term.type("\r")
    term.wait_text("│Key:")
    term.type("yes\r")
    term.wait_text(f"{marker} yes")
    term.wait_text("Press ENTER")
    term.type("\r")
    done = ed.wait_event("TtyOfferBangDone")[0]["data"]
    assert (done["code"], done["output"]) == (0, [f"{marker} yes"])
    assert ed.events("TtyOfferUnserved") == []


def test_a_run_in_the_tui_asks_is_answered_and_tells_its_end(tui: tuple[Tui, Editor]) -> None:
    """:TtyRun typed, the program's question answered with keys, the bar's
    state, and q closing the pane: the document is back as it was."""
    term, ed = tui
    term.type(':TtyRun sh -c \'printf "Your name? "; read name; echo "Hello, $name"; exit 2\'\r')
    term.wait_text("Your name?")
    lines = term.wait_text("running")
    bar = next(line for line in lines if "running" in line)
    assert "Your name?" in bar and "Close" in bar  # title, state, Close on one bar
    # Keys go to the program in Terminal mode: the bar says how q is reached.
    assert "<C-\\><C-n> then q closes" in bar, bar
    term.type("Ada\r")
    term.wait_text("Hello, Ada")
    lines = term.wait_text("exited 2")
    assert any("[exited 2]" in line for line in lines)  # in the pane, under the output
    bar = next(line for line in lines if "exited 2" in line and "[" not in line)
    assert "q closes" in bar and "<C-n>" not in bar, bar  # Normal mode now: q alone
    # The pane left Terminal mode when its program ended: q alone closes it.
    wait_until(lambda: ed.nvim.api.get_mode()["mode"] == "nt", what="Normal mode in the finished pane")
    # Keys typed as it ended were the program's: the editor's again after a pause.
    typing = "return require('ttyoffer.offer.typing').dropping()"
    wait_until(lambda: not ed.lua(typing), what="a pause in the typing")
    term.type("q")
    term.wait_gone("Hello, Ada")
    assert "first line of the notes" in term.text()
    assert ed.nvim.current.buffer[:] == ["first line of the notes", "second line stays put"]
    assert not ed.nvim.current.buffer.options["modified"]


# Twenty commands asking the same question at once (twenty plugins updated
# over ssh with one passphrase key), started from one Lua loop.
STORM = 20
STORM_LUA = """
local argv, count = ...
_G.storm = {}
for _ = 1, count do
  vim.fn.jobstart(argv, {
    on_exit = function(_, code)
      table.insert(_G.storm, code)
    end,
  })
end
"""


def test_a_storm_of_questions_counts_down_and_is_declined_at_once(
    tui: tuple[Tui, Editor], tmp_path: Path
) -> None:
    """The window's foot says how many wait behind it, one less for each
    answered; the decline-all key (<M-q>) ends every one of them at once,
    with one message; the same question asked again in the burst is
    declined with no window, while another question still asks."""
    term, ed = tui
    key = make_ssh_key(tmp_path / "ssh" / "id_ed25519", "storm passphrase")
    keygen = ["ssh-keygen", "-y", "-f", str(key)]
    # A loop that never yields can only give offers from the stock of spare
    # ptys; past it commands run plainly and the stock grows: warmed here
    # as a plugin manager's first run would warm it.
    ed.lua(STORM_LUA, ["true"], STORM)
    wait_until(
        lambda: ed.lua("return require('ttyoffer').status().spare") >= STORM, 20.0, "a stock for the storm"
    )
    ed.lua(STORM_LUA, keygen, STORM)
    # Every one of them has asked: this one on screen, the rest behind it.
    term.wait_text(f"{STORM - 1} more waiting · <M-q> declines all")
    # Answered in turn, typed as the window shows: the count goes down.
    for waiting in (STORM - 2, STORM - 3):
        term.type("storm passphrase\r")
        term.wait_text(f"{waiting} more waiting")
    assert ed.lua("return _G.storm") == [0, 0]
    presented = len(ed.events("TtyOfferPresent"))
    term.type("\x1bq")  # <M-q>, as a terminal sends it
    ended = wait_until(lambda: (codes := ed.lua("return _G.storm")) and len(codes) == STORM and codes, 10.0,
                       "every command of the storm to end")  # fmt: skip
    assert sorted(ended) == [0, 0] + [129] * (STORM - 2), ended  # hung up, as a declined prompt
    term.wait_gone("╭")
    term.wait_text(f"declined {STORM - 2} questions")
    messages = ed.nvim.api.exec2("messages", {"output": True})["output"]
    assert messages.count("declined") == 1, messages
    assert f"declined {STORM - 2} questions" in messages
    # The same question in the burst: declined with no window.
    ed.lua(STORM_LUA, keygen, 1)
    wait_until(lambda: ed.lua("return _G.storm") == [129], 10.0, "the same question declined again")
    assert len(ed.events("TtyOfferPresent")) == presented
    # Another question in the burst still asks.
    ed.lua(STORM_LUA, ["sh", "-c", 'printf "Other question: " > /dev/tty; read a < /dev/tty; echo "$a"'], 1)
    term.wait_text("│Other question:")
    term.type("fine\r")
    wait_until(lambda: ed.lua("return _G.storm") == [0], 10.0, "the other question answered")
    assert ed.nvim.api.exec2("messages", {"output": True})["output"].count("declined") == 1
    term.wait_gone("╭")
    assert ed.nvim.current.buffer[:] == ["first line of the notes", "second line stays put"]
