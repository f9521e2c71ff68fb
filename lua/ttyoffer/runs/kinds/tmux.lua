-- A run on tmux (`tmux = name`, :TtyRun tmux name): the host makes the
-- program's pane in a tmux session (runs/tmux.py) before any pane of ours
-- opens, and the run's program is a tmux client attached to it. The session
-- outlives the editor, is listed from tmux and killed through the host.
local M = {}

local columns = require('ttyoffer.runs.columns')
local config = require('ttyoffer.config')
local ending = require('ttyoffer.runs.ending')
local host = require('ttyoffer.host')
local pane = require('ttyoffer.runs.kinds.pane')
local title_rule = require('ttyoffer.shared.title')

-- Milliseconds the editor waits for the host's tmux work: making a pane
-- (a few tmux commands, each bounded on the host by 3 s), listing (0.4 s
-- there: a list or a completion never holds the editor longer), killing.
local PREPARE_MS, LIST_MS, KILL_MS = 10000, 500, 4000

M.name = 'tmux'
M.keys = { 'tmux' }
M.attaches_by_name = true
M.shell_there = false

--- @param opts table
--- @return string?
function M.check(opts)
  if opts.tmux == nil then
    return nil
  end
  if type(opts.tmux) ~= 'string' then
    return ('tmux must be a session name (a string), got %s'):format(type(opts.tmux))
  end
  if opts.persist ~= nil then
    return 'persist and tmux are two kinds of session; give one'
  end
  if vim.fn.executable('tmux') ~= 1 then
    return 'tmux is not installed: sudo apt-get install tmux (or leave tmux out)'
  end
end

--- @param opts table
function M.claims(opts)
  return opts.tmux ~= nil
end

--- @param opts table
function M.names(opts)
  return opts.tmux, nil
end

--- @param name string
function M.label(_, name)
  return 'tmux ' .. name
end

--- The pane of the program, made (or found, to re-attach) before any pane
--- of ours opens: the run's program becomes the client that attaches to it
--- (its `env` went to tmux). Raises what tmux or the host refused.
--- @param spec ttyoffer.RunSpec
--- @return {session: string, pane: string, ended: ttyoffer.RunResult?}
function M.prepare(spec)
  if host.get_state() == 'stopped' then
    host.start()
  end
  vim.wait(config.current.startup_wait, host.ready, 10)
  -- The host waits for the login shell's PATH, the session's, itself.
  local answer, err, refused = host.request_within(PREPARE_MS, 'run_prepare', 'tmux', {
    name = spec.session,
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
  spec.argv, spec.env = answer.attach, {}
  return { session = answer.session, pane = answer.pane, ended = answer.ended }
end

--- A tmux client gets no TMUX: tmux refuses to attach from inside tmux,
--- and the server is named on its command line.
--- @param env table<string, string>
function M.environment(env)
  env.TMUX = nil
  return env
end

--- @param run ttyoffer.Run
function M.start_options(run)
  return { tmux = { server = config.current.runs.tmux_server, pane = run.prepared.pane } }
end

M.without_host = pane.without_host
M.signal = pane.signal
M.close_question = pane.close_question
M.reattach = pane.reattach

--- Our tmux sessions, read now from tmux (never stored).
--- `ended`: how its program ended, once it has (the pane stays until told).
--- @return {name: string, created: integer, attached: integer, command: string, title: string, ended: table?}[]
--- @return string? error
function M.sessions()
  local answer, err = host.request_within(LIST_MS, 'run_sessions', 'tmux', config.current.runs.tmux_server, vim.NIL, 0)
  if not answer then
    return {}, err
  end
  return answer.sessions
end

--- End one of our tmux sessions (`ttyoffer-…`); other names are refused.
--- @param session string
--- @return boolean? ended, string? error
function M.kill_session(session)
  local answer, err =
    host.request_within(KILL_MS, 'run_session_kill', 'tmux', config.current.runs.tmux_server, session, vim.NIL, 0)
  if not answer then
    return nil, err
  end
  return answer.ended
end

--- Our tmux sessions' table (when tmux is there), or why there is none.
--- @param where string?
--- @return string[]
function M.list_lines(where)
  if where or vim.fn.executable('tmux') ~= 1 then
    return {}
  end
  local sessions, err = M.sessions()
  local lines = {}
  -- Without a host, the persistent sessions' line says so once.
  if err and err ~= 'host not running' then
    table.insert(lines, 'tmux sessions: ' .. title_rule.sanitize(err, 200))
  end
  if #sessions == 0 then
    return lines
  end
  local now = os.time()
  table.insert(lines, '')
  table.insert(lines, ('%-24s %-8s %-9s %-16s %s'):format('tmux session', 'age', 'attached', 'running', 'title'))
  for _, s in ipairs(sessions) do
    local row = ('%-24s %-8s %-9s %-16s %s'):format(
      s.name,
      columns.age(now - s.created),
      tostring(s.attached),
      -- A program that has ended: how (its pane stays until told).
      columns.cut(s.ended and ending.describe(s.ended) or s.command, 16),
      s.title
    )
    table.insert(lines, row)
  end
  return lines
end

--- @param name string
--- @param tell fun(message: string, level: integer?)
function M.kill(_, name, tell)
  local ended, err = M.kill_session(name)
  if err then
    tell('(ttyoffer) :TtyRun tmux-kill: ' .. title_rule.sanitize(err, 300), vim.log.levels.ERROR)
  else
    tell(ended and ('tmux session %s ended'):format(name) or ('no tmux session %s'):format(name))
  end
end

M.places = pane.places

return M
