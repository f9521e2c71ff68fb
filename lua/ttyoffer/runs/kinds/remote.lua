-- A persistent run on another machine (`host = dest` with `persist = name`,
-- :TtyRun! dest:name): the run's program is ssh to a dtach session there
-- (the host's runs/remote.py). List, kill and signal go through the host,
-- which runs ssh off its loop (runs/remote_calls.py), as every other kind's
-- do. Nothing here holds the editor longer than the host's moment
-- (SSH_WAIT_MS) and the round trip (ASK_MS), whatever stalls: what is not
-- answered by then is answered from what is known, said to be stale, and
-- the real answer is shown when it comes (`answered`).
local M = {}

local columns = require('ttyoffer.runs.columns')
local config = require('ttyoffer.config')
local ending = require('ttyoffer.runs.ending')
local host = require('ttyoffer.host')
local names = require('ttyoffer.runs.names')
local pane = require('ttyoffer.runs.kinds.pane')
local title_rule = require('ttyoffer.shared.title')

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

M.name = 'remote'
M.keys = { 'host' }
M.attaches_by_name = true
-- The line runs by the far side's sh (the local 'shell' may not be there).
M.shell_there = true

--- `host`, when given: an ssh destination, and a session there (persist,
--- whose name dtach's check took).
--- @param opts table
--- @return string?
function M.check(opts)
  if opts.host == nil then
    return nil
  end
  if type(opts.host) ~= 'string' then
    return ('host must be an ssh destination (a string), got %s'):format(type(opts.host))
  end
  if not opts.persist then
    return 'host needs persist: a run on another machine is a persistent session there'
  end
  local problem = names.destination_problem(opts.host)
  return problem and ('host: ' .. problem)
end

--- @param opts table
function M.claims(opts)
  return opts.host ~= nil
end

--- @param opts table
function M.names(opts)
  return opts.persist, opts.host
end

--- @param dest string
--- @param name string
function M.label(dest, name)
  return dest .. ':' .. name
end

M.prepare = pane.prepare
M.environment = pane.environment

--- @param spec ttyoffer.RunSpec
function M.start_options(_, spec)
  return { persist = spec.session, host = spec.where, ssh = config.current.runs.ssh }
end

--- Never the command here instead of there.
function M.without_host()
  return 'runs on another machine need the host (' .. (host.get_error() or host.get_state()) .. ')'
end

--- run:kill(sig): to the program there, never the local ssh; over the
--- shared connection, never waited for.
--- @param run ttyoffer.Run
--- @param number integer
function M.signal(run, number)
  -- The host knows the run is remote: run_signal reaches its program there.
  pane.signal(run, number)
end

--- @param run ttyoffer.Run
function M.close_question(run)
  if not run.session then
    return pane.close_question(run)
  end
  return ('Detach from session %s on %s? It goes on there (:TtyRun! %s:%s comes back to it)'):format(
    run.session,
    run.where,
    run.where,
    run.session
  )
end

--- After a dropped connection: the same session, attached to (not made).
--- @param opts table
function M.reattach(opts)
  local again = vim.tbl_extend('force', {}, opts)
  again.argv = nil
  return again
end

--- The sessions on `dest`: the list, the error, and, when ssh did not
--- answer in time, stale = true and since when the list is known.
--- @param dest string
--- @param wait_ms integer? what the host waits for ssh
--- @return {name: string, created: integer, state: string, ended: table?}[] sessions
--- @return string? error, boolean? stale, number? known_at
function M.sessions(dest, wait_ms)
  local answer, err =
    host.request_within(ASK_MS, 'run_sessions', 'remote', dest, config.current.runs.ssh, wait_ms or M.SSH_WAIT_MS)
  if not answer then
    return {}, err
  end
  return answer.sessions or {}, nil, answer.stale, answer.known_at
end

--- The lines of `:TtyRun list {dest}`: the sessions on that machine; when
--- it has not answered in time, what is known of them, said to be stale.
--- @param dest string
--- @return string[]
local function lines_of(dest, sessions, err, stale, known_at)
  if err then
    return { ('sessions on %s: %s'):format(dest, title_rule.sanitize(err, 300)) }
  end
  local now = os.time()
  local lines = {}
  if stale then
    local since = (known_at or 0) > 0 and ('known %s ago'):format(columns.age(math.max(0, now - math.floor(known_at))))
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
      state = '(' .. ending.describe(s.ended) .. ')'
    elseif s.state == 'unreachable' then
      state = 'unreachable: its terminal is gone (kill ends it)'
    end
    table.insert(lines, ('%-20s %-8s %s'):format(s.name, columns.age(math.max(0, now - s.created)), state))
  end
  return lines
end

--- `:TtyRun list {dest}`: its lines now, and `late(lines)` again with the
--- fresh list when it was stale and the answer comes. Without a `dest`,
--- nothing: no machine is asked unless named.
--- @param dest string?
--- @param late fun(lines: string[])
--- @return string[]
function M.list_lines(dest, late)
  if not dest then
    return {}
  end
  local sessions, err, stale, known_at = M.sessions(dest)
  if stale then
    waiting_lists[dest] = {
      at = vim.uv.now(),
      show = function(fresh, fresh_err)
        late(lines_of(dest, fresh, fresh_err))
      end,
    }
  end
  return lines_of(dest, sessions, err, stale, known_at)
end

--- What `:TtyRun kill {dest}:{name}` says of an answer (now or late).
local function tell_kill(dest, name, answer, tell)
  if answer.error then
    tell(
      ('(ttyoffer) :TtyRun kill %s:%s: %s'):format(dest, name, title_rule.sanitize(answer.error, 300)),
      vim.log.levels.ERROR
    )
  elseif answer.pending then
    tell(('asking %s to end session %s; you will be told'):format(dest, name))
  elseif answer.ended then
    tell(('session %s on %s ended'):format(name, dest))
  else
    tell(('no live session %s on %s'):format(name, dest), vim.log.levels.WARN)
  end
end

--- `:TtyRun kill {dest}:{name}`: told now, and once more when an answer
--- not known yet comes.
--- @param dest string
--- @param name string
--- @param tell fun(message: string, level: integer?)
function M.kill(dest, name, tell)
  local answer, err =
    host.request_within(ASK_MS, 'run_session_kill', 'remote', dest, name, config.current.runs.ssh, M.SSH_WAIT_MS)
  if not answer then
    tell_kill(dest, name, { error = err }, tell)
    return
  end
  if answer.pending then
    waiting_kills[dest .. ':' .. name] = function(late)
      tell_kill(dest, name, late, tell)
    end
  end
  tell_kill(dest, name, answer, tell)
end

--- The Host names of ~/.ssh/config (no patterns), read now: where remote
--- sessions may be (`:TtyRun list`, `check`, and `{dest}:` complete to them).
--- @return string[]
function M.places()
  local hosts, seen = {}, {}
  local ok, lines = pcall(vim.fn.readfile, vim.fn.expand('~/.ssh/config'))
  for _, line in ipairs(ok and lines or {}) do
    local words = line:match('^%s*[Hh][Oo][Ss][Tt]%s+(.*)$')
    for name in (words or ''):gmatch('%S+') do
      if not name:find('[*?!]') and not seen[name] and not names.destination_problem(name) then
        seen[name] = true
        table.insert(hosts, name)
      end
    end
  end
  return hosts
end

--- The argv of `:TtyRun check {dest}` (run in a pane: ssh may ask).
--- @return string[]? argv, string? error
function M.check_argv(dest)
  local answer, err = host.request('run_check', 'remote', dest, config.current.runs.ssh)
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
