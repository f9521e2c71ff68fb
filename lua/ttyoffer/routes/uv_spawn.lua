-- vim.uv.spawn with the offer: plenary.job, mini.git, mini.deps and every
-- plugin's own process code call it (vim.system is built on it, and is
-- wrapped on its own: the stand-in passes vim.system's own calls through).
--
-- Same handle, callbacks and errors as luv's: the command is spawned as
-- the caller asked (its `args`, `stdio`, `cwd`, `env`, `hide`, `verbatim`),
-- with the compiled leader (libexec/ttyoffer-lead.c) in front of it and
-- uv's `detached` for a session of its own, the leader's terminal then
-- being the controlling one. The leader passes on the caller's stdio as
-- it is, exits as the command did (its code, or by its signal: the exit
-- callback gets both as stock's), and passes on the signals it is sent
-- (handle:kill(), uv.kill(pid)) to the command alone; a SIGKILL ends the
-- command with it. The pid is the leader's (:help ttyoffer-contract).
--
-- Only behind the compiled leader: the /bin/sh prologue could pass no
-- signal from handle:kill() on, and drops environment names a shell cannot
-- assign. Without it (none built yet, not yet seen to run, or `cc`
-- missing) the command runs as stock. A `detached` command, and one run as
-- another user (`uid`/`gid`: the private terminal is the editor user's and
-- would not open), run as stock too. Callable in a fast event, as luv's.
local M = {}

local host = require('ttyoffer.host')
local offered = require('ttyoffer.routes.offered')
local originals = require('ttyoffer.shared.originals')
local records = require('ttyoffer.offer.records')
local startable = require('ttyoffer.routes.startable')

local uv = vim.uv

--- uv.spawn's options as the offer's checks read jobstart()'s: its `env`
--- (a list of 'NAME=value' entries, the child's whole environment) as a
--- table by name, with `clear_env`; nil when the `env` is none luv takes
--- (luv judges it).
--- @param options table
--- @return table?
local function as_options(options)
  local env = options.env
  if env == nil then
    return { cwd = options.cwd }
  end
  if type(env) ~= 'table' then
    return nil
  end
  local by_name = {}
  for i = 1, #env do
    local entry = env[i]
    if type(entry) ~= 'string' then
      return nil
    end
    local name, value = entry:match('^([^=]*)=(.*)$')
    name, value = name or entry, value or ''
    -- The first entry of a name is the one getenv(3) and execvp(3) read.
    if by_name[name] == nil then
      by_name[name] = value
    end
  end
  return { cwd = options.cwd, env = by_name, clear_env = true }
end

--- Whether the command runs as another user or group than the editor.
--- @param options table
--- @return boolean
local function another_user(options)
  return (options.uid ~= nil and options.uid ~= uv.getuid()) or (options.gid ~= nil and options.gid ~= uv.getgid())
end

--- The program, as uv.spawn's child finds it; nil when luv must judge it.
--- @param argv string[]
--- @param opts table
--- @return string?
local function locate(argv, opts)
  return startable.find_in_child(argv[1], opts)
end

--- Same contract as luv's uv.spawn(), plus the offer.
--- @param path string
--- @param options table
--- @param on_exit fun(code: integer, signal: integer)?
--- @return uv.uv_process_t?, integer|string, string?
function M.spawn(path, options, on_exit)
  local function plain()
    return originals.uv_spawn(path, options, on_exit)
  end
  if type(path) ~= 'string' or type(options) ~= 'table' then
    return plain()
  end
  if options.detached or another_user(options) then
    records.skipped(options.detached and 'detached' or 'runs as another user')
    return plain()
  end
  local args = options.args
  if args ~= nil and type(args) ~= 'table' then
    return plain()
  end
  local opts = as_options(options)
  if not opts then
    return plain()
  end
  local argv = { path }
  for i = 1, args and #args or 0 do
    if type(args[i]) ~= 'string' and type(args[i]) ~= 'number' then
      return plain() -- luv raises its own error
    end
    argv[i + 1] = tostring(args[i])
  end
  local command, offer_id = offered.command(argv, opts, locate, true, true)
  if not command then
    return plain()
  end
  local led = {}
  for name, value in pairs(options) do
    led[name] = value
  end
  led.args = {}
  for i = 2, #command do
    led.args[i - 1] = command[i]
  end
  led.detached = true
  local handle, pid = originals.uv_spawn(command[1], led, on_exit)
  if not handle then
    host.notify('dismiss', offer_id)
    records.skipped('spawn failed')
    return plain() -- luv's own error, from the command's own spawn
  end
  records.add({ id = offer_id, pid = pid, cmd = argv, state = 'armed' })
  host.notify('bind', offer_id, pid)
  return handle, pid
end

return M
