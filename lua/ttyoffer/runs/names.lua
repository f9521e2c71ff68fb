-- The names a run is given, checked as the host checks them: a persistent
-- session's name and an ssh destination, by the rules generated from the
-- host's (rules.lua). The host applies them again and answers with an error.
local M = {}

local rules = require('ttyoffer.runs.rules')

--- What the host's session-name sanitiser (sessions.sanitize_name) makes
--- of `name`, by the rule generated from it (rules.session_name; a UTF-8
--- character becomes one '-').
--- @param name string
--- @return string
function M.sanitized_session(name)
  local rule = rules.session_name
  local cleaned = name:gsub('[\192-\255][\128-\191]*', '-'):gsub(rule.unsafe, '-')
  cleaned = cleaned:gsub('^%-+', ''):sub(1, rule.length):gsub('%-+$', '')
  return cleaned ~= '' and cleaned or rule.default
end

--- Why `name` is not a persistent session's name, or nil: a name the
--- sanitiser would change is refused (never merged into another session).
--- @param name string
--- @return string?
function M.session_name_problem(name)
  if name ~= '' and M.sanitized_session(name) == name then
    return nil
  end
  local rule = rules.session_name
  return rules.fill(rule.refusal, {
    shown = vim.inspect(name),
    rule = rule.rule,
    suggested = vim.inspect(M.sanitized_session(name)),
  })
end

--- Why `dest` is not an ssh destination we pass on, or nil (the host
--- checks it again: remote.refusal).
--- @param dest string
--- @return string?
function M.destination_problem(dest)
  local rule = rules.destination
  if #dest <= rule.length and dest:match('^' .. rule.first .. rule.rest .. '*$') then
    return nil
  end
  return rules.fill(rule.refusal, { shown = vim.inspect(dest) })
end

return M
