"""Prompts held in a plugin's own vim.wait() (offer/held.lua): which wait
holds the editor is read from the Lua stack, where a callback runs; a wait
that serves scheduled callbacks passes the keys typed to the prompt, one
that serves fast events only cannot, and the prompt up when it began is
hung up with the :Bang hint once it has held the editor WAIT_LIMIT_MS."""

from __future__ import annotations

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
