-- Whether a command gets its offer, and the command that carries it: what
-- every wrapped spawner (routes/spawners.lua, routes/uv_spawn.lua) asks
-- before it spawns.
local M = {}

local config = require('ttyoffer.config')
local host = require('ttyoffer.host')
local install = require('ttyoffer.host.install')
local records = require('ttyoffer.offer.records')
local spawn = require('ttyoffer.routes.spawn')
local shell_option = require('ttyoffer.shared.shell_option')

--- The host, for the next command, after this one: starting a process
--- takes time this command must not wait for.
local function start_host_soon()
  vim.schedule(function()
    if config.current.enabled and host.get_state() == 'stopped' then
      -- Whatever goes wrong there is the host's to say (:TtyOffer status),
      -- never an error inside the user's command, which ran as it would.
      pcall(host.start)
      pcall(host.refill)
    end
  end)
end

-- The leader is looked for now (a spawn in a fast event could not read
-- its name), and tried in the background: the /bin/sh prologue leads
-- until it has been seen to run.
install.leader()

-- env(1), which puts back what /bin/sh drops from a list command's
-- environment (names that are not shell identifiers).
local ENV_PROGRAM = vim.fn.exepath('env')

--- Whether a name in the caller's `env` holds a `=` (the editor's own
--- environment can have none: each entry's name ends at its first `=`).
--- @param opts table?
--- @return boolean
local function names_hold_equals(opts)
  local env = opts and type(opts.env) == 'table' and opts.env or {}
  for name in pairs(env) do
    if type(name) == 'string' and name:find('=', 1, true) then
      return true
    end
  end
  return false
end

--- Why this command gets no offer, or nil: what is known before looking
--- at the command (cheap, so that a spawn that gets none pays little).
--- @param opts table?
--- @return string?
function M.skip_reason(opts)
  local reason = spawn.skip_reason(opts, {
    enabled = config.current.enabled,
    host_ready = host.ready(),
    at_capacity = records.live() >= config.current.max_offers,
  })
  if reason == 'host not available' and config.current.enabled and host.get_state() == 'stopped' then
    start_host_soon()
  end
  return reason
end

--- A spare pty for a command, unless `reason` says why it gets none: its
--- offer id and slave path, or nil with the reason (or "no pty") counted in
--- :TtyOffer status.
--- @param reason string?
--- @return integer? offer_id
--- @return string? slave
function M.take_pty(reason)
  if not reason then
    local offer_id, slave = host.take()
    if offer_id then
      return offer_id, slave
    end
    reason = 'no pty'
  end
  records.skipped(reason)
  return nil
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
--- @param leader_only boolean? only the compiled leader may lead it: none
---   built or seen to run yet, the command runs as it is
--- @return (string|string[])? command, integer? offer_id
function M.command(cmd, opts, locate, to_program, leader_only)
  local reason = M.skip_reason(opts)
  local program = not reason and locate(cmd, opts)
  if not reason and not program then
    return nil
  end
  -- The compiled leader when there is one; else the /bin/sh prologue.
  local leader = not reason and install.leader()
  if not reason and not leader and leader_only then
    reason = 'no compiled leader'
  end
  local restore = {}
  if not reason and not leader then
    restore = spawn.entries_sh_would_drop(opts, vim.uv.os_environ())
    if #restore > 0 and (ENV_PROGRAM == '' or program:find('=', 1, true) or names_hold_equals(opts)) then
      -- env(1) would be needed, and is missing or would take the program
      -- for one more entry, or an entry for another (`PATH=X` in `env`
      -- gives the entry "PATH=X=…", which env(1) takes for PATH).
      reason = 'environment names /bin/sh would drop'
    end
  end
  local offer_id, slave = M.take_pty(reason)
  if not offer_id then
    return nil
  end
  local shell = type(cmd) == 'string' and shell_option.current() or nil
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

return M
