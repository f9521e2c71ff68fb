-- Sessions on other machines: list, kill and signal go through the host,
-- which runs ssh off its loop (runs/remote_calls.py), as every other kind's
-- do. Nothing here holds the editor longer than the host's moment
-- (SSH_WAIT_MS) and the round trip (ASK_MS), whatever stalls: what is not
-- answered by then is answered from what is known, said to be stale, and
-- the real answer is shown when it comes (`answered`).
local M = {}

local config = require('ttyoffer.config')
local host = require('ttyoffer.host')

-- What the host waits for ssh, and what the editor waits for the host (ms).
M.SSH_WAIT_MS = 300
local ASK_MS = 450
-- A late list is shown when `:TtyRun list {dest}` was answered stale this
-- recently (ms); a late kill always is.
local LATE_LIST_MS = 60000

-- Lists answered stale, by dest, and kills not answered yet, by dest:name:
-- what shows their late answer.
local waiting_lists = {} --- @type table<string, {at: integer, show: function}>
local waiting_kills = {} --- @type table<string, function>

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

--- `:TtyRun list {dest}`: `show(sessions, err, stale, known_at)` now, and
--- again with the fresh list when it was stale and the answer comes.
--- @param dest string
--- @param show fun(sessions: table[], err: string?, stale: boolean?, known_at: number?)
function M.list(dest, show)
  local sessions, err, stale, known_at = M.sessions(dest)
  if stale then
    waiting_lists[dest] = { at = vim.uv.now(), show = show }
  end
  show(sessions, err, stale, known_at)
end

--- `:TtyRun kill {dest}:{name}`: `tell(answer)` now ({pending = true} when
--- it is not known yet), and once more when the answer comes.
--- @param dest string
--- @param name string
--- @param tell fun(answer: {ended: boolean?, error: string?, pending: boolean?})
function M.kill(dest, name, tell)
  local answer, err = host.request_within(ASK_MS, 'remote_kill', dest, name, config.current.runs.ssh, M.SSH_WAIT_MS)
  if not answer then
    tell({ error = err })
    return
  end
  if answer.pending then
    waiting_kills[dest .. ':' .. name] = tell
  end
  tell(answer)
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

--- A list or kill answered late (the host's `remote_answer`).
--- @param dest string
--- @param action 'list'|'kill'
--- @param name string
--- @param answer table
function M.answered(dest, action, name, answer)
  if action == 'list' then
    local waiting = waiting_lists[dest]
    waiting_lists[dest] = nil
    if waiting and vim.uv.now() - waiting.at < LATE_LIST_MS then
      waiting.show(answer.sessions or {}, answer.error)
    end
  elseif action == 'kill' then
    local tell = waiting_kills[dest .. ':' .. name]
    waiting_kills[dest .. ':' .. name] = nil
    if tell then
      tell(answer)
    end
  end
end

return M
