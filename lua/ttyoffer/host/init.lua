-- The Python host process: started in the background, never waited for on the
-- spawn path, with its stock of spare ptys. It runs this checkout's remote
-- plugin (rplugin/python3/ttyoffer) in a process of its own, so no other
-- remote plugin can stall the relay and it can come back after a crash.
--
-- The part host/ (this module, protocol, knock, install): the process and the
-- wire to it. It requires only host/, shared/ and config; nothing here
-- requires back up the chain of parts (shared/ and config < host/ < offer/
-- < routes/ < runs/ < the entry points; scripts/require_graph.py).
local M = {}

local layout = require('ttyoffer.shared.layout')
local notify = require('ttyoffer.shared.notify')
local originals = require('ttyoffer.shared.originals')
local protocol = require('ttyoffer.host.protocol')

--- @type 'stopped'|'starting'|'ready'|'failed'
M.state = 'stopped'
M.chan = nil --- @type integer?
M.job = nil --- @type integer?
M.pid = nil --- @type integer?
M.error = nil --- @type string?
M.stderr = {} --- @type string[]
M.python = nil --- @type string? the Python it runs with

-- Spare ptys allocated ahead, so a spawn costs no round trip to the host.
local stock = {} --- @type {[1]: integer, [2]: string}[]
-- Ptys are the machine's, not the editor's: 4096 by default for every
-- terminal, tmux pane and ssh login (1024 of them reserved), so an idle
-- editor keeps STOCK_IDLE at most, refilled below half that. A burst of
-- spawns that never yields to the event loop (a plugin starting a job per
-- item in a loop) can only use what is in stock: past it, commands run
-- plainly; each time that happens the stock grows, up to STOCK_MAX, and it
-- goes back to STOCK_IDLE once no spawn has found it empty for
-- M.shrink_delay ms.
local STOCK_IDLE, STOCK_MAX = 8, 256
-- A stock that needs refilling again within BUSY_MS of the last refill
-- grows too, up to STOCK_BUSY: a busy editor asks the host less often
-- (each refill is a round trip and a message to the keeper).
local STOCK_BUSY, BUSY_MS = 32, 1000
-- What a refill brings the stock up to.
local stock_target = STOCK_IDLE
--- Milliseconds after the stock last ran dry before the spares above
--- STOCK_IDLE go back to the host (a setting of the tests; at most a minute).
M.shrink_delay = 30000
local shrink_timer = nil --- @type uv.uv_timer_t?
local last_growth = 0 -- vim.uv.now() when the stock last grew
-- How long a starting host may take to answer its first refill.
local START_TIMEOUT_MS = 15000
local start_timed_out = false
-- A refill not answered within this long means the host is not answering.
local ANSWER_MS = 1000
-- When the refill in flight was asked for (vim.uv.now()).
local refill_asked = nil --- @type integer?
--- Times a spawn found no spare pty (and ran without an offer).
M.dry = 0
--- Spares given back to the host as the stock shrank.
M.retired = 0
local refilling = false
-- Called once the host is ready, or cannot be (see when_ready).
local ready_waiters = {} --- @type fun(ready: boolean)[]
-- Set when a request went unanswered: the host is stopped or stalled, and
-- later requests say so at once instead of waiting again, until it answers.
local unanswered = nil --- @type {name: string, ms: integer}?
-- Told when the host process ends (the editor quitting aside).
local on_exit_handler = nil --- @type fun(message: string?)?

--- The remote plugin the host runs: from this checkout, whatever the rplugin
--- manifest says (or whether :UpdateRemotePlugins was ever run).
M.plugin_path = require('ttyoffer.host.install').root .. '/rplugin/python3/ttyoffer'

-- The host needs both: pynvim to talk to the editor, pyte for the screen.
local REQUIRED = 'import neovim, pyte'
local CANDIDATES = { 'python3', 'python3.13', 'python3.12', 'python3.11', 'python3.10', 'python3.9', 'python' }
local NONE_FOUND = 'no Python 3 with pynvim and pyte: run :TtyOffer install (or set g:python3_host_prog)'

--- Whether `python` can run the host: imports pynvim and pyte. Isolated
--- (-I) and run from /, so that no file of the editor's current folder is
--- ever imported by it.
--- @param python string
--- @param callback fun(ok: boolean)
local function usable(python, callback)
  originals.system(
    { python, '-I', '-c', REQUIRED },
    { cwd = '/' },
    vim.schedule_wrap(function(out)
      callback(out.code == 0)
    end)
  )
end

--- The Python the host runs with, without blocking: g:python3_host_prog when
--- set, else the plugin's own virtualenv (:TtyOffer install), else the first
--- Python 3 on PATH that has pynvim and pyte. Each is checked (the check runs
--- it, and the editor must not wait for that after startup).
--- @param callback fun(python: string?, err: string?)
function M.find_python(callback)
  local prog = vim.g.python3_host_prog
  if prog and prog ~= '' then
    local path = vim.fn.exepath(vim.fn.expand(prog))
    if path == '' then
      return callback(nil, 'g:python3_host_prog (' .. prog .. ') is not executable')
    end
    return usable(path, function(ok)
      if ok then
        return callback(path)
      end
      callback(
        nil,
        'g:python3_host_prog (' .. path .. ') cannot import pynvim and pyte: install them there, or unset it'
      )
    end)
  end
  local own = require('ttyoffer.host.install').python()
  if own then
    return usable(own, function(ok)
      if ok then
        return callback(own)
      end
      callback(nil, "the plugin's Python (" .. own .. ') cannot import pynvim and pyte: run :TtyOffer install')
    end)
  end
  local function try(i)
    local exe = CANDIDATES[i]
    if not exe then
      return callback(nil, NONE_FOUND)
    end
    if vim.fn.executable(exe) ~= 1 then
      return try(i + 1)
    end
    usable(exe, function(ok)
      if ok then
        return callback(vim.fn.exepath(exe))
      end
      try(i + 1)
    end)
  end
  try(1)
end

local grow -- below

local function request_stock()
  if vim.in_fast_event() then
    -- A spawn from a luv callback: the editor's size is read on the loop.
    return vim.schedule(request_stock)
  end
  if refilling or M.state ~= 'ready' then
    return
  end
  local now = vim.uv.now()
  if refill_asked and now - refill_asked < BUSY_MS and stock_target < STOCK_BUSY then
    grow(STOCK_BUSY)
  end
  local wanted = stock_target - #stock
  if wanted <= 0 then
    return
  end
  refilling = true
  refill_asked = now
  local height, width = layout.size()
  if not M.notify('refill', wanted, height, width) then
    refilling = false
  end
end

--- Spares above the target go back to the host, which closes them.
local function retire_surplus()
  if #stock <= stock_target then
    return
  end
  local surplus = {}
  while #stock > stock_target do
    table.insert(surplus, table.remove(stock)[1])
  end
  M.retired = M.retired + #surplus
  M.notify('retire', surplus)
end

--- The spares above STOCK_IDLE go back to the host, which closes them;
--- unless it grew again within shrink_delay.
local function shrink()
  local since = vim.uv.now() - last_growth
  if since < M.shrink_delay then
    shrink_timer:start(M.shrink_delay - since, 0, vim.schedule_wrap(shrink))
    return
  end
  stock_target = STOCK_IDLE
  retire_surplus()
end

--- The stock grows (up to `limit`), and shrinks back later.
--- @param limit integer
function grow(limit)
  last_growth = vim.uv.now()
  stock_target = math.max(stock_target, math.min(stock_target * 2, limit))
  if not shrink_timer then
    shrink_timer = assert(vim.uv.new_timer())
  end
  if not shrink_timer:is_active() then
    shrink_timer:start(M.shrink_delay, 0, vim.schedule_wrap(shrink))
  end
end

--- A spawn found the stock empty.
local function ran_dry()
  M.dry = M.dry + 1
  grow(STOCK_MAX)
end

--- Call everything that waited for the host, with whether it is ready.
local function settle_waiters()
  local waiters = ready_waiters
  ready_waiters = {}
  local ready = M.state == 'ready'
  for _, fn in ipairs(waiters) do
    fn(ready)
  end
end

--- `fn(ready)` once the host is ready (true), or has failed or not become
--- ready within `timeout` ms (false); at once when it is not starting.
--- @param timeout integer
--- @param fn fun(ready: boolean)
function M.when_ready(timeout, fn)
  if M.state ~= 'starting' then
    return fn(M.state == 'ready')
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
    once(M.state == 'ready')
  end, timeout)
end

--- Freshly allocated ptys from the host (its `stock` event).
--- @param ptys {[1]: integer, [2]: string}[]
--- @param err string
function M.add_stock(ptys, err)
  refilling = false
  local first = M.state ~= 'ready'
  M.state = 'ready'
  M.error = nil
  vim.list_extend(stock, ptys)
  -- A refill asked for before the stock shrank back brings too many; one
  -- asked for before a burst grew it, too few.
  retire_surplus()
  if #stock < stock_target / 2 then
    request_stock()
  end
  if err ~= '' then
    notify.once('alloc:' .. err, err .. '; commands run without an offer until ptys can be had')
  end
  if first then
    vim.api.nvim_exec_autocmds('User', { pattern = 'TtyOfferHostReady', modeline = false })
    settle_waiters()
  end
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
  if M.state == 'ready' or M.state == 'starting' then
    return true
  end
  M.state, M.error = 'starting', nil
  M.find_python(function(python, err)
    if M.state ~= 'starting' or M.job then
      return
    end
    if not python then
      M.state, M.error = 'failed', tostring(err)
      -- Once: commands run as without the plugin until this is mended. Not
      -- while the install that mends it runs (a plugin manager's first
      -- install): it says how it went, and starts the host when done.
      if not require('ttyoffer.host.install').running then
        -- The line short enough to be read whole (and kept whole in
        -- :messages); why, whole, in :TtyOffer status.
        notify.once('no-python', 'no host (see :checkhealth ttyoffer)', nil, 'commands run plainly: ' .. M.error)
      end
      settle_waiters()
      return
    end
    M.python = python
    M.spawn(python, M.plugin_path)
  end)
  return true
end

--- @param python string
--- @param path string the remote plugin's folder
function M.spawn(python, path)
  M.stderr = {}
  unanswered = nil
  -- pynvim's host, deaf to notifications it does not handle (a GUI's or a
  -- plugin's rpcnotify(0, ...)): ttyoffer_nvim/pluginhost.py. ssl is kept
  -- out: asyncio imports it when it can (2.5 MB of an idle host), and the
  -- host never speaks TLS.
  local argv = {
    python,
    '-c',
    'import sys; sys.path = [p for p in sys.path if p != ""]; sys.modules["ssl"] = None; '
      .. 'sys.path.insert(0, sys.argv[1]); from ttyoffer_nvim.pluginhost import main; main(sys.argv[2])',
    require('ttyoffer.host.install').root,
    path,
  }
  local ok, job = pcall(originals.jobstart, argv, {
    rpc = true,
    on_stderr = function(_, data)
      for _, line in ipairs(data) do
        if line ~= '' then
          table.insert(M.stderr, line)
          if #M.stderr > 20 then
            table.remove(M.stderr, 1)
          end
        end
      end
    end,
    on_exit = function(job_id, code)
      if job_id ~= M.job then
        return
      end
      M.on_exit(code)
    end,
  })
  if not ok or job <= 0 then
    M.state, M.error = 'failed', 'cannot start ' .. python .. ': ' .. tostring(job)
    settle_waiters()
    return
  end
  M.job, M.chan = job, job
  M.pid = vim.fn.jobpid(job)
  -- Queued in the pipe until the host has loaded the plugin; its answer
  -- (on_stock) is the signal that the host is up.
  local height, width = layout.size()
  refilling = true
  pcall(vim.rpcnotify, job, protocol.method('configure', 'notify'), require('ttyoffer.config').current.blocked_timeout)
  pcall(vim.rpcnotify, job, protocol.method('refill', 'notify'), stock_target, height, width)
  -- A host that loads but never answers (its plugin failed to import) must
  -- not stay "starting" for good.
  vim.defer_fn(function()
    if M.job == job and M.state == 'starting' then
      M.error = string.format('the host did not answer within %d s', START_TIMEOUT_MS / 1000)
      if #M.stderr > 0 then
        M.error = M.error .. ': ' .. M.stderr[#M.stderr]
      end
      start_timed_out = true
      vim.fn.jobstop(job) -- its on_exit marks it failed and tells the user
    end
  end, START_TIMEOUT_MS)
end

--- The host went away: drop everything that lived in it.
--- @param code integer
function M.on_exit(code)
  local was_ready = M.state == 'ready'
  M.state, M.chan, M.job, M.pid = 'stopped', nil, nil, nil
  stock = {}
  stock_target = STOCK_IDLE
  refilling = false
  if vim.v.exiting ~= vim.NIL then
    return
  end
  if start_timed_out then
    start_timed_out = false -- M.error says so already
  else
    M.error = string.format('the ttyoffer host exited (code %d)', code)
    if #M.stderr > 0 then
      M.error = M.error .. ': ' .. M.stderr[#M.stderr]
    end
  end
  if on_exit_handler then
    on_exit_handler(was_ready and M.error or nil)
  end
  if not was_ready then
    -- It died while starting: it stays down (no restart per spawn), and
    -- the user is told once where to look.
    M.state = 'failed'
    notify.once('no-host', 'no host (see :checkhealth ttyoffer)', nil, 'commands run plainly: ' .. M.error)
    settle_waiters()
    return
  end
  -- Come back for later commands.
  vim.defer_fn(function()
    if M.state == 'stopped' then
      M.start()
    end
  end, 200)
end

--- @return boolean
function M.ready()
  return M.state == 'ready'
end

--- Take a spare pty, or nil when the stock is empty: the command then runs
--- plainly. Never waits: a spawn must not block on a host that may be
--- stopped or stalled, nor run the editor's other events inside the
--- caller's jobstart(). (A burst that empties the stock has not yielded to
--- the event loop, so no prompt of it could have opened before it ended
--- anyway.)
--- @return integer? id, string? slave
function M.take()
  if M.state ~= 'ready' then
    return nil
  end
  local entry = table.remove(stock)
  if not entry then
    ran_dry()
  end
  if #stock < stock_target / 2 then
    request_stock()
  end
  if not entry then
    return nil
  end
  return entry[1], entry[2]
end

--- Ask for spare ptys unless there are enough or some are on their way.
function M.refill()
  if #stock < stock_target / 2 then
    request_stock()
  end
end

--- Milliseconds the host has left a refill unanswered, when that is long
--- enough to say so (it is stopped or stalled), or nil.
--- @return integer?
function M.unanswered_for()
  local waited = refilling and refill_asked and (vim.uv.now() - refill_asked)
  return waited and waited >= ANSWER_MS and waited or nil
end

--- @return integer
function M.stock_size()
  return #stock
end

--- A notification to the host (a method of ttyoffer.host.protocol); false when
--- it could not be sent.
--- @param name string
--- @return boolean
function M.notify(name, ...)
  local method = protocol.method(name, 'notify')
  if not M.chan then
    return false
  end
  return (pcall(vim.rpcnotify, M.chan, method, ...))
end

-- Requests in flight (host.request): token -> what came back.
local asked = {} --- @type table<integer, {done: boolean, result: any, error: string?}>
local next_token = 0
--- Milliseconds a request waits for its answer unless it names its own.
M.REQUEST_MS = 500

local function no_answer(name, ms)
  return ('the host did not answer %s within %d ms (is it stopped? see :checkhealth ttyoffer)'):format(name, ms)
end

--- A request to the host (a method of ttyoffer.host.protocol), waited for at most
--- `timeout` ms: its value; or nil and why (no answer in time, a failure,
--- or the host's refusal: then a third value, true).
--- Sent as a notification (`ask`) and answered by the `answer` event: the
--- wait is vim.wait's, bounded and serving the editor's events (CTRL-C ends
--- it), never rpcrequest's, which waits on a stopped host for good.
--- @param timeout integer
--- @param name string
function M.request_within(timeout, name, ...)
  protocol.method(name, 'request') -- a name outside the protocol fails here
  if M.state ~= 'ready' then
    return nil, 'host not running'
  end
  if unanswered then
    return nil, no_answer(unanswered.name, unanswered.ms)
  end
  next_token = next_token + 1
  local token = next_token
  local slot = { done = false }
  asked[token] = slot
  if not M.notify('ask', token, name, { ... }) then
    asked[token] = nil
    return nil, 'the host cannot be reached'
  end
  local _, status = vim.wait(timeout, function()
    return slot.done
  end, 10)
  asked[token] = nil
  if not slot.done then
    if status == -2 then
      return nil, 'interrupted'
    end
    unanswered = { name = name, ms = timeout }
    return nil, no_answer(name, timeout)
  end
  if slot.error and slot.error ~= '' then
    return nil, slot.error
  end
  -- One rule for every request: a table, or {error = why} when the host
  -- refuses (a bad name, a folder not ours, what tmux said).
  if type(slot.result) == 'table' and slot.result.error ~= nil then
    return nil, tostring(slot.result.error), true
  end
  return slot.result
end

--- A request waited for at most REQUEST_MS; see request_within.
--- @param name string
function M.request(name, ...)
  return M.request_within(M.REQUEST_MS, name, ...)
end

--- The host's `answer`: a request's value, or why there is none.
--- @param token integer
--- @param result any
--- @param error string
function M.answered(token, result, error)
  unanswered = nil
  local slot = asked[token]
  if slot then
    slot.done, slot.result, slot.error = true, result, error
  end
end

return M
