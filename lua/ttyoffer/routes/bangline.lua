-- `:!{cmd}` as the user types it runs like :Bang: without blocking the
-- editor, with the offer.
--
-- The command line's <CR> is mapped (a `cnoremap <expr>`): when the line is
-- a plain `:!{cmd}` (no range, no modifier), the line is left with <C-c>,
-- which keeps it in history as typed, and the command runs through :Bang.
-- Everything else gets its <CR> untouched, so filters (`:{range}!`),
-- `:r !`, `:w !`, `:silent !` and `:!` alone (an interactive shell) are
-- stock. So is `:!` in a mapping made with :noremap or `noremap = true`
-- (most are): its keys do not go through this mapping, and a mapping may
-- count on `:!` having finished when its next key runs.
local M = {}

local api = vim.api

local active = false

-- A plain `:!{cmd}`: colons and blanks, `!`, then the command.
local BANG_LINE = '^[%s:]*!(.*)$'

--- The command of a plain `:!{cmd}` line, or nil.
--- @param line string
--- @return string?
function M.command_of(line)
  local cmd = line:match(BANG_LINE)
  if cmd and vim.trim(cmd) ~= '' then
    return cmd
  end
  return nil
end

local function on_cr()
  if vim.fn.getcmdtype() == ':' then
    local cmd = M.command_of(vim.fn.getcmdline())
    if cmd then
      vim.schedule(function()
        require('ttyoffer.routes.bang').run(cmd, { typed = true })
      end)
      return '<C-c>'
    end
  end
  return '<CR>'
end

--- A <CR> command-line mapping that is not ours, which ours would replace:
--- then ours is not set, and this says whose it is.
--- @return string?
function M.conflict()
  local map = vim.fn.maparg('<CR>', 'c', false, true)
  if vim.tbl_isempty(map) or map.desc == 'ttyoffer: :!{cmd} with a prompt window' then
    return nil
  end
  return map.rhs or (map.callback and 'a Lua function') or '?'
end

--- Turn the replacement on or off. Off removes the mapping: `:!` is stock.
--- @param on boolean
function M.set(on)
  if on == active then
    return
  end
  if on then
    if M.conflict() then
      return -- the user's own <CR> mapping stays; :checkhealth says so
    end
    vim.keymap.set('c', '<CR>', on_cr, { expr = true, desc = 'ttyoffer: :!{cmd} with a prompt window' })
  elseif not M.conflict() then
    pcall(api.nvim_del_keymap, 'c', '<CR>')
  end
  active = on
end

--- @return boolean
function M.active()
  return active
end

return M
