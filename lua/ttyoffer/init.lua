-- ttyoffer: a private controlling terminal for every command the editor spawns,
-- shown in a float only when the command asks for something.
-- The public façade, at the top of the chain of parts: shared/ (and config)
-- < host/ < offer/ < routes/ < runs/ < the entry points (this, command,
-- health, events). Each requires only its own part and those below it.
if require('ttyoffer.shared.support').problem() then
  return require('ttyoffer.shared.inactive')
end

local M = {}

local config = require('ttyoffer.config')
local highlights = require('ttyoffer.shared.highlights')
local host = require('ttyoffer.host')
local labels = require('ttyoffer.offer.labels')
local leader = require('ttyoffer.host.leader')
local notify = require('ttyoffer.shared.notify')
local prompts = require('ttyoffer.offer.prompts')
local records = require('ttyoffer.offer.records')
local routes = require('ttyoffer.routes')
local spawners = require('ttyoffer.routes.spawners')
local typing = require('ttyoffer.offer.typing')

-- Whether start() ran: setup() after it applies the routes at once.
local started = false

--- Configure the plugin. Errors (unknown key, wrong type) change nothing.
--- @param opts table?
function M.setup(opts)
  config.current = config.merge(opts, config.current)
  highlights.define()
  if started then
    routes.apply(spawners)
    host.notify('configure', config.current.blocked_timeout)
  else
    routes.early()
  end
end

--- @return boolean
function M.enabled()
  return config.current.enabled
end

--- The host process ended: its windows go, its records close; when that
--- was not expected, the user is told once, in a line short enough to be
--- read whole, what becomes of the commands running: the keeper hangs up
--- any that asks for input from now on (nobody could see the question).
--- @param message string?
local function host_exited(message)
  prompts.host_lost()
  records.host_lost()
  if package.loaded['ttyoffer.runs'] then
    require('ttyoffer.runs').host_lost()
  end
  if message then
    notify.once(
      'host-exit',
      'host exited: commands that ask for input now are hung up',
      nil,
      message .. '; new commands run without an offer until it is back'
    )
  end
end

host.set_exit_handler(host_exited)

--- Start what runs in the background: the host (without waiting for it)
--- and the note of when the user types. Called once the editor has started.
function M.start()
  started = true
  highlights.define()
  typing.watch()
  if config.current.enabled then
    host.start(host_exited)
    host.refill() -- after :TtyOffer off gave the spares back
  end
  routes.apply(spawners)
end

--- At startup: all of start() but the host, which starts at the first
--- spawn (skip_reason), or at once for :Bang and `:!`, or after
--- `host_start_delay`, whichever comes first. An editor that quits before
--- then and spawned nothing never starts Python.
function M._start_soon()
  local delay = config.current.host_start_delay
  if delay == 0 then
    return M.start()
  end
  started = true
  highlights.define()
  typing.watch()
  routes.apply(spawners)
  vim.defer_fn(function()
    if config.current.enabled and host.get_state() == 'stopped' then
      M.start()
    end
  end, delay)
end

function M.enable()
  config.current.enabled = true
  M.start()
end

--- Off: commands run as in stock Neovim. The spare ptys stay with the host
--- (no command sees them), so that on is instant again.
function M.disable()
  config.current.enabled = false
  routes.apply(spawners)
end

function M.toggle()
  if config.current.enabled then
    M.disable()
  else
    M.enable()
  end
end

--- Offers in flight: commands that hold a private terminal right now.
--- @return {id: integer, job: integer, pid: integer, title: string, state: ttyoffer.State}[]
function M.offers()
  return vim.tbl_map(function(r)
    return { id = r.id, job = r.job, pid = r.pid, title = labels.command(r.id), state = r.state }
  end, records.list())
end

-- The spawners with the offer (see ttyoffer.routes.spawners).
M.jobstart = spawners.jobstart
M.system = spawners.system
M.fn_system = spawners.fn_system
M.systemlist = spawners.systemlist

--- A private terminal for a process the plugin did not start, bound to it:
--- its prompt window opens when something writes to the terminal, and the
--- terminal goes when the process ends. Called by git's gpg.program
--- (libexec/ttyoffer-gpg) over $NVIM, for a gpg whose own terminal nobody
--- can answer on, and by git's core.sshCommand (libexec/ttyoffer-ssh) for
--- an ssh with no terminal. '' when none can be had (off, no host, a
--- process not of this editor, at max_offers; see ttyoffer.lease).
--- @param pid integer
--- @param what string? 'gpg' (the default) or 'ssh': what will ask
--- @return string slave path or ''
function M.lease(pid, what)
  if config.current.enabled and host.get_state() == 'stopped' then
    vim.schedule(M.start) -- asked before host_start_delay: for the next one
  end
  return require('ttyoffer.routes.lease').grant(pid, what)
end

--- Run one interactive program in a pane of its own; see :help ttyoffer.run().
--- @param opts table
--- @return ttyoffer.Run
function M.run(opts)
  return require('ttyoffer.runs').run(opts)
end

--- Decline the prompt on screen, or the offer with the given id.
--- @param id integer?
--- @return boolean
function M.dismiss(id)
  return prompts.dismiss(id)
end

--- Decline the prompt on screen and every one waiting behind it, and the
--- same questions for the rest of the burst; see :help ttyoffer-storm.
--- @return integer how many were declined
function M.dismiss_all()
  return prompts.dismiss_all()
end

--- A snapshot for `:TtyOffer status` and health checks.
function M.status()
  return {
    enabled = config.current.enabled,
    host = host.get_state(),
    host_pid = host.get_pid(),
    host_error = host.get_error(),
    host_unanswered_ms = host.unanswered_for(),
    routes = routes.active(),
    offers = M.offers(),
    live = records.live(),
    max_offers = config.current.max_offers,
    spare = host.stock_size(),
    leader = leader.current(),
    leader_problem = leader.problem,
    skipped = records.skip_counts(),
    shown = prompts.current_id(),
    queued = prompts.queued(),
    notices = vim.deepcopy(notify.recent),
  }
end

return M
