"""Lua's vim.fn.system() and vim.fn.systemlist() through the wrapper against
Neovim's own, in the same run, on 0.12-dev and 0.11.4, under the default
leader and the /bin/sh prologue: the same output (NULs, newlines, stderr
with stdout, what a background process writes), the same v:shell_error
(exit codes, signals, a program that cannot start), the same errors, the
string and list forms, {input} and {keepempty}, and the 'shell' options.
A call without {input} gets its offer, and its wait serves what stock's
serves until the command asks; then the window opens and takes the keys."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from typing import Any

import pynvim
import pytest
from test_nvim_leader_faults import SPAWN_MOCK

from harness import (
    MAIN_LEADERS,
    Editor,
    Leader,
    Sandbox,
    editor,
    nvim_011_binary,
    nvim_binary,
    on_leaders,
    wait_until,
)

# It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
pytestmark = [pytest.mark.nvim, pytest.mark.versions, on_leaders(*MAIN_LEADERS)]


@pytest.fixture(params=["0.12", "0.11"])
def ed(
    request: pytest.FixtureRequest, sandbox: Sandbox, leader: Leader, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Editor]:
    """The editor with the plugin and its host, on each supported Neovim,
    with the test's leader."""
    binary = nvim_011_binary() if request.param == "0.11" else nvim_binary()
    monkeypatch.setenv("TTYOFFER_NVIM", binary)
    sandbox.env["TTYOFFER_NVIM"] = binary  # what the harness starts
    with editor(sandbox) as e:
        assert e.lua("return vim.version().minor") == (11 if request.param == "0.11" else 12)
        leader.check(e)
        e.wait_host()
        yield e


# One call through stock (the originals) or the wrappers: {ok, result,
# v:shell_error, whether it went without an offer}. v:shell_error is set to
# 42 first, so that a call that leaves it alone shows. `options` are set
# around the call and put back after.
CALL = r"""
local which, name, args, n, options = ...
local o = require('ttyoffer.shared.originals')
local T = require('ttyoffer')
local fn = which == 'stock' and (name == 'system' and o.fn_system or o.systemlist)
  or (name == 'system' and T.fn_system or T.systemlist)
local saved = {}
for option, value in pairs(options) do
  saved[option] = vim.o[option]
  vim.o[option] = value
end
o.fn_system({ '/bin/sh', '-c', 'exit 42' })
local function skips()
  local n = 0
  for _, count in pairs(require('ttyoffer').status().skipped) do n = n + count end
  return n
end
local before = skips()
local ok, result = pcall(fn, unpack(args, 1, n))
local shell_error = vim.v.shell_error
for option, value in pairs(saved) do
  vim.o[option] = value
end
return { ok, ok and result or (tostring(result):gsub('^.-(E%d+)', '%1')), shell_error, skips() ~= before, n }
"""

BACKGROUND = "sleep 0.3 & echo started; printf later"

# (name, args): a string is a command through 'shell', a list an argv.
CASES: list[tuple[str, list[Any]]] = [
    ("system", ["echo hello"]),
    ("system", ["printf 'a\\0b\\n\\n'"]),
    ("system", ["printf ''"]),
    ("system", ["echo out; echo err >&2; exit 3"]),
    ("system", ["kill -9 $$"]),
    ("system", ["kill -TERM $$; sleep 5"]),
    ("system", ["cat; test -t 0 || echo 'stdin is no terminal'"]),
    ("system", [BACKGROUND]),
    ("system", [["printf", "%s\\0%s\\n", "a", "b"]]),
    ("system", [["sh", "-c", "exit 7"]]),
    ("system", [["true"]]),
    ("system", [["no-such-program-here"]]),
    ("system", [[]]),
    ("system", [""]),
    ("system", ["cat", "fed\n"]),
    ("system", ["cat", ["a", "b\nc"]]),
    ("system", ["cat", ""]),
    ("systemlist", ["printf 'a\\0b\\n\\n'"]),
    ("systemlist", ["printf '\\n'"]),
    ("systemlist", ["printf ''"]),
    ("systemlist", ["printf 'one\\ntwo'"]),
    ("systemlist", ["echo out; echo err >&2; exit 3"]),
    ("systemlist", [BACKGROUND]),
    ("systemlist", [["printf", "x\\ny\\n"]]),
    ("systemlist", [["no-such-program-here"]]),
    ("systemlist", ["printf 'a\\n\\n'", "", 1]),
    ("systemlist", ["cat", "x\ny\n", 1]),
    ("systemlist", ["cat", ["x", "y"]]),
]


def case_id(case: tuple[str, list[Any]]) -> str:
    return f"{case[0]}({', '.join(repr(a) for a in case[1])})"[:60]


def fed(args: list[Any]) -> bool:
    return len(args) > 1


def call(
    ed: Editor, which: str, name: str, args: list[Any], options: dict[str, Any] | None = None
) -> list[Any]:
    result: list[Any] = ed.lua(CALL, which, name, args, len(args), options or {})
    return result


def test_system_and_systemlist_give_what_stock_gives(ed: Editor) -> None:
    differences = []
    offered = []
    for name, args in CASES:
        stock = call(ed, "stock", name, args)
        ours = call(ed, "ours", name, args)
        assert stock[4] == ours[4] == len(args)
        if stock[:3] != ours[:3]:
            differences.append((case_id((name, args)), stock[:3], ours[:3]))
        startable = stock[2] != -1 and args[0] not in ("", [])
        if not fed(args) and startable:
            offered.append((case_id((name, args)), not ours[3]))
    assert differences == []
    # Every startable call without {input} got its offer.
    assert [case for case, got in offered if not got] == []
    # The background sleep's output was waited for, as stock waits.
    assert call(ed, "ours", "system", [BACKGROUND])[1] == "started\nlater"
    assert ed.events("TtyOfferPresent") == []


def test_a_spawn_mock_installed_later_changes_nothing(ed: Editor) -> None:
    """Stock system() uses no Lua: a test framework's later mock of
    vim.uv.spawn and new_pipe (mini.test's) changes nothing for it, nor for
    the wrapper, which starts the command with luv's own, found at load."""
    ed.lua(SPAWN_MOCK)
    cases: list[tuple[str, list[Any]]] = [
        ("system", ["echo out; echo err >&2; exit 3"]),
        ("systemlist", [["printf", "x\\ny\\n"]]),
    ]
    for name, args in cases:
        stock, ours = call(ed, "stock", name, args), call(ed, "ours", name, args)
        assert ours[:3] == stock[:3] and stock[0] is True, (name, stock, ours)
    assert ed.lua("return _G.mocked_spawns") == []


SHELLS: list[dict[str, Any]] = [
    {"shell": "sh"},
    {"shell": "/bin/sh -e", "shellcmdflag": "-c"},
    {"shell": '"/bin/sh"'},
    {"shellxquote": "(", "shellxescape": '"&|<>()@^'},
    {"shellxquote": '"'},
    {"shellquote": "'", "shellredir": ">%s 2>&1", "shelltemp": False, "shellpipe": "| tee"},
    {"shellcmdflag": "-ec"},
    {"shell": "/no/such/shell"},
    {"shell": "bash", "shellcmdflag": "-O extglob -c"},
]


@pytest.mark.parametrize("options", SHELLS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_the_shell_options_make_the_same_command(ed: Editor, options: dict[str, Any]) -> None:
    if options.get("shell") == "bash" and not shutil.which("bash"):
        pytest.skip("no bash here")
    for name, args in [("system", ['echo $0 "a b"; (exit 3)']), ("systemlist", ["printf 'x\\ny'; false"])]:
        stock = call(ed, "stock", name, args, options)
        ours = call(ed, "ours", name, args, options)
        assert ours[:3] == stock[:3], (name, options)


# Whether a callback due during the call ran before it returned: a
# timer_start() timer's, a vim.schedule()d one, a deferred one; a luv timer's
# own (fast) callback runs in stock's wait too.
DURING = r"""
local which, cmd = ...
local o = require('ttyoffer.shared.originals')
local fn = which == 'stock' and o.fn_system or require('ttyoffer').fn_system
local ran = {}
vim.schedule(function() ran[#ran + 1] = 'scheduled' end)
vim.defer_fn(function() ran[#ran + 1] = 'deferred' end, 20)
vim.fn.timer_start(20, function() ran[#ran + 1] = 'timer_start' end)
local luv = vim.uv.new_timer()
luv:start(20, 0, function() ran[#ran + 1] = 'luv' luv:close() end)
local out = fn(cmd)
local during = vim.deepcopy(ran)
return { during, out, vim.v.shell_error }
"""


def test_a_command_that_never_asks_is_served_what_stock_serves(ed: Editor) -> None:
    ed.lua("require('ttyoffer').fn_system({'true'})")  # the host's knock connected
    cmd = ["sh", "-c", "sleep 0.4; echo done"]
    stock = ed.lua(DURING, "stock", cmd)
    ours = ed.lua(DURING, "ours", cmd)
    assert stock == [["luv"], "done\n", 0]
    assert ours == stock
    assert ed.events("TtyOfferPresent") == []


@pytest.mark.parametrize("name", ["system", "systemlist"])
def test_a_command_that_asks_is_answered(ed: Editor, name: str) -> None:
    ed.lua(
        """
        local name = ...
        vim.keymap.set('n', '<F7>', function()
          local ask = "printf 'Word: ' >/dev/tty; read w </dev/tty; echo got $w; echo line2; exit 5"
          _G.result = { vim.fn[name](ask), vim.v.shell_error }
        end)
        """,
        name,
    )
    ed.nvim.input("<F7>")
    win = wait_until(lambda: ed.float_wins(), what="the prompt window")[0]
    wait_until(lambda: "Word:" in ed.buf_text(win), what="the question")
    ed.nvim.input("yes<CR>")
    result = wait_until(lambda: ed.lua("return _G.result"), what="the call's result")
    expected = "got yes\nline2\n" if name == "system" else ["got yes", "line2"]
    assert result == [expected, 5]
    assert ed.events("TtyOfferUnserved") == []


INTERRUPTED = r"""
local which, cmd = ...
local o = require('ttyoffer.shared.originals')
local fn = which == 'stock' and o.fn_system or require('ttyoffer').fn_system
o.fn_system({ '/bin/sh', '-c', 'exit 42' })
local started = vim.uv.hrtime()
local ok, out = pcall(fn, cmd)
return { ok, ok and out or (tostring(out):gsub('^.-(E%d+)', '%1')), vim.v.shell_error,
         (vim.uv.hrtime() - started) / 1e9 }
"""


def test_ctrl_c_stops_the_command_as_in_stock(ed: Editor) -> None:
    address = ed.lua("return vim.v.servername")
    cmd = "echo before; sleep 20; echo after"

    def interrupt() -> None:
        time.sleep(1.0)  # the call is well under way
        other = pynvim.attach("socket", path=address)
        try:
            other.input("<C-c>")
        finally:
            other.close()

    results = {}
    for which in ("stock", "ours"):
        thread = threading.Thread(target=interrupt)
        thread.start()
        results[which] = ed.lua(INTERRUPTED, which, cmd)
        thread.join(10)
    stock, ours = results["stock"], results["ours"]
    assert stock[3] < 15 and ours[3] < 15, results
    # The output before the interrupt, as stock; v:shell_error -1 where
    # stock's is -2 (documented: only stock's own wait can set -2).
    assert ours[:2] == stock[:2] == [True, "before\n"], results
    assert (stock[2], ours[2]) == (-2, -1), results
