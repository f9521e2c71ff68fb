-- The Python host process: started in the background, never waited for on the
-- spawn path, with its stock of spare ptys. It runs this checkout's remote
-- plugin (rplugin/python3/ttyoffer) in a process of its own, so no other
-- remote plugin can stall the relay and it can come back after a crash.
local M = {}

local layout = require('ttyoffer.layout')
local notify = require('ttyoffer.notify')
local protocol = require('ttyoffer.protocol')

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
local STOCK_LOW, STOCK_BATCH = 8, 16
-- The longest a spawn waits for spare ptys when a burst has used them up.
local TAKE_WAIT_MS = 100
-- Since when a refill went unanswered past TAKE_WAIT_MS (vim.uv.now()).
local unanswered_since = nil --- @type integer?
--- Times a spawn found no spare pty and had to ask the host and wait.
M.dry = 0
local refilling = false
-- Told when the host process ends (the editor quitting aside).
local on_exit_handler = nil --- @type fun(message: string?)?

--- The remote plugin the host runs: from this checkout, whatever the rplugin
--- manifest says (or whether :UpdateRemotePlugins was ever run).
M.plugin_path = require('ttyoffer.install').root .. '/rplugin/python3/ttyoffer'

-- The host needs both: pynvim to talk to the editor, pyte for the screen.
local REQUIRED = 'import neovim, pyte'
local CANDIDATES = { 'python3', 'python3.13', 'python3.12', 'python3.11', 'python3.10', 'python3.9', 'python' }
local NONE_FOUND = 'no Python 3 with pynvim and pyte: run :TtyOffer install (or set g:python3_host_prog)'

--- The Python the host runs with, without blocking: g:python3_host_prog when
--- set, else the plugin's own virtualenv (:TtyOffer install), else the first
--- Python 3 on PATH that has pynvim and pyte (probing runs each one, and the
--- editor must not wait for that after startup).
--- @param callback fun(python: string?, err: string?)
function M.find_python(callback)
  local prog = vim.g.python3_host_prog
  if prog and prog ~= '' then
    local path = vim.fn.exepath(vim.fn.expand(prog))
    if path == '' then
      return callback(nil, 'g:python3_host_prog (' .. prog .. ') is not executable')
    end
    return callback(path)
  end
  local own = require('ttyoffer.install').python()
  if own then
    return callback(own)
  end
  local function try(i)
    local exe = CANDIDATES[i]
    if not exe then
      return callback(nil, NONE_FOUND)
    end
    if vim.fn.executable(exe) ~= 1 then
      return try(i + 1)
    end
    vim.system(
      { exe, '-c', REQUIRED },
      {},
      vim.schedule_wrap(function(out)
        if out.code == 0 then
          callback(vim.fn.exepath(exe))
        else
          try(i + 1)
        end
      end)
    )
  end
  try(1)
end

local function request_stock()
  if refilling or M.state ~= 'ready' then
    return
  end
  refilling = true
  local height, width = layout.size()
  if not M.notify('refill', STOCK_BATCH, height, width) then
    refilling = false
  end
end

--- Freshly allocated ptys from the host (its `stock` event).
--- @param ptys {[1]: integer, [2]: string}[]
--- @param err string
function M.add_stock(ptys, err)
  refilling = false
  unanswered_since = nil
  local first = M.state ~= 'ready'
  M.state = 'ready'
  M.error = nil
  vim.list_extend(stock, ptys)
  if err ~= '' then
    notify.once('alloc:' .. err, err .. '; commands run without an offer until ptys can be had')
  end
  if first then
    vim.api.nvim_exec_autocmds('User', { pattern = 'TtyOfferHostReady', modeline = false })
  end
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
      -- Once: commands run as without the plugin until this is mended.
      notify.once('no-python', 'no host (see :checkhealth ttyoffer); commands run plainly: ' .. M.error)
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
  local argv = {
    python,
    '-c',
    'import sys; sys.path = [p for p in sys.path if p != ""]; import neovim; neovim.start_host()',
    path,
  }
  local ok, job = pcall(vim.fn.jobstart, argv, {
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
    return
  end
  M.job, M.chan = job, job
  M.pid = vim.fn.jobpid(job)
  -- Queued in the pipe until the host has loaded the plugin; its answer
  -- (on_stock) is the signal that the host is up.
  local height, width = layout.size()
  refilling = true
  pcall(vim.rpcnotify, job, protocol.method('refill', 'notify'), STOCK_BATCH, height, width)
end

--- The host went away: drop everything that lived in it.
--- @param code integer
function M.on_exit(code)
  local was_ready = M.state == 'ready'
  M.state, M.chan, M.job, M.pid = 'stopped', nil, nil, nil
  stock = {}
  refilling = false
  unanswered_since = nil
  if vim.v.exiting ~= vim.NIL then
    return
  end
  M.error = string.format('the ttyoffer host exited (code %d)', code)
  if #M.stderr > 0 then
    M.error = M.error .. ': ' .. M.stderr[#M.stderr]
  end
  if on_exit_handler then
    on_exit_handler(was_ready and M.error or nil)
  end
  -- Come back for later commands; a host that dies while starting stays down.
  if was_ready then
    vim.defer_fn(function()
      if M.state == 'stopped' then
        M.start()
      end
    end, 200)
  end
end

--- @return boolean
function M.ready()
  return M.state == 'ready'
end

--- Take a spare pty. When a burst of spawns has emptied the stock, the spawn
--- waits for the refill already asked for, but never longer than
--- TAKE_WAIT_MS: a host that does not answer (stopped, stalled, swapped out)
--- must not freeze the editor. Until it answers again, spawns do not wait at
--- all and run without an offer.
--- @return integer? id, string? slave
function M.take()
  if M.state ~= 'ready' then
    return nil
  end
  local entry = table.remove(stock)
  if not entry then
    M.dry = M.dry + 1
    request_stock()
    if unanswered_since or vim.in_fast_event() then
      return nil
    end
    -- The refill arrives as a notification, which vim.wait() serves (a
    -- blocking rpcrequest would have no bound).
    if not vim.wait(TAKE_WAIT_MS, function()
      return #stock > 0 or M.state ~= 'ready'
    end, 1) then
      unanswered_since = vim.uv.now()
      return nil
    end
    entry = table.remove(stock)
    if not entry then
      return nil
    end
  end
  if #stock < STOCK_LOW then
    request_stock()
  end
  return entry[1], entry[2]
end

--- Give back every spare pty (the offer was switched off).
function M.drop_stock()
  for _, entry in ipairs(stock) do
    M.notify('dismiss', entry[1])
  end
  stock = {}
end

--- Milliseconds the host has left a refill unanswered past the wait, or nil.
--- @return integer?
function M.unanswered_for()
  return unanswered_since and (vim.uv.now() - unanswered_since)
end

--- @return integer
function M.stock_size()
  return #stock
end

--- A notification to the host (a method of ttyoffer.protocol); false when
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

--- A request to the host (a method of ttyoffer.protocol); nil and the error
--- when it failed.
--- @param name string
function M.request(name, ...)
  local method = protocol.method(name, 'request')
  if M.state ~= 'ready' then
    return nil, 'host not running'
  end
  local ok, result = pcall(vim.rpcrequest, M.chan, method, ...)
  if not ok then
    return nil, tostring(result)
  end
  return result
end

return M
