-- git's gpg.program and core.sshCommand for every git the editor starts,
-- whatever starts it (vim-fugitive, a terminal, Vimscript system(), an
-- offer): our libexec/ttyoffer-gpg and libexec/ttyoffer-ssh, handed to git
-- through the editor's environment (GIT_CONFIG_COUNT/KEY_n/VALUE_n,
-- appended after the user's own entries), which run the user's own gpg and
-- ssh and only choose where they ask. A GIT_SSH_COMMAND still wins, as git
-- wants. No file of the user's is written; off puts the environment back as
-- it was.
--
-- The editor's own GPG_TTY goes from its environment meanwhile: exported by
-- the shell that started the editor, it names the editor's screen, and
-- anything a terminal or a plain spawn runs would draw pinentry over it.
-- Without it gpg asks on the terminal of its stdin (a :terminal's own), or
-- fails at once; the offers set their own.
local M = {}

local WRAPPER = require('ttyoffer.host.install').root .. '/libexec/ttyoffer-gpg'
local SSH_WRAPPER = require('ttyoffer.host.install').root .. '/libexec/ttyoffer-ssh'

--- core.sshCommand is shell text for git: the path in single quotes when
--- it holds anything but plain characters.
--- @param path string
--- @return string
local function as_shell_word(path)
  if path:find('^[%w/._+,:@-]+$') then
    return path
  end
  return "'" .. path:gsub("'", [['\'']]) .. "'"
end

-- Our entries, in order, from the first free index on.
local ENTRIES = {
  { 'gpg.program', WRAPPER },
  { 'core.sshCommand', as_shell_word(SSH_WRAPPER) },
}

--- What was there before ours, to put back: nil when ours are not set.
--- `entries` holds the KEY_n and VALUE_n variables ours took, as they were
--- (false: unset).
--- @type {index: integer, count: string?, entries: table<string, string|false>, gpg_tty: string?,
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
local OURS = { 'TTYOFFER_EDITOR_TTY', 'TTYOFFER_NVIM', 'TTYOFFER_NVIM_SERVER', 'TTYOFFER_GIT_CONFIG_INDEX' }

--- The KEY_n/VALUE_n variables ours take from `index` on.
--- @param index integer
--- @return string[]
local function entry_names(index)
  local names = {}
  for offset = 0, #ENTRIES - 1 do
    names[#names + 1] = 'GIT_CONFIG_KEY_' .. (index + offset)
    names[#names + 1] = 'GIT_CONFIG_VALUE_' .. (index + offset)
  end
  return names
end

--- Puts back the entries ours took, when GIT_CONFIG_COUNT is still ours
--- (someone may have added after us).
--- @param env table<string, string?> vim.env or a copy of the environment
local function put_back(env)
  if env.GIT_CONFIG_COUNT == tostring(saved.index + #ENTRIES) then
    env.GIT_CONFIG_COUNT = saved.count
    for name, value in pairs(saved.entries) do
      env[name] = value or nil
    end
  end
end

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
    saved = { index = index, count = count, entries = {}, gpg_tty = vim.env.GPG_TTY, ours = {} }
    for _, name in ipairs(entry_names(index)) do
      saved.entries[name] = vim.env[name] or false
    end
    for _, name in ipairs(OURS) do
      saved.ours[name] = vim.env[name]
    end
    for offset, entry in ipairs(ENTRIES) do
      vim.env['GIT_CONFIG_KEY_' .. (index + offset - 1)] = entry[1]
      vim.env['GIT_CONFIG_VALUE_' .. (index + offset - 1)] = entry[2]
    end
    vim.env.GIT_CONFIG_COUNT = tostring(index + #ENTRIES)
    -- For ttyoffer-ssh: git clears GIT_CONFIG_COUNT from ssh's environment,
    -- so it reads the user's own entries (those before ours) with this.
    vim.env.TTYOFFER_GIT_CONFIG_INDEX = tostring(index)
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
    put_back(vim.env)
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
  if saved then
    put_back(env)
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
M.ssh_wrapper = SSH_WRAPPER

return M
