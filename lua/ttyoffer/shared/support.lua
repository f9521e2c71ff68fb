-- Whether this editor can run the plugin at all. Written for every Neovim
-- that loads Lua plugins (0.5 on): nothing newer than vim.fn and vim.cmd.
local M = {}

M.MIN_VERSION = '0.10'

--- Why the plugin cannot run here, or nil when it can.
--- @return string?
function M.problem()
  if vim.fn.has('nvim-' .. M.MIN_VERSION) == 0 then
    local version = vim.version and vim.version() or nil
    local this = version and string.format('%d.%d.%d', version.major, version.minor, version.patch) or 'older'
    return string.format('ttyoffer.nvim needs Neovim %s or newer (this is %s)', M.MIN_VERSION, this)
  end
  if vim.fn.has('linux') == 0 then
    return 'ttyoffer.nvim runs on Linux only (it relies on Linux ptys and /proc)'
  end
  return nil
end

local told = false

--- The plugin's checkout: four folders above this file.
local root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h:h')

--- :TtyOffer where the plugin cannot run. `install` (a plugin manager's
--- build step) writes the help tags, so that :help ttyoffer says what is
--- needed, and says plainly that nothing else was installed; the rest say
--- once why the plugin is inactive.
--- @param args string
function M.command(args)
  if vim.trim(args or '') ~= 'install' then
    return M.tell_inactive()
  end
  local wrote = pcall(vim.cmd, 'helptags ' .. vim.fn.fnameescape(root .. '/doc'))
  local said = (wrote and 'wrote the help tags (:help ttyoffer); ' or 'could not write the help tags; ')
    .. 'nothing else was installed: '
    .. M.problem()
  vim.api.nvim_echo({ { '(ttyoffer) ' .. said, 'WarningMsg' } }, true, {})
end

--- Say, once a session, that the plugin is inactive and why. For editors
--- where the plugin cannot run: nothing of it but this ever runs there.
function M.tell_inactive()
  if told then
    return
  end
  told = true
  vim.api.nvim_echo({ { '(ttyoffer) ' .. M.problem() .. '; it is inactive', 'WarningMsg' } }, true, {})
end

return M
