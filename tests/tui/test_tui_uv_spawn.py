"""vim.uv.spawn in the real TUI, as plugins call it: a raw luv spawn and a
plenary.job (pinned plenary.nvim) running Python's getpass and `ssh-keygen
-y` on a passphrase key get the prompt window, the keys typed answer, and
the result is the one the program gives. Stock luv in the same editor
gives the program no terminal (getpass reads its empty stdin and fails). A
plenary Job:sync() waits in a vim.wait() of its own, where the editor reads
no key: the keys typed reach the window all the same. A wait that serves
fast events only cannot be served: hung up within seconds, the user told
how to run it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

from fixtures import make_ssh_key
from harness import Editor, Sandbox, wait_until
from third_party import plugin
from tui import Tui

pytestmark = pytest.mark.tui

ROWS, COLS = 30, 100
# A person's pace: one key every 100 ms.
KEY_INTERVAL = 0.1
GETPASS = ["python3", "-c", "import getpass; print('read=[' + getpass.getpass('Secret: ') + ']')"]

# What a plugin's command does: spawn, collect stdout, note the end.
SPAWNERS = r"""
local uv = vim.uv
_G.spawned = {}
function _G.raw_spawn(name, argv, stock)
  local spawn = stock and require('ttyoffer.shared.originals').uv_spawn or uv.spawn
  local stdin, stdout = uv.new_pipe(), uv.new_pipe()
  local out, result = {}, { name = name }
  local handle
  local options = { args = vim.list_slice(argv, 2), stdio = { stdin, stdout, nil } }
  handle = spawn(argv[1], options, function(code, signal)
    result.code, result.signal = code, signal
    handle:close()
  end)
  stdout:read_start(function(_, data)
    if data then table.insert(out, data) else result.out = table.concat(out); stdout:close() end
  end)
  stdin:close() -- nothing fed, as a plugin that only reads
  _G.spawned[name] = result
end
function _G.plenary_job(name, argv, how)
  local Job = require('plenary.job')
  local result = { name = name }
  local job = Job:new({
    command = argv[1],
    args = vim.list_slice(argv, 2),
    on_exit = function(j, code, signal)
      result.code, result.signal, result.out = code, signal, table.concat(j:result(), '\n')
    end,
  })
  _G.spawned[name] = result
  if how == 'sync' then
    job:sync(30000)
  elseif how == 'wait' then
    job:start()
    job:wait(30000, 10, true) -- the redrawing wait: serves the editor's events
    result.waited = true
  else
    job:start()
  end
end
"""


@pytest.fixture
def tui(sandbox: Sandbox, tmp_path: Path) -> Iterator[tuple[Tui, Editor]]:
    doc = tmp_path / "notes.txt"
    doc.write_text("first line of the notes\nsecond line stays put\n")
    plenary = plugin("nvim-lua/plenary.nvim")
    with sandbox.init.open("a") as init:
        init.write(f"\nvim.opt.rtp:append({str(plenary)!r})\n")
    helpers = tmp_path / "spawners.lua"
    helpers.write_text(SPAWNERS)
    term = Tui(sandbox, [str(doc)], ROWS, COLS)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        term.wait_text("first line of the notes")
        term.type(f":luafile {helpers}\r")
        # Typed keys come after RPC requests already queued: the tests'
        # first look at _G.spawned could come before the file ran.
        wait_until(lambda: ed.lua("return _G.spawned ~= nil"), what="the spawners' file run")
        yield term, ed
    finally:
        nvim.close()
        term.close()


def result(ed: Editor, name: str) -> dict[str, Any]:
    """What the command `name` gave, once it ended and its output is read."""

    def ended() -> dict[str, Any] | None:
        got: dict[str, Any] | None = ed.lua("return _G.spawned[...]", name)
        return got if got and "out" in got and "code" in got else None

    return wait_until(ended, timeout=30, what=f"{name} to end")


def answer(term: Tui, ed: Editor, question: str, keys: str) -> None:
    """Types `keys` the moment the prompt window shows `question`."""
    term.wait_text("│" + question, timeout=30)
    term.type(keys)


def assert_editor_intact(term: Tui, ed: Editor) -> None:
    term.wait_gone("╭", timeout=30)
    assert ed.nvim.current.buffer[:] == ["first line of the notes", "second line stays put"]
    assert ed.nvim.current.buffer.options["modified"] is False


def lua_call(function: str, *args: Any) -> str:
    """A :lua line calling `function` with `args` (strings, lists, booleans)."""

    def literal(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return "{" + ", ".join(literal(v) for v in value) + "}"
        return "[==[" + str(value) + "]==]"

    return f":lua {function}({', '.join(literal(a) for a in args)})\r"


@pytest.mark.parametrize("route", ["raw_spawn", "plenary_job"])
def test_getpass_asks_in_the_window_and_reads_the_keys_typed(tui: tuple[Tui, Editor], route: str) -> None:
    term, ed = tui
    term.type(lua_call(route, "getpass", GETPASS))
    answer(term, ed, "Secret:", "typed-Ω secret\r")
    got = result(ed, "getpass")
    assert (got["code"], got["signal"]) == (0, 0)
    assert got["out"].strip() == "read=[typed-Ω secret]"
    assert_editor_intact(term, ed)
    # The secret reached no message.
    assert "typed-Ω" not in ed.nvim.api.exec2("messages", {"output": True})["output"]


@pytest.mark.parametrize("route", ["raw_spawn", "plenary_job"])
def test_ssh_keygen_asks_for_the_passphrase_and_prints_the_public_key(
    tui: tuple[Tui, Editor], tmp_path: Path, route: str
) -> None:
    term, ed = tui
    key = make_ssh_key(tmp_path / "ssh" / "id_ed25519", "the key's passphrase")
    term.type(lua_call(route, "keygen", ["ssh-keygen", "-y", "-f", str(key)]))
    answer(term, ed, "Enter passphrase", "the key's passphrase\r")
    got = result(ed, "keygen")
    assert got["code"] == 0
    public = Path(f"{key}.pub").read_text().split()[:2]
    assert got["out"].split()[:2] == public
    assert_editor_intact(term, ed)


def test_stock_luv_gives_no_terminal_in_the_same_editor(tui: tuple[Tui, Editor]) -> None:
    term, ed = tui
    term.type(lua_call("raw_spawn", "stock", GETPASS, True))
    got = result(ed, "stock")
    # getpass found no terminal and read the closed stdin: EOFError.
    assert got["code"] == 1 and "read=" not in got["out"]
    assert ed.float_wins() == []


def type_slowly(term: Tui, keys: str) -> None:
    """Keys at a person's pace, one every KEY_INTERVAL."""
    for key in keys:
        term.type(key)
        time.sleep(KEY_INTERVAL)


def test_a_plenary_wait_asks_and_takes_the_answer(tui: tuple[Tui, Editor]) -> None:
    """A plenary job waited for with Job:wait(timeout, interval, true) (the
    redrawing wait: a vim.wait() of plenary's own that serves the editor's
    events), where the editor reads no key: the keys typed at a person's
    pace reach the window all the same (offer/held.lua), and the job gets
    what getpass printed."""
    term, ed = tui
    term.type(lua_call("plenary_job", "waited", GETPASS, "wait"))
    term.wait_text("│Secret:", timeout=30)
    type_slowly(term, "held secret\r")
    got = result(ed, "waited")
    assert (got["code"], got["signal"]) == (0, 0), got
    assert got["out"].strip() == "read=[held secret]"
    assert ed.lua("return _G.spawned.waited.waited") is True
    assert ed.lua("return require('ttyoffer').status().notices") == []
    assert_editor_intact(term, ed)
    assert "held secret" not in ed.nvim.api.exec2("messages", {"output": True})["output"]


def test_a_plenary_sync_is_hung_up_and_told(tui: tuple[Tui, Editor]) -> None:
    """Job:sync() waits in vim.wait(..., true) (plenary's job.lua: fast
    events only unless told to redraw): nothing of the editor's runs inside
    it, no key can reach a window. Hung up within seconds, and the user told
    how to run it."""
    term, ed = tui
    term.type(lua_call("plenary_job", "sync", GETPASS, "sync"))
    got = result(ed, "sync")
    notices = ed.lua("return require('ttyoffer').status().notices")
    # Hung up: getpass ends by the SIGHUP (its window, which no key could
    # reach, would have held the editor for the whole 30 s), and the leader
    # with 129, a failure to a caller that reads the code only.
    assert (got["code"], got["signal"], got["out"]) == (129, 0, ""), (got, notices)
    assert any("hung up: run :Bang 'python3' '-c'" in n for n in notices), notices
    assert_editor_intact(term, ed)


# A plugin waiting for its command in a vim.wait() that serves fast events
# only: nothing of the editor's runs inside it, no key can reach a window.
FAST_ONLY_WAIT = r"""
function _G.fast_only_wait(name, argv)
  _G.raw_spawn(name, argv)
  local got = _G.spawned[name]
  vim.wait(60000, function() return got.out ~= nil and got.code ~= nil end, 10, true)
  _G.spawned[name].waited = true
end
"""


def test_a_wait_serving_fast_events_only_is_hung_up_and_told(tui: tuple[Tui, Editor], tmp_path: Path) -> None:
    """The one wait that cannot be served: the command is hung up within
    seconds (it dies of the hang-up, and the leader ends with 129: a
    failure) and the user told how to run it, once the wait is over; no
    window is left."""
    term, ed = tui
    helper = tmp_path / "fast_only.lua"
    helper.write_text(FAST_ONLY_WAIT)
    term.type(f":luafile {helper}\r")
    term.type(lua_call("fast_only_wait", "fast", GETPASS))
    got = result(ed, "fast")
    assert (got["code"], got["signal"], got["out"]) == (129, 0, ""), got
    notices = wait_until(
        lambda: ed.lua("return require('ttyoffer').status().notices"), timeout=30, what="the notice"
    )
    assert any("hung up: run :Bang 'python3' '-c'" in n for n in notices), notices
    assert_editor_intact(term, ed)
