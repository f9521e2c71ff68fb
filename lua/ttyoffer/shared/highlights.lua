-- Highlight groups of the prompt window, linked so colorschemes can override.
local M = {}

function M.define()
  local set = vim.api.nvim_set_hl
  set(0, 'TtyOfferNormal', { link = 'NormalFloat', default = true })
  set(0, 'TtyOfferBorder', { link = 'FloatBorder', default = true })
  set(0, 'TtyOfferTitle', { link = 'FloatTitle', default = true })
  -- A run's bar: its title, its state (running, ended well, ended badly)
  -- and Close.
  set(0, 'TtyOfferRunTitle', { link = 'WinBar', default = true })
  set(0, 'TtyOfferRunRunning', { link = 'DiagnosticInfo', default = true })
  set(0, 'TtyOfferRunExited', { link = 'DiagnosticOk', default = true })
  set(0, 'TtyOfferRunFailed', { link = 'DiagnosticError', default = true })
  set(0, 'TtyOfferRunClose', { link = 'Special', default = true })
end

return M
