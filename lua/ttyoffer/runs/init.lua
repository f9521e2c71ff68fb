-- Runs: one interactive program in a pane of its own, and how it ended.
--
-- A run is one object (shaped like vim.system()'s: id, pid, wait, kill,
-- write, close, is_closing) with a backend behind it, an object of one
-- interface (signal, write, close, resize, lost):
--   host: the Python host is the program's parent (ttyoffer_nvim/runs/runs.py):
--         it tells the program's own exit from a signal, from "not found" and
--         from the user closing the pane, and hangs up what is left.
--   job:  Neovim's own terminal job, when there is no host: the program runs
--         all the same, but a signal cannot be told from an exit code above
--         128 (the user is told once).
-- Its end is one RunResult: what wait() returns, on_exit gets and
-- TtyRunExit carries (with the run's id).
--
-- The part runs/ (this module, runspec, runcmd, pane, shellwords): a program
-- in a pane of its own. It requires only its own part and those below it
-- (routes/, offer/, host/, shared/, config); only the entry points are
-- above it, and nothing here requires them (shared/ and config < host/ <
-- offer/ < routes/ < runs/ < the entry points; scripts/require_graph.py).
local M = {}

local api = vim.api
local config = require('ttyoffer.config')
local host = require('ttyoffer.host')
local notify = require('ttyoffer.shared.notify')
local originals = require('ttyoffer.shared.originals')
local pane_ui = require('ttyoffer.runs.pane')
local rules = require('ttyoffer.runs.rules')
local runspec = require('ttyoffer.runs.runspec')
local title_rule = require('ttyoffer.shared.title')

local TITLE_LENGTH = 80
-- The names run:kill() takes, generated from the host's rules.
M.signals = rules.signals

--- A result the editor makes itself (a job run, the host gone, a time-out),
--- killed by the signal `name` (a key of rules.signals) or not.
--- @param name string?
--- @return ttyoffer.RunResult
local function made(code, reason, message, name)
  local signal, signal_name = name and rules.signals[name] or 0, name and ('SIG' .. name) or ''
  return { code = code, signal = signal, signal_name = signal_name, reason = reason, message = message }
end

--- @type table<integer, ttyoffer.Run>
local runs = {}
local next_id = 1

--- @class ttyoffer.RunResult
--- @field code integer
--- @field signal integer
--- @field signal_name string
--- @field reason string exited | signal | not_found | not_executable | cannot_start | closed | detached
---   | disconnected
--- @field message string
--- @field said string? how the host described it (ending.describe)

--- @class ttyoffer.Run
--- @field id integer
--- @field pid integer? once started
--- @field title string
--- @field argv string[]
--- @field backend 'host'|'job' the name of `_backend`
--- @field session string? a persistent run's session name (after the host's sanitiser)
--- @field tmux string? a tmux run's session name
--- @field host string? a remote run's ssh destination
--- @field started integer os.time() of the start
--- @field result ttyoffer.RunResult? once it has ended
--- @field closing boolean
--- @field pane ttyoffer.Pane
--- @field private _backend ttyoffer.RunBackend
--- @field private _on_exit function?
--- @field private _job integer?
--- @field private _timed_out boolean?
local Run = {}
Run.__index = Run

--- What a run asks of what runs its program.
--- @class ttyoffer.RunBackend
--- @field name 'host'|'job'
--- @field says_end boolean whether the pane is told the end (a job's
---   terminal says it itself)
--- @field signal fun(run: ttyoffer.Run, number: integer)
--- @field write fun(run: ttyoffer.Run, data: string)
--- @field close fun(run: ttyoffer.Run) the pane is closing: hang up what
---   still runs, let go of what is kept for the run
--- @field resize fun(run: ttyoffer.Run, rows: integer, cols: integer)
--- @field lost fun(run: ttyoffer.Run) the host went away

--- The host is the program's parent (or its dtach, tmux or ssh client's).
--- @type ttyoffer.RunBackend
local on_host = {
  name = 'host',
  says_end = true,
  signal = function(run, number)
    if run.host and run.session then
      -- The remote program, not the local ssh: over the shared connection,
      -- never waited for.
      require('ttyoffer.runs.remote').signal(run, number)
      return
    end
    host.notify('run_signal', run.id, number)
  end,
  write = function(run, data)
    host.notify('run_input', run.id, data)
  end,
  close = function(run)
    host.notify('run_close', run.id)
  end,
  resize = function(run, rows, cols)
    host.notify('run_resize', run.id, rows, cols)
  end,
  lost = function(run)
    run:_ended(made(129, 'signal', 'the host exited', 'HUP'))
  end,
}

--- Neovim's own terminal job in the pane's window, when there is no host.
--- @type ttyoffer.RunBackend
local as_job = {
  name = 'job',
  says_end = false,
  signal = function(run, number)
    if run.pid then
      pcall(vim.uv.kill, run.pid, number)
    end
  end,
  write = function(run, data)
    if run._job then
      pcall(api.nvim_chan_send, run._job, data)
    end
  end,
  close = function(run)
    if run.result or not run._job then
      return
    end
    if run.pid then
      -- A hang-up and, 200 ms later, a kill.
      pcall(vim.uv.kill, -run.pid, 'sighup')
      local pid, job = run.pid, run._job
      vim.defer_fn(function()
        if vim.fn.jobwait({ job }, 0)[1] == -1 then
          pcall(vim.uv.kill, -pid, 'sigkill')
        end
      end, 200)
    end
    run:_ended(made(129, 'closed', '', 'HUP'))
  end,
  resize = function() end, -- Neovim's terminal follows its window itself
  lost = function() end, -- not the host's
}

--- @param run ttyoffer.Run
--- @param backend ttyoffer.RunBackend
local function use_backend(run, backend)
  run._backend, run.backend = backend, backend.name
end

--- A few words on how the run stands: running, exited 3, killed by SIGTERM,
--- not found, closed.
--- @return string
function Run:describe()
  local r = self.result
  if not r then
    return self.pid and 'running' or 'starting'
  end
  return M.describe(r)
end

--- A few words on how a run ended: the host's (`said`), or for an ending
--- made here (a job run, the host gone) the same words, from its rules.
--- @param r ttyoffer.RunResult
--- @return string
function M.describe(r)
  if r.said and r.said ~= '' then
    return r.said
  end
  local signal_name = r.signal_name ~= '' and r.signal_name or ('signal ' .. r.signal)
  return rules.fill(rules.words[r.reason] or rules.words.exited, { code = r.code, signal_name = signal_name })
end

--- Wait for the end, serving the editor's events: the RunResult. As
--- vim.system's wait(): past `timeout` ms the program is killed (SIGKILL)
--- and the code is 124.
--- @param timeout integer?
--- @return ttyoffer.RunResult
function Run:wait(timeout)
  local limit = timeout or vim._maxint
  if not vim.wait(limit, function()
    return self.result ~= nil
  end) then
    self._timed_out = true
    self:kill('KILL')
    vim.wait(1000, function()
      return self.result ~= nil
    end)
    if not self.result then
      self:_ended(made(124, 'signal', 'timed out', 'KILL'))
    end
  end
  return self.result --[[@as ttyoffer.RunResult]]
end

--- Send a signal (a number, or a name: 'TERM', 'sigterm', 'SIGTERM') to the
--- program while it runs.
--- @param sig integer|string?
function Run:kill(sig)
  local number = sig or 15
  if type(sig) == 'string' then
    number = M.signals[sig:upper():gsub('^SIG', '')]
  end
  if type(number) ~= 'number' or number < 1 or number % 1 ~= 0 then
    error(
      ('(ttyoffer) kill(): %s is not a signal; use a number or one of: %s'):format(
        vim.inspect(sig),
        table.concat(vim.fn.sort(vim.tbl_keys(M.signals)), ', ')
      ),
      2
    )
  end
  if self.result then
    return
  end
  self._backend.signal(self, number)
end

--- Type into the program's terminal, as a user would (vim.system()'s
--- write(): a string, or a list of lines each ended by a newline; nil
--- does nothing, a terminal has no end of input to close).
--- @param data string|string[]?
function Run:write(data)
  if type(data) == 'table' then
    data = table.concat(data, '\n') .. '\n'
  end
  if data ~= nil and type(data) ~= 'string' then
    error(('(ttyoffer) write(): a string or a list of strings, got %s'):format(type(data)), 2)
  end
  if data and not self.result then
    self._backend.write(self, data)
  end
end

--- Close the pane; a program still running is hung up (then killed 200 ms
--- later) and the run ends with 129.
function Run:close()
  if self.closing then
    return
  end
  self.closing = true
  self._backend.close(self)
  pane_ui.close(self.pane)
  if self.result then
    runs[self.id] = nil
  end
end

--- @return boolean
function Run:is_closing()
  return self.closing or self.result ~= nil
end

--- The end, told once: the pane, the bar, on_exit, User TtyRunExit.
--- @param result ttyoffer.RunResult
function Run:_ended(result)
  if self.result then
    return
  end
  if self._timed_out then
    result = vim.tbl_extend('force', result, { code = 124 })
  end
  if (result.said or '') == '' then -- one the editor made: the host's words for it
    result = vim.tbl_extend('force', result, { said = M.describe(result) })
  end
  self.result = result
  if self.closing then
    runs[self.id] = nil
  end
  if pane_ui.valid(self.pane) then
    local line = self:describe()
    if result.message ~= '' then
      line = line .. ': ' .. title_rule.sanitize(result.message, 200)
    end
    if self._backend.says_end then
      pane_ui.send(self.pane, '\r\n[' .. line .. ']\r\n')
    end
    local failed = result.reason ~= 'exited' or result.code ~= 0
    pane_ui.set_state(self.pane, self.id, self.title, self:describe(), failed)
    pane_ui.finished(self.pane, self._typing_secret)
    if result.reason == 'disconnected' and self._reattach then
      -- The program goes on remotely: r attaches again, in a new pane.
      local reattach = self._reattach
      vim.keymap.set('n', 'r', function()
        self:close()
        reattach()
      end, { buffer = self.pane.buf, nowait = true, desc = 'ttyoffer: re-attach to the remote session' })
    end
  end
  if self._on_exit then
    -- A copy each: what one handler changes, the next does not see.
    local ok, err = pcall(self._on_exit, vim.deepcopy(result))
    if not ok then
      notify.notice('on_exit of run ' .. self.id .. ' failed: ' .. tostring(err), vim.log.levels.ERROR)
    end
  end
  api.nvim_exec_autocmds('User', {
    pattern = 'TtyRunExit',
    modeline = false,
    data = vim.tbl_extend('force', result, { id = self.id }),
  })
end

--- What the program gets besides its own `env`: the editor's environment,
--- with NVIM naming this editor, as in a :terminal. A tmux client (a tmux
--- run's program) gets no TMUX: tmux refuses to attach from inside tmux,
--- and the server is named on its command line.
--- @param run ttyoffer.Run
local function base_env(run)
  local env = vim.fn.environ()
  if vim.v.servername ~= '' then
    env.NVIM = vim.v.servername
  end
  if run.tmux then
    env.TMUX = nil
  end
  return env
end

--- @param run ttyoffer.Run
--- @param spec table checked by runspec
local function start_on_host(run, spec)
  local rows, cols = pane_ui.size(run.pane)
  host.notify('run_start', run.id, {
    argv = spec.argv,
    cwd = spec.cwd,
    base_env = base_env(run),
    env = vim.tbl_isempty(spec.env) and vim.empty_dict() or spec.env,
    rows = rows or 24,
    cols = cols or 80,
    persist = spec.persist,
    tmux = run.tmux and { server = config.current.runs.tmux_server, pane = run._tmux_pane } or nil,
    host = spec.host,
    ssh = spec.host and config.current.runs.ssh or nil,
  })
end

--- No host: Neovim's own terminal job in the pane's window.
--- @param run ttyoffer.Run
--- @param spec table
local function start_as_job(run, spec)
  use_backend(run, as_job)
  if spec.host then
    -- Never the command here instead of there.
    local message = 'runs on another machine need the host (' .. (host.error or host.state) .. ')'
    run:_ended(made(127, 'cannot_start', message))
    return
  end
  if #spec.argv == 0 then
    -- 'shell' split as Neovim splits it for :terminal.
    spec.argv = require('ttyoffer.shared.shell_option').words(vim.o.shell)
  end
  notify.once(
    'runs-without-host',
    'runs go without the host (' .. (host.error or host.state) .. '): a signal is told as its exit code only'
  )
  local env = vim.tbl_extend('force', { TERM = 'xterm-256color' }, spec.env)
  local ok, job = pcall(api.nvim_win_call, run.pane.win, function()
    return originals.jobstart(spec.argv, {
      term = true,
      cwd = spec.cwd,
      env = env,
      on_exit = function(_, code)
        run:_ended(made(code, 'exited', ''))
      end,
    })
  end)
  if not ok or job <= 0 then
    local message = ok and rules.words.not_executable or tostring(job):gsub('^.-: ', '')
    run:_ended(made(127, 'cannot_start', message))
    return
  end
  run._job = job
  run.pid = vim.fn.jobpid(job)
end

-- Milliseconds the editor waits for the host's tmux work: making a pane
-- (a few tmux commands, each bounded on the host by 3 s), listing (0.4 s
-- there: a list or a completion never holds the editor longer), killing.
local TMUX_PREPARE_MS, TMUX_LIST_MS, TMUX_KILL_MS = 10000, 500, 4000
-- The persistent sessions are read from /proc (a list, bounded as tmux's),
-- and a kill waits 200 ms for its processes to go: more than a plain
-- request on a loaded machine.
local SESSIONS_MS, SESSION_KILL_MS = 500, 1500

--- The pane of a tmux run's program, made (or found, to re-attach) before
--- any pane of ours opens: the argv that attaches to it. Raises what tmux
--- or the host refused.
--- @param spec ttyoffer.RunSpec
--- @return string[] attach, string session, string pane, ttyoffer.RunResult? ended
local function prepare_tmux(spec)
  if host.state == 'stopped' then
    host.start()
  end
  vim.wait(config.current.startup_wait, host.ready, 10)
  -- The host waits for the login shell's PATH, the session's, itself.
  local answer, err, refused = host.request_within(TMUX_PREPARE_MS, 'tmux_prepare', {
    name = spec.tmux,
    argv = spec.argv,
    cwd = spec.cwd,
    env = vim.tbl_isempty(spec.env) and vim.empty_dict() or spec.env,
    rows = config.current.runs.height,
    cols = vim.o.columns,
    server = config.current.runs.tmux_server,
    -- A tmux server these commands start keeps this environment: the
    -- user's, without what the editor and the plugin added.
    server_env = require('ttyoffer.routes.gitenv').user_environment(),
  })
  if not answer then
    error(
      '(ttyoffer) run(): ' .. (refused and title_rule.sanitize(err, 300) or ('tmux runs need the host: ' .. err)),
      0
    )
  end
  return answer.attach, answer.session, answer.pane, answer.ended
end

--- What closing the pane would do to a program still running (nil when
--- nothing runs): the close key asks it first.
--- @param run ttyoffer.Run
--- @return string?
local function close_question(run)
  if run.result then
    return nil
  elseif run.session and run.host then
    return ('Detach from session %s on %s? It goes on there (:TtyRun! %s:%s comes back to it)'):format(
      run.session,
      run.host,
      run.host,
      run.session
    )
  elseif run.session then
    return ('Detach from session %s? It goes on (:TtyRun! %s comes back to it)'):format(run.session, run.session)
  end
  return ('Close run %d? %s is still running: closing hangs it up'):format(run.id, run.title)
end

--- The run's pane: a channel terminal the host feeds (with `fed`), or a
--- window for Neovim's own terminal job.
--- @param run ttyoffer.Run
--- @param placement string
--- @param fed boolean
--- @return ttyoffer.Pane
local function open_pane(run, placement, fed)
  return pane_ui.open({
    id = run.id,
    title = run.title,
    placement = placement,
    on_input = fed and function(data)
      run._backend.write(run, data)
    end or nil,
    on_close = function()
      run:close()
    end,
    close_question = function()
      return close_question(run)
    end,
  })
end

--- A new run of `spec`, in the table (its pane not open yet).
--- @param spec table checked by runspec
--- @param opts table what the caller gave (a remote run re-attaches with it)
--- @param tmux {session: string?, pane: string?}
--- @return ttyoffer.Run
local function new_run(spec, opts, tmux)
  local id = next_id
  next_id = next_id + 1
  local run = setmetatable({
    id = id,
    title = title_rule.sanitize(spec.title, TITLE_LENGTH),
    argv = spec.argv,
    started = os.time(),
    closing = false,
    tmux = tmux.session,
    host = spec.host,
    _tmux_pane = tmux.pane,
    _on_exit = spec.on_exit,
  }, Run)
  use_backend(run, on_host)
  if spec.host then
    -- After a dropped connection: the same session, attached to (not made).
    run._reattach = function()
      local again = vim.tbl_extend('force', {}, opts)
      again.argv = nil
      M.run(again)
    end
  end
  runs[id] = run
  return run
end

--- The program started once the host is up; a host that does not come
--- makes it Neovim's own terminal job, in a pane of its own in the same
--- place (the first one has a channel terminal already).
--- @param run ttyoffer.Run
--- @param spec table
local function start_when_the_host_is_ready(run, spec)
  if host.state == 'stopped' then
    -- Runs are asked for by name: they start the host even while the offer
    -- is off.
    host.start()
  end
  host.when_ready(config.current.startup_wait, function(ready)
    if run.closing then
      return
    end
    if ready then
      start_on_host(run, spec)
      return
    end
    pane_ui.close(run.pane)
    run.pane = open_pane(run, spec.placement, false)
    start_as_job(run, spec)
  end)
end

--- Start a run; see :help ttyoffer.run().
--- @param opts table
--- @return ttyoffer.Run
function M.run(opts)
  local spec = runspec.check(opts)
  local tmux = {}
  if spec.tmux then
    -- The pane attaches to the session: a tmux client, the run's program.
    spec.argv, tmux.session, tmux.pane, tmux.ended = prepare_tmux(spec)
    spec.env = {}
  end
  if spec.persist and not spec.host and vim.fn.executable('dtach') ~= 1 then
    notify.notice(
      'dtach is not installed: this run ends with the editor; to keep sessions, install it: sudo apt-get install dtach'
    )
  end
  local run = new_run(spec, opts, tmux)
  local use_host = host.state == 'ready' or host.state == 'starting' or host.state == 'stopped'
  run.pane = open_pane(run, spec.placement, use_host)
  if tmux.ended then
    -- Re-attached to a session whose program had ended: that ending.
    run:_ended(tmux.ended)
  elseif use_host then
    start_when_the_host_is_ready(run, spec)
  else
    start_as_job(run, spec)
  end
  return run
end

--- @param id integer
--- @return ttyoffer.Run?
function M.get(id)
  return runs[id]
end

--- Every run whose pane is still there, oldest first.
--- @return ttyoffer.Run[]
function M.list()
  local list = vim.tbl_values(runs)
  table.sort(list, function(a, b)
    return a.id < b.id
  end)
  return list
end

--- The persistent sessions, read now from the host (never stored).
--- @return {name: string, created: integer, command: string, title: string, pid: integer, ended: string}[],
---   string? error
function M.sessions()
  local answer, err = host.request_within(SESSIONS_MS, 'sessions')
  if not answer then
    return {}, err
  end
  return answer.sessions
end

--- End the persistent session `name`: {name, count}; nil and why for a
--- name that is not a session name (or no host).
--- @param name string
--- @return {name: string, count: integer}?, string? error
function M.kill_session(name)
  return host.request_within(SESSION_KILL_MS, 'session_kill', name)
end

--- Our tmux sessions, read now from tmux (never stored).
--- `ended`: how its program ended, once it has (the pane stays until told).
--- @return {name: string, created: integer, attached: integer, command: string, title: string, ended: table?}[]
--- @return string? error
function M.tmux_sessions()
  local answer, err = host.request_within(TMUX_LIST_MS, 'tmux_list', config.current.runs.tmux_server)
  if not answer then
    return {}, err
  end
  return answer.sessions
end

--- End one of our tmux sessions (`ttyoffer-…`); other names are refused.
--- @param session string
--- @return boolean? ended, string? error
function M.kill_tmux(session)
  local answer, err = host.request_within(TMUX_KILL_MS, 'tmux_kill', session, config.current.runs.tmux_server)
  if not answer then
    return nil, err
  end
  return answer.ended
end

--- Close run `id`; false when there is none.
--- @param id integer
--- @return boolean
function M.close(id)
  local run = runs[id]
  if not run then
    return false
  end
  run:close()
  return true
end

--- The run whose pane is in buffer `buf`.
--- @param buf integer
--- @return ttyoffer.Run?
function M.in_buffer(buf)
  local id = vim.b[buf].ttyoffer_run
  return id and runs[id] or nil
end

-- Host events ----------------------------------------------------------------

function M.started(run_id, pid, session)
  local run = runs[run_id]
  if run then
    -- 0: a persistent run that is the ending of a session gone before it.
    run.pid = pid ~= 0 and pid or nil
    run.session = session ~= '' and session or nil
    if pane_ui.valid(run.pane) then
      pane_ui.set_state(run.pane, run.id, run.title, 'running', nil)
    end
  end
end

function M.output(run_id, data)
  local run = runs[run_id]
  if run and pane_ui.valid(run.pane) then
    pane_ui.send(run.pane, data)
  end
end

function M.exited(run_id, result)
  local run = runs[run_id]
  if run then
    -- Keys typed with echo off just before: the pane's, not the result's.
    run._typing_secret = result.typing_secret == true
    result.typing_secret = nil
    run:_ended(result)
  end
end

--- New window sizes: the terminals of the panes shown follow.
function M.resized()
  for _, run in pairs(runs) do
    if not run.result and pane_ui.valid(run.pane) then
      local rows, cols = pane_ui.size(run.pane)
      if rows and (rows ~= run._rows or cols ~= run._cols) then
        run._rows, run._cols = rows, cols
        run._backend.resize(run, rows, cols)
      end
    end
  end
end

--- The host went away: its runs went with it (it hung them up).
function M.host_lost()
  for _, run in pairs(runs) do
    if not run.result then
      run._backend.lost(run)
    end
  end
end

return M
