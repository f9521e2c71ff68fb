"""Hardening of the core before it sits on every spawn: a stalled host, a
host dying under spawns, options checked the way Neovim will use them."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

import pytest

from harness import Editor, wait_until
from test_nvim_offer import exit_code, prompt_and_wait_for_float

pytestmark = pytest.mark.nvim

# Defines spawn_numbered(n, script): `script` run through the offer with its
# number as $1, its lines (stderr marked ERR) and exit code recorded.
SPAWN_NUMBERED = """
_G.burst_out, _G.exit_codes = {}, {}
local function collect(prefix)
  return function(_, data)
    for _, line in ipairs(data) do
      if line ~= '' then table.insert(_G.burst_out, prefix .. line) end
    end
  end
end
function _G.spawn_numbered(n, script)
  return require('ttyoffer').jobstart({'sh', '-c', script, 'sh', tostring(n)}, {
    on_stdout = collect(''),
    on_stderr = collect('ERR '),
    on_exit = function(id, code) _G.exit_codes[id] = code end,
  })
end
"""

# `count` spawns in one go (no yield to the event loop in between, as a
# plugin's loop would): how long the spawning took, and the job ids.
SPAWN_BURST = """
local count, script = ...
local jobs, start = {}, vim.uv.hrtime()
for i = 1, count do
  jobs[i] = spawn_numbered(i, script)
end
return {(vim.uv.hrtime() - start) / 1e6, jobs}
"""


def exit_codes(ed: Editor, jobs: list[int]) -> list[int]:
    return [exit_code(ed, job) for job in jobs]


def test_a_stopped_host_never_freezes_spawns(ed: Editor) -> None:
    host_pid = ed.lua("return require('ttyoffer.host').get_pid()")
    os.kill(host_pid, signal.SIGSTOP)
    try:
        # Far more than the stock of spare ptys: a spawn past it that waited
        # on the stopped host would wait forever (it did: 20 jobstart()
        # calls had not returned after 10 s).
        ed.lua(SPAWN_NUMBERED)
        _, jobs = ed.lua(SPAWN_BURST, 80, 'echo "ran $1"')
        assert exit_codes(ed, jobs) == [0] * 80
        assert sorted(ed.lua("return _G.burst_out")) == sorted(f"ran {i}" for i in range(1, 81))
        # The stock went to the first ones; the rest ran plainly, and why.
        assert "no pty: " in ed.nvim.command_output("TtyOffer status")
        wait_until(lambda: "not answering" in ed.nvim.command_output("TtyOffer status"), what="the status")
    finally:
        os.kill(host_pid, signal.SIGCONT)
    # Once it answers again, commands get their offer again.
    wait_until(lambda: ed.lua("return require('ttyoffer.host').stock_size()") > 0, what="a refill")
    assert "not answering" not in ed.nvim.command_output("TtyOffer status")
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.input("x<CR>")
    assert exit_codes(ed, [job]) == [0]


def test_a_burst_of_spawns_never_runs_the_editors_other_events(ed: Editor) -> None:
    # Stock jobstart() never runs a scheduled callback (or a prompt window)
    # inside the call; a burst past the spare ptys must not either.
    ed.lua(SPAWN_NUMBERED)
    ran_inside = ed.lua(
        """
        local inside, ran_inside = false, 0
        for i = 1, 80 do
          vim.schedule(function() if inside then ran_inside = ran_inside + 1 end end)
          inside = true
          spawn_numbered(i, 'true')
          inside = false
        end
        return ran_inside
        """
    )
    assert ran_inside == 0


def test_commands_spawned_while_the_host_dies_run_as_without_it(ed: Editor) -> None:
    # The host is killed; its spare terminals vanish before Neovim has heard
    # of the death (it has not yet run the host's on_exit: this chunk does
    # not yield), so spawns still take them. Then on, every 50 ms, across
    # Neovim learning of it. Each command runs, prints, exits with its own
    # status, and no error of the spawn path reaches its output.
    ed.lua(SPAWN_NUMBERED)
    results = ed.lua(
        """
        local host = require('ttyoffer.host')
        local jobs = {}
        local _, spare = host.take()
        vim.uv.kill(host.get_pid(), 'sigkill')
        local deadline = vim.uv.now() + 5000
        while vim.uv.fs_stat(spare) and vim.uv.now() < deadline do
          vim.uv.sleep(5)
          vim.uv.update_time()
        end
        assert(not vim.uv.fs_stat(spare), 'the spare terminals outlived the host')
        for step = 0, 6 do
          for i = 1, 4 do
            local n = step * 4 + i
            jobs[n] = spawn_numbered(n, 'echo "ran $1"; exit 3')
          end
          if step > 0 then vim.wait(50) end
        end
        return jobs
        """
    )
    assert exit_codes(ed, results) == [3] * 28
    out = ed.lua("return _G.burst_out")
    assert sorted(out) == sorted(f"ran {n}" for n in range(1, 29)), out
    wait_until(lambda: ed.lua("return require('ttyoffer.host').ready()"), 20, "the host back")


@pytest.mark.parametrize(
    ("option", "fix"),
    [
        ({"float": {"border": "bogus"}}, 'invalid border style "bogus"'),
        ({"float": {"border": ["ab"]}}, "border chars must be one cell"),
        ({"float": {"width": 2.5}}, "whole number"),
        ({"float": {"close_delay": -1}}, "0 or more"),
        ({"keys": {"dismiss": True}}, 'a key like "<C-q>"'),
        ({"keys": {"dismiss": ""}}, 'a key like "<C-q>"'),
    ],
)
def test_options_neovim_would_refuse_are_refused_at_setup(
    ed: Editor, option: dict[str, Any], fix: str
) -> None:
    before = ed.lua("return require('ttyoffer.config').current")
    ok, err = ed.lua("return {pcall(require('ttyoffer').setup, ...)}", option)
    assert not ok and err.startswith("(ttyoffer) option") and fix in err
    assert ed.lua("return require('ttyoffer.config').current") == before
    # Prompts still open as before: nothing was half-applied.
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.input("x<CR>")
    assert exit_codes(ed, [job]) == [0]


def test_a_border_neovim_takes_is_used(ed: Editor) -> None:
    ed.lua("require('ttyoffer').setup({float = {border = {'+', '-', '+', '|'}}})")
    job, win = prompt_and_wait_for_float(ed)
    assert ed.lua("return vim.api.nvim_win_get_config(...).border", win)[:2] == ["+", "-"]
    ed.nvim.input("x<CR>")
    assert exit_codes(ed, [job]) == [0]


FLOOD_THEN_ASK = """
import os, sys, time
fd = os.open('/dev/tty', os.O_RDWR)
line = b'flood ' * 10 + b'\\r\\n'
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    os.write(fd, line * 100)
os.write(fd, b'\\r\\nAfter the flood: ')
answer = b''
while not answer.endswith(b'\\n') and not answer.endswith(b'\\r'):
    answer += os.read(fd, 100)
print('answered', answer.decode().strip())
"""


def test_a_flood_is_throttled_and_a_prompt_after_it_is_answered(ed: Editor) -> None:
    # The host never holds more than a window of relayed bytes the editor
    # has not taken (before: 26 MB -> 1.4 GB, and a prompt after a 10 s
    # flood showed 33 s late); the child is throttled by its full pty.
    job = ed.lua(
        "_G.flood_out = {} _G.exit_codes = _G.exit_codes or {} "
        "return require('ttyoffer').jobstart(..., {"
        " on_stdout = function(_, d) vim.list_extend(_G.flood_out, d) end,"
        " on_exit = function(id, code) _G.exit_codes[id] = code end})",
        [sys.executable, "-I", "-S", "-c", FLOOD_THEN_ASK, "3"],
    )
    ed.wait_event("TtyOfferPresent")
    most = 0
    win = wait_until(lambda: ed.float_wins(), what="the float")[0]

    def asked() -> bool:
        nonlocal most
        offers = ed.host_status()["offers"]
        most = max([most, *(o["unacked"] for o in offers)])
        return "After the flood:" in ed.buf_text(win)

    wait_until(asked, 60, "the prompt after the flood")
    # A bound a user would care about, not the constant itself: a couple of
    # MB in flight at most, where unthrottled the host held hundreds.
    assert 0 < most <= 2 * 1024 * 1024
    ed.nvim.input("done<CR>")
    assert exit_code(ed, job) == 0
    assert "answered done" in ed.lua("return _G.flood_out")
