-- Where the prompt window goes and how big it is: the one layout rule. The
-- host sizes ptys from it and does not clamp on its own.
local M = {}

local config = require('ttyoffer.config')

local MIN_WIDTH, MIN_HEIGHT = 10, 2
-- Room kept around the window: its border and a column or line of the editor.
local MARGIN = 4

--- Size (rows, columns) of the prompt window for the current editor size.
--- @return integer height, integer width
function M.size()
  local float = config.current.float
  local lines = vim.o.lines - vim.o.cmdheight
  local width = math.max(math.min(float.width, vim.o.columns - MARGIN), MIN_WIDTH)
  local height = math.max(math.min(float.height, lines - MARGIN), MIN_HEIGHT)
  return height, width
end

--- The window's position and size, centered in the editor.
--- @return {relative: string, width: integer, height: integer, row: integer, col: integer}
function M.geometry()
  local height, width = M.size()
  local lines = vim.o.lines - vim.o.cmdheight
  return {
    relative = 'editor',
    width = width,
    height = height,
    row = math.max(math.floor((lines - height - 2) / 2), 0),
    col = math.max(math.floor((vim.o.columns - width - 2) / 2), 0),
  }
end

return M
