-- Which terminals the user can see: git's gpg.program (libexec/ttyoffer-gpg)
-- asks, over $NVIM, whether the terminal it runs under is one a window
-- shows. Only there can pinentry be answered; a pty job's terminal (Neogit's
-- git, an overseer task's) is read by its plugin, never shown, and gpg asks
-- in a prompt window instead (require('ttyoffer').lease()).
local M = {}

--- Whether a terminal buffer shown in a window (of any tab page, not a
--- hidden float) is the terminal `tty` names (its job's pty).
--- @param tty string a slave path, /dev/pts/N
--- @return boolean
function M.shown(tty)
  if type(tty) ~= 'string' or tty == '' then
    return false
  end
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    local buf = vim.api.nvim_win_get_buf(win)
    local chan = vim.bo[buf].buftype == 'terminal' and vim.bo[buf].channel or 0
    if chan > 0 and not vim.api.nvim_win_get_config(win).hide then
      local ok, info = pcall(vim.api.nvim_get_chan_info, chan)
      if ok and info.pty == tty then
        return true
      end
    end
  end
  return false
end

return M
