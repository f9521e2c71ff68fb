-- system() and systemlist() run as Neovim runs them (do_os_system in
-- src/nvim/os/shell.c), with a wait that can be answered.
--
-- Stock blocks the editor until the command has ended and closed its
-- output: it serves libuv's callbacks and the fast events, nothing else, so
-- a window could never open for a command that asks. Here the command is
-- started as stock starts it (a session of its own, stdin /dev/null, its
-- stdout and stderr read into one buffer in the order they come) and
-- waited for by offer/waiting.lua: fast events only, as stock, until the
-- host knocks (the command wrote to its terminal); only while a prompt is
-- up are the editor's events served and the user's keys passed to it. A
-- command that never asks is served exactly what stock serves.
--
-- The result is stock's: `v:shell_error` the exit code (128 + the signal
-- for one killed by a signal; -1 when interrupted, where stock's is -2:
-- see set_shell_error), system()'s NULs as
-- SOH, systemlist()'s lines as Neovim splits them (NULs as NL, the last
-- newline dropped unless {keepempty}).
local M = {}

local originals = require('ttyoffer.shared.originals')
local waiting = require('ttyoffer.offer.waiting')

local uv = vim.uv

-- How long stock waits after an interrupt's SIGTERM before its SIGKILL
-- (KILL_TIMEOUT_MS, src/nvim/event/proc.c).
local KILL_TIMEOUT_MS = 2000
-- vim.wait()'s longest wait.
local FOREVER = 2 ^ 31 - 1

local function close(handle)
  if handle and not handle:is_closing() then
    handle:close()
  end
end

--- Run `argv` (already resolved: argv[1] is a path) as stock system() runs
--- its command. `started(pid)` is called once it runs, before the wait.
--- @param argv string[]
--- @param started fun(pid: integer)
--- @return string? output all the command wrote ('' for nothing), nil
---   when it could not be started
--- @return integer status as stock's v:shell_error
function M.run(argv, started)
  -- luv's own pipes, as its own spawn: stock system() uses no Lua, so a
  -- test framework's mock of either (mini.test's) must not reach it here.
  local stdout, stderr = originals.new_pipe(false), originals.new_pipe(false)
  local chunks = {}
  local open_streams = 2
  local status --- @type integer?
  local handle --- @type uv.uv_process_t?

  local function reader(pipe)
    return function(err, data)
      if data and not err then
        chunks[#chunks + 1] = data
        return
      end
      close(pipe)
      open_streams = open_streams - 1
    end
  end

  local args = {}
  for i = 2, #argv do
    args[i - 1] = argv[i]
  end
  local pid
  handle, pid = originals.uv_spawn(argv[1], {
    args = args,
    -- stdin: nothing (/dev/null), as stock's without {input}.
    stdio = { nil, stdout, stderr },
    -- Neovim starts every child in a session of its own on Unix (#8107).
    detached = true,
  }, function(code, signal)
    status = signal ~= 0 and 128 + signal or code
    close(handle)
  end)
  if not handle then
    close(stdout)
    close(stderr)
    return nil, -1
  end
  stdout:read_start(reader(stdout))
  stderr:read_start(reader(stderr))
  started(pid --[[@as integer]])

  -- As stock: over when the command has ended and its output is closed
  -- (what it left running in the background may hold it open).
  local function over()
    return status ~= nil and open_streams == 0
  end
  if not waiting.until_done(over) then
    -- Interrupted (CTRL-C), as stock's proc_wait(): SIGTERM to the
    -- command's group, SIGKILL if it is still there 2 s later, the end
    -- waited for, and -2 (set as -1).
    uv.kill(-pid, 'sigterm')
    local kill_timer = uv.new_timer()
    kill_timer:start(KILL_TIMEOUT_MS, 0, function()
      if status == nil then
        uv.kill(-pid, 'sigkill')
      end
    end)
    vim.wait(FOREVER, over, nil, true)
    close(kill_timer)
    status = -2
  end
  return table.concat(chunks), status --[[@as integer]]
end

--- Set |v:shell_error| to `status`. It is read-only to every API: only
--- the shell functions set it. So when it is not `status` already (the
--- common case: a command that succeeded after one that did) stock
--- system() runs `exit` with it in /bin/sh, a shell's start (about half a
--- millisecond). A negative status (interrupted: stock's -2) gives -1,
--- what stock system() sets for a program it cannot start, with v:errmsg
--- kept as it was: only an interrupt of stock's own wait sets -2, and one
--- made for it (a CTRL-C put in the input) would stay in the user's keys.
--- @param status integer
function M.set_shell_error(status)
  if vim.v.shell_error == status then
    return
  end
  if status >= 0 then
    originals.fn_system({ '/bin/sh', '-c', 'exit ' .. status })
    return
  end
  local errmsg = vim.v.errmsg
  pcall(originals.fn_system, { '' })
  vim.v.errmsg = errmsg
end

--- system()'s result from the output: NULs as SOH.
--- @param output string
--- @return string
function M.as_string(output)
  return (output:gsub('%z', '\1'))
end

--- systemlist()'s result from the output, as Neovim's string_to_list():
--- the last newline dropped unless `keepempty`, then a line per newline,
--- each NUL in a line as NL; nothing at all gives no lines.
--- @param output string
--- @param keepempty boolean
--- @return string[]
function M.as_list(output, keepempty)
  if output == '' then
    return {}
  end
  if not keepempty and output:sub(-1) == '\n' then
    output = output:sub(1, -2)
  end
  if output == '' then
    return {}
  end
  local lines = vim.split(output, '\n', { plain = true })
  for i, line in ipairs(lines) do
    lines[i] = line:gsub('%z', '\n')
  end
  return lines
end

return M
