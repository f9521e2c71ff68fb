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

local WRAPPER = require('ttyoffer.install').root .. '/libexec/ttyoffer-gpg'

--- What was there before ours, to put back: nil when ours is not set.
--- @type {index: integer, count: string?, key: string?, value: string?, gpg_tty: string?}?
local saved = nil

--- Why ours could not be set (a GIT_CONFIG_COUNT git itself would refuse),
--- or nil.
--- @type string?
M.problem = nil

--- @param on boolean
function M.set(on)
  if on and not saved then
    local count = vim.env.GIT_CONFIG_COUNT
    local index = count == nil and 0 or tonumber(count)
    if not index or index < 0 or index % 1 ~= 0 then
      M.problem = string.format('GIT_CONFIG_COUNT is %q, not a count: git refuses to run with it', count)
      return
    end
    M.problem = nil
    local key, value = 'GIT_CONFIG_KEY_' .. index, 'GIT_CONFIG_VALUE_' .. index
    saved = { index = index, count = count, key = vim.env[key], value = vim.env[value], gpg_tty = vim.env.GPG_TTY }
    vim.env[key] = 'gpg.program'
    vim.env[value] = WRAPPER
    vim.env.GIT_CONFIG_COUNT = tostring(index + 1)
    -- For the wrapper: the user's entries, and the name that points at the
    -- editor's own terminal (the shell that started it exported it).
    vim.env.TTYOFFER_GIT_CONFIG_COUNT = tostring(index)
    vim.env.TTYOFFER_EDITOR_TTY = vim.env.GPG_TTY
    vim.env.TTYOFFER_NVIM = vim.v.progpath -- to ask this editor for a terminal
    vim.env.GPG_TTY = nil
  elseif not on and saved then
    -- Put back only what is still ours: someone may have added after us.
    if vim.env.GIT_CONFIG_COUNT == tostring(saved.index + 1) then
      vim.env.GIT_CONFIG_COUNT = saved.count
      vim.env['GIT_CONFIG_KEY_' .. saved.index] = saved.key
      vim.env['GIT_CONFIG_VALUE_' .. saved.index] = saved.value
    end
    vim.env.TTYOFFER_GIT_CONFIG_COUNT = nil
    vim.env.TTYOFFER_EDITOR_TTY = nil
    vim.env.TTYOFFER_NVIM = nil
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
