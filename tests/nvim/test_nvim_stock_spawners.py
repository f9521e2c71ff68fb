"""The wrapped spawners against stock, in the same run, on 0.12-dev and
0.11.4, under the leaders a user can have (harness.LEADERS): called from a
luv callback (a timer, another vim.system's on_exit, a uv.fs callback),
leaving a process in the background, and given a program the kernel will
not start. Real programs throughout: a `sh -c 'sleep 30 &'` whose sleep
must outlive its command, git's credential-cache daemon, scripts whose #!
interpreter is missing, an ELF binary whose loader is missing."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import (
    MAIN_LEADERS,
    Editor,
    Leader,
    Sandbox,
    editor,
    nvim_011_binary,
    nvim_binary,
    on_leaders,
    on_leaders_for,
    wait_until,
)

# It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
pytestmark = [pytest.mark.nvim, pytest.mark.versions]
# The whole of it under the default leader and the /bin/sh prologue; what
# the leader's build could change (signals, exits, descriptors, errors)
# under every leader a user can have (harness.LEADERS).
main_leaders = on_leaders(*MAIN_LEADERS)
every_leader = on_leaders()


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
        version = e.lua("return vim.version().minor")
        assert version == (11 if request.param == "0.11" else 12)
        leader.check(e)
        yield e


def on_the_leader(ed: Editor) -> bool:
    return bool(ed.lua("return require('ttyoffer.host.install').leader() ~= nil"))


# How many commands ran without an offer so far: a call that leaves it as it
# was went through the offer.
SKIPS = """
local n = 0
for _, count in pairs(require('ttyoffer').status().skipped) do n = n + count end
return n
"""

# -- fast events --------------------------------------------------------------

# Runs every spawner inside a fast event (`ctx`) through stock or the
# wrappers; _G.fast_out gets {name, ok, result or error} per call.
IN_FAST_EVENT = r"""
local which, ctx = ...
local o = require('ttyoffer.shared.originals')
local T = require('ttyoffer')
local S = which == 'stock' and o
  or { system = T.system, jobstart = T.jobstart, fn_system = T.fn_system, systemlist = T.systemlist }
_G.fast_out = nil
local function body()
  local calls = {
    { 'system, on_exit', function()
      local probe = { 'sh', '-c', 'exec 3</dev/tty && echo controlling' }
      local obj = S.system(probe, { text = true }, function(out) _G[which .. '_fast_exit'] = out end)
      return type(obj.pid) .. ' ' .. type(obj.wait)
    end },
    { 'system, env and cwd', function()
      return type(S.system({ 'pwd' }, { cwd = '/', env = { A = '1' } }).pid)
    end },
    { 'system():wait()', function() return S.system({ 'true' }):wait().code end },
    { 'system, missing program', function() return S.system({ 'no-such-program-here' }) end },
    { 'system, bad arguments', function() return S.system('not a list') end },
    { 'jobstart', function() return S.jobstart({ 'true' }) end },
    { 'jobstart, string', function() return S.jobstart('true') end },
    { 'system()', function() return S.fn_system({ 'true' }) end },
    { 'systemlist()', function() return S.systemlist('echo a') end },
  }
  local out = {}
  for _, call in ipairs(calls) do
    local ok, result = pcall(call[2])
    table.insert(out, { call[1], ok, tostring(result) })
  end
  _G.fast_out = out
end
if ctx == 'timer' then
  local timer = vim.uv.new_timer()
  timer:start(10, 0, function() timer:close() body() end)
elseif ctx == 'on_exit' then
  o.system({ 'true' }, {}, function() body() end)
else
  vim.uv.fs_stat('/', function() body() end)
end
"""


@main_leaders
@pytest.mark.parametrize("context", ["timer", "on_exit", "fs"])
def test_spawners_in_a_fast_event_do_what_stock_does(ed: Editor, context: str) -> None:
    results = {}
    for which in ("stock", "ours"):
        skips = ed.lua(SKIPS)
        ed.lua(IN_FAST_EVENT, which, context)
        results[which] = wait_until(lambda: ed.lua("return _G.fast_out"), what=f"{which} in a {context}")
        if which == "ours":
            assert ed.lua(SKIPS) == skips  # vim.system() got its offer there
    assert results["ours"] == results["stock"]
    # Stock raises E5560 for the Vimscript spawners, and vim.system() starts.
    by_name = {name: (ok, result) for name, ok, result in results["ours"]}
    assert by_name["system, on_exit"] == (True, "number function")
    assert by_name["jobstart"][0] is False and "E5560" in by_name["jobstart"][1]
    # The command started from the callback has the offered terminal as its
    # controlling one (stock: none, so the open fails).
    ours = wait_until(lambda: ed.lua("return _G.ours_fast_exit"), what="the wrapped command's exit")
    stock = wait_until(lambda: ed.lua("return _G.stock_fast_exit"), what="the stock command's exit")
    assert (ours["code"], ours["stdout"]) == (0, "controlling\n")
    assert stock["code"] != 0


@main_leaders
def test_a_prompt_from_a_timer_callback_is_answered(ed: Editor) -> None:
    # A plugin's pattern: vim.system() from a luv timer, the result in
    # on_exit. The command asks on its terminal; the window opens, the user
    # answers.
    ed.lua(
        """
        local timer = vim.uv.new_timer()
        timer:start(20, 0, function()
          timer:close()
          vim.system({ 'sh', '-c', 'printf "Name: " >/dev/tty; read n </dev/tty; echo "hello $n"' },
            { text = true }, function(out) _G.timer_result = out end)
        end)
        """
    )
    win = wait_until(lambda: ed.float_wins(), timeout=20, what="the prompt window")[0]
    wait_until(lambda: "Name:" in ed.buf_text(win), what="the question")
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("early<CR>")
    result = wait_until(lambda: ed.lua("return _G.timer_result"), timeout=20, what="on_exit")
    assert (result["code"], result["stdout"]) == (0, "hello early\n")


# -- background processes -------------------------------------------------------

# Starts `sh -c 'sleep 30 &'` (its pid written to `pidfile`) through one
# spawner, stock or wrapped, and returns once the command has exited.
IN_THE_BACKGROUND = r"""
local which, how, pidfile = ...
local o = require('ttyoffer.shared.originals')
local T = require('ttyoffer')
local S = which == 'stock' and o
  or { system = T.system, jobstart = T.jobstart, fn_system = T.fn_system, systemlist = T.systemlist }
local script = 'sleep 30 >/dev/null 2>&1 & echo $! > ' .. vim.fn.shellescape(pidfile) .. '; echo started'
local function job(cmd)
  local code
  S.jobstart(cmd, { on_exit = function(_, c) code = c end })
  vim.wait(20000, function() return code ~= nil end)
  return code
end
if how == 'jobstart' then
  return job({ 'sh', '-c', script })
elseif how == 'jobstart, string' then
  return job(script)
elseif how == 'vim.system' then
  return S.system({ 'sh', '-c', script }):wait().code
elseif how == 'vim.system, on_exit' then
  local code
  S.system({ 'sh', '-c', script }, {}, function(out) code = out.code end)
  vim.wait(20000, function() return code ~= nil end)
  return code
elseif how == 'system(), string' then
  S.fn_system(script)
  return vim.v.shell_error
end
S.fn_system({ 'sh', '-c', script })
return vim.v.shell_error
"""


def alive(pid: int) -> bool:
    """Running (a zombie is dead)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in "ZX"


def ended(pid: int) -> bool:
    return not alive(pid)


def stays_alive(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return False
        time.sleep(0.05)
    return True


@on_leaders_for(
    "how",
    [
        "jobstart",
        "jobstart, string",
        "vim.system",
        "vim.system, on_exit",
        "system(), string",
        "system(), list",
    ],
    core=lambda how: how in ("jobstart", "vim.system"),  # a group signalled, and a pid
)
def test_a_background_process_outlives_its_command_as_in_stock(ed: Editor, tmp_path: Path, how: str) -> None:
    pids = []
    try:
        for which in ("stock", "ours"):
            pidfile = tmp_path / f"{which}.pid"
            skips = ed.lua(SKIPS)
            assert ed.lua(IN_THE_BACKGROUND, which, how, str(pidfile)) == 0
            if which == "ours":
                assert ed.lua(SKIPS) == skips  # the command had its terminal
            pid = int(pidfile.read_text())
            pids.append(pid)
            # The command is over, and the host is done with its terminal
            # (what still held it was hung up then): the sleep lives on.
            wait_until(lambda: ed.lua("return #require('ttyoffer').offers() == 0"), what="the offer's end")
            assert stays_alive(pid, 0.5), f"{which}: the background sleep died with its command"
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGTERM)


def late_line(path: Path) -> str:
    def text() -> str | None:
        return path.read_text() if path.exists() else None

    return wait_until(text, timeout=15, what=f"a line in {path.name}")


@every_leader
def test_a_background_process_has_no_terminal_once_its_command_ended(ed: Editor, tmp_path: Path) -> None:
    # After its command, a background process opens /dev/tty as it would in
    # stock: there is none (the leader's exit took the session's terminal).
    script = "(sleep 1; if true 3</dev/tty; then echo opened; else echo none; fi) >{out} 2>/dev/null &"
    for which in ("stock", "ours"):
        out = tmp_path / f"{which}.out"
        ed.lua(
            "local which, cmd = ... local o = require('ttyoffer.shared.originals') "
            "local js = which == 'stock' and o.jobstart or vim.fn.jobstart "
            "local code js(cmd, { on_exit = function(_, c) code = c end }) "
            "vim.wait(10000, function() return code ~= nil end)",
            which,
            ["sh", "-c", script.format(out=out)],
        )
        assert late_line(out) == "none\n", which


@every_leader
@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_credential_cache_daemon_outlives_git(ed: Editor, tmp_path: Path) -> None:
    # A daemon a real program starts without a session of its own: git's
    # credential cache, as a plugin's `git push` over HTTPS leaves it. Had it
    # died with the git that started it, nothing would be cached.
    socket = tmp_path / "cache" / "socket"
    helper = f"cache --timeout=300 --socket={socket}"
    store = "protocol=https\nhost=example.com\nusername=user\npassword=a secret\n\n"
    try:
        result = ed.lua(
            """
            local helper, store = ...
            local code
            local argv = { 'git', '-c', 'credential.helper=' .. helper, 'credential', 'approve' }
            local job = vim.fn.jobstart(argv, { on_exit = function(_, c) code = c end })
            vim.fn.chansend(job, store)
            vim.fn.chanclose(job, 'stdin')
            vim.wait(20000, function() return code ~= nil end)
            return code
            """,
            helper,
            store,
        )
        assert result == 0
        wait_until(lambda: ed.lua("return #require('ttyoffer').offers() == 0"), what="the offers' end")
        time.sleep(0.3)
        got = subprocess.run(
            ["git", "-c", f"credential.helper={helper}", "credential", "fill"],
            input="protocol=https\nhost=example.com\nusername=user\n\n",
            capture_output=True,
            text=True,
            timeout=20,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
        )
        assert "password=a secret" in got.stdout, got.stderr
    finally:
        stop = ["git", "credential-cache", f"--socket={socket}", "exit"]
        subprocess.run(stop, capture_output=True, timeout=20, check=False)


# -- programs that cannot start --------------------------------------------------


def elf_with_missing_loader(path: Path) -> None:
    """A copy of a real dynamic binary whose PT_INTERP names no file."""
    data = Path("/bin/true").read_bytes()
    start = data.index(b"/lib")
    end = data.index(b"\0", start)
    loader = data[start:end]
    data = data[:start] + b"/nonexistent/ld"[: len(loader)].ljust(len(loader), b"x") + data[end:]
    path.write_bytes(data)
    path.chmod(0o755)


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    def script(name: str, text: str, mode: int = 0o755) -> None:
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(mode)

    script("missing-interpreter", "#!/nonexistent/interpreter\necho ran\n")
    script("not-executable-interpreter", f"#!{bin_dir}/not-executable\n")
    script("interpreter-missing-its-own", f"#!{bin_dir}/missing-interpreter\n")
    script("not-executable", "#!/bin/sh\necho ran\n", 0o644)
    script("no-shebang", "echo ran without a shebang\n")
    script("fine", "#!/bin/sh\necho fine\n")
    (bin_dir / "a-directory").mkdir()
    (bin_dir / "dangling").symlink_to("/nonexistent/program")
    elf_with_missing_loader(bin_dir / "missing-loader")
    script("loader-missing-interpreter", f"#!{bin_dir}/missing-loader\n")
    # Scripts as each other's interpreter: the kernel follows 4 (5 files to
    # /bin/sh), refuses 5 with ELOOP.
    script("nested-0", "#!/bin/sh\necho nested\n")
    for depth in range(1, 6):
        script(f"nested-{depth}", f"#!{bin_dir}/nested-{depth - 1}\n")
    return bin_dir


CANNOT_START = [
    "missing-interpreter",
    "not-executable-interpreter",
    "interpreter-missing-its-own",
    "missing-loader",
    "loader-missing-interpreter",
    "not-executable",
    "a-directory",
    "dangling",
    "no-such-program",
    "nested-5",
    "nested-4",  # started
    "no-shebang",  # ENOEXEC: both fall back to /bin/sh
    "fine",
]

# One call through stock or the wrappers: what it returned or raised.
CALL = r"""
local which, call, arg = ...
local o = require('ttyoffer.shared.originals')
local T = require('ttyoffer')
local S = which == 'stock' and o
  or { system = T.system, jobstart = T.jobstart, fn_system = T.fn_system, systemlist = T.systemlist }
local ok, result = pcall(function()
  if call == 'vim.system' then
    return S.system(arg, { text = true }):wait()
  elseif call == 'jobstart' then
    local code, err = nil, {}
    local job = S.jobstart(arg, {
      on_exit = function(_, c) code = c end,
      on_stderr = function(_, d) vim.list_extend(err, d) end,
      stderr_buffered = true,
    })
    if job > 0 then
      vim.wait(10000, function() return code ~= nil end)
    end
    return { started = job > 0, job = job > 0 and 'a job' or job, code = code, stderr = err }
  end
  local out = S[call](arg)
  return { out, vim.v.shell_error }
end)
return { ok, result }
"""


@on_leaders_for(
    "call",
    ["vim.system", "jobstart", "fn_system", "systemlist"],
    core=lambda call: call in ("vim.system", "jobstart"),  # system() leads as jobstart() does
)
def test_a_program_that_cannot_start_fails_as_in_stock(ed: Editor, programs: Path, call: str) -> None:
    for name in CANNOT_START:
        forms: list[Any] = [[str(programs / name), "arg"]]
        if call != "vim.system":
            forms.append(str(programs / name) + " arg")
        for arg in forms:
            skips = ed.lua(SKIPS)
            stock = ed.lua(CALL, "stock", call, arg)
            ours = ed.lua(CALL, "ours", call, arg)
            assert ours == stock, (name, arg)
            if name in ("fine", "no-shebang", "nested-4"):
                assert ed.lua(SKIPS) == skips, name  # it ran with its offer
    # What stock says, for the record: vim.system() raises ENOENT for a
    # missing interpreter, jobstart() E903, system() -1.
    missing = [str(programs / "missing-interpreter")]
    assert "ENOENT" in ed.lua(CALL, "ours", "vim.system", missing)[1]
    if call == "jobstart":
        assert "E903" in ed.lua(CALL, "ours", "jobstart", missing)[1]
    if call == "fn_system":
        assert ed.lua(CALL, "ours", "fn_system", missing)[1] == ["", -1]


@main_leaders
@pytest.mark.parametrize("call", ["vim.system", "jobstart"])
def test_a_program_changed_between_spawns_is_judged_as_it_now_is(
    ed: Editor, tmp_path: Path, call: str
) -> None:
    # What the wrappers found of a program is kept while the file is
    # unchanged: each change below must be seen at the next spawn.
    program, interpreter = tmp_path / "changing", tmp_path / "interpreter"
    interpreter.write_text('#!/bin/sh\nexec /bin/sh "$@"\n')
    interpreter.chmod(0o755)
    states: list[tuple[str, int, bool]] = [
        ("#!/bin/sh\necho one\n", 0o755, True),
        ("#!/bin/zz\necho one\n", 0o755, False),  # rewritten, same size: refused
        ("#!/bin/sh\necho one\n", 0o755, True),
        ("#!/bin/sh\necho one\n", 0o644, False),  # chmod -x
        (f"#!{interpreter}\necho two\n", 0o755, True),
        (f"#!{interpreter}\necho two\n", 0o755, False),  # its interpreter removed
    ]
    for text, mode, starts in states:
        if not starts and interpreter.name in text:
            interpreter.unlink()
        if not program.exists() or program.read_text() != text:
            program.write_text(text)
        program.chmod(mode)
        for _ in range(2):  # the second from what was kept of it
            stock = ed.lua(CALL, "stock", call, [str(program)])
            ours = ed.lua(CALL, "ours", call, [str(program)])
            assert ours == stock, (text, oct(mode))
            assert stock[0] == starts, (text, oct(mode), stock)


# -- what is left, as :help ttyoffer-contract says ---------------------------------


@every_leader
def test_the_pid_is_the_leaders_and_signals_end_the_command_as_in_stock(ed: Editor) -> None:
    # The pid a spawner returns is the shell that leads the command's
    # session; the command is its child. Stopping either way ends the
    # command with the status stock reports.
    stop_both = """
    local which = ...
    local o = require('ttyoffer.shared.originals')
    local system = which == 'stock' and o.system or vim.system
    local jobstart = which == 'stock' and o.jobstart or vim.fn.jobstart
    local code
    local obj = system({ 'sleep', '30' })
    local job = jobstart({ 'sleep', '30' }, { on_exit = function(_, c) code = c end })
    local pids = { obj.pid, vim.fn.jobpid(job) }
    -- Wrapped, the sleeps are the leaders' children (stock's have none).
    vim.wait(5000, function()
      return which == 'stock'
        or #vim.api.nvim_get_proc_children(pids[1]) > 0 and #vim.api.nvim_get_proc_children(pids[2]) > 0
    end)
    local names = {}
    for _, pid in ipairs(pids) do
      local child = vim.api.nvim_get_proc_children(pid)[1]
      table.insert(names, child and vim.api.nvim_get_proc(child).name or vim.api.nvim_get_proc(pid).name)
    end
    obj:kill(15)
    vim.fn.jobstop(job)
    vim.wait(10000, function() return code ~= nil end)
    return { names, obj:wait().signal, code }
    """
    ours = ed.lua(stop_both, "ours")
    stock = ed.lua(stop_both, "stock")
    assert ours == stock == [["sleep", "sleep"], 15, 143]


# A command that says which signal ended it, and leaves a `sleep` of its own
# (in its process group, as a plugin's `sh -c` would): {stdout, code or
# signal, whether the sleep outlived it}, for jobstop() and vim.system()'s
# kill(15), which signal the job's process group and the pid.
SIGNALLED = r"""
local which, how, pidfile = ...
local o = require('ttyoffer.shared.originals')
local script = 'trap "echo TERM; exit 3" TERM; trap "echo HUP; exit 4" HUP; '
  .. 'sleep 30 >/dev/null 2>&1 & echo $! >' .. pidfile .. '; wait'
local argv = { 'sh', '-c', script }
local function written()
  return vim.uv.fs_stat(pidfile) ~= nil and vim.uv.fs_stat(pidfile).size > 0
end
local function started()
  vim.wait(5000, written)
  vim.wait(100) -- the sleep exec'd, sh in its `wait`
end
if how == 'jobstop' then
  local jobstart = which == 'stock' and o.jobstart or vim.fn.jobstart
  local code, out = nil, nil
  local job = jobstart(argv, {
    stdout_buffered = true,
    on_stdout = function(_, d) out = d end,
    on_exit = function(_, c) code = c end,
  })
  started()
  vim.fn.jobstop(job)
  vim.wait(10000, function() return code ~= nil and out ~= nil end)
  return { table.concat(out, '\n'), code }
end
local system = which == 'stock' and o.system or vim.system
local obj = system(argv, { text = true })
started()
obj:kill(15)
local result = obj:wait()
return { result.stdout, result.code, result.signal }
"""


@every_leader
@pytest.mark.parametrize("how", ["jobstop", "vim.system kill"])
def test_a_signal_for_the_job_reaches_the_command_as_in_stock(ed: Editor, tmp_path: Path, how: str) -> None:
    # jobstop() signals the job's process group, vim.system()'s kill() its
    # pid. The compiled leader passes the signal on to the same processes;
    # behind the /bin/sh prologue the Lua side does (routes/stopping.lua),
    # where its shell could not (its command got SIGHUP instead).
    results = {}
    for which in ("stock", "ours"):
        pidfile = tmp_path / f"{which}.pid"
        results[which] = ed.lua(SIGNALLED, which, how, str(pidfile))
        sleep = int(pidfile.read_text())
        results[which].append(stays_alive(sleep, 0.3))
        if alive(sleep):
            os.kill(sleep, signal.SIGTERM)
    if how == "jobstop" and not on_the_leader(ed):
        # jobstop() ends the prologue's shell too, at once (143), where
        # stock's job ends with its command: what the command says after
        # that is not read (:help ttyoffer-contract). Its group got the
        # same SIGTERM (and the terminal's SIGHUP).
        assert results["ours"][1:] == [143, results["stock"][2]]
        return
    assert results["ours"] == results["stock"]
    assert results["stock"][:2] == ["TERM\n", 3]


@every_leader
def test_a_timed_out_wait_kills_a_command_that_ignores_sighup(ed: Editor, tmp_path: Path) -> None:
    # :wait(ms) that times out sends SIGKILL to the pid: the leader dies of
    # it, and the kernel kills the program with it (the leader asked for
    # that), as stock kills its program; behind the /bin/sh prologue the
    # Lua side sends it to the program. Before, the program got only the
    # terminal's SIGHUP, which it may ignore, and lived on.
    waited = """
    local which, pidfile = ...
    local system = which == 'stock' and require('ttyoffer.shared.originals').system or vim.system
    local obj = system({ 'sh', '-c', 'trap "" HUP; echo $$ >' .. pidfile .. '; exec sleep 30' })
    vim.wait(5000, function() return ((vim.uv.fs_stat(pidfile) or {}).size or 0) > 0 end)
    local result = obj:wait(300) -- nil: the program still holds its pipes
    return result and { result.code, result.signal } or {}
    """
    for which in ("stock", "ours"):
        pidfile = tmp_path / f"{which}.pid"
        result = ed.lua(waited, which, str(pidfile))
        program = int(pidfile.read_text())
        try:
            assert result == [124, 9]
            wait_until(functools.partial(ended, program), timeout=5, what=f"{which}: the program's end")
        finally:
            if alive(program):
                os.kill(program, signal.SIGKILL)


@every_leader
def test_ctrl_z_in_a_prompt_window_stops_nothing(ed: Editor) -> None:
    # Job control would deliver the SIGTSTP of a typed CTRL-Z to the command
    # (its group is the terminal's foreground one); the leader lets it go
    # on at once, and the prompt is answered as if nothing was typed.
    ed.lua(
        """
        _G.asked = nil
        vim.fn.jobstart({ 'sh', '-c', 'printf "Name: " >/dev/tty; read n </dev/tty; echo "hello $n"' }, {
          stdout_buffered = true,
          on_stdout = function(_, data) _G.asked_out = data end,
          on_exit = function(_, code) _G.asked = code end,
        })
        """
    )
    win = wait_until(lambda: ed.float_wins(), timeout=20, what="the prompt window")[0]
    wait_until(lambda: "Name:" in ed.buf_text(win), what="the question")
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("<C-z>")
    time.sleep(0.3)
    ed.nvim.input("early<CR>")
    wait_until(lambda: ed.lua("return _G.asked ~= nil"), timeout=20, what="the exit")
    assert ed.lua("return _G.asked") == 0
    assert ed.lua("return _G.asked_out") == ["hello early", ""]


# -- what a stopped job leaves, and a stop from outside -----------------------


def programs_with(argument: str) -> list[int]:
    """The live processes whose argv[1] is `argument` (a `sleep 311.81` of
    one test and one spawner), found through /proc."""
    return [pid for pid, argv in processes_naming(argument) if argv[1:2] == [argument]]


def processes_naming(argument: str) -> list[tuple[int, list[str]]]:
    """The live processes with `argument` in their argv (its `sleep`, the
    `sh -c` that runs it, a leader), and their argv, found through /proc."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                raw = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            argv = [part.decode(errors="replace") for part in raw.split(b"\0")]
            if any(argument in part for part in argv) and alive(int(name)):
                found.append((int(name), argv))
    return found


# Starts a `sh -c` whose shell and sleep ignore SIGTERM and SIGHUP (only a
# SIGKILL ends them; the sleep is not the job's pid) through stock or the
# wrappers, then stops it as `how` says once the sleep runs; returns once
# the job has ended.
STUBBORN_SCRIPT = 'trap "" TERM HUP; sleep {} >/dev/null 2>&1; true'
STUBBORN = r"""
local which, how, script, step = ...
local o = require('ttyoffer.shared.originals')
local jobstart = which == 'stock' and o.jobstart or vim.fn.jobstart
local system = which == 'stock' and o.system or vim.system
local argv = { 'sh', '-c', script }
if step == 'start' then
  _G.stubborn_code = nil
  if how == 'jobstop' then
    _G.stubborn = jobstart(argv, { on_exit = function(_, c) _G.stubborn_code = c end })
  else
    -- The timeout comes once the sleep runs, on a loaded machine too.
    _G.stubborn = system(argv, how == 'timeout' and { timeout = 5000 } or {})
  end
  return
end
if how == 'jobstop' then
  vim.fn.jobstop(_G.stubborn)
  vim.wait(20000, function() return _G.stubborn_code ~= nil end)
  return _G.stubborn_code
elseif how == 'timeout' then
  -- SIGTERM at the timeout, then :wait()'s SIGKILL: both to the pid.
  return _G.stubborn:wait().code
end
_G.stubborn:kill(9)
return _G.stubborn:wait().signal
"""


def what_is_left(argument: str, script: str) -> list[str]:
    """What lives on of a STUBBORN command: its sleep, its shell, or
    anything else naming it (a leader), by argv[0]."""
    left = set()
    for _, argv in processes_naming(argument):
        if argv[1:2] == [argument]:
            left.add("sleep")
        elif argv[1:3] == ["-c", script]:
            left.add("its shell")
        else:
            left.add(argv[0])
    return sorted(left)


def leaves(argument: str, script: str, expected: list[str]) -> bool:
    return what_is_left(argument, script) == expected


@pytest.mark.parametrize("how", ["jobstop", "timeout", "kill 9"])
def test_a_stopped_job_leaves_what_stock_leaves(ed: Editor, how: str) -> None:
    # jobstop()'s SIGKILL (2 s after its SIGTERM) reaches the job's process
    # group: stock's shell and sleep die. vim.system()'s timeout and
    # :kill(9) signal the pid: stock's shell dies, its sleep outlives it.
    # Before, the leader's sleep outlived jobstop(); behind the /bin/sh
    # prologue, the shell outlived all three (its leader cannot pass a
    # signal on: the Lua side does, routes/stopping.lua).
    expected = [] if how == "jobstop" else ["sleep"]
    left = {}
    for which, argument in (("stock", "311.81"), ("ours", "311.82")):
        script = STUBBORN_SCRIPT.format(argument)
        try:
            ed.lua(STUBBORN, which, how, script, "start")
            wait_until(functools.partial(programs_with, argument), what=f"{which}: the sleep")
            ed.lua(STUBBORN, which, how, script, "stop")
            time.sleep(1)  # an absence: what is left stays
            # Behind the prologue jobstop()'s job ends with its shell, at
            # once, and the SIGKILL comes 2 s after the stop, as stock's.
            with contextlib.suppress(AssertionError):
                wait_until(functools.partial(leaves, argument, script, expected), what=f"{which}: {expected}")
            left[which] = what_is_left(argument, script)
        finally:
            for pid, _ in processes_naming(argument):
                os.kill(pid, signal.SIGKILL)
    assert left["ours"] == left["stock"] == expected


STOPPED = r"""
local which, argument, step = ...
local o = require('ttyoffer.shared.originals')
local jobstart = which == 'stock' and o.jobstart or vim.fn.jobstart
if step == 'start' then
  _G.stopped_code = nil
  _G.stopped = jobstart({ 'sleep', argument }, { on_exit = function(_, c) _G.stopped_code = c end })
  return
end
vim.fn.jobstop(_G.stopped)
vim.wait(20000, function() return _G.stopped_code ~= nil end)
return _G.stopped_code
"""


def test_a_command_stopped_from_outside_stays_stopped_as_in_stock(ed: Editor) -> None:
    # kill -STOP stops stock's command until a SIGCONT. Before, the leader
    # continued it at once.
    states = {}
    for which, argument in (("stock", "311.83"), ("ours", "311.84")):
        try:
            ed.lua(STOPPED, which, argument, "start")
            program = wait_until(functools.partial(programs_with, argument), what=f"{which}: the sleep")[0]
            os.kill(program, signal.SIGSTOP)
            time.sleep(1.5)  # an absence: nothing continues it (the prologue looks each second)
            states[which] = Path(f"/proc/{program}/stat").read_text().rsplit(") ", 1)[1][0]
            os.kill(program, signal.SIGCONT)
            assert ed.lua(STOPPED, which, argument, "stop") == 143
        finally:
            for pid in programs_with(argument):
                os.kill(pid, signal.SIGKILL)
    assert states["ours"] == states["stock"] == "T"
