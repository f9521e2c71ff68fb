-- A persistent run (`persist = name`, :TtyRun! name): the program lives in
-- a dtach session on this machine, which outlives the pane and the editor
-- (the host's runs/sessions.py). Closing the pane detaches; the session is
-- listed, attached to again by name, and killed.
local M = {}

local columns = require('ttyoffer.runs.columns')
local ending = require('ttyoffer.runs.ending')
local host = require('ttyoffer.host')
local names = require('ttyoffer.runs.names')
local notify = require('ttyoffer.shared.notify')
local pane = require('ttyoffer.runs.kinds.pane')
local title_rule = require('ttyoffer.shared.title')

-- Milliseconds the editor waits for the host: the sessions are read from
-- /proc (a list never holds the editor longer), and a kill waits 200 ms for
-- its processes to go: more than a plain request on a loaded machine.
local SESSIONS_MS, SESSION_KILL_MS = 500, 1500

M.name = 'dtach'
M.keys = { 'persist' }
M.attaches_by_name = true
M.shell_there = false

--- `persist`, when given (here or on another machine): a session's name.
--- @param opts table
--- @return string?
function M.check(opts)
  if opts.persist == nil then
    return nil
  end
  if type(opts.persist) ~= 'string' then
    return ('persist must be a session name (a string), got %s'):format(type(opts.persist))
  end
  local problem = names.session_name_problem(opts.persist)
  return problem and ('persist: ' .. problem)
end

--- @param opts table
function M.claims(opts)
  return opts.persist ~= nil
end

--- @param opts table
function M.names(opts)
  return opts.persist, nil
end

M.label = pane.label

--- Without dtach the run goes on, as a plain one: the user is told so.
function M.prepare()
  if vim.fn.executable('dtach') ~= 1 then
    notify.notice(
      'dtach is not installed: this run ends with the editor; to keep sessions, install it: sudo apt-get install dtach'
    )
  end
  return nil
end

M.environment = pane.environment

--- @param spec ttyoffer.RunSpec
function M.start_options(_, spec)
  return { persist = spec.session }
end

M.without_host = pane.without_host
M.signal = pane.signal

--- Once the host has named the session, closing detaches from it.
--- @param run ttyoffer.Run
function M.close_question(run)
  if not run.session then
    return pane.close_question(run)
  end
  return ('Detach from session %s? It goes on (:TtyRun! %s comes back to it)'):format(run.session, run.session)
end

M.reattach = pane.reattach

--- The persistent sessions, read now from the host (never stored).
--- @return {name: string, created: integer, command: string, title: string, pid: integer, ended: string}[],
---   string? error
function M.sessions()
  local answer, err = host.request_within(SESSIONS_MS, 'run_sessions', 'dtach', vim.NIL, vim.NIL, 0)
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
  return host.request_within(SESSION_KILL_MS, 'run_session_kill', 'dtach', vim.NIL, name, vim.NIL, 0)
end

--- The persistent sessions' table (from any editor), or why there is none.
--- @param where string?
--- @return string[]
function M.list_lines(where)
  if where then
    return {}
  end
  local sessions, err = M.sessions()
  if err then
    return { 'persistent sessions: ' .. title_rule.sanitize(err, 200) }
  elseif #sessions == 0 then
    return {}
  end
  local now = os.time()
  local lines = { '', ('%-20s %-8s %-16s %s'):format('session', 'age', 'running', 'title') }
  for _, s in ipairs(sessions) do
    -- Names, commands and titles come sanitized from the host.
    local running = s.ended and ('(' .. ending.describe(s.ended) .. ')') or columns.cut(s.command, 16)
    table.insert(lines, ('%-20s %-8s %-16s %s'):format(s.name, columns.age(now - s.created), running, s.title))
  end
  return lines
end

--- @param name string
--- @param tell fun(message: string, level: integer?)
function M.kill(_, name, tell)
  local answer, err = M.kill_session(name)
  if not answer then
    tell('(ttyoffer) :TtyRun kill: ' .. title_rule.sanitize(tostring(err), 300), vim.log.levels.ERROR)
  elseif answer.count == 0 then
    tell(('no live session %s (its files are gone)'):format(answer.name), vim.log.levels.WARN)
  else
    tell(('session %s ended'):format(answer.name))
  end
end

M.places = pane.places

return M
