-- The cells of :TtyRun list's tables, one way for every kind's.
local M = {}

--- "12s", "3m", "2h", "4d"
--- @param seconds integer
--- @return string
function M.age(seconds)
  if seconds < 60 then
    return seconds .. 's'
  elseif seconds < 3600 then
    return math.floor(seconds / 60) .. 'm'
  elseif seconds < 86400 then
    return math.floor(seconds / 3600) .. 'h'
  end
  return math.floor(seconds / 86400) .. 'd'
end

--- `text` cut to `width` display cells.
--- @param text string
--- @param width integer
--- @return string
function M.cut(text, width)
  return vim.fn.strcharpart(text, 0, width)
end

return M
