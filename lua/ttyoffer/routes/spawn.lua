-- Pure functions deciding whether and how a command gets its private tty.
-- No editor state is read here: callers pass it in, tests drive it directly.
local M = {}

local shell_option = require('ttyoffer.shared.shell_option')

-- A jobstart() child is a session leader without a controlling terminal, so
-- opening a tty without O_NOCTTY makes it the controlling one, and it stays
-- so once the descriptor is closed again. The shell opens the slave as a
-- redirection of the builtin `true`: were the open to fail (the pty gone with
-- a dying host), a regular builtin's failed redirection fails that builtin
-- only, where `exec`'s would end the shell and the user's command with it.
-- Its error message goes to /dev/null, redirected first.
--
-- The environment is set here too rather than through jobstart()'s `env`,
-- which would make Neovim copy and rebuild its whole environment for every
-- spawn, and only when the terminal was taken. Assigned inside the child,
-- GPG_TTY comes after everything inherited or passed in `env`, so a stale
-- inherited one loses; TERM is only supplied when the child would have none
-- (absent or empty), whatever `env` and `clear_env` made of it.
--
-- With the terminal taken, job control (`set -m`) is on: the command then
-- runs as the shell's child, in a process group of its own that is the
-- terminal's foreground one while it runs (see LEAD). Were job control to
-- fail, its complaint goes to /dev/null and the shell execs the command.
local TAKE_TTY = 'if true 2>/dev/null 3<>%s; then export %sTERM="${TERM:-xterm-256color}"; set -m 2>/dev/null; fi; '
local SET_GPG_TTY = 'GPG_TTY=%s '

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

--- Shell code that makes `tty` the controlling terminal and sets GPG_TTY
--- (unless the caller's `env` names it) and TERM (when the child has none).
--- @param tty string shell word for the slave path ('"$0"' or a quoted path)
--- @param opts table? the caller's jobstart() options
--- @return string
function M.prologue(tty, opts)
  local keeps_gpg_tty = opts and type(opts.env) == 'table' and opts.env.GPG_TTY ~= nil
  return TAKE_TTY:format(tty, keeps_gpg_tty and '' or SET_GPG_TTY:format(tty))
end

-- The shell stays, as the session's leader, and runs the command as a job
-- of its own: job control puts it in a process group of its own and `fg`
-- makes that the terminal's foreground group while it runs; when the
-- command ends the shell takes the foreground back and exits with the
-- command's status. The kernel hangs up the foreground group when the
-- leader of a session with a controlling terminal exits
-- (disassociate_ctty): had the shell exec'd the command, what the command
-- left in the background (`server &`, git's credential-cache daemon) would
-- share its group and die of that SIGHUP, where stock lets it live. Now the
-- signal reaches the exiting shell alone.
-- - Started with `&` and then brought to the foreground rather than run in
--   the foreground at once: the shell's own stderr can then be /dev/null
--   while it waits (it reports "Terminated" for a command killed by a
--   signal), the command's staying the caller's. A command that touches
--   its terminal in that moment is stopped until `fg`, which goes on.
-- - Stopped by job control (148-150: CTRL-Z typed in its prompt window,
--   SIGTTIN, SIGTTOU), it is let go on at once: stock's command never
--   stops of these (its group is orphaned, the kernel discards them).
--   Stopped by SIGSTOP (147, kill -STOP from outside), it stays so, as
--   stock's does: the shell looks again each second (`sleep`, the only
--   way to wait on a stopped job that does not continue it), for its end
--   or another stop, until something else continues it. Without a
--   `sleep` to run, it is let go on, as before.
-- - Killed by a signal (129-159; a stop signal does not kill), it ends the
--   shell by the same signal, without a core of its own.
-- - Without the terminal (no job control), the shell execs the command.
local LEAD = 'case $- in *m*) ;; *) exec "$@";; esac; "$@" & exec 2>/dev/null; fg >/dev/null; s=$?; '
  .. 'while [ "$s" -ge 147 ] && [ "$s" -le 150 ] && jobs %1 >/dev/null 2>&1; do '
  .. 'if [ "$s" -eq 147 ] && sleep 1 </dev/null >/dev/null; then wait %1; else fg %1 >/dev/null; fi; s=$?; done; '
  .. 'if [ "$s" -gt 128 ] && [ "$s" -lt 160 ] && { [ "$s" -lt 147 ] || [ "$s" -gt 150 ]; }; then '
  .. 'ulimit -c 0; kill -$((s - 128)) $$; fi; exit "$s"'

-- /bin/sh sets $PWD to its directory at startup where stock would pass the
-- environment's as it is (or none, with clear_env): put back what stock
-- would pass, given as $1 (no quoting), or take it away.
local RESTORE_PWD = 'PWD="$1"; export PWD; shift; ' .. LEAD
local NO_PWD = 'unset PWD; ' .. LEAD

-- The list scripts depend on nothing but these two choices: built once.
local LIST_SCRIPTS = {
  [true] = { [true] = M.prologue('"$0"') .. RESTORE_PWD, [false] = M.prologue('"$0"') .. NO_PWD },
  [false] = {
    [true] = M.prologue('"$0"', { env = { GPG_TTY = '' } }) .. RESTORE_PWD,
    [false] = M.prologue('"$0"', { env = { GPG_TTY = '' } }) .. NO_PWD,
  },
}

--- Whether `argv` (as exec'd) is one the /bin/sh prologue leads, as
--- M.command builds it: its shell cannot pass a signal on to the command.
--- @param argv string[]
--- @return boolean
function M.led_by_prologue(argv)
  if argv[2] ~= '-c' then
    return false
  end
  local script = argv[3]
  return script == LIST_SCRIPTS[true][true]
    or script == LIST_SCRIPTS[true][false]
    or script == LIST_SCRIPTS[false][true]
    or script == LIST_SCRIPTS[false][false]
end

--- Whether `name` can pass through /bin/sh's environment: a shell keeps
--- only names it could assign, and drops the rest where stock passes them.
--- @param name string
--- @return boolean
local function shell_name_ok(name)
  return name:find('^[%a_][%w_]*$') ~= nil
end

--- The entries ('NAME=value') of the environment the command would get
--- that /bin/sh would drop on the way (dash keeps only names it could
--- assign), sorted; empty when there are none. Only list commands, and
--- shells other than POSIX ones, pass through /bin/sh: a string command's
--- own 'shell' treats them the same in stock.
--- @param opts table? the caller's jobstart() options
--- @param environ table<string, string> the editor's environment now
--- @return string[]
function M.entries_sh_would_drop(opts, environ)
  local env = opts and type(opts.env) == 'table' and opts.env or {}
  local found = {}
  if not (opts and opts.clear_env) then
    for name, value in pairs(environ) do
      if not shell_name_ok(name) and env[name] == nil then
        table.insert(found, name .. '=' .. value)
      end
    end
  end
  for name, value in pairs(env) do
    if type(name) == 'string' and not shell_name_ok(name) then
      table.insert(found, name .. '=' .. tostring(value))
    end
  end
  table.sort(found)
  return found
end

--- The $PWD stock jobstart() would give the command: the caller's, or the
--- editor's environment's, or none with clear_env.
--- @param opts table?
--- @param editor_pwd string? the editor's $PWD
--- @return string?
function M.stock_pwd(opts, editor_pwd)
  local env = opts and type(opts.env) == 'table' and opts.env or nil
  if env and env.PWD ~= nil then
    return tostring(env.PWD)
  end
  if opts and opts.clear_env then
    return nil
  end
  return editor_pwd
end

--- The argv of the compiled leader (libexec/ttyoffer-lead.c), which does
--- what the prologue does for one exec of a small program instead of a
--- shell's: `leader slave flags program args...`. The environment reaches
--- it as stock would pass it to the command, and it drops nothing from it
--- nor touches $PWD: no env(1), no $PWD argument.
--- @param leader string the leader's path
--- @param argv string[] the command as jobstart() would exec it
--- @param slave string
--- @param keeps_gpg_tty boolean the caller's `env` names GPG_TTY
--- @param to_program boolean? signals for the leader go to the program
---   alone (vim.system()'s kill() signals a pid), not to its group
---   (jobstop() and system() signal the job's process group)
--- @return string[]
local function leader_argv(leader, argv, slave, keeps_gpg_tty, to_program)
  local flags = (keeps_gpg_tty and '' or 'g') .. (to_program and 'p' or '')
  local command = { leader, slave, flags == '' and '-' or flags }
  for i = 1, #argv do
    command[3 + i] = argv[i]
  end
  return command
end

--- The command jobstart() is given instead of `cmd`.
--- @param cmd string|string[]
--- @param slave string
--- @param shell {shell: string, shellcmdflag: string, shellxquote: string?, shellxescape: string?}?
---   needed for string commands (shell_option.argv)
--- @param opts table? the caller's jobstart() options
--- @param editor {program: string?, pwd: string?, env_program: string?, restore: string[]?,
---   leader: string?, to_program: boolean?}?
---   for list commands: the program's full path, as stock puts it in argv[0]
---   (found from the editor's directory, as stock finds `./rel` whatever
---   `cwd` says); the editor's $PWD; and the environment entries /bin/sh
---   would drop, which env(1) (`env_program`) then puts back. With `leader`
---   (the compiled leader's path), that leads instead of /bin/sh, and
---   `to_program` says where it sends the signals it is sent (leader_argv)
--- @return string|string[]
function M.command(cmd, slave, shell, opts, editor)
  editor = editor or {}
  if type(cmd) == 'string' then
    assert(shell, 'string commands need the shell options')
    -- The 'shell' runs under the list prologue, with the argv jobstart()
    -- itself would have built: a prologue joined to the command's own
    -- string would make that shell the session's leader (see LEAD).
    cmd = shell_option.argv(cmd, shell)
  end
  local keeps_gpg_tty = opts and type(opts.env) == 'table' and opts.env.GPG_TTY ~= nil
  if editor.leader then
    local argv = { editor.program or cmd[1] }
    for i = 2, #cmd do
      argv[i] = cmd[i]
    end
    return leader_argv(editor.leader, argv, slave, keeps_gpg_tty, editor.to_program)
  end
  -- The slave is $0, the $PWD to pass $1, the command the rest: no quoting
  -- of the command at all.
  local pwd = M.stock_pwd(opts, editor.pwd)
  local argv = { '/bin/sh', '-c', LIST_SCRIPTS[not keeps_gpg_tty][pwd ~= nil], slave }
  if pwd ~= nil then
    argv[5] = pwd
  end
  if editor.restore and #editor.restore > 0 then
    -- /bin/sh execs env(1), which puts back what the shell dropped.
    vim.list_extend(argv, { editor.env_program, '--' })
    vim.list_extend(argv, editor.restore)
  end
  local at = #argv
  argv[at + 1] = editor.program or cmd[1]
  for i = 2, #cmd do
    argv[at + i] = cmd[i]
  end
  return argv
end

return M
