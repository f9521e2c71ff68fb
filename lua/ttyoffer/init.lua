-- ttyoffer: a private controlling terminal for every command the editor spawns,
-- shown in a float only when the command asks for something.
local M = {}

local config = require('ttyoffer.config')
local spawn = require('ttyoffer.spawn')
local host = require('ttyoffer.host')

--- @class ttyoffer.Record
--- @field id integer offer id
--- @field job integer job id
--- @field pid integer
--- @field title string
--- @field state 'armed'|'queued'|'shown'|'closed'
--- @field released boolean? the host is done with its pty
--- @field code integer? exit code, when the caller's on_exit told it

local records = {} --- @type table<integer, ttyoffer.Record>
local live = 0
M._skipped = {} --- @type table<string, integer> reasons commands ran without an offer

--- Configure the plugin. Errors (unknown key, wrong type) change nothing.
--- @param opts table?
function M.setup(opts)
  local merged = config.merge(opts, config.current)
  local was = config.current.enabled
  config.current = merged
  if was and not merged.enabled then
    host.drop_stock()
  end
  require('ttyoffer.highlights').define()
end

--- @return boolean
function M.enabled()
  return config.current.enabled
end

function M.enable()
  config.current.enabled = true
  host.start()
end

function M.disable()
  config.current.enabled = false
  host.drop_stock()
end

function M.toggle()
  if config.current.enabled then
    M.disable()
  else
    M.enable()
  end
end

--- @param id integer
--- @return ttyoffer.Record?
function M._record(id)
  return records[id]
end

-- A record lives while its pty does or its window is up, whichever is longer.
local function forget_if_done(record)
  if record.state == 'closed' and record.released then
    records[record.id] = nil
  end
end

--- @param id integer
--- @param state string
function M._set_state(id, state)
  local record = records[id]
  if record then
    record.state = state
    forget_if_done(record)
  end
end

--- Offers in flight: commands that hold a private terminal right now.
--- @return {id: integer, job: integer, pid: integer, title: string, state: string}[]
function M.offers()
  local list = {}
  for _, r in pairs(records) do
    if r.state ~= 'closed' then
      table.insert(list, { id = r.id, job = r.job, pid = r.pid, title = r.title, state = r.state })
    end
  end
  table.sort(list, function(a, b)
    return a.id < b.id
  end)
  return list
end

local function count_skip(reason)
  M._skipped[reason] = (M._skipped[reason] or 0) + 1
end

local function executable(cmd, opts)
  local program = cmd[1]
  if type(cmd) == 'string' then
    local shell = vim.o.shell
    if spawn.is_posix_shell(shell) then
      -- jobstart() checks 'shell' itself and raises E903 for the wrapped
      -- command as for the plain one.
      return true
    end
    program = vim.fn.split(shell)[1] -- others are started through /bin/sh
  end
  if type(program) ~= 'string' or program == '' then
    return false
  end
  if opts and opts.env and opts.env.PATH and not program:find('/') then
    return false -- a PATH of the caller's own: let jobstart() judge it
  end
  return vim.fn.executable(program) == 1
end

--- Same contract as |jobstart()|, plus the offer. Anything jobstart() would
--- refuse goes to it unchanged, so its errors and return values are stock.
--- @param cmd string|string[]
--- @param opts table?
--- @return integer job id, 0 for invalid arguments, -1 if not executable
function M.jobstart(cmd, opts)
  local function plain()
    -- Exactly the caller's call (an empty table of ours would not even be
    -- taken for a dictionary).
    if opts == nil then
      return vim.fn.jobstart(cmd)
    end
    return vim.fn.jobstart(cmd, opts)
  end
  local valid = (type(cmd) == 'string' and cmd ~= '') or (type(cmd) == 'table' and #cmd > 0)
  if not valid or (opts ~= nil and type(opts) ~= 'table') or not executable(cmd, opts) then
    -- jobstart() itself reports the error and returns 0 or -1, exactly as stock.
    return plain()
  end
  local reason = spawn.skip_reason(opts, {
    enabled = config.current.enabled,
    host_ready = host.ready(),
    at_capacity = live >= config.current.max_offers,
  })
  if reason == 'host not available' and config.current.enabled and host.state == 'stopped' then
    -- For the next command, after this one: starting a process takes time
    -- this command must not wait for.
    vim.schedule(host.start)
  end
  local offer_id, slave
  if not reason then
    offer_id, slave = host.take()
    if not offer_id then
      reason = 'no pty'
    end
  end
  if reason then
    count_skip(reason)
    return plain()
  end

  -- The host learns of the exit itself (bind below): no callback of ours per
  -- job, as Neovim keeps memory for every job that had one. A caller's own
  -- on_exit is wrapped, only to show the exit code in the window.
  local record --- @type ttyoffer.Record?
  local wrapped = opts
  if opts and type(opts.on_exit) == 'function' then
    wrapped = {}
    for k, v in pairs(opts) do
      wrapped[k] = v
    end
    local user_exit = opts.on_exit
    wrapped.on_exit = function(job_id, code, event)
      if record then
        record.code = code
      end
      return user_exit(job_id, code, event)
    end
  end
  local shell = type(cmd) == 'string' and { shell = vim.o.shell, shellcmdflag = vim.o.shellcmdflag } or nil
  local command = spawn.command(cmd, slave, shell, opts)
  local ok, job
  if wrapped == nil then
    ok, job = pcall(vim.fn.jobstart, command)
  else
    ok, job = pcall(vim.fn.jobstart, command, wrapped)
  end
  if not ok or job <= 0 then
    host.notify('ttyoffer_dismiss', offer_id)
    count_skip('spawn failed')
    -- Whatever went wrong, the command gets the start it would have had.
    return plain()
  end
  local pid = vim.fn.jobpid(job)
  record = { id = offer_id, job = job, pid = pid, title = spawn.title(cmd), state = 'armed' }
  records[offer_id] = record
  live = live + 1
  host.notify('ttyoffer_bind', offer_id, pid)
  return job
end

--- The host is done with these offers: their commands ended or declined.
--- @param ids integer[]
function M._on_released(ids)
  for _, id in ipairs(ids) do
    local record = records[id]
    if record and not record.released then
      record.released = true
      live = live - 1
      if record.state == 'armed' then
        record.state = 'closed'
      end
      forget_if_done(record)
    end
  end
end

--- Called when the host dies: the ptys it held are gone.
function M._host_lost()
  for _, r in pairs(records) do
    r.state, r.released = 'closed', true
    forget_if_done(r)
  end
  live = 0
end

--- Decline the prompt on screen, or the offer with the given id.
--- @param id integer?
--- @return boolean
function M.dismiss(id)
  return require('ttyoffer.presenter').dismiss(id)
end

--- A snapshot for `:TtyOffer status` and health checks.
function M.status()
  return {
    enabled = config.current.enabled,
    host = host.state,
    host_pid = host.pid,
    host_error = host.error,
    offers = M.offers(),
    live = live,
    max_offers = config.current.max_offers,
    spare = host.stock_size(),
    skipped = vim.deepcopy(M._skipped),
    shown = require('ttyoffer.presenter').current_id(),
    queued = require('ttyoffer.presenter').queued(),
  }
end

return M
