-- The spawners with the offer: jobstart(), vim.system(), system(),
-- systemlist() and vim.uv.spawn() (routes/uv_spawn.lua) with the same
-- contract as Neovim's own, plus a private controlling terminal for the
-- command. What the routes serve (the Lua stand-ins, :Bang);
-- require('ttyoffer') gives them to plugins.
local M = {}

local host = require('ttyoffer.host')
local originals = require('ttyoffer.shared.originals')
local records = require('ttyoffer.offer.records')
local offered = require('ttyoffer.routes.offered')
local shell_option = require('ttyoffer.shared.shell_option')
local startable = require('ttyoffer.routes.startable')
local stopping = require('ttyoffer.routes.stopping')

--- The program a command runs, as jobstart() or system() finds it: a list's
--- on the editor's $PATH, from the editor's folder, and its full path goes
--- in argv[0]; a string's 'shell' as written, which the child finds (see
--- startable.find_in_child). nil when jobstart() must judge (and raise its
--- E903 or return -1).
--- @return string?
local function resolve(cmd, opts)
  if type(cmd) == 'string' then
    return startable.find_in_child(shell_option.words(vim.o.shell)[1], opts)
  end
  local program = cmd[1]
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
  local command, offer_id = offered.command(cmd, opts, resolve)
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
--- argv[0] as it is, and its child looks it up: startable.find_in_child);
--- nil when vim.system() must judge it (and raise its ENOENT or EACCES).
--- @param cmd string[]
--- @param opts table?
--- @return string?
local function locate_for_system(cmd, opts)
  return startable.find_in_child(cmd[1], opts)
end

--- The caller's `env` for vim.system(), with GPG_TTY naming `slave` and
--- TERM when the command would have none (as the offer sets them).
--- vim.system() puts it over the editor's environment (unless
--- `clear_env`), as it does the caller's own.
--- @param opts table
--- @param slave string
--- @return table
local function env_with_gpg_tty(opts, slave)
  local env = {}
  for name, value in pairs(type(opts.env) == 'table' and opts.env or {}) do
    env[name] = value
  end
  env.GPG_TTY = slave
  local term = env.TERM
  if term == nil and not opts.clear_env then
    term = vim.uv.os_getenv('TERM')
  end
  if term == nil or term == '' then
    env.TERM = 'xterm-256color'
  end
  return env
end

--- vim.system() for a command whose caller feeds its stdin up front (a
--- string or a list): what it reads comes from there. A program that
--- prefers /dev/tty and reads its stdin when there is none (Python's
--- getpass, ssh-keygen -y) must read what was fed, as in stock, so the
--- command gets no controlling terminal and runs in the editor's session,
--- exactly as stock starts it. Only $GPG_TTY (and TERM, when it would have
--- none) names a private terminal: gpg never reads its passphrase from
--- stdin, and its pinentry (git's gpg.program too) asks there, in the
--- window, which the wait serves.
--- @param plain fun(): vim.SystemObj the stock call
local function fed_system(cmd, opts, on_exit, plain)
  local reason = offered.skip_reason(opts)
  if not reason and type(opts.env) == 'table' and opts.env.GPG_TTY ~= nil then
    reason = 'gpg terminal of its own'
  end
  local offer_id, slave = offered.take_pty(reason)
  if not offer_id then
    return plain()
  end
  local given = opts
  if opts.clear_env and opts.env == nil then
    -- Stock's child then inherits the editor's environment whole (setup_env
    -- gives uv.spawn none): that, and no more, is what GPG_TTY joins.
    given = vim.tbl_extend('force', opts, { env = vim.uv.os_environ() })
  end
  local with_env = vim.tbl_extend('force', given, { env = env_with_gpg_tty(given, slave) })
  local ok, obj = pcall(originals.system, cmd, with_env, on_exit)
  if not ok then
    host.notify('dismiss', offer_id)
    records.skipped('spawn failed')
    return plain() -- raises stock's own error
  end
  records.add({ id = offer_id, pid = obj.pid, cmd = cmd, state = 'armed' })
  host.notify('bind', offer_id, obj.pid)
  require('ttyoffer.offer.waiting').answerable_wait(obj)
  return obj
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
  if opts and (type(opts.stdin) == 'string' or type(opts.stdin) == 'table') then
    return fed_system(cmd, opts, on_exit, plain)
  end
  -- `clear_env` without `env` leaves vim.system()'s child the editor's
  -- environment whole (its setup_env), not an empty one as for jobstart():
  -- the offered command is built for the environment the child will have.
  local as_stock = opts
  if opts and opts.clear_env and opts.env == nil then
    as_stock = vim.tbl_extend('force', opts, { clear_env = false })
  end
  local command, offer_id = offered.command(cmd, as_stock, locate_for_system, true)
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

-- The arguments' size past which system() gets no offer: where the
-- wrapped form's few more bytes could pass the kernel's limit (ARG_MAX,
-- the stack limit's fourth, 2 MiB by default), system() fails to start it
-- (v:shell_error -1, then started as stock: not_started()), and Neovim
-- 0.11-0.12's system() was seen to spin on some such sizes, never
-- returning. 128 KiB is the least the kernel takes (MAX_ARG_STRLEN).
local LONG_ARGV = 128 * 1024

--- The bytes `cmd`'s arguments take in an exec (each with its NUL and
--- its pointer).
--- @param cmd string|string[]
--- @return integer
local function argv_bytes(cmd)
  if type(cmd) == 'string' then
    return #cmd
  end
  local total = 0
  for _, arg in ipairs(cmd) do
    total = total + #tostring(arg) + 9
  end
  return total
end

--- Whether a system() of the wrapped command never started it: the
--- leader was not executable when system() looked (its E475: removed by a
--- build, say), or the start failed (v:shell_error -1, which stock sets
--- for nothing else: the leader gone since, or an argv that only the
--- leader's few more bytes took past the kernel's limit, E2BIG).
--- @param ok boolean
--- @param result any
--- @return boolean
local function not_started(ok, result)
  if ok then
    return vim.v.shell_error == -1
  end
  return tostring(result):find('E475:', 1, true) ~= nil
end

--- system() or systemlist() of the offered `command`, without {input}:
--- run as stock runs it, with a wait that lets the user answer a prompt
--- (routes/synchronous.lua). nil when it could not be started.
--- @param command string[]
--- @param offer_id integer
--- @param cmd string|string[] as the caller gave it
--- @param as_list boolean systemlist()
--- @return (string|string[])?
local function run_answerable(command, offer_id, cmd, as_list)
  local synchronous = require('ttyoffer.routes.synchronous')
  local output, status = synchronous.run(command, function(pid)
    records.add({ id = offer_id, pid = pid, cmd = cmd, state = 'armed' })
    host.notify('bind', offer_id, pid)
  end)
  if not output then
    return nil
  end
  synchronous.set_shell_error(status)
  if as_list then
    return synchronous.as_list(output, false)
  end
  return synchronous.as_string(output)
end

--- system() and systemlist() with the offer: `stock_fn` is the original.
--- Without {input}, the command runs as stock runs it and its prompt can be
--- answered meanwhile (run_answerable). Given {input}, the command runs as
--- stock: a program that prefers /dev/tty and reads its stdin when there
--- is none (getpass, ssh-keygen -y) reads what was fed. An {input} of nil
--- (stock feeds "v:null") keeps the blocking run: the command is hung up
--- when it asks (after `blocked_timeout`) and the user told what asked and
--- how to run it so it can be answered.
local function run_blocking(stock_fn, as_list, cmd, ...)
  local valid = (type(cmd) == 'string' and cmd ~= '') or (type(cmd) == 'table' and #cmd > 0)
  local given = select('#', ...)
  local fed = given > 0 and select(1, ...) ~= nil
  if fed and valid and not vim.in_fast_event() then
    records.skipped('input fed up front')
  end
  local command, offer_id
  if valid and argv_bytes(cmd) > LONG_ARGV then
    records.skipped('arguments near the size limit')
    valid = false
  end
  -- In a fast event the stock function raises its own E5560.
  if valid and not fed and not vim.in_fast_event() then
    command, offer_id = offered.command(cmd, nil, resolve)
  end
  if not command then
    return stock_fn(cmd, ...)
  end
  if given == 0 then
    local result = run_answerable(command, offer_id, cmd, as_list)
    if result then
      return result
    end
    -- Whatever went wrong, the command gets the start it would have had.
    host.notify('dismiss', offer_id)
    records.skipped('spawn failed')
    return stock_fn(cmd)
  end
  records.add({ id = offer_id, pid = 0, cmd = cmd, state = 'armed' })
  local ok, result = pcall(stock_fn, command, ...)
  -- Its pid was never known: the host learns of the end from here, and the
  -- record goes with the host's `released`, after what it sent before.
  host.notify('release_unbound', offer_id)
  if not_started(ok, result) then
    -- Whatever went wrong, the command gets the start it would have had.
    records.skipped('spawn failed')
    return stock_fn(cmd, ...)
  end
  if not ok then
    error(result, 0)
  end
  return result
end

--- Same contract as |system()|, plus the offer (see run_blocking).
function M.fn_system(cmd, ...)
  return run_blocking(originals.fn_system, false, cmd, ...)
end

--- Same contract as |systemlist()|, plus the offer (see run_blocking).
function M.systemlist(cmd, ...)
  return run_blocking(originals.systemlist, true, cmd, ...)
end

--- Same contract as luv's uv.spawn(), plus the offer (routes/uv_spawn.lua).
M.uv_spawn = require('ttyoffer.routes.uv_spawn').spawn

return M
