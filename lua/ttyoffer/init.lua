-- ttyoffer: a private controlling terminal for every command the editor spawns,
-- shown in a float only when the command asks for something.
if require('ttyoffer.support').problem() then
  return require('ttyoffer.inactive')
end

local M = {}

local config = require('ttyoffer.config')
local highlights = require('ttyoffer.highlights')
local host = require('ttyoffer.host')
local notify = require('ttyoffer.notify')
local originals = require('ttyoffer.originals')
local prompts = require('ttyoffer.prompts')
local records = require('ttyoffer.records')
local routes = require('ttyoffer.routes')
local spawn = require('ttyoffer.spawn')
local startable = require('ttyoffer.startable')
local title = require('ttyoffer.title')
local typing = require('ttyoffer.typing')

-- Whether start() ran: setup() after it applies the routes at once.
local started = false

--- Configure the plugin. Errors (unknown key, wrong type) change nothing.
--- @param opts table?
function M.setup(opts)
  config.current = config.merge(opts, config.current)
  highlights.define()
  if started then
    routes.apply(M)
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
  routes.apply(M)
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
  routes.apply(M)
  vim.defer_fn(function()
    if config.current.enabled and host.state == 'stopped' then
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
  routes.apply(M)
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
    r.title = r.title or title.of_command(r.cmd)
    return { id = r.id, job = r.job, pid = r.pid, title = r.title, state = r.state }
  end, records.list())
end

--- The full path of the program a command runs, as jobstart() finds it
--- (and puts it in argv[0]): for a string command, the 'shell' that runs
--- it; nil when jobstart() must judge (and raise its E903 or return -1).
--- @return string?
local function resolve(cmd, opts)
  local program = cmd[1]
  if type(cmd) == 'string' then
    program = vim.fn.split(vim.o.shell)[1]
  end
  if type(program) ~= 'string' or program == '' then
    return nil
  end
  if opts and opts.env and opts.env.PATH and not program:find('/') then
    return nil -- a PATH of the caller's own: let jobstart() judge it
  end
  local path = vim.fn.exepath(program)
  if path == '' or startable.refusal(path, opts and opts.cwd) then
    return nil -- jobstart() raises its own E903 for it, system() -1
  end
  return path
end

-- env(1), which puts back what /bin/sh drops from a list command's
-- environment (names that are not shell identifiers).
local ENV_PROGRAM = vim.fn.exepath('env')

--- Why this command gets no offer, or nil: what is known before looking
--- at the command (cheap, so that a spawn that gets none pays little).
--- @param opts table?
--- @return string?
local function skip_reason(opts)
  local reason = spawn.skip_reason(opts, {
    enabled = config.current.enabled,
    host_ready = host.ready(),
    at_capacity = records.live() >= config.current.max_offers,
  })
  if reason == 'host not available' and config.current.enabled and host.state == 'stopped' then
    -- For the next command, after this one: starting a process takes time
    -- this command must not wait for.
    vim.schedule(M.start)
  end
  return reason
end

--- The command to spawn instead of `cmd`, with its offer; nil when `cmd`
--- runs as it is (the reason is counted for `:TtyOffer status`, or there is
--- none: the spawner itself must judge the command and report its error).
--- @param cmd string|string[]
--- @param opts table? jobstart()-style options (env, clear_env, detach…)
--- @param locate fun(cmd: string|string[], opts: table?): string?
---   the program as the spawner finds it (resolve() or the like), nil when
---   the spawner must judge the command
--- @return (string|string[])? command, integer? offer_id
local function offered_command(cmd, opts, locate)
  local reason = skip_reason(opts)
  local program = not reason and locate(cmd, opts)
  if not reason and not program then
    return nil
  end
  local restore = {}
  if not reason then
    restore = spawn.entries_sh_would_drop(opts, vim.uv.os_environ())
    if #restore > 0 and (ENV_PROGRAM == '' or program:find('=', 1, true)) then
      -- env(1) would be needed, and is missing or would take the program
      -- for one more entry.
      reason = 'environment names /bin/sh would drop'
    end
  end
  local offer_id, slave
  if not reason then
    offer_id, slave = host.take()
    reason = not offer_id and 'no pty' or nil
  end
  if reason then
    records.skipped(reason)
    return nil
  end
  local shell = type(cmd) == 'string' and { shell = vim.o.shell, shellcmdflag = vim.o.shellcmdflag } or nil
  local command = spawn.command(cmd, slave, shell, opts, {
    -- A string's 'shell' goes in argv[0] as written there, as stock has it.
    program = type(cmd) ~= 'string' and program or nil,
    pwd = vim.uv.os_getenv('PWD'), -- vim.env cannot be read in a fast event
    env_program = ENV_PROGRAM,
    restore = restore,
  })
  return command, offer_id
end

--- The caller's options, with its on_exit (if any) wrapped to note the exit
--- code for the window. The host learns of the exit itself (bind): no
--- callback of ours per job, as Neovim keeps memory for every job that had
--- one.
--- @param opts table?
--- @param note_code fun(code: integer)
--- @return table?
local function with_exit_noted(opts, note_code)
  if not (opts and type(opts.on_exit) == 'function') then
    return opts
  end
  local wrapped = {}
  for k, v in pairs(opts) do
    wrapped[k] = v
  end
  local user_exit = opts.on_exit
  wrapped.on_exit = function(job_id, code, event)
    note_code(code)
    return user_exit(job_id, code, event)
  end
  return wrapped
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
      return originals.jobstart(cmd)
    end
    return originals.jobstart(cmd, opts)
  end
  local valid = (type(cmd) == 'string' and cmd ~= '') or (type(cmd) == 'table' and #cmd > 0)
  if not (valid and (opts == nil or type(opts) == 'table')) or vim.in_fast_event() then
    -- jobstart() itself reports the error and returns 0 or -1, exactly as
    -- stock (in a fast event: its own E5560).
    return plain()
  end
  local command, offer_id = offered_command(cmd, opts, resolve)
  if not command then
    return plain()
  end
  local record --- @type ttyoffer.Record?
  local wrapped = with_exit_noted(opts, function(code)
    if record then
      record.code = code
    end
  end)
  local ok, job
  -- No options of ours when the caller gave none: Neovim keeps memory for
  -- every job given an options dictionary, even an empty one (measured:
  -- +5.9 MB over 10,000 commands).
  if wrapped == nil then
    ok, job = pcall(originals.jobstart, command)
  else
    ok, job = pcall(originals.jobstart, command, wrapped)
  end
  if not ok or job <= 0 then
    host.notify('dismiss', offer_id)
    records.skipped('spawn failed')
    -- Whatever went wrong, the command gets the start it would have had.
    return plain()
  end
  local pid = vim.fn.jobpid(job)
  -- The title is made from `cmd` when something shows it, not per spawn.
  record = { id = offer_id, job = job, pid = pid, cmd = cmd, state = 'armed' }
  records.add(record)
  host.notify('bind', offer_id, pid)
  return job
end

--- The program of a vim.system() command, as given (uv.spawn puts it in
--- argv[0] as it is, and looks it up on the command's own PATH, from its
--- `cwd`); nil when vim.system() must judge it (and raise its error).
--- @param cmd string[]
--- @param opts table?
--- @return string?
local function locate_for_system(cmd, opts)
  local program = cmd[1]
  if type(program) ~= 'string' or program == '' then
    return nil
  end
  if opts and opts.cwd ~= nil and (type(opts.cwd) ~= 'string' or not vim.uv.fs_stat(opts.cwd)) then
    return nil
  end
  if program:find('/') then
    -- A relative path is the command's to find from its `cwd`.
    if program:sub(1, 1) ~= '/' and opts and opts.cwd then
      return nil
    end
  elseif opts and type(opts.env) == 'table' and opts.env.PATH ~= nil then
    return nil
  end
  if vim.fn.executable(program) ~= 1 then
    return nil
  end
  -- vim.system() raises ENOENT or EACCES for a program the kernel refuses.
  if startable.refusal(vim.fn.exepath(program), opts and opts.cwd) then
    return nil
  end
  return program
end

--- Same contract as |vim.system()|, plus the offer: same object, same
--- callbacks, same errors. The command is started in a session of its own
--- (uv.spawn's `detached`), as jobstart() does, for the offered terminal to
--- become its controlling one. Its `wait()` lets the user answer a prompt
--- that opens while the caller waits.
--- @param cmd string[]
--- @param opts vim.SystemOpts?
--- @param on_exit fun(out: vim.SystemCompleted)?
--- @return vim.SystemObj
function M.system(cmd, opts, on_exit)
  if type(opts) == 'function' and on_exit == nil then
    on_exit, opts = opts, nil
  end
  local function plain()
    return originals.system(cmd, opts, on_exit)
  end
  local valid = type(cmd) == 'table' and #cmd > 0 and (opts == nil or type(opts) == 'table')
  if not valid or (on_exit ~= nil and type(on_exit) ~= 'function') then
    return plain()
  end
  local command, offer_id = offered_command(cmd, opts, locate_for_system)
  if not command then
    return plain()
  end
  local own_session = vim.tbl_extend('force', opts or {}, { detach = true })
  local ok, obj = pcall(originals.system, command, own_session, on_exit)
  if not ok then
    host.notify('dismiss', offer_id)
    records.skipped('spawn failed')
    return plain()
  end
  obj.cmd = cmd
  records.add({ id = offer_id, pid = obj.pid, cmd = cmd, state = 'armed' })
  host.notify('bind', offer_id, obj.pid)
  require('ttyoffer.waiting').answerable_wait(obj)
  return obj
end

--- system() and systemlist() with the offer: `stock_fn` is the original.
--- The editor serves nothing while they run, so a prompt cannot be shown:
--- the command is hung up when it asks (after `blocked_timeout`) and the
--- user is told what asked and how to run it so it can be answered. Without
--- the terminal it would have failed at once, or asked on the editor's.
local function run_blocking(stock_fn, cmd, ...)
  local valid = (type(cmd) == 'string' and cmd ~= '') or (type(cmd) == 'table' and #cmd > 0)
  local command, offer_id
  -- In a fast event the stock function raises its own E5560.
  if valid and not vim.in_fast_event() then
    command, offer_id = offered_command(cmd, nil, resolve)
  end
  if not command then
    return stock_fn(cmd, ...)
  end
  records.add({ id = offer_id, pid = 0, cmd = cmd, state = 'armed' })
  local ok, result = pcall(stock_fn, command, ...)
  -- Its pid was never known: the host learns of the end from here, and the
  -- record goes with the host's `released`, after what it sent before.
  host.notify('release', offer_id)
  if not ok then
    error(result, 0)
  end
  return result
end

--- Same contract as |system()|, plus the offer (see run_blocking).
function M.fn_system(cmd, ...)
  return run_blocking(originals.fn_system, cmd, ...)
end

--- Same contract as |systemlist()|, plus the offer (see run_blocking).
function M.systemlist(cmd, ...)
  return run_blocking(originals.systemlist, cmd, ...)
end

--- A private terminal for a process the plugin did not start, bound to it:
--- its prompt window opens when something writes to the terminal, and the
--- terminal goes when the process ends. Called by git's gpg.program
--- (libexec/ttyoffer-gpg) over $NVIM, for a gpg whose own terminal nobody
--- can answer on. '' when none can be had (off, no host, a process not of
--- this editor, at max_offers; see ttyoffer.lease).
--- @param pid integer
--- @return string slave path or ''
function M.lease(pid)
  if config.current.enabled and host.state == 'stopped' then
    vim.schedule(M.start) -- asked before host_start_delay: for the next one
  end
  return require('ttyoffer.lease').grant(pid)
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

--- A snapshot for `:TtyOffer status` and health checks.
function M.status()
  return {
    enabled = config.current.enabled,
    host = host.state,
    host_pid = host.pid,
    host_error = host.error,
    host_unanswered_ms = host.unanswered_for(),
    routes = routes.active(),
    offers = M.offers(),
    live = records.live(),
    max_offers = config.current.max_offers,
    spare = host.stock_size(),
    skipped = records.skip_counts(),
    shown = prompts.current_id(),
    queued = prompts.queued(),
    notices = vim.deepcopy(notify.recent),
  }
end

return M
