"""A command the plugin hangs up ends as a failure, stock and wrapped in the
same run, on 0.12-dev and 0.11.4, under each leader build and the /bin/sh
prologue, through vim.uv.spawn, vim.system() and jobstart().

Declined, a command that asks dies of the hang-up's SIGHUP, where stock's
(no terminal at all) fails with a code of its own. The compiled leader then
exits with 129 (128 + SIGHUP): the exit callback gets code 129, signal 0, a
failure however it is read (before, luv gave code 0 and signal 1, which
mini.deps took for a success). A SIGHUP sent from outside, to the command
or to the pid its caller holds, still ends it exactly as stock's."""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Iterator

import pytest

from harness import VERSIONS, Editor, Leader, Sandbox, editor_on, on_leaders, programs_with, wait_until

# It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
pytestmark = [pytest.mark.nvim, pytest.mark.versions, on_leaders()]

ROUTES = ["uv.spawn", "vim.system", "jobstart"]
# Those whose callers read a code only, 128 + N for a signal, in stock too:
# 129 there before as now.
CODE_ROUTES = ["system()", ":Bang"]

# Like gpg or ssh, it fails when it finds no terminal (stock: exit 9).
ASK = "printf 'Secret please: ' > /dev/tty; read answer < /dev/tty || exit 9; echo \"got $answer\""


@pytest.fixture(params=VERSIONS)
def ed(
    request: pytest.FixtureRequest, sandbox: Sandbox, leader: Leader, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Editor]:
    """The editor with the plugin and its host, on each supported Neovim,
    with the test's leader."""
    with editor_on(request.param, sandbox, leader, monkeypatch) as e:
        yield e


# Starts `sh -c script` through `route`, stock's own function or the one the
# editor has now (wrapped); its end, as the exit callback got it, goes to
# _G.ended[key]: {code, signal} (jobstart()'s on_exit has no signal: 0).
START = r"""
local key, route, which, script = ...
local o = require('ttyoffer.shared.originals')
_G.ended = _G.ended or {}
local function ended(code, sig)
  _G.ended[key] = { code = code, signal = sig }
end
if route == 'uv.spawn' then
  local spawn = which == 'stock' and o.uv_spawn or vim.uv.spawn
  local handle, pid = spawn('sh', { args = { '-c', script } }, function(code, sig)
    ended(code, sig)
  end)
  assert(handle, pid)
  return pid
elseif route == 'vim.system' then
  local system = which == 'stock' and o.system or vim.system
  return system({ 'sh', '-c', script }, {}, function(done)
    ended(done.code, done.signal)
  end).pid
elseif route == 'system()' then
  -- Lua's, from a timer: the request returns, and the editor waits in it.
  local fn_system = which == 'stock' and o.fn_system or vim.fn.system
  vim.defer_fn(function()
    fn_system({ 'sh', '-c', script })
    ended(vim.v.shell_error, 0)
  end, 0)
  return 0
elseif route == ':Bang' then
  vim.api.nvim_create_autocmd('User', { pattern = 'TtyOfferBangDone', once = true, callback = function(ev)
    ended(ev.data.code, 0)
  end })
  vim.cmd.Bang(script)
  return 0
else
  local jobstart = which == 'stock' and o.jobstart or vim.fn.jobstart
  local job = jobstart({ 'sh', '-c', script }, { on_exit = function(_, code)
    ended(code, 0)
  end })
  return vim.fn.jobpid(job)
end
"""


def start(ed: Editor, key: str, route: str, which: str, script: str) -> int:
    """The command started; the pid its caller holds."""
    pid: int = ed.lua(START, key, route, which, script)
    return pid


def ending(ed: Editor, key: str) -> tuple[int, int]:
    found = wait_until(lambda: ed.lua("return (_G.ended or {})[...]", key), 30, f"{key} to end")
    return found["code"], found["signal"]


def offered(route: str, leader: Leader) -> bool:
    """Whether the route gives its command a terminal here: behind the
    /bin/sh prologue, vim.uv.spawn stays stock (:help ttyoffer-uv-spawn)."""
    return leader.compiled or route != "uv.spawn"


def decline(ed: Editor, route: str) -> tuple[int, int]:
    """A command that asks, started through the wrapped `route`, declined
    in its window (:TtyOffer dismiss); its end."""
    start(ed, "declined", route, "ours", ASK)
    ed.wait_event("TtyOfferPresent")
    wait_until(lambda: ed.float_wins(), what="the window")
    if route != "system()":  # in its wait, the mode is not the window's to ask for
        wait_until(lambda: ed.mode() == "t", what="terminal mode in the window")
    ed.nvim.command("TtyOffer dismiss")
    assert ed.wait_event("TtyOfferClose")[0]["data"]["reason"] == "dismissed"
    return ending(ed, "declined")


@pytest.mark.parametrize("route", ROUTES + CODE_ROUTES)
def test_a_declined_command_ends_as_a_failure(ed: Editor, leader: Leader, route: str) -> None:
    # Stock's finds no terminal and fails with a code of its own (:Bang has
    # no stock: it is :! with the offer, run as a jobstart()).
    start(ed, "stock", "jobstart" if route == ":Bang" else route, "stock", ASK)
    assert ending(ed, "stock") == (9, 0)
    if not offered(route, leader):
        pytest.skip("behind the /bin/sh prologue vim.uv.spawn is stock: no window to decline")
    got = decline(ed, route)
    if leader.compiled or route != "vim.system":
        # jobstart(), system() and :! give a command killed by SIGHUP 129
        # too (128 + N).
        assert got == (128 + signal.SIGHUP, 0)
    else:
        # Behind the prologue the shell cannot tell our hang-up from a
        # SIGHUP sent from outside: it ends by it (:help ttyoffer-contract).
        assert got == (0, signal.SIGHUP)


def nothing_runs(argument: str) -> bool:
    return not programs_with(argument)


@pytest.mark.parametrize("to", ["command", "pid"])
def test_a_sighup_from_outside_ends_it_as_stock(ed: Editor, to: str) -> None:
    """`kill -HUP` sent to the command itself, or to the pid its caller
    holds (the leader's, when wrapped): each route's exit callback gets what
    stock's gets."""
    results = {}
    for n, route in enumerate(ROUTES):
        for which in ("stock", "ours"):
            key = f"{route} {which}"
            sleep = f"311.8{n}{int(which == 'ours')}"
            pid = start(ed, key, route, which, f"exec sleep {sleep}")
            command = wait_until(functools.partial(programs_with, sleep), 10, f"{key}'s sleep")[0]
            os.kill(command if to == "command" else pid, signal.SIGHUP)
            results[key] = ending(ed, key)
            # Behind the prologue the shell ends first, the command by the
            # terminal's SIGHUP at that end: a moment later.
            wait_until(functools.partial(nothing_runs, sleep), 10, f"{key}'s sleep to end")
    for route in ROUTES:
        assert results[f"{route} ours"] == results[f"{route} stock"], route
    assert results["uv.spawn stock"] == (0, signal.SIGHUP)
    assert results["jobstart stock"] == (128 + signal.SIGHUP, 0)
