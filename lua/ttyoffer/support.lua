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
