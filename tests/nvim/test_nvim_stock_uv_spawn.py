"""vim.uv.spawn with the offer against luv's own, in the same run, on
0.12-dev and 0.11.4: spawn errors, exit codes and signals, `detached`, the
pid, the handle, kill(), stdio (pipes and descriptors), `env`, `cwd`, and
`uid`/`gid` as root. Behind the compiled leader the command gets its
private terminal and nothing else changes; with the /bin/sh prologue (no
leader built) it runs exactly as stock. Vim.system() is not wrapped twice."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import DEFAULT_LEADER, Editor, Leader, Sandbox, editor, nvim_011_binary, nvim_binary, on_leaders

# It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
pytestmark = [pytest.mark.nvim, pytest.mark.versions, on_leaders(DEFAULT_LEADER, "sh")]


@pytest.fixture(params=["0.12", "0.11"])
def ed(
    request: pytest.FixtureRequest, sandbox: Sandbox, leader: Leader, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Editor]:
    """The editor with the plugin and its host, on each supported Neovim,
    with the test's leader."""
    binary = nvim_011_binary() if request.param == "0.11" else nvim_binary()
    monkeypatch.setenv("TTYOFFER_NVIM", binary)
    sandbox.env["TTYOFFER_NVIM"] = binary
    with editor(sandbox) as e:
        assert e.lua("return vim.version().minor") == (11 if request.param == "0.11" else 12)
        leader.check(e)
        yield e


# Runs `scenario` with luv's own spawn ('stock') or the editor's vim.uv.spawn
# ('ours'); returns what the caller could see, and how many commands went
# without an offer meanwhile.
RUN = r"""
local which, scenario, arg = ...
local uv = vim.uv
local o = require('ttyoffer.shared.originals')
local spawn = which == 'stock' and o.uv_spawn or function(...) return vim.uv.spawn(...) end
local function skips()
  local n = 0
  for _, count in pairs(require('ttyoffer').status().skipped) do n = n + count end
  return n
end
local skipped_before = skips()

-- Spawns and collects stdout, stderr and the exit, as plenary.job does.
local function run(path, options, feed)
  local stdin, stdout, stderr = uv.new_pipe(), uv.new_pipe(), uv.new_pipe()
  options.stdio = options.stdio or { stdin, stdout, stderr }
  local r = { out = '', err = '' }
  local handle, pid, name = spawn(path, options, function(code, signal)
    r.code, r.signal = code, signal
  end)
  if not handle then
    for _, p in ipairs({ stdin, stdout, stderr }) do p:close() end
    return { failed = { tostring(pid), tostring(name) } }
  end
  r.pid_matches = handle:get_pid() == pid
  r.active = handle:is_active()
  stdout:read_start(function(_, data) if data then r.out = r.out .. data else r.out_done = true end end)
  stderr:read_start(function(_, data) if data then r.err = r.err .. data else r.err_done = true end end)
  if feed then stdin:write(feed) end
  stdin:shutdown(function() stdin:close() end)
  r.handle, r.pid = handle, pid
  return r
end

local function finish(r)
  if r.failed then return r end
  vim.wait(20000, function() return r.code ~= nil and r.out_done and r.err_done end, 10)
  r.active_after = r.handle:is_active()
  local closed = false
  r.handle:close(function() closed = true end)
  vim.wait(5000, function() return closed end, 10)
  r.closed = closed
  r.handle = nil
  r.pid = nil
  return r
end

local result
if scenario == 'missing' then
  result = run('no-such-program-here', {})
elseif scenario == 'not executable' then
  result = run(arg, {})
elseif scenario == 'bad cwd' then
  result = run('true', { cwd = '/no/such/folder' })
elseif scenario == 'bad args' then
  result = { pcall(spawn, 'true', { args = 'not a list' }) }
  result[2] = tostring(result[2]):gsub('^.-: ', '')
elseif scenario == 'exit' then
  result = finish(run('sh', { args = { '-c', 'echo out; echo err >&2; exit 3' } }))
elseif scenario == 'signal' then
  result = finish(run('sh', { args = { '-c', 'kill -TERM $$' } }))
elseif scenario == 'terminal' then
  result = finish(run('sh', { args = { '-c', 'exec 3</dev/tty && echo controlling' } }))
elseif scenario == 'detached' then
  -- A session of its own: its sid is its pid.
  result = finish(run('sh', {
    args = { '-c', 'set -- $(cat /proc/$$/stat); [ "$6" = $$ ] && echo leader || echo member; '
      .. 'exec 3</dev/tty && echo tty' },
    detached = true,
  }))
elseif scenario == 'kill' then
  local r = run('sh', { args = { '-c', 'echo ready; exec sleep 30' } })
  vim.wait(10000, function() return r.out:find('ready') end, 10)
  r.handle:kill(arg ~= 'default' and arg or nil)
  result = finish(r)
elseif scenario == 'kill by pid' then
  local r = run('sh', { args = { '-c', 'echo ready; exec sleep 30' } })
  vim.wait(10000, function() return r.out:find('ready') end, 10)
  r.sent = uv.kill(r.pid, arg)
  result = finish(r)
elseif scenario == 'stdin' then
  result = finish(run('cat', {}, 'fed line\n'))
elseif scenario == 'descriptors' then
  -- stdout as an integer descriptor of a file, stdin none (/dev/null).
  local fd = assert(uv.fs_open(arg, 'w', 384))
  local done
  local handle = spawn('sh', { args = { '-c', 'echo to the file; cat; echo end' }, stdio = { nil, fd, 2 } },
    function(code, signal) done = { code, signal } end)
  uv.fs_close(fd)
  vim.wait(20000, function() return done ~= nil end, 10)
  handle:close()
  local file = io.open(arg)
  result = { done = done, text = file:read('*a') }
  file:close()
elseif scenario == 'env and cwd' then
  result = finish(run('sh', {
    args = { '-c', 'pwd; echo "A=$A TERM=$TERM"; '
      .. 'env | grep -v -e ^GPG_TTY= -e ^PWD= -e ^SHLVL= -e ^_= | sort' },
    cwd = arg,
    env = { 'A=one', 'PATH=' .. vim.env.PATH, 'TERM=dumb', 'B=two=three' },
  }))
elseif scenario == 'relative program' then
  result = finish(run('./script', { cwd = arg, env = { 'PATH=/nowhere' } }))
elseif scenario == 'from a timer' then
  -- In a fast event (a luv callback), as plugins spawn from timers.
  local r
  local timer = uv.new_timer()
  timer:start(10, 0, function()
    timer:close()
    r = run('sh', { args = { '-c', 'exec 3</dev/tty && echo controlling; exit 5' } })
  end)
  vim.wait(10000, function() return r ~= nil end, 10)
  result = finish(r)
elseif scenario == 'users' then
  result = finish(run('sh', { args = { '-c', 'id -u; id -g' }, uid = 65534, gid = 65534, cwd = '/' }))
end
return { result, skips() - skipped_before }
"""


def both(ed: Editor, scenario: str, arg: Any = None) -> tuple[Any, int, Any, int]:
    ours, ours_skips = ed.lua(RUN, "ours", scenario, arg)
    stock, stock_skips = ed.lua(RUN, "stock", scenario, arg)
    return ours, ours_skips, stock, stock_skips


def offered(ed: Editor) -> bool:
    """Whether this editor's uv.spawn gives the offer (a compiled leader)."""
    return bool(ed.lua("return require('ttyoffer.host.install').leader() ~= nil"))


@pytest.mark.parametrize("scenario", ["missing", "not executable", "bad cwd", "bad args"])
def test_spawn_errors_are_stocks(ed: Editor, tmp_path: Path, scenario: str) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho no\n")
    script.chmod(0o644)
    ours, _, stock, _ = both(ed, scenario, str(script))
    assert ours == stock
    if scenario != "bad args":
        assert stock["failed"][1] in ("ENOENT", "EACCES"), stock


@pytest.mark.parametrize("scenario", ["exit", "signal", "stdin"])
def test_exit_code_signal_and_pipes_are_stocks(ed: Editor, scenario: str) -> None:
    ours, ours_skips, stock, _ = both(ed, scenario)
    assert ours == stock
    assert stock["closed"] and stock["active"] and not stock["active_after"] and stock["pid_matches"]
    expected = {"exit": (3, 0), "signal": (0, 15), "stdin": (0, 0)}[scenario]
    assert (stock["code"], stock["signal"]) == expected
    assert ours_skips == (0 if offered(ed) else 1)


def test_the_command_gets_a_terminal_behind_the_leader_only(ed: Editor) -> None:
    ours, ours_skips, stock, _ = both(ed, "terminal")
    assert stock["out"] == "" and stock["code"] == 2, stock
    if offered(ed):
        assert (ours["out"], ours["code"], ours_skips) == ("controlling\n", 0, 0)
    else:
        # The /bin/sh prologue could not pass handle:kill() on: stock.
        assert (ours, ours_skips) == (stock, 1)
        assert ed.lua("return require('ttyoffer').status().skipped['no compiled leader']") >= 1


def test_detached_runs_as_stock(ed: Editor) -> None:
    ours, ours_skips, stock, _ = both(ed, "detached")
    assert ours == stock
    assert stock["out"] == "leader\n" and ours_skips == 1


@pytest.mark.parametrize("signal", ["default", "sigint", "sigkill", "sighup"])
def test_handle_kill_ends_the_command_as_stock(ed: Editor, signal: str) -> None:
    ours, _, stock, _ = both(ed, "kill", signal)
    assert ours == stock
    number = {"default": 15, "sigint": 2, "sigkill": 9, "sighup": 1}[signal]
    assert (stock["code"], stock["signal"]) == (0, number)


@pytest.mark.parametrize("signal", ["sigterm", "sigkill"])
def test_kill_by_pid_ends_the_command_as_stock(ed: Editor, signal: str) -> None:
    ours, _, stock, _ = both(ed, "kill by pid", signal)
    assert ours == stock
    assert (stock["sent"], stock["signal"]) == (0, 15 if signal == "sigterm" else 9)


def test_descriptors_given_as_integers_are_stocks(ed: Editor, tmp_path: Path) -> None:
    ours, ours_skips, stock, _ = both(ed, "descriptors", str(tmp_path / "out"))
    assert ours == stock == {"done": [0, 0], "text": "to the file\nend\n"}
    assert ours_skips == (0 if offered(ed) else 1)


def test_env_and_cwd_are_stocks(ed: Editor, tmp_path: Path) -> None:
    folder = tmp_path / "here"
    folder.mkdir()
    ours, ours_skips, stock, _ = both(ed, "env and cwd", str(folder))
    # The whole environment as given: TERM=dumb kept, nothing dropped (a
    # name with `=` in its value too); GPG_TTY (the offer's) aside.
    assert ours == stock
    assert stock["out"].startswith(f"{folder}\nA=one TERM=dumb\n"), stock
    assert "B=two=three" in stock["out"]
    assert ours_skips == (0 if offered(ed) else 1)


def test_a_relative_program_is_found_from_cwd_as_stock(ed: Editor, tmp_path: Path) -> None:
    script = tmp_path / "script"
    script.write_text('#!/bin/sh\necho found in "$PWD"\n')
    script.chmod(0o755)
    ours, ours_skips, stock, _ = both(ed, "relative program", str(tmp_path))
    assert ours == stock
    assert stock["out"] == f"found in {tmp_path}\n"
    assert ours_skips == (0 if offered(ed) else 1)


@pytest.mark.skipif(os.geteuid() != 0, reason="uid and gid of another user need root")
def test_uid_and_gid_as_root_are_stocks(ed: Editor) -> None:
    ours, ours_skips, stock, _ = both(ed, "users")
    assert ours == stock
    assert stock["out"] == "65534\n65534\n" and ours_skips == 1


def test_vim_system_is_wrapped_once(ed: Editor) -> None:
    # vim.system() is built on uv.spawn: its own spawn stays luv's, so one
    # leader stands between the editor and the command (the object's pid).
    parent, grandparent, pid, editor_pid = ed.lua(
        """
        local probe = 'set -- $(cat /proc/$PPID/stat); echo $PPID $4'
        local obj = vim.system({ 'sh', '-c', probe }, { text = true })
        local out = obj:wait()
        local parent, grandparent = out.stdout:match('(%d+) (%d+)')
        return { tonumber(parent), tonumber(grandparent), obj.pid, vim.fn.getpid() }
        """
    )
    assert (parent, grandparent) == (pid, editor_pid)


def test_a_spawn_kept_before_the_plugin_loaded_is_named_by_checkhealth(
    registered_sandbox: Sandbox, tmp_path: Path, leader: Leader
) -> None:
    # A module loaded before ttyoffer keeps luv's own (named by
    # :checkhealth); one that keeps it after gets the stand-in, and its
    # commands get the offer.
    box = Sandbox(
        tmp_path / "early", extra_init="package.loaded['early_spawner'] = { spawn = vim.uv.spawn }\n"
    )
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    leader.apply(box)
    with editor(box) as ed:
        kept = ed.lua("return require('ttyoffer.health').stock_spawners_kept()")
        assert kept == {"early_spawner": ["vim.uv.spawn"]}
        assert ed.lua("return require('ttyoffer.routes').active().lua")
        probe = """
        local spawn = ...
        local later = spawn == 'later' and vim.uv.spawn or require('early_spawner').spawn
        local done, out = nil, ''
        local stdout = vim.uv.new_pipe()
        local handle = later('sh', { args = { '-c', 'exec 3</dev/tty && echo controlling' },
          stdio = { nil, stdout, nil } }, function(code) done = code end)
        stdout:read_start(function(_, data) if data then out = out .. data end end)
        vim.wait(10000, function() return done ~= nil end, 10)
        handle:close()
        return out
        """
        assert ed.lua(probe, "early") == ""
        assert ed.lua(probe, "later") == ("controlling\n" if offered(ed) else "")


def test_a_spawn_from_a_luv_callback_gets_its_offer(ed: Editor) -> None:
    ours, ours_skips, stock, _ = both(ed, "from a timer")
    assert (stock["out"], stock["code"]) == ("", 2)
    if offered(ed):
        assert (ours["out"], ours["code"], ours_skips) == ("controlling\n", 5, 0)
    else:
        assert ours == stock
