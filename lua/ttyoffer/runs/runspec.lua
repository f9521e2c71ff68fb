-- What run() accepts, checked before anything starts: a wrong argument is an
-- error naming the fix, and nothing is spawned.
local M = {}

local kinds = require('ttyoffer.runs.kinds')

M.placements = { 'split', 'float', 'tab' }

-- Every run's options, then those that choose its kind (kinds.keys()).
local KNOWN = vim.list_extend({ 'title', 'argv', 'env', 'cwd', 'on_exit', 'placement' }, kinds.keys())

local function fail(fmt, ...)
  error(string.format('(ttyoffer) run(): ' .. fmt, ...), 0)
end

--- @param argv any
local function check_argv(argv)
  if argv == nil then
    fail('argv is missing; give the program and its arguments, e.g. { "gh", "auth", "login" }')
  end
  if type(argv) ~= 'table' or not vim.islist(argv) then
    fail('argv must be a list of strings, got %s', type(argv))
  end
  if #argv == 0 or argv[1] == '' then
    fail('argv is empty; its first item is the program to run')
  end
  for i, arg in ipairs(argv) do
    if type(arg) ~= 'string' then
      fail('argv[%d] must be a string, got %s (%s)', i, type(arg), vim.inspect(arg))
    end
  end
end

--- @param env any
local function check_env(env)
  if env == nil then
    return
  end
  if type(env) ~= 'table' or (next(env) ~= nil and vim.islist(env)) then
    fail('env must be a table of NAME = "value", got %s', vim.inspect(env))
  end
  for name, value in pairs(env) do
    if type(name) ~= 'string' or name == '' or name:find('=', 1, true) then
      fail('env has a name that is not a variable name: %s', vim.inspect(name))
    end
    if type(value) ~= 'string' and type(value) ~= 'number' then
      fail('env.%s must be a string, got %s', name, type(value))
    end
  end
end

--- @class ttyoffer.RunSpec
--- @field title string
--- @field argv string[]
--- @field env table<string, string>
--- @field cwd string
--- @field on_exit function?
--- @field placement string
--- @field kind ttyoffer.RunKind
--- @field session string? the session's name, as given
--- @field where string? where the session is (another machine)
--- @field label string? how the session is named to the user

--- The run's folder, absolute: the current one when none is given.
--- @param cwd any
--- @return string
local function checked_cwd(cwd)
  if cwd ~= nil and type(cwd) ~= 'string' then
    fail('cwd must be a string, got %s', type(cwd))
  end
  if cwd == nil or cwd == '' then
    return vim.fn.getcwd()
  end
  local absolute = vim.fn.fnamemodify(vim.fs.normalize(cwd), ':p')
  if vim.fn.isdirectory(absolute) ~= 1 then
    fail('cwd %s is not a directory', vim.inspect(cwd))
  end
  return absolute
end

--- The bar's title: the caller's, or the command; a session's names it.
--- @param opts table
--- @param argv string[]
--- @param choice ttyoffer.RunKindChoice
--- @return string
local function title_of(opts, argv, choice)
  local title = opts.title or table.concat(argv, ' ')
  if choice.label and not opts.title then
    title = choice.label .. (#argv > 0 and (': ' .. title) or '')
  end
  return title
end

--- The checked and completed description of a run.
--- @param opts any
--- @return ttyoffer.RunSpec
function M.check(opts)
  if type(opts) ~= 'table' then
    fail('expects a table { argv = {...}, title = ..., ... }, got %s', type(opts))
  end
  for key in pairs(opts) do
    if not vim.tbl_contains(KNOWN, key) then
      fail('unknown key %s; known keys: %s (see :help ttyoffer.run())', vim.inspect(key), table.concat(KNOWN, ', '))
    end
  end
  local choice, problem = kinds.choose(opts)
  if not choice then
    fail('%s', problem)
  end
  -- A session may be attached to by name alone (or started with the login
  -- shell).
  if not (choice.kind.attaches_by_name and opts.argv == nil) then
    check_argv(opts.argv)
  end
  check_env(opts.env)
  if opts.title ~= nil and type(opts.title) ~= 'string' then
    fail('title must be a string, got %s', type(opts.title))
  end
  if opts.on_exit ~= nil and not vim.is_callable(opts.on_exit) then
    fail('on_exit must be a function, got %s', type(opts.on_exit))
  end
  local placement = opts.placement or require('ttyoffer.config').current.runs.placement
  if not vim.tbl_contains(M.placements, placement) then
    fail('placement must be one of %s, got %s', table.concat(M.placements, ', '), vim.inspect(placement))
  end
  local env = {}
  for name, value in pairs(opts.env or {}) do
    env[name] = tostring(value)
  end
  local argv = vim.deepcopy(opts.argv or {})
  -- With the kind's choice: kind, session, where, label.
  return vim.tbl_extend('error', {
    title = title_of(opts, argv, choice),
    argv = argv,
    env = env,
    cwd = checked_cwd(opts.cwd),
    on_exit = opts.on_exit,
    placement = placement,
  }, choice)
end

return M
