"""A passphrase typed at a person's pace into a prompt while a plugin holds
the editor, in the real TUI: the prompt that was drawn stays and gets the
whole secret, and whatever happens to a prompt, no key of the secret reaches
the document, its swap file or its undo file. On 0.12-dev and 0.11.4."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pynvim
import pytest

from harness import Editor, Sandbox, nvim_011_binary, nvim_binary, wait_until
from tui import Tui

# It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
pytestmark = [pytest.mark.tui, pytest.mark.versions]

# Normal-mode commands among it (ZZ quits, u undoes, i inserts): keys that
# reach the document are seen at once.
SECRET = "zq9ZZ#vx7%wpKiu"
DOCUMENT = ["line one", "line two"]
# Prints what shows the secret arrived whole, never the secret itself.
ASK = (
    'python3 -c \'import getpass, hashlib; s = getpass.getpass("Passphrase: "); '
    'print("got", len(s), hashlib.sha256(s.encode()).hexdigest()[:16])\''
)
GOT = f"got {len(SECRET)} {hashlib.sha256(SECRET.encode()).hexdigest()[:16]}"
# A person's pace: one key every 100 ms.
KEY_INTERVAL = 0.1

BINARIES = {"0.12": nvim_binary, "0.11": nvim_011_binary}

# A plugin's timer holding the editor: one spell of 1.5 s, or spells of
# 800 ms with 200 ms between them, from 200 ms after the prompt shows.
ONE_SPELL = """
vim.defer_fn(function()
  local t = vim.uv.hrtime() while vim.uv.hrtime() - t < 1.5e9 do end
end, 200)
"""
REPEATED_SPELLS = """
local timer, spells = vim.uv.new_timer(), 0
timer:start(200, 1000, vim.schedule_wrap(function()
  spells = spells + 1
  if spells == 3 then timer:stop() end
  local t = vim.uv.hrtime() while vim.uv.hrtime() - t < 0.8e9 do end
end))
"""


@dataclass
class Session:
    term: Tui
    ed: Editor
    doc: Path
    swap: Path
    undo_dir: Path


@pytest.fixture(params=list(BINARIES))
def session(request: pytest.FixtureRequest, sandbox: Sandbox, tmp_path: Path) -> Iterator[Session]:
    doc = tmp_path / "notes.txt"
    doc.write_text(DOCUMENT[0] + "\n")
    swap_dir, undo_dir = tmp_path / "swap", tmp_path / "undo"
    swap_dir.mkdir()
    undo_dir.mkdir()
    # A swap file written at every key, and an undo file: where typed keys
    # would be kept.
    options = f"set swapfile updatecount=1 directory={swap_dir}// undofile undodir={undo_dir}"
    term = Tui(sandbox, ["--cmd", options, str(doc)], 30, 100, binary=BINARIES[request.param]())
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        term.wait_text("line one")
        # One change, written: the undo file exists, and any later change
        # would be written into it by the next :w.
        nvim.command(f"call append('$', '{DOCUMENT[1]}') | write")
        assert len(list(undo_dir.iterdir())) == 1
        swap = Path(ed.lua("return vim.fn.swapname('%')"))
        assert swap.is_relative_to(swap_dir) and swap.exists()
        yield Session(term, ed, doc, swap, undo_dir)
    finally:
        nvim.close()
        term.close()


def type_slowly(term: Tui, keys: str) -> None:
    for key in keys:
        term.type(key)
        time.sleep(KEY_INTERVAL)


def assert_no_trace_of_the_secret(s: Session) -> None:
    """The document as it was, unmodified, in Normal mode; its swap file (as
    written now) and its undo file (written by :w) hold no piece of it."""
    ed = s.ed
    assert ed.nvim.current.buffer[:] == DOCUMENT
    assert ed.nvim.current.buffer.options["modified"] is False
    assert ed.mode() == "n"
    ed.nvim.command("preserve")
    ed.nvim.command("write")
    undo_files = list(s.undo_dir.iterdir())
    assert len(undo_files) == 1
    pieces = {SECRET[i : i + 3].encode() for i in range(len(SECRET) - 2)}
    for path in (s.doc, s.swap, undo_files[0]):
        data = path.read_bytes()
        assert not [p for p in pieces if p in data], path
    assert s.doc.read_text().splitlines() == DOCUMENT


def finish_bang(s: Session) -> dict[str, object]:
    """:Bang's output waits for Enter, like :! (and the editor serves no RPC
    then): Enter after a pause, then its result."""
    time.sleep(0.5)
    s.term.wait_text("Press ENTER", timeout=20)
    s.term.type("\r")
    s.term.wait_gone("Press ENTER")
    done: dict[str, object] = s.ed.wait_event("TtyOfferBangDone")[0]["data"]
    s.ed.wait_event("TtyOfferClose")
    return done


@pytest.mark.parametrize("plugin", [ONE_SPELL, REPEATED_SPELLS], ids=["one 1.5 s spell", "800 ms spells"])
def test_a_drawn_prompt_outlasts_a_busy_editor_and_gets_the_secret(session: Session, plugin: str) -> None:
    s = session
    s.ed.lua("require('ttyoffer').setup({ blocked_timeout = 1000 })")
    s.term.type(f":Bang {ASK}\r")
    s.term.wait_text("│Passphrase:")
    s.ed.lua(plugin)
    type_slowly(s.term, SECRET + "\r")
    done = finish_bang(s)
    assert done["code"] == 0, done
    assert done["output"] == [GOT]  # every key, in order, and nothing else
    assert s.ed.events("TtyOfferUnserved") == []
    s.term.wait_gone("╭")
    assert_no_trace_of_the_secret(s)


# The prompt window goes while the user is still typing into it: the
# command exits (it never reads), or a plugin closes every float, or a
# plugin closes it and then holds the editor while the keys keep coming.
EXITS = "sh -c 'printf \"Passphrase: \" >/dev/tty; sleep 0.6; echo ended'"
CLOSE_FLOATS = """
local busy = ...
vim.defer_fn(function()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then vim.api.nvim_win_close(win, true) end
  end
  if busy then local t = vim.uv.hrtime() while vim.uv.hrtime() - t < 0.8e9 do end end
end, 500)
"""


# The host dies (killed): the keeper hangs the shown prompt up, its window
# goes.
KILL_HOST = """
vim.defer_fn(function() vim.uv.kill(require('ttyoffer').status().host_pid, 'sigkill') end, 500)
"""
READS = "sh -c 'printf \"Passphrase: \" >/dev/tty; read p </dev/tty'"


@pytest.mark.parametrize(
    ("command", "plugin"),
    [(EXITS, None), (READS, "closes"), (ASK, "closes and holds"), (READS, "kills the host")],
    ids=[
        "the command exits",
        "a plugin closes it",
        "a plugin closes it and holds the editor",
        "the host dies",
    ],
)
def test_keys_typed_on_after_the_prompt_went_are_dropped(
    session: Session, command: str, plugin: str | None
) -> None:
    s = session
    s.term.type(f":Bang {command}\r")
    s.term.wait_text("│Passphrase:")
    if plugin == "kills the host":
        s.ed.lua(KILL_HOST)
    elif plugin is not None:
        s.ed.lua(CLOSE_FLOATS, plugin == "closes and holds")
    type_slowly(s.term, SECRET + "\r")
    finish_bang(s)
    assert s.term.showing("╭") is None
    assert_no_trace_of_the_secret(s)
    # Keys typed after a pause are the editor's again.
    time.sleep(0.4)
    s.term.type("ix\x1b")
    wait_until(lambda: s.ed.nvim.current.buffer[0] == "x" + DOCUMENT[0], what="a key typed after the pause")


# A plugin's timer that keeps the loop slow without ever blocking it for
# long: busy 100 ms of every 150 ms (each gap in the gate's 20 ms ticks is
# a hold), for `seconds`. A loaded machine's late timers look the same.
SLOW_LOOP = """
local seconds = ...
local timer, started = vim.uv.new_timer(), vim.uv.now()
timer:start(0, 150, function()
  if vim.uv.now() - started > seconds * 1000 then
    timer:stop()
    timer:close()
    return
  end
  local t = vim.uv.hrtime() while vim.uv.hrtime() - t < 1e8 do end
end)
"""
DROPPING = "return require('ttyoffer.offer.typing').dropping()"


def test_a_slow_loop_is_not_typing(session: Session) -> None:
    """The prompt goes under the user's fingers while a plugin keeps the
    loop slow: the rest of the secret, typed on, is dropped; once the user
    pauses, the slow loop does not keep their keys dropped."""
    s = session
    s.term.type(f":Bang {READS}\r")
    s.term.wait_text("│Passphrase:")
    s.ed.lua(SLOW_LOOP, 20)
    s.ed.lua(CLOSE_FLOATS, False)
    type_slowly(s.term, SECRET + "\r")
    finish_bang(s)
    assert s.term.showing("╭") is None
    # The user has paused (the Enter of :Bang's output was their last key):
    # the keys are the editor's again while the loop is still slow.
    wait_until(lambda: not s.ed.lua(DROPPING), 5.0, "the pause judged while the loop is slow")
    time.sleep(1.0)
    s.term.type("ix\x1b")
    wait_until(lambda: s.ed.nvim.current.buffer[0] == "x" + DOCUMENT[0], what="a key typed after the pause")
    wait_until(lambda: s.ed.mode() == "n", what="the Esc typed after it")
    s.ed.nvim.command("undo")
    assert_no_trace_of_the_secret(s)
