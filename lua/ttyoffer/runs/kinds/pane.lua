-- A plain run: one program in a pane, ended with the pane. It has no
-- session to name, list, kill or come back to; the other kinds fall back to
-- its answers where they do nothing else.
local M = {}

local host = require('ttyoffer.host')

M.name = 'pane'
M.keys = {}
M.attaches_by_name = false
M.shell_there = false

function M.check()
  return nil
end

function M.claims()
  return true
end

function M.names()
  return nil, nil
end

--- @param name string
function M.label(_, name)
  return name
end

function M.prepare()
  return nil
end

--- @param env table<string, string>
function M.environment(env)
  return env
end

function M.start_options()
  return {}
end

function M.without_host()
  return nil
end

--- @param run ttyoffer.Run
--- @param number integer
function M.signal(run, number)
  host.notify('run_signal', run.id, number)
end

--- @param run ttyoffer.Run
function M.close_question(run)
  return ('Close run %d? %s is still running: closing hangs it up'):format(run.id, run.title)
end

function M.reattach()
  return nil
end

function M.sessions()
  return {}
end

function M.list_lines()
  return {}
end

--- Never asked: :TtyRun kill names sessions, and a plain run has none.
function M.kill(_, name, tell)
  tell(('%s is no session: a plain run ends with its pane (:TtyRun close)'):format(name), vim.log.levels.WARN)
end

function M.places()
  return {}
end

return M
