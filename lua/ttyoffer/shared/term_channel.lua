-- A terminal of Neovim's own fed from Lua: a channel terminal
-- (nvim_open_term) in a buffer that a window already shows, so that it
-- starts at that window's size. The prompt window and the run pane each
-- show a program's terminal in one: opened, fed and wiped the same way.
local M = {}

local api = vim.api

--- The terminal in `buf` (shown in a window already): keys typed there go
--- to `on_input`, as raw bytes.
--- @param buf integer
--- @param on_input fun(data: string)
--- @return integer chan
function M.open(buf, on_input)
  return api.nvim_open_term(buf, {
    -- The program's own line endings: it runs on a real terminal, whose
    -- output already has its carriage returns.
    force_crlf = false,
    on_input = function(_, _, _, data)
      on_input(data)
    end,
  })
end

--- Feed the terminal; a terminal already gone takes nothing.
--- @param chan integer
--- @param data string
function M.send(chan, data)
  pcall(api.nvim_chan_send, chan, data)
end

--- Wipe the buffer, and with it the terminal's text and every window
--- showing it.
--- @param buf integer
function M.wipe(buf)
  if api.nvim_buf_is_valid(buf) then
    pcall(api.nvim_buf_delete, buf, { force = true })
  end
end

return M
