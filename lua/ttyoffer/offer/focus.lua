-- Where the user was before a prompt took focus, and giving it back there,
-- in the mode they were in.
local M = {}

local api = vim.api

--- @class ttyoffer.Place
--- @field win integer
--- @field mode string
--- @field returned boolean?

--- @return ttyoffer.Place
function M.remember()
  return { win = api.nvim_get_current_win(), mode = api.nvim_get_mode().mode }
end

-- Modes in which a window may take focus without eating what the user is
-- typing: not the command line, a hit-enter or confirm prompt, or the cmdwin.
--- @return boolean
function M.can_take()
  local mode = api.nvim_get_mode()
  if mode.blocking then
    return false
  end
  local m = mode.mode
  if m:match('^c') or m:match('^r') or m:match('^no') then
    return false
  end
  return vim.fn.getcmdwintype() == ''
end

local function restore_mode(mode)
  if mode:match('^[it]') then
    vim.cmd.startinsert()
  else
    vim.cmd.stopinsert()
  end
end

--- Give focus back to `place` if the window `from` still has it; `done` runs
--- once that is settled (at once when the user went elsewhere meanwhile:
--- they stay there).
--- @param place ttyoffer.Place
--- @param from integer the prompt's window
--- @param done fun()
function M.give_back(place, from, done)
  if place.returned or api.nvim_get_current_win() ~= from then
    place.returned = true
    return done()
  end
  place.returned = true
  local leaving_terminal = api.nvim_get_mode().mode == 't'
  if api.nvim_win_is_valid(place.win) then
    pcall(api.nvim_set_current_win, place.win)
  else
    vim.cmd.wincmd('p')
  end
  if not leaving_terminal then
    restore_mode(place.mode)
    return done()
  end
  -- Neovim leaves Terminal mode on its next turn; a mode set before that
  -- would be undone.
  local settled = false
  local function settle()
    if not settled then
      settled = true
      restore_mode(place.mode)
      done()
    end
  end
  api.nvim_create_autocmd('ModeChanged', {
    pattern = 't:*',
    once = true,
    callback = function()
      vim.schedule(settle)
    end,
  })
  vim.defer_fn(settle, 200)
end

return M
