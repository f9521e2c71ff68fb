-- A tiny busted-style runner for tests/lua/*_spec.lua, run by Neovim itself so
-- specs see the real `vim` API with no plugin host:
--   nvim --headless --clean -l tests/lua/runner.lua [spec files…]
-- Prints one line per test, then "N passed, M failed"; exits 1 on any failure.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
vim.opt.rtp:prepend(root)
-- Like -n: specs edit buffers, and may run side by side.
vim.o.swapfile = false

-- Assertions raise at level 2, so the message starts with the spec's file:line.
local api = {}

function api.eq(expected, actual, what)
  if vim.deep_equal(expected, actual) then
    return
  end
  local prefix, e, a = what and (what .. ': ') or '', vim.inspect(expected), vim.inspect(actual)
  if type(expected) == 'table' and type(actual) == 'table' then
    local lines = vim.text.diff(e .. '\n', a .. '\n', { ctxlen = 2 }):gsub('\n$', '')
    error(('%stables differ (-expected +actual)\n%s'):format(prefix, lines), 2)
  end
  error(('%sexpected %s\n  actual %s'):format(prefix, e, a), 2)
end

function api.truthy(value)
  if not value then
    error(('expected a truthy value, got %s'):format(vim.inspect(value)), 2)
  end
end

function api.matches(pattern, s)
  if type(s) ~= 'string' or not s:find(pattern) then
    error(('expected a match for %s\n  in %s'):format(vim.inspect(pattern), vim.inspect(s)), 2)
  end
end

--- Calls fn, which must raise an error matching `pattern` (a Lua pattern);
--- returns the message for further checks.
function api.errors(fn, pattern)
  local ok, err = pcall(fn)
  if ok then
    error(('expected an error matching %s, got none'):format(vim.inspect(pattern)), 2)
  end
  local msg = tostring(err)
  if pattern and not msg:find(pattern) then
    error(('expected an error matching %s\n  got %s'):format(vim.inspect(pattern), vim.inspect(msg)), 2)
  end
  return msg
end

-- describe() runs its body at once to collect the tests; each test keeps the
-- chain of enclosing blocks for its name and its before_each/after_each hooks.
local tests, current

function api.describe(name, body)
  local parent = current
  current = { name = name, parent = parent, before = {}, after = {} }
  body()
  current = parent
end

function api.it(name, fn)
  local chain, names = {}, { name }
  local block = current
  while block do
    table.insert(chain, 1, block)
    if block.parent then -- the file's own block has no name
      table.insert(names, 1, block.name)
    end
    block = block.parent
  end
  table.insert(tests, { name = table.concat(names, ' '), fn = fn, chain = chain })
end

function api.before_each(fn)
  table.insert(current.before, fn)
end

function api.after_each(fn)
  table.insert(current.after, fn)
end

-- An error raised inside vim's runtime names its files: point at the spec too.
local function handler(err)
  local msg = type(err) == 'string' and err or vim.inspect(err)
  for level = 2, 50 do
    local info = debug.getinfo(level, 'Sl')
    if not info then
      break
    end
    if info.source:match('_spec%.lua$') then
      local where = ('%s:%d'):format(vim.fn.fnamemodify(info.source:sub(2), ':t'), info.currentline)
      return msg:find(where, 1, true) and msg or ('%s\n(at %s)'):format(msg, where)
    end
  end
  return msg
end

-- Outermost before_each first, innermost after_each first; after_each runs
-- even when the test failed, and its own failure counts too.
local function run(test)
  local ok, err = xpcall(function()
    for _, b in ipairs(test.chain) do
      for _, fn in ipairs(b.before) do
        fn()
      end
    end
    test.fn()
  end, handler)
  for i = #test.chain, 1, -1 do
    for _, fn in ipairs(test.chain[i].after) do
      local after_ok, after_err = xpcall(fn, handler)
      if ok and not after_ok then
        ok, err = false, after_err
      end
    end
  end
  return ok, err
end

local files = _G.arg and #_G.arg > 0 and _G.arg or vim.fn.glob(root .. '/tests/lua/*_spec.lua', false, true)
local passed, failed = 0, 0
-- Straight to stdout: print() under -l goes through the message area to stderr.
local function say(fmt, ...)
  io.stdout:write(fmt:format(...), '\n')
end
for _, file in ipairs(files) do
  -- Each file gets fresh copies of the modules under test.
  for name in pairs(package.loaded) do
    if name:match('^ttyoffer') then
      package.loaded[name] = nil
    end
  end
  tests, current = {}, { before = {}, after = {} }
  local label = vim.fn.fnamemodify(file, ':t')
  -- Specs see the API in their own environment rather than as globals.
  local env = setmetatable(vim.tbl_extend('force', {}, api), { __index = _G })
  local loaded, err = xpcall(function()
    local chunk, syntax_err = loadfile(file)
    setfenv(chunk or error(syntax_err, 0), env)()
  end, handler)
  if not loaded then
    failed = failed + 1
    say('FAIL %s (loading)\n    %s', label, (err:gsub('\n', '\n    ')))
  end
  for _, test in ipairs(tests) do
    local ok, test_err = run(test)
    if ok then
      passed = passed + 1
      say('ok   %s: %s', label, test.name)
    else
      failed = failed + 1
      say('FAIL %s: %s\n    %s', label, test.name, (test_err:gsub('\n', '\n    ')))
    end
  end
end
say('%d passed, %d failed', passed, failed)
io.stdout:flush()
os.exit(failed > 0 and 1 or 0)
