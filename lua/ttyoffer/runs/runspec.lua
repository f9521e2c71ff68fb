-- What run() accepts, checked before anything starts: a wrong argument is an
-- error naming the fix, and nothing is spawned.
local M = {}

local rules = require('ttyoffer.runs.rules')

M.placements = { 'split', 'float', 'tab' }

local KNOWN = { 'title', 'argv', 'env', 'cwd', 'on_exit', 'placement', 'persist', 'tmux', 'host' }

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

--- @class ttyoffer.RunSpec
--- @field title string
--- @field argv string[]
--- @field env table<string, string>
--- @field cwd string
--- @field on_exit function?
--- @field placement string
--- @field persist string?
--- @field tmux string?

--- The session keys: persist (a name), host (with persist), tmux (a name;
--- not with persist).
--- @param opts table
local function check_session(opts)
  for _, key in ipairs({ 'persist', 'tmux' }) do
    if opts[key] ~= nil and type(opts[key]) ~= 'string' then
      fail('%s must be a session name (a string), got %s', key, type(opts[key]))
    end
  end
  if opts.persist then
    local problem = M.session_name_problem(opts.persist)
    if problem then
      fail('persist: %s', problem)
    end
  end
  if opts.host ~= nil then
    if type(opts.host) ~= 'string' then
      fail('host must be an ssh destination (a string), got %s', type(opts.host))
    end
    if not opts.persist then
      fail('host needs persist: a run on another machine is a persistent session there')
    end
    local problem = M.destination_problem(opts.host)
    if problem then
      fail('host: %s', problem)
    end
  end
  if opts.persist and opts.tmux then
    fail('persist and tmux are two kinds of session; give one')
  end
  if opts.tmux and vim.fn.executable('tmux') ~= 1 then
    fail('tmux is not installed: sudo apt-get install tmux (or leave tmux out)')
  end
end

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
--- @return string
local function title_of(opts, argv)
  local title = opts.title or table.concat(argv, ' ')
  local session = opts.persist or opts.tmux
  if session and not opts.title then
    local where = opts.host and (opts.host .. ':') or (opts.tmux and 'tmux ' or '')
    title = where .. session .. (#argv > 0 and (': ' .. title) or '')
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
  check_session(opts)
  -- A session may be attached to by name alone (or started with the login
  -- shell).
  if not ((opts.persist or opts.tmux) and opts.argv == nil) then
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
  return {
    title = title_of(opts, argv),
    argv = argv,
    persist = opts.persist,
    tmux = opts.tmux,
    host = opts.host,
    env = env,
    cwd = checked_cwd(opts.cwd),
    on_exit = opts.on_exit,
    placement = placement,
  }
end

return M
