-- The runs' rules the editor must know up front (completion, an instant
-- error before any pane opens), declared once, in ttyoffer_nvim/runs/rules.py
-- and ending.py: this file is written from them by scripts/rules_lua.py (a
-- test holds it current; edit the declaration). The host applies every rule
-- again and answers with an error the editor shows.
local M = {}

--- Session names (sessions.sanitize_name): other characters than these become '-'.
M.session_name = {
  unsafe = '[^A-Za-z0-9_-]',
  length = 40,
  default = 'main',
  rule = 'letters, digits, _ and - (not at either end), at most 40',
  refusal = '{shown} is not a session name: {rule}; say {suggested} if you mean that one',
}

--- ssh destinations (remote.refusal): the first character, then the rest.
M.destination = {
  first = '[%w%.%_%@%:%/%[%]%%%+]',
  rest = '[%w%.%_%@%:%/%[%]%%%+%-]',
  length = 255,
  refusal = '{shown} is not an ssh destination: a Host of your ~/.ssh/config, user@host or ssh://user@host:port (letters, digits and . _ @ : / [ ] % + -, not starting with -)',
}

--- The signals run:kill() takes by name, and their numbers.
M.signals = {
  HUP = 1,
  INT = 2,
  QUIT = 3,
  KILL = 9,
  USR1 = 10,
  USR2 = 12,
  TERM = 15,
  CONT = 18,
  STOP = 19,
  TSTP = 20,
  WINCH = 28,
}

--- How an ending is described, by its reason (ending.WORDS); the host sends its
--- own words as `said`, these are for the endings the editor makes.
M.words = {
  exited = 'exited {code}',
  signal = 'killed by {signal_name}',
  not_found = 'not found',
  not_executable = 'not executable',
  cannot_start = 'cannot start',
  closed = 'closed',
  detached = 'detached',
  disconnected = 'disconnected',
}

--- `template` with its {names} filled from `values` (as rules.fill does).
--- @param template string
--- @param values table<string, any>
--- @return string
function M.fill(template, values)
  return (template:gsub('{([%w_]+)}', function(name)
    return tostring(values[name])
  end))
end

return M
