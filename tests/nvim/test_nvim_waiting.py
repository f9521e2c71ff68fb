"""vim.system():wait() through the wrapper serves what stock's serves (fast
events only) while its command does not ask; only while a prompt is up does
it serve scheduled callbacks, timers and other clients' requests, the price
of answering the prompt from inside the wait. Stock and wrapped compared in
one run."""

from __future__ import annotations

import threading
import time
from typing import Any

import pynvim
import pytest

from harness import Editor, wait_until

pytestmark = pytest.mark.nvim

# What ran during the wait: a callback scheduled before it, a timer's and a
# deferred one due during it.
WAIT_WHILE_QUEUED = """
local system, cmd = ...
_G.ran = {}
vim.schedule(function() table.insert(_G.ran, 'scheduled') end)
vim.defer_fn(function() table.insert(_G.ran, 'deferred') end, 20)
local timer = vim.uv.new_timer()
timer:start(20, 0, vim.schedule_wrap(function() table.insert(_G.ran, 'timer') timer:close() end))
local started = vim.uv.hrtime()
local spawn = system == 'stock' and require('ttyoffer.shared.originals').system or vim.system
local result = spawn(cmd, { text = true }):wait()
_G.wait_ended = vim.uv.hrtime()
return { ran = vim.deepcopy(_G.ran), stdout = result.stdout, code = result.code,
         ms = (_G.wait_ended - started) / 1e6 }
"""


def answered_during(ed: Editor, system: str, cmd: list[str]) -> tuple[dict[str, Any], bool]:
    """The wait's result, and whether another client's request made while it
    waited was answered before it ended."""
    address = ed.lua("return vim.v.servername")
    answered_at: list[int] = []

    def other_client() -> None:
        time.sleep(0.2)  # the wait is well under way
        other = pynvim.attach("socket", path=address)
        try:
            answered_at.append(other.exec_lua("return vim.uv.hrtime()"))
        finally:
            other.close()

    thread = threading.Thread(target=other_client)
    thread.start()
    result: dict[str, Any] = ed.lua(WAIT_WHILE_QUEUED, system, cmd)
    thread.join(10)
    wait_ended = ed.lua("return _G.wait_ended")
    return result, answered_at[0] < wait_ended


def test_a_wait_whose_command_never_asks_serves_what_stock_serves(ed: Editor) -> None:
    ed.wait_host()
    cmd = ["sh", "-c", "sleep 0.6; echo done"]
    # The host is connected to the knock socket once a wrapped command is made.
    ed.lua("vim.system({'true'}):wait()")
    wait_until(lambda: ed.lua("return require('ttyoffer.host.knock').connected()"), what="the host's knock")
    for _ in range(2):  # the first wrapped call and a later one alike
        stock, stock_answered = answered_during(ed, "stock", cmd)
        wrapped, wrapped_answered = answered_during(ed, "wrapped", cmd)
        assert stock["ran"] == [] and not stock_answered, stock
        assert wrapped["ran"] == stock["ran"] and wrapped_answered == stock_answered, wrapped
        assert (wrapped["stdout"], wrapped["code"]) == (stock["stdout"], stock["code"]) == ("done\n", 0)
        assert ed.lua("return #_G.ran") == 3  # all of it, once the wait was over
    assert ed.events("TtyOfferPresent") == []


@pytest.mark.parametrize("first", [True, False], ids=["the editor's first wait", "a later wait"])
def test_a_wait_serves_while_its_command_asks(ed: Editor, first: bool) -> None:
    ed.wait_host()
    if not first:
        ed.lua("vim.system({'true'}):wait()")
        knocked = "return require('ttyoffer.host.knock').connected()"
        wait_until(lambda: ed.lua(knocked), what="the host's knock")
    # The first: it asks at once, maybe before the host has the knock socket.
    delay = "" if first else "sleep 0.3; "
    ed.lua(
        """
        local delay = ...
        vim.keymap.set('n', '<F7>', function()
          _G.ran = {}
          vim.schedule(function() table.insert(_G.ran, 'scheduled') end)
          local ask = delay .. "printf 'Word: ' >/dev/tty; read w </dev/tty; echo got $w"
          _G.result = vim.system({ 'sh', '-c', ask }, { text = true }):wait()
          _G.ran_during = vim.deepcopy(_G.ran)
        end)
        """,
        delay,
    )
    ed.nvim.input("<F7>")
    win = wait_until(lambda: ed.float_wins(), what="the prompt window")[0]
    wait_until(lambda: "Word:" in ed.buf_text(win), what="the question")
    ed.nvim.input("yes<CR>")
    result = wait_until(lambda: ed.lua("return _G.result"), what="the wait's result")
    assert (result["code"], result["stdout"]) == (0, "got yes\n")
    # The price of the prompt: the editor's events were served meanwhile.
    assert ed.lua("return _G.ran_during") == ["scheduled"]
    assert ed.events("TtyOfferUnserved") == []
