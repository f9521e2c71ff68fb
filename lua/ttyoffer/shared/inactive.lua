-- What `require('ttyoffer')` gives where the plugin cannot run (see
-- ttyoffer.shared.support): the same names, none of which does anything. Those a
-- user calls say so, once; setup() and start(), which run at every startup,
-- say nothing (startup stays quiet). jobstart() is stock jobstart(), so
-- callers keep working.
local support = require('ttyoffer.shared.support')

local M = {}

local function inactive()
  support.tell_inactive()
end

M.setup = function() end
M.start = function() end
M._start_soon = function() end
M.enable = inactive
M.disable = inactive
M.toggle = inactive
M.dismiss = function()
  inactive()
  return false
end
M.enabled = function()
  return false
end
M.offers = function()
  return {}
end
M.status = function()
  return { enabled = false, host = 'inactive', host_error = support.problem(), offers = {} }
end
M.jobstart = function(cmd, opts)
  if opts == nil then
    return vim.fn.jobstart(cmd)
  end
  return vim.fn.jobstart(cmd, opts)
end

return M
