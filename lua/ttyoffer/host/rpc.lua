-- The wire to the host: notifications, and requests waited for within a
-- bound (never rpcrequest's wait, which lasts for good on a stopped host).
local M = {}

local process = require('ttyoffer.host.process')
local protocol = require('ttyoffer.host.protocol')

-- Requests in flight (request_within): token -> what came back.
local asked = {} --- @type table<integer, {done: boolean, result: any, error: string?}>
local next_token = 0
--- Milliseconds a request waits for its answer unless it names its own.
M.REQUEST_MS = 500
-- Set when a request went unanswered: the host is stopped or stalled, and
-- later requests say so at once instead of waiting again, until it answers
-- (or a new host starts).
local unanswered = nil --- @type {name: string, ms: integer}?

process.subscribe({
  spawned = function()
    unanswered = nil
  end,
})

local function no_answer(name, ms)
  return ('the host did not answer %s within %d ms (is it stopped? see :checkhealth ttyoffer)'):format(name, ms)
end

--- A notification to the host (a method of ttyoffer.host.protocol); false when
--- it could not be sent.
--- @param name string
--- @return boolean
function M.notify(name, ...)
  local method = protocol.method(name, 'notify')
  local chan = process.get_channel()
  if not chan then
    return false
  end
  return (pcall(vim.rpcnotify, chan, method, ...))
end

--- A request to the host (a method of ttyoffer.host.protocol), waited for at most
--- `timeout` ms: its value; or nil and why (no answer in time, a failure,
--- or the host's refusal: then a third value, true).
--- Sent as a notification (`ask`) and answered by the `answer` event: the
--- wait is vim.wait's, bounded and serving the editor's events (CTRL-C ends
--- it), never rpcrequest's, which waits on a stopped host for good.
--- @param timeout integer
--- @param name string
function M.request_within(timeout, name, ...)
  protocol.method(name, 'request') -- a name outside the protocol fails here
  if not process.ready() then
    return nil, 'host not running'
  end
  if unanswered then
    return nil, no_answer(unanswered.name, unanswered.ms)
  end
  next_token = next_token + 1
  local token = next_token
  local slot = { done = false }
  asked[token] = slot
  if not M.notify('ask', token, name, { ... }) then
    asked[token] = nil
    return nil, 'the host cannot be reached'
  end
  local _, status = vim.wait(timeout, function()
    return slot.done
  end, 10)
  asked[token] = nil
  if not slot.done then
    if status == -2 then
      return nil, 'interrupted'
    end
    unanswered = { name = name, ms = timeout }
    return nil, no_answer(name, timeout)
  end
  if slot.error and slot.error ~= '' then
    return nil, slot.error
  end
  -- One rule for every request: a table, or {error = why} when the host
  -- refuses (a bad name, a folder not ours, what tmux said).
  if type(slot.result) == 'table' and slot.result.error ~= nil then
    return nil, tostring(slot.result.error), true
  end
  return slot.result
end

--- A request waited for at most REQUEST_MS; see request_within.
--- @param name string
function M.request(name, ...)
  return M.request_within(M.REQUEST_MS, name, ...)
end

--- The host's `answer`: a request's value, or why there is none.
--- @param token integer
--- @param result any
--- @param error string
function M.answered(token, result, error)
  unanswered = nil
  local slot = asked[token]
  if slot then
    slot.done, slot.result, slot.error = true, result, error
  end
end

return M
