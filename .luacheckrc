-- luacheck lua plugin tests/lua (scripts/test runs it)
std = 'luajit'
globals = { 'vim' }
max_line_length = 120 -- StyLua's column_width

-- The runner gives specs its API in their environment (tests/lua/runner.lua).
files['tests/lua'] = {
  read_globals = { 'describe', 'it', 'before_each', 'after_each', 'eq', 'truthy', 'matches', 'errors' },
}

-- Written by scripts/rules_lua.py: a rule's text is one string, as the host's.
files['lua/ttyoffer/runs/rules.lua'] = { max_line_length = false }
