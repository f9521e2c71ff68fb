"""Prompts held in a plugin's own vim.wait() (offer/held.lua): which wait
holds the editor is read from the Lua stack, where a callback runs; a wait
that serves scheduled callbacks passes the keys typed to the prompt, one
that serves fast events only cannot, and the prompt up when it began is
hung up with the :Bang hint once it has held the editor WAIT_LIMIT_MS."""

from __future__ import annotations

import hashlib
import time

import pytest

from harness import Editor, wait_until
from test_nvim_offer import ASK, exit_code, prompt_and_wait_for_float

pytestmark = pytest.mark.nvim

# What waiting.plugins_wait() says from a luv timer's callback and from a
# scheduled one, inside each kind of wait, and outside any.
KINDS = """
local waiting = require('ttyoffer.offer.waiting')
local seen = {}
local function from_callbacks(name)
  local timer = vim.uv.new_timer()
  timer:start(10, 0, function()
    seen[name .. ' timer'] = waiting.plugins_wait() or 'none'
    timer:close()
  end)
  vim.schedule(function() seen[name .. ' scheduled'] = waiting.plugins_wait() or 'none' end)
end
from_callbacks('default')
vim.wait(200, function() return false end)
from_callbacks('interval')
vim.wait(200, function() return false end, 5)
from_callbacks('explicit false')
vim.wait(200, function() return false end, 5, false)
from_callbacks('fast only')
vim.wait(200, function() return false end, 5, true)
from_callbacks('ours')
waiting.until_done(function() return false end, 200)
seen.outside = waiting.plugins_wait() or 'none'
return seen
"""


def test_the_wait_holding_the_editor_is_read_from_the_stack(ed: Editor) -> None:
    seen = ed.lua(KINDS)
    assert {name: kind for name, kind in seen.items() if "timer" in name} == {
        "default timer": "served",
        "interval timer": "served",
        "explicit false timer": "served",
        "fast only timer": "fast",
        "ours timer": "none",
    }
    # A scheduled callback runs in a wait that serves it; not in one that
    # serves fast events only (it ran after the whole, unseen here).
    assert seen["default scheduled"] == "served" and seen["outside"] == "none"
    assert "fast only scheduled" not in seen


# A plugin's wait serving fast events only, begun while a prompt is up: it
# ends when the command's process is gone (a job's on_exit does not run
# inside it: only what luv itself sees does).
FAST_ONLY_WAIT = """
local job = ...
local pid = vim.fn.jobpid(job)
vim.defer_fn(function()
  local started = vim.uv.hrtime()
  vim.wait(20000, function() return vim.uv.kill(pid, 0) ~= 0 end, 10, true)
  _G.fast_wait_ms = (vim.uv.hrtime() - started) / 1e6
end, 10)
"""


def test_a_prompt_up_when_a_fast_only_wait_begins_is_hung_up_and_told(ed: Editor) -> None:
    job, _ = prompt_and_wait_for_float(ed, ASK)
    started = time.monotonic()
    ed.lua(FAST_ONLY_WAIT, job)
    assert exit_code(ed, job, timeout=30) != 0
    held_ms = ed.lua("return _G.fast_wait_ms")
    limit = ed.lua("return require('ttyoffer.offer.held').WAIT_LIMIT_MS")
    # Hung up by the watch (not the plugin's 20 s, nor the host's 30 s for a
    # drawn prompt), once the wait had held it the limit.
    assert limit <= held_ms < 15000, held_ms
    assert time.monotonic() - started < 20
    told = wait_until(lambda: ed.lua("return require('ttyoffer').status().notices"), what="the notice")
    assert any("editor busy, hung up: run :Bang 'sh' '-c'" in n for n in told), told
    wait_until(lambda: not ed.float_wins(), timeout=30, what="the window to go")


PASSPHRASE = "held-Zq7-\u00e9\u00df-passphrase"
# The child never prints what it read: only its digest, to prove it arrived.
CHECK = (
    "stty -echo < /dev/tty; printf 'Passphrase: ' > /dev/tty; IFS= read -r p < /dev/tty; "
    'stty echo < /dev/tty; printf %s "$p" | sha256sum'
)

# A plugin's command, waited for in a vim.wait() of the plugin's own (the
# default form: it serves scheduled callbacks), as mini.deps does.
PLUGIN_WAIT = r"""
function _G.plugin_waits(cmd)
  _G.digest, _G.code = {}, nil
  require('ttyoffer').jobstart({ 'sh', '-c', cmd }, {
    on_stdout = function(_, d) vim.list_extend(_G.digest, d) end,
    on_exit = function(_, code) _G.code = code end,
  })
  _G.waited = vim.wait(30000, function() return _G.code ~= nil end, 1)
end
"""


def test_keys_typed_inside_a_plugins_wait_reach_the_prompt_only(ed: Editor) -> None:
    """The passphrase typed (nvim_input: keys in the editor's input, as the
    TUI puts them) while the plugin's wait holds the editor reaches the
    command, and nothing else: not the document, a register, a history, the
    messages."""
    ed.nvim.command("enew")
    ed.nvim.current.buffer[:] = ["the document"]
    ed.lua(PLUGIN_WAIT)
    ed.nvim.vars["check"] = CHECK
    ed.nvim.input(":lua plugin_waits(vim.g.check)<CR>")
    win = wait_until(lambda: ed.float_wins(), timeout=30, what="the prompt window")[0]
    wait_until(lambda: "Passphrase:" in ed.buf_text(win), timeout=30, what="the prompt")
    ed.nvim.input(PASSPHRASE.replace("<", "<lt>") + "<CR>")
    wait_until(lambda: ed.lua("return _G.waited"), timeout=30, what="the plugin's wait to end")
    assert ed.lua("return _G.code") == 0
    digest = hashlib.sha256(PASSPHRASE.encode()).hexdigest()
    assert any(digest in line for line in ed.lua("return _G.digest"))
    wait_until(lambda: not ed.float_wins(), timeout=30, what="the window to go")
    assert ed.nvim.current.buffer[:] == ["the document"]
    registers = ed.lua(
        "local out = {} for _, r in ipairs(vim.split(..., '')) do "
        "local ok, v = pcall(vim.fn.getreg, r) if ok then table.insert(out, v) end end return out",
        '"0123456789abcdefghijklmnopqrstuvwxyz-.:/#=',
    )
    assert not any(PASSPHRASE in r for r in registers)
    assert PASSPHRASE not in ed.nvim.command_output("messages")
    assert PASSPHRASE not in ed.nvim.command_output("history all")
    assert ed.lua("return require('ttyoffer').status().notices") == []
