-- Highlight groups of the prompt window, linked so colorschemes can override.
local M = {}

function M.define()
  local set = vim.api.nvim_set_hl
  set(0, 'TtyOfferNormal', { link = 'NormalFloat', default = true })
  set(0, 'TtyOfferBorder', { link = 'FloatBorder', default = true })
  set(0, 'TtyOfferTitle', { link = 'FloatTitle', default = true })
end

return M
