-- How a run ended, in the editor: the one result table every kind ends in
-- (the host's Ending, runs/ending.py, on the wire), the ones the editor
-- makes itself, and their words.
local M = {}

local rules = require('ttyoffer.runs.rules')

--- @class ttyoffer.RunResult
--- @field code integer
--- @field signal integer
--- @field signal_name string
--- @field reason string exited | signal | not_found | not_executable | cannot_start | closed | detached
---   | disconnected
--- @field message string
--- @field said string? how the host described it (ending.describe)

--- A result the editor makes itself (a job run, the host gone, a time-out),
--- killed by the signal `name` (a key of rules.signals) or not.
--- @param code integer
--- @param reason string
--- @param message string
--- @param name string?
--- @return ttyoffer.RunResult
function M.made(code, reason, message, name)
  local signal, signal_name = name and rules.signals[name] or 0, name and ('SIG' .. name) or ''
  return { code = code, signal = signal, signal_name = signal_name, reason = reason, message = message }
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

return M
