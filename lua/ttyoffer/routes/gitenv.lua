-- git's gpg.program for every git the editor starts, whatever starts it
-- (vim-fugitive, a terminal, Vimscript system(), an offer): our
-- libexec/ttyoffer-gpg, handed to git through the editor's environment
-- (GIT_CONFIG_COUNT/KEY_n/VALUE_n, appended after the user's own entries),
-- which runs the user's own gpg.program and only chooses where it asks for
-- the passphrase. No file of the user's is written; off puts the environment
-- back as it was.
--
-- The editor's own GPG_TTY goes from its environment meanwhile: exported by
-- the shell that started the editor, it names the editor's screen, and
-- anything a terminal or a plain spawn runs would draw pinentry over it.
-- Without it gpg asks on the terminal of its stdin (a :terminal's own), or
-- fails at once; the offers set their own.
local M = {}

local WRAPPER = require('ttyoffer.host.install').root .. '/libexec/ttyoffer-gpg'

--- What was there before ours, to put back: nil when ours is not set.
--- @type {index: integer, count: string?, key: string?, value: string?, gpg_tty: string?,
---   ours: table<string, string?>}?
local saved = nil

--- Why ours could not be set (a GIT_CONFIG_COUNT git itself would refuse),
--- or nil.
--- @type string?
M.problem = nil

local INT_MAX = 2147483647

--- GIT_CONFIG_COUNT read exactly as git reads it (config.c: strtoul in base
--- 10, nothing after the digits, at most INT_MAX), or nil and git's own
--- complaint. strtoul skips leading white space, takes a sign (a minus
--- negates modulo 2^64: '-0' is 0, '-1' is too many) and an empty string is
--- 0.
--- @param count string
--- @return integer? count, string? complaint
function M.parse_count(count)
  local sign, digits = count:match('^[ \t\n\v\f\r]*([+-]?)(%d+)$')
  if not digits then
    if count == '' then
      return 0
    end
    return nil, 'bogus count'
  end
  digits = digits:gsub('^0+', '')
  if digits == '' then
    return 0
  end
  if sign ~= '-' then
    if #digits > 10 or tonumber(digits) > INT_MAX then
      return nil, 'too many entries'
    end
    return tonumber(digits)
  end
  -- 2^64 - n is at most INT_MAX only for n within INT_MAX of 2^64: the
  -- same 20 digits up to the last 11 (exact in a double).
  local two_64 = '18446744073709551616'
  if #digits ~= 20 or digits:sub(1, 9) ~= two_64:sub(1, 9) or digits >= two_64 then
    return nil, 'too many entries'
  end
  local negated = tonumber(two_64:sub(10)) - tonumber(digits:sub(10))
  if negated > INT_MAX then
    return nil, 'too many entries'
  end
  return negated
end

-- Names of ours in the environment, each put back as it was on off (an
-- editor started inside another's terminal inherits the other's).
local OURS = { 'TTYOFFER_EDITOR_TTY', 'TTYOFFER_NVIM', 'TTYOFFER_NVIM_SERVER' }

--- @param on boolean
function M.set(on)
  if on and not saved then
    local count = vim.env.GIT_CONFIG_COUNT
    local index, complaint = 0, nil
    if count ~= nil then
      index, complaint = M.parse_count(count)
    end
    if not index then
      M.problem =
        string.format('GIT_CONFIG_COUNT is %q, not a count (git: %s): git refuses to run with it', count, complaint)
      return
    end
    M.problem = nil
    local key, value = 'GIT_CONFIG_KEY_' .. index, 'GIT_CONFIG_VALUE_' .. index
    saved = { index = index, count = count, key = vim.env[key], value = vim.env[value], gpg_tty = vim.env.GPG_TTY }
    saved.ours = {}
    for _, name in ipairs(OURS) do
      saved.ours[name] = vim.env[name]
    end
    vim.env[key] = 'gpg.program'
    vim.env[value] = WRAPPER
    vim.env.GIT_CONFIG_COUNT = tostring(index + 1)
    -- For the wrapper: the name that points at the editor's own terminal
    -- (the shell that started it exported it), and how to ask this editor
    -- for a terminal, even from a process started without $NVIM (a plain
    -- vim.uv.spawn: mini.git).
    vim.env.TTYOFFER_EDITOR_TTY = vim.env.GPG_TTY
    vim.env.TTYOFFER_NVIM = vim.v.progpath
    vim.env.TTYOFFER_NVIM_SERVER = vim.v.servername ~= '' and vim.v.servername or nil
    vim.env.GPG_TTY = nil
  elseif not on and saved then
    -- Put back only what is still ours: someone may have added after us.
    if vim.env.GIT_CONFIG_COUNT == tostring(saved.index + 1) then
      vim.env.GIT_CONFIG_COUNT = saved.count
      vim.env['GIT_CONFIG_KEY_' .. saved.index] = saved.key
      vim.env['GIT_CONFIG_VALUE_' .. saved.index] = saved.value
    end
    for _, name in ipairs(OURS) do
      vim.env[name] = saved.ours[name]
    end
    if vim.env.GPG_TTY == nil then
      vim.env.GPG_TTY = saved.gpg_tty
    end
    saved = nil
  end
end

-- What Neovim puts in its own environment for its children (this editor's
-- address, log, manifest, runtime): nothing that outlives the editor keeps it.
local NEOVIM_OWN =
  { 'NVIM', 'NVIM_LOG_FILE', 'NVIM_RPLUGIN_MANIFEST', 'NVIM_LISTEN_ADDRESS', 'VIMRUNTIME', 'VIM', 'MYVIMRC' }

--- The user's environment as it was before the editor and the plugin added
--- theirs: the editor's, with the user's own git entries as they were and
--- without ours, TTYOFFER_* or Neovim's own. For what outlives the editor
--- (a tmux server a run starts). GPG_TTY stays out: the one the editor was
--- started with names the editor's screen.
--- @return table<string, string>
function M.user_environment()
  local env = vim.fn.environ()
  if saved and env.GIT_CONFIG_COUNT == tostring(saved.index + 1) then
    env.GIT_CONFIG_COUNT = saved.count
    env['GIT_CONFIG_KEY_' .. saved.index] = saved.key
    env['GIT_CONFIG_VALUE_' .. saved.index] = saved.value
  end
  for name in pairs(env) do
    if vim.startswith(name, 'TTYOFFER_') then
      env[name] = nil
    end
  end
  for _, name in ipairs(NEOVIM_OWN) do
    env[name] = nil
  end
  env.GPG_TTY = nil
  return env
end

--- @return boolean
function M.active()
  return saved ~= nil
end

M.wrapper = WRAPPER

return M
