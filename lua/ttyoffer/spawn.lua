-- Pure functions deciding whether and how a command gets its private tty.
-- No editor state is read here: callers pass it in, tests drive it directly.
local M = {}

-- A jobstart() child is a session leader without a controlling terminal, so
-- opening a tty without O_NOCTTY makes it the controlling one. The shell opens
-- the slave ($0) on fd 3, closes it again, and becomes the command.
M.LIST_PROLOGUE = 'exec 3<>"$0" 3>&-; exec "$@"'

-- Shells whose syntax takes the prologue as a prefix of the command string,
-- so string commands cost no extra exec.
local POSIX_SHELLS = {
  sh = true,
  bash = true,
  dash = true,
  zsh = true,
  ksh = true,
  mksh = true,
  ash = true,
  yash = true,
  posh = true,
}

--- Why a command must run without an offer, or nil when it gets one.
--- @param opts table? the caller's jobstart() options
--- @param ctx {enabled: boolean, host_ready: boolean, at_capacity: boolean?}
--- @return string?
function M.skip_reason(opts, ctx)
  opts = opts or {}
  if not ctx.enabled then
    return 'disabled'
  end
  if opts.pty or opts.term then
    return 'owns a terminal'
  end
  if opts.detach then
    return 'detached'
  end
  if opts.rpc then
    return 'rpc channel'
  end
  if not ctx.host_ready then
    return 'host not available'
  end
  if ctx.at_capacity then
    return 'offer limit reached'
  end
  return nil
end

--- Environment for the child: the caller's `env` plus GPG_TTY and TERM.
--- GPG_TTY goes after the caller's entries (jobstart() merges `env` over the
--- inherited environment) so a stale inherited one loses, unless the caller
--- named GPG_TTY; TERM is only supplied where the child would have none.
--- @param opts table? the caller's jobstart() options
--- @param slave string path of the pty slave
--- @param inherited_term string? TERM of the editor's own environment
--- @return table<string,string>
function M.env(opts, slave, inherited_term)
  opts = opts or {}
  local env = {}
  for key, value in pairs(opts.env or {}) do
    env[key] = value
  end
  if env.GPG_TTY == nil then
    env.GPG_TTY = slave
  end
  local inherited = type(inherited_term) == 'string' and inherited_term ~= ''
  local has_term = env.TERM ~= nil or (not opts.clear_env and inherited)
  if not has_term then
    env.TERM = 'xterm-256color'
  end
  return env
end

--- The basename of the program 'shell' starts.
--- @param shell string
--- @return string
function M.shell_name(shell)
  local program = vim.trim(shell):match('^"([^"]+)"') or vim.trim(shell):match('^(%S+)') or ''
  return (program:match('([^/]+)$') or program):gsub('%.exe$', '')
end

--- @param shell string
--- @return boolean
function M.is_posix_shell(shell)
  return POSIX_SHELLS[M.shell_name(shell)] == true
end

--- The command jobstart() is given instead of `cmd`.
--- @param cmd string|string[]
--- @param slave string
--- @param shell {shell: string, shellcmdflag: string}
--- @return string|string[]
function M.command(cmd, slave, shell)
  if type(cmd) == 'string' then
    if M.is_posix_shell(shell.shell) then
      return 'exec 3<>' .. vim.fn.shellescape(slave) .. ' 3>&-; ' .. cmd
    end
    -- Any other shell (fish, nu, xonsh…) runs under the list prologue, with
    -- the argv jobstart() itself would have built.
    local argv = vim.fn.split(shell.shell)
    vim.list_extend(argv, vim.fn.split(shell.shellcmdflag))
    table.insert(argv, cmd)
    cmd = argv
  end
  local argv = { '/bin/sh', '-c', M.LIST_PROLOGUE, slave }
  return vim.list_extend(argv, cmd)
end

--- A short human title for the command.
--- @param cmd string|string[]
--- @return string
function M.title(cmd)
  local text = type(cmd) == 'table' and table.concat(cmd, ' ') or tostring(cmd)
  text = text:gsub('%c', ' '):gsub('%s+', ' ')
  text = vim.trim(text)
  if vim.fn.strchars(text) > 40 then
    text = vim.fn.strcharpart(text, 0, 39) .. '…'
  end
  return text
end

return M
