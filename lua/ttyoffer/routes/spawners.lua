-- The spawners with the offer: jobstart(), vim.system(), system() and
-- systemlist() with the same contract as Neovim's own, plus a private
-- controlling terminal for the command. What the routes serve (the Lua
-- stand-ins, :Bang); require('ttyoffer') gives them to plugins.
local M = {}

local config = require('ttyoffer.config')
local host = require('ttyoffer.host')
local install = require('ttyoffer.host.install')
local originals = require('ttyoffer.shared.originals')
local records = require('ttyoffer.offer.records')
local spawn = require('ttyoffer.routes.spawn')
local startable = require('ttyoffer.routes.startable')
local stopping = require('ttyoffer.routes.stopping')

--- The host, for the next command, after this one: starting a process
--- takes time this command must not wait for.
local function start_host_soon()
  vim.schedule(function()
    if config.current.enabled and host.state == 'stopped' then
      host.start()
      host.refill()
    end
  end)
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

-- The leader's name is read now (a spawn in a fast event could not).
install.leader_name()

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
    start_host_soon()
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
--- @param to_program boolean? the spawner signals the command's pid, not
---   its process group (vim.system()'s kill(), not jobstop())
--- @return (string|string[])? command, integer? offer_id
local function offered_command(cmd, opts, locate, to_program)
  local reason = skip_reason(opts)
  local program = not reason and locate(cmd, opts)
  if not reason and not program then
    return nil
  end
  -- The compiled leader when there is one; else the /bin/sh prologue.
  local leader = not reason and install.leader()
  local restore = {}
  if not reason and not leader then
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
    -- Only the /bin/sh prologue passes $PWD on (the leader leaves the
    -- environment as it is); vim.env cannot be read in a fast event.
    pwd = not leader and vim.uv.os_getenv('PWD') or nil,
    env_program = ENV_PROGRAM,
    restore = restore,
    leader = leader or nil,
    to_program = to_program,
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
  -- Not executable (''), or refused by the kernel: vim.system() raises
  -- ENOENT or EACCES for it.
  local path = vim.fn.exepath(program)
  if path == '' or startable.refusal(path, opts and opts.cwd) then
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
  local command, offer_id = offered_command(cmd, opts, locate_for_system, true)
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
  stopping.mind(obj, command)
  records.add({ id = offer_id, pid = obj.pid, cmd = cmd, state = 'armed' })
  host.notify('bind', offer_id, obj.pid)
  require('ttyoffer.offer.waiting').answerable_wait(obj)
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
  host.notify('release_unbound', offer_id)
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

return M
