-- The typing gate: focus only moves between the editor and a prompt once
-- the user has paused typing, so keys meant for one never reach the other.
local M = {}

local config = require('ttyoffer.config')

local last_key = 0 -- vim.uv.now() of the last key the user pressed
local watching = false

--- Start noting keypresses (once; from startup, so the first prompt already
--- knows whether the user is typing).
function M.watch()
  if watching then
    return
  end
  watching = true
  vim.on_key(function()
    last_key = vim.uv.now()
  end, vim.api.nvim_create_namespace('ttyoffer.typing'))
end

--- Milliseconds until the user will have paused typing long enough.
--- @return integer
function M.until_pause()
  local pause = config.current.float.typing_pause
  local since = vim.uv.now() - last_key
  return since >= pause and 0 or pause - since
end

--- Run `fn` once the user has paused typing.
--- @param fn fun()
function M.after_pause(fn)
  local wait = M.until_pause()
  if wait == 0 then
    return fn()
  end
  vim.defer_fn(function()
    M.after_pause(fn)
  end, wait)
end

return M
