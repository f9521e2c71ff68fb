-- :checkhealth ttyoffer. Runs on any Neovim that has :checkhealth for Lua
-- (an old one is told what it needs, not given a stack trace).
local M = {}

local health = vim.health or require('health')
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local error = health.error or health.report_error
local info = health.info or health.report_info

-- How long the check waits for a host that is starting.
local WAIT_MS = 5000

local function check_support()
  start('ttyoffer: editor')
  local problem = require('ttyoffer.shared.support').problem()
  if problem then
    error(problem .. '; the plugin is inactive', {
      'Install Neovim ' .. require('ttyoffer.shared.support').MIN_VERSION .. ' or newer on Linux',
    })
    return false
  end
  ok('Neovim ' .. tostring(vim.version()) .. ' on Linux')
  return true
end

local function check_python(host, install)
  start('ttyoffer: Python for the host')
  local python = host.get_python()
  if not python then
    local found
    host.find_python(function(p, err)
      found = { p, err }
    end)
    vim.wait(WAIT_MS, function()
      return found ~= nil
    end, 20)
    python = found and found[1]
    if not python then
      error(tostring(found and found[2] or 'no Python found in time'), {
        'Run :TtyOffer install: it makes ' .. install.venv() .. ' with pynvim and pyte',
        'Or point g:python3_host_prog at a Python 3 that has both',
      })
      return nil
    end
  end
  if vim.g.python3_host_prog and vim.g.python3_host_prog ~= '' then
    ok('Python (g:python3_host_prog): ' .. python)
  elseif python == install.python() then
    ok("Python (the plugin's own, :TtyOffer install): " .. python)
  else
    ok('Python (found on PATH): ' .. python)
  end
  local out = require('ttyoffer.shared.originals')
    .system({ python, '-I', '-c', 'import pynvim, pyte' }, { text = true, cwd = '/' })
    :wait()
  if out.code == 0 then
    ok('pynvim and pyte are importable')
  else
    error('pynvim or pyte cannot be imported by ' .. python, { 'Run :TtyOffer install' })
  end
  info('Wanted: ' .. table.concat(install.requirements(), ', '))
  return python
end

local function check_host(host, ttyoffer)
  start('ttyoffer: host')
  if not ttyoffer.enabled() then
    warn('The offer is off: commands run as in stock Neovim', { ':TtyOffer on' })
    return
  end
  if host.get_state() == 'stopped' then
    ttyoffer.start()
  end
  if host.get_state() == 'starting' then
    -- At startup it is on its way: wait a moment rather than tell a fright.
    vim.wait(WAIT_MS, function()
      return host.get_state() ~= 'starting'
    end, 20)
  end
  if host.get_state() == 'ready' then
    ok(string.format('Host running (pid %d, %s)', host.get_pid() or 0, host.get_python() or '?'))
  elseif host.get_state() == 'starting' then
    warn('Host still starting after ' .. WAIT_MS / 1000 .. ' s', {
      'Commands run without an offer until it is up; :TtyOffer status tells when',
    })
  else
    error('Host not running: ' .. tostring(host.get_error() or host.get_state()), {
      'Commands run without an offer until it is. :TtyOffer install, then :TtyOffer on',
    })
  end
  local path = host.plugin_path
  if vim.fn.isdirectory(path) == 1 then
    ok('Remote plugin: ' .. path)
  else
    error('The remote plugin is missing: ' .. path, { 'Reinstall the plugin' })
  end
end

local function check_ptys(python)
  start('ttyoffer: pseudo-terminals')
  local result = require('ttyoffer.shared.originals')
    .system(
      { python or 'python3', '-I', '-c', 'import os; m, s = os.openpty(); print(os.ttyname(s))' },
      { text = true, cwd = '/' }
    )
    :wait()
  if result.code == 0 then
    ok('A pty can be opened (' .. vim.trim(result.stdout) .. ')')
  else
    error('Cannot open a pty', { 'Mount devpts on /dev/pts and make /dev/ptmx readable and writable' })
  end
  if vim.fn.executable('/bin/sh') ~= 1 then
    error('/bin/sh is missing: commands are started through it')
  end
  -- The compiled leader is optional: without it the /bin/sh prologue leads.
  local leader = require('ttyoffer.host.leader')
  vim.wait(WAIT_MS, leader.settled) -- a leader is tried once before it leads
  local path = leader.current()
  if path then
    ok('Commands start through the compiled leader ' .. path)
  elseif leader.problem then
    warn(leader.problem, {
      'Run :TtyOffer install to build it for this machine (after a plugin update: restart Neovim)',
    })
  elseif vim.uv.os_getenv('TTYOFFER_LEADER') == 'sh' then
    info('Commands start through the /bin/sh prologue ($TTYOFFER_LEADER is "sh")')
  else
    info(
      'No compiled leader: commands start through the /bin/sh prologue, a slower spawn; '
        .. 'to have it: install a C compiler (sudo apt-get install gcc), then :TtyOffer install'
    )
  end
end

--- Loaded modules that kept one of the editor's own spawners (captured
--- before the stand-ins went in): in their tables, one table deeper, and
--- in the upvalues of their functions. Only at :checkhealth.
--- @return table<string, string[]> module name -> spawners, sorted
function M.stock_spawners_kept()
  local stand_ins = require('ttyoffer.routes.stand_ins')
  local originals = require('ttyoffer.shared.originals')
  local stock = {} --- @type table<function, string>
  for _, spawner in ipairs(stand_ins.SPAWNERS) do
    stock[originals[spawner.key]] = spawner.shown
  end
  local kept = {} --- @type table<string, table<string, boolean>>
  local function note(module, value)
    local shown = stock[value]
    if shown then
      kept[module] = kept[module] or {}
      kept[module][shown] = true
    end
  end
  local function look_into_function(module, fn)
    for i = 1, 255 do
      local name, value = debug.getupvalue(fn, i)
      if not name then
        break
      end
      note(module, value)
    end
  end
  local function look_into(module, value, depth)
    if type(value) == 'function' then
      note(module, value)
      look_into_function(module, value)
    elseif type(value) == 'table' and depth > 0 then
      for _, field in next, value do -- raw: no __pairs of theirs
        look_into(module, field, depth - 1)
      end
    end
  end
  for module, value in next, package.loaded do
    if type(module) == 'string' and not (module:find('^ttyoffer') or module == 'vim' or module:find('^vim[._]')) then
      if module ~= '_G' and type(value) ~= 'userdata' then
        look_into(module, value, 2)
      end
    end
  end
  local result = {}
  for module, spawners in pairs(kept) do
    result[module] = vim.tbl_keys(spawners)
    table.sort(result[module])
  end
  return result
end

local function check_routes(ttyoffer)
  start('ttyoffer: routes')
  local routes = require('ttyoffer.routes').active()
  local routes_config = require('ttyoffer.config').current.routes
  ok(':Bang and require("ttyoffer").jobstart(): always offered')
  if routes.bang then
    ok(':!{cmd} typed on the command line: runs like :Bang (filters, :r !, :w ! and mappings stay stock)')
  elseif routes.bang_blocked_by then
    warn(
      ':!{cmd} typed: stock, because <CR> on the command line is mapped already (to ' .. routes.bang_blocked_by .. ')',
      {
        'Remove that mapping, or use :Bang {cmd}',
      }
    )
  elseif not ttyoffer.enabled() or not routes_config.bang then
    info(':!{cmd} typed: stock (the offer or routes.bang is off)')
  end
  if routes.lua then
    ok('vim.fn.jobstart(), vim.system(), vim.fn.system(), vim.fn.systemlist(), vim.uv.spawn() from Lua: wrapped')
    if not require('ttyoffer.host.install').leader() then
      info('vim.uv.spawn() runs as stock until the compiled leader leads (see :help ttyoffer-uv-spawn)')
    end
  elseif ttyoffer.enabled() and routes_config.lua then
    local stand_ins = require('ttyoffer.routes.stand_ins')
    for _, spawner in ipairs(stand_ins.SPAWNERS) do
      if not rawequal(spawner.owner[spawner.name], stand_ins[spawner.key]) then
        warn(spawner.shown .. ' is not wrapped: another plugin replaced it after ttyoffer loaded', {
          "Calls through that plugin's function run as it decides",
        })
      end
    end
  else
    info('Lua spawners: stock (the offer or routes.lua is off)')
  end
  if ttyoffer.enabled() and routes_config.lua then
    local kept = M.stock_spawners_kept()
    local modules = vim.tbl_keys(kept)
    table.sort(modules)
    for _, module in ipairs(modules) do
      warn(
        string.format(
          'Module %s keeps its own reference to stock %s (it loaded before ttyoffer): its commands get no offer',
          module,
          table.concat(kept[module], ', ')
        ),
        {
          'Load ttyoffer before that plugin (earlier in your plugin list, not lazy-loaded), '
            .. 'or call require("ttyoffer").setup() before it loads (see :help ttyoffer-loading)',
        }
      )
    end
  end
  if routes.git then
    local gitenv = require('ttyoffer.routes.gitenv')
    ok("git's gpg.program: ttyoffer's, running yours (" .. gitenv.wrapper .. ')')
    ok("git's core.sshCommand: ttyoffer's, running your ssh (" .. gitenv.ssh_wrapper .. ')')
    if vim.env.GIT_SSH_COMMAND then
      -- git runs GIT_SSH_COMMAND before any core.sshCommand.
      info('GIT_SSH_COMMAND is set in the editor: git runs it, not ttyoffer-ssh (ssh asks nowhere without a terminal)')
    end
  elseif routes.git_problem then
    warn(
      "git's gpg.program and core.sshCommand are stock: " .. routes.git_problem,
      { 'Fix GIT_CONFIG_COUNT in your environment' }
    )
  else
    info("git's gpg.program and core.sshCommand: stock (the offer or routes.git is off)")
  end
  info(
    'Not covered: Vimscript system(), systemlist(), jobstart() and :! in mappings or scripts; '
      .. 'terminals (:terminal, term = true) own a terminal already (see :help ttyoffer-routes)'
  )
end

--- The PATH runs get: the login shell's, asked by the host once.
local function check_runs(host)
  start('ttyoffer: runs')
  if not host.ready() then
    warn('The host is not running: runs go as Neovim terminal jobs, which cannot tell a signal from an exit code', {
      'See the host section above',
    })
    return
  end
  -- Each request is bounded (host.request); no request inside vim.wait's
  -- condition, which would nest one wait in another.
  local answer, err = host.request('run_path')
  local deadline = vim.uv.now() + WAIT_MS
  while answer and answer.pending and vim.uv.now() < deadline do
    vim.wait(50)
    answer, err = host.request('run_path')
  end
  if not answer then
    warn('The host did not say the PATH runs get: ' .. tostring(err), {
      'A host that does not answer is stopped (SIGSTOP, a debugger) or stalled: see its pid above',
    })
    return
  end
  if answer.pending then
    warn("The login shell did not say its PATH in time; runs get the editor's PATH until it does", {
      'Check that `$SHELL -l -c true` ends quickly in a terminal',
    })
    return
  end
  if vim.fn.executable('tmux') == 1 then
    -- Pane options and hooks (set-option -p, set-hook -p) came in tmux 3.2.
    local said = require('ttyoffer.shared.originals').system({ 'tmux', '-V' }, { text = true }):wait(2000).stdout or ''
    local major, minor = said:match('(%d+)%.(%d+)')
    if major and (tonumber(major) > 3 or (tonumber(major) == 3 and tonumber(minor) >= 2)) then
      ok(vim.trim(said) .. ' found: runs on tmux (:TtyRun tmux) work')
    else
      warn(vim.trim(said ~= '' and said or 'tmux') .. ' found: runs on tmux need tmux 3.2 or later', {
        'They are refused with what tmux said; upgrade tmux to have them',
      })
    end
  else
    info('tmux not found (optional): runs on tmux are refused; to have them: sudo apt-get install tmux')
  end
  -- Optional parts: what is missing is said, with the install line, but is
  -- nothing to mend for a user who does not want persistent runs.
  for _, tool in ipairs({ { 'dtach', 'dtach' }, { 'script', 'bsdutils' } }) do
    if vim.fn.executable(tool[1]) == 1 then
      ok(
        tool[1]
          .. ' found: persistent runs (:TtyRun!) '
          .. (tool[1] == 'dtach' and 'outlive the editor' or 'are recorded')
      )
    else
      info(
        tool[1]
          .. ' not found (optional): persistent runs '
          .. (tool[1] == 'dtach' and 'end with the editor' or 'are not replayed')
          .. '; to have them: sudo apt-get install '
          .. tool[2]
      )
    end
  end
  -- Remote hosts are checked on request only: a check may ask (ssh).
  if vim.fn.executable(require('ttyoffer.config').current.runs.ssh[1]) == 1 then
    info('persistent runs on other machines: check one with :TtyRun check {dest} (see :help ttyoffer-remote)')
  else
    info('ssh not found (optional): no persistent runs on other machines; sudo apt-get install openssh-client')
  end
  -- The session folder: refused (never tightened) when it is not yours alone
  -- (the host's words for it: sessions.session_folder).
  local _, folder_error = require('ttyoffer.runs.kinds.dtach').sessions()
  if
    folder_error
    and (folder_error:find('open to others', 1, true) or folder_error:find('not a folder of yours', 1, true))
  then
    error('Persistent runs (:TtyRun!) cannot start: ' .. require('ttyoffer.shared.title').sanitize(folder_error, 300), {
      'See :help ttyoffer-persist',
    })
  end
  local source = require('ttyoffer.shared.title').sanitize(answer.source, 200)
  if vim.startswith(source, 'login shell') then
    ok('Runs get the PATH of your ' .. source .. ': ' .. require('ttyoffer.shared.title').sanitize(answer.path, 300))
  else
    warn('Runs get ' .. source .. ': ' .. require('ttyoffer.shared.title').sanitize(answer.path, 300), {
      "Make `$SHELL -l -c 'echo $PATH'` work in a terminal, then restart Neovim",
    })
  end
end

function M.check()
  if not check_support() then
    return
  end
  local host = require('ttyoffer.host')
  local python = check_python(host, require('ttyoffer.host.install'))
  local ttyoffer = require('ttyoffer')
  check_host(host, ttyoffer)
  check_routes(ttyoffer)
  check_runs(host)
  check_ptys(python)
end

return M
