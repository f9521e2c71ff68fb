-- Sessions on other machines: list, kill and signal go through the host,
-- which runs ssh off its loop (runs/remote_calls.py), as every other kind's
-- do. Nothing here holds the editor longer than the host's moment
-- (SSH_WAIT_MS) and the round trip (ASK_MS), whatever stalls: what is not
-- answered by then is answered from what is known, said to be stale, and
-- the real answer is shown when it comes (`answered`).
local M = {}

local config = require('ttyoffer.config')
local host = require('ttyoffer.host')
local notify = require('ttyoffer.shared.notify')

-- What the host waits for ssh, and what the editor waits for the host (ms).
M.SSH_WAIT_MS = 300
local ASK_MS = 450
-- A late list is shown when `:TtyRun list {dest}` was answered stale this
-- recently (ms); a late kill always is.
local LATE_LIST_MS = 60000

local waiting_lists = {} --- @type table<string, integer> dest -> vim.uv.now() asked

local function sanitize(text, width)
  return require('ttyoffer.shared.title').sanitize(tostring(text), width)
end

--- The sessions on `dest`: the list, the error, and, when ssh did not
--- answer in time, stale = true and since when the list is known.
--- @param dest string
--- @param wait_ms integer? what the host waits for ssh
--- @return {name: string, created: integer, state: string, ended: table?}[] sessions
--- @return string? error, boolean? stale, number? known_at
function M.sessions(dest, wait_ms)
  local answer, err =
    host.request_within(ASK_MS, 'remote_sessions', dest, config.current.runs.ssh, wait_ms or M.SSH_WAIT_MS)
  if not answer then
    return {}, err
  end
  return answer.sessions or {}, nil, answer.stale, answer.known_at
end

--- The lines of a list of `dest`'s sessions.
--- @param dest string
--- @param sessions {name: string, created: integer, state: string, ended: table?}[]
--- @return string[]
function M.lines(dest, sessions, err, stale, known_at)
  if err then
    return { ('sessions on %s: %s'):format(dest, sanitize(err, 300)) }
  end
  local age = require('ttyoffer.runs.runcmd').age
  local now = os.time()
  local lines = {}
  if stale then
    local since = (known_at or 0) > 0 and ('known %s ago'):format(age(math.max(0, now - math.floor(known_at))))
      or 'nothing known yet'
    table.insert(lines, ('%s has not answered yet (%s); its answer follows when it comes'):format(dest, since))
  end
  if #sessions == 0 then
    table.insert(lines, (stale and 'no sessions known on ' or 'no sessions on ') .. dest)
    return lines
  end
  table.insert(lines, ('%-20s %-8s %s'):format('session on ' .. dest, 'age', 'state'))
  for _, s in ipairs(sessions) do
    local state = s.state
    if s.ended then
      state = '(' .. require('ttyoffer.runs').describe(s.ended) .. ')'
    elseif s.state == 'unreachable' then
      state = 'unreachable: its terminal is gone (kill ends it)'
    end
    table.insert(lines, ('%-20s %-8s %s'):format(s.name, age(math.max(0, now - s.created)), state))
  end
  return lines
end

--- `:TtyRun list {dest}`: its lines now; when stale, the fresh list is
--- shown again once it comes.
--- @param dest string
--- @return string[]
function M.list_lines(dest)
  local sessions, err, stale, known_at = M.sessions(dest)
  if stale then
    waiting_lists[dest] = vim.uv.now()
  end
  return M.lines(dest, sessions, err, stale, known_at)
end

--- `:TtyRun kill {dest}:{name}`: told now, or once the answer comes.
--- @param dest string
--- @param name string
function M.kill(dest, name)
  local answer, err = host.request_within(ASK_MS, 'remote_kill', dest, name, config.current.runs.ssh, M.SSH_WAIT_MS)
  if not answer then
    error('(ttyoffer) :TtyRun kill: ' .. sanitize(err, 300), 0)
  end
  if answer.pending then
    notify.answer(('asking %s to end session %s; you will be told'):format(dest, name))
    return
  end
  M.answered(dest, 'kill', name, answer)
end

--- run:kill(sig) of a remote run: to the program there, never waited for.
--- @param run ttyoffer.Run
--- @param number integer
function M.signal(run, number)
  host.notify('remote_signal', run.host, run.session, config.current.runs.ssh, number)
end

--- The argv of `:TtyRun check {dest}` (run in a pane: ssh may ask).
--- @return string[]? argv, string? error
function M.check_argv(dest)
  local answer, err = host.request('remote_command', dest, 'check', '', config.current.runs.ssh, 0)
  if not answer then
    return nil, err
  end
  return answer.argv
end

--- A list or kill answered (at once, or late: the host's `remote_answer`).
--- @param dest string
--- @param action 'list'|'kill'
--- @param name string
--- @param answer table
function M.answered(dest, action, name, answer)
  if action == 'list' then
    local asked = waiting_lists[dest]
    waiting_lists[dest] = nil
    if asked and vim.uv.now() - asked < LATE_LIST_MS then
      local lines = M.lines(dest, answer.sessions or {}, answer.error)
      notify.answer(table.concat(lines, '\n'))
    end
  elseif action == 'kill' then
    if answer.error then
      notify.answer(('kill %s:%s: %s'):format(dest, name, sanitize(answer.error, 300)), vim.log.levels.ERROR)
    elseif answer.ended then
      notify.answer(('session %s on %s ended'):format(name, dest))
    else
      notify.answer(('no live session %s on %s'):format(name, dest), vim.log.levels.WARN)
    end
  end
end

return M
