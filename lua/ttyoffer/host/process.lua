-- The host process's lifecycle: started in the background (never waited
-- for on the spawn path), its state, its end, and its coming back after a
-- crash. Its state is read through the functions below, never its fields.
local M = {}

local notify = require('ttyoffer.shared.notify')
local originals = require('ttyoffer.shared.originals')
local protocol = require('ttyoffer.host.protocol')
local python_finder = require('ttyoffer.host.python')

--- @type 'stopped'|'starting'|'ready'|'failed'
local state = 'stopped'
local chan = nil --- @type integer?
local job = nil --- @type integer?
local pid = nil --- @type integer?
local last_error = nil --- @type string?
local stderr = {} --- @type string[]
local python = nil --- @type string? the Python it runs with

-- How long a starting host may take to answer its first refill.
local START_TIMEOUT_MS = 15000
local start_timed_out = false
-- Called once the host is ready, or cannot be (see when_ready).
local ready_waiters = {} --- @type fun(ready: boolean)[]
-- Told when the host process ends (the editor quitting aside).
local on_exit_handler = nil --- @type fun(message: string?)?
-- What the other jobs of host/ do as a host starts (`spawned(job)`, its
-- first messages queued after `configure`) and ends (`ended()`, before
-- anything is told): the stock's and the requests' state lives in the host.
local subscribers = {} --- @type {spawned: fun(job: integer)?, ended: fun()?}[]

--- The remote plugin the host runs: from this checkout, whatever the rplugin
--- manifest says (or whether :UpdateRemotePlugins was ever run).
M.plugin_path = require('ttyoffer.host.install').root .. '/rplugin/python3/ttyoffer'

--- @return 'stopped'|'starting'|'ready'|'failed'
function M.get_state()
  return state
end

--- @return integer? the RPC channel to the running host
function M.get_channel()
  return chan
end

--- @return integer? the host's job id
function M.get_job()
  return job
end

--- @return integer?
function M.get_pid()
  return pid
end

--- @return string? why the host is not running, or did not answer
function M.get_error()
  return last_error
end

--- @return string[] the last lines the host wrote to stderr
function M.get_stderr()
  return vim.list_slice(stderr)
end

--- @return string? the Python the host runs with
function M.get_python()
  return python
end

--- @return boolean
function M.ready()
  return state == 'ready'
end

--- A host that failed to start may be started again (after :TtyOffer
--- install mended its Python).
function M.forget_failure()
  if state == 'failed' then
    state = 'stopped'
  end
end

--- @param hooks {spawned: fun(job: integer)?, ended: fun()?}
function M.subscribe(hooks)
  table.insert(subscribers, hooks)
end

local function tell(event, ...)
  for _, hooks in ipairs(subscribers) do
    if hooks[event] then
      hooks[event](...)
    end
  end
end

--- Call everything that waited for the host, with whether it is ready.
local function settle_waiters()
  local waiters = ready_waiters
  ready_waiters = {}
  local ready = state == 'ready'
  for _, fn in ipairs(waiters) do
    fn(ready)
  end
end

--- `fn(ready)` once the host is ready (true), or has failed or not become
--- ready within `timeout` ms (false); at once when it is not starting.
--- @param timeout integer
--- @param fn fun(ready: boolean)
function M.when_ready(timeout, fn)
  if state ~= 'starting' then
    return fn(state == 'ready')
  end
  local called = false
  local function once(ready)
    if not called then
      called = true
      fn(ready)
    end
  end
  table.insert(ready_waiters, once)
  vim.defer_fn(function()
    once(state == 'ready')
  end, timeout)
end

--- The host answered (its first stock, or any after): it is ready.
--- @return boolean first whether it was not ready before
function M.become_ready()
  local first = state ~= 'ready'
  state = 'ready'
  last_error = nil
  return first
end

--- Tell the editor and everything that waited that the host is ready.
function M.announce_ready()
  vim.api.nvim_exec_autocmds('User', { pattern = 'TtyOfferHostReady', modeline = false })
  settle_waiters()
end

--- What to do when the host process ends: set once by the plugin's start
--- (ttyoffer.init), so that a start from anywhere (the first spawn, :Bang)
--- uses it.
--- @param handler fun(message: string?)
function M.set_exit_handler(handler)
  on_exit_handler = handler
end

--- Start the host unless it runs or is starting. Never blocks.
--- @param on_exit fun(message: string?)? called when the host process ends,
---   with what to tell the user when it was not expected
--- @return boolean started_or_running
function M.start(on_exit)
  on_exit_handler = on_exit or on_exit_handler
  if state == 'ready' or state == 'starting' then
    return true
  end
  state, last_error = 'starting', nil
  python_finder.find(function(found, err)
    if state ~= 'starting' or job then
      return
    end
    if not found then
      state, last_error = 'failed', tostring(err)
      -- Once: commands run as without the plugin until this is mended. Not
      -- while the install that mends it runs (a plugin manager's first
      -- install): it says how it went, and starts the host when done.
      if not require('ttyoffer.host.install').running then
        -- The line short enough to be read whole (and kept whole in
        -- :messages); why, whole, in :TtyOffer status.
        notify.once('no-python', 'no host (see :checkhealth ttyoffer)', nil, 'commands run plainly: ' .. last_error)
      end
      settle_waiters()
      return
    end
    python = found
    M.spawn(found, M.plugin_path)
  end)
  return true
end

--- @param with string the Python to run
--- @param path string the remote plugin's folder
function M.spawn(with, path)
  stderr = {}
  -- pynvim's host, deaf to notifications it does not handle (a GUI's or a
  -- plugin's rpcnotify(0, ...)): ttyoffer_nvim/pluginhost.py. ssl is kept
  -- out: asyncio imports it when it can (2.5 MB of an idle host), and the
  -- host never speaks TLS.
  local argv = {
    with,
    '-c',
    'import sys; sys.path = [p for p in sys.path if p != ""]; sys.modules["ssl"] = None; '
      .. 'sys.path.insert(0, sys.argv[1]); from ttyoffer_nvim.pluginhost import main; main(sys.argv[2])',
    require('ttyoffer.host.install').root,
    path,
  }
  local ok, started = pcall(originals.jobstart, argv, {
    rpc = true,
    on_stderr = function(_, data)
      for _, line in ipairs(data) do
        if line ~= '' then
          table.insert(stderr, line)
          if #stderr > 20 then
            table.remove(stderr, 1)
          end
        end
      end
    end,
    on_exit = function(job_id, code)
      if job_id ~= job then
        return
      end
      M.on_exit(code)
    end,
  })
  if not ok or started <= 0 then
    state, last_error = 'failed', 'cannot start ' .. with .. ': ' .. tostring(started)
    settle_waiters()
    return
  end
  job, chan = started, started
  pid = vim.fn.jobpid(started)
  -- Queued in the pipe until the host has loaded the plugin; the answer to
  -- the first refill (stock.add) is the signal that the host is up.
  pcall(
    vim.rpcnotify,
    started,
    protocol.method('configure', 'notify'),
    require('ttyoffer.config').current.blocked_timeout
  )
  tell('spawned', started)
  -- A host that loads but never answers (its plugin failed to import) must
  -- not stay "starting" for good.
  vim.defer_fn(function()
    if job == started and state == 'starting' then
      last_error = string.format('the host did not answer within %d s', START_TIMEOUT_MS / 1000)
      if #stderr > 0 then
        last_error = last_error .. ': ' .. stderr[#stderr]
      end
      start_timed_out = true
      vim.fn.jobstop(started) -- its on_exit marks it failed and tells the user
    end
  end, START_TIMEOUT_MS)
end

--- The host went away: drop everything that lived in it.
--- @param code integer
function M.on_exit(code)
  local was_ready = state == 'ready'
  state, chan, job, pid = 'stopped', nil, nil, nil
  tell('ended')
  if vim.v.exiting ~= vim.NIL then
    return
  end
  if start_timed_out then
    start_timed_out = false -- last_error says so already
  else
    last_error = string.format('the ttyoffer host exited (code %d)', code)
    if #stderr > 0 then
      last_error = last_error .. ': ' .. stderr[#stderr]
    end
  end
  if on_exit_handler then
    on_exit_handler(was_ready and last_error or nil)
  end
  if not was_ready then
    -- It died while starting: it stays down (no restart per spawn), and
    -- the user is told once where to look.
    state = 'failed'
    notify.once('no-host', 'no host (see :checkhealth ttyoffer)', nil, 'commands run plainly: ' .. last_error)
    settle_waiters()
    return
  end
  -- Come back for later commands.
  vim.defer_fn(function()
    if state == 'stopped' then
      M.start()
    end
  end, 200)
end

return M
