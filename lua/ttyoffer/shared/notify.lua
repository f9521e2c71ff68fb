-- Every message of the plugin goes through here, prefixed '(ttyoffer)'.
--
-- Answers to a command the user typed (`:TtyOffer status`, an error in its
-- arguments) are shown whole. Notices that arrive on their own (the host
-- exited, a stray was hung up) must never stop the user with a hit-enter
-- prompt: with Neovim's own vim.notify they are cut to one screen line, and
-- the whole text is kept for `:TtyOffer status`. A vim.notify replaced by a
-- plugin (nvim-notify, noice, snacks) gets the whole text: it does not block.
local M = {}

local levels = vim.log.levels
local HIGHLIGHT = { [levels.ERROR] = 'ErrorMsg', [levels.WARN] = 'WarningMsg' }
local KEEP = 20

--- Background notices, newest last, whole.
--- @type string[]
M.recent = {}
local told = {} --- @type table<string, boolean>

local function prefixed(msg)
  return vim.startswith(msg, '(ttyoffer)') and msg or ('(ttyoffer) ' .. msg)
end

--- Whether vim.notify is still Neovim's own (which echoes, and can block).
local function stock_notify()
  local info = debug.getinfo(vim.notify, 'S')
  return info ~= nil and info.source:find('vim/_editor.lua', 1, true) ~= nil
end

-- Where the whole of a notice that had to be cut can be read.
local REST = '… (:TtyOffer status)'

--- `text` cut to fit the space the command line has for a message, ending
--- in `more` when cut (by default: where the whole text can be read).
--- @param text string
--- @param more string?
--- @return string
function M.fit(text, more)
  more = more or REST
  local line = text:gsub('\n', ' ')
  local room = vim.v.echospace
  if vim.fn.strdisplaywidth(line) <= room then
    return line
  end
  local keep = math.max(room - vim.fn.strdisplaywidth(more), 1)
  local cut = line
  while vim.fn.strdisplaywidth(cut) > keep and cut ~= '' do
    cut = vim.fn.strcharpart(cut, 0, vim.fn.strchars(cut) - 1)
  end
  return cut .. more
end

--- The answer to a command the user typed: shown whole, kept in :messages.
--- @param msg string
--- @param level integer? vim.log.levels
function M.answer(msg, level)
  vim.api.nvim_echo({ { prefixed(msg), HIGHLIGHT[level or levels.INFO] } }, true, {})
end

--- A notice nobody asked for: never a hit-enter prompt. `detail`, when
--- given, follows the message in the whole text only: the line shown is the
--- message alone, so a message short enough is read whole.
--- @param msg string
--- @param level integer? vim.log.levels
--- @param detail string?
function M.notice(msg, level, detail)
  msg = prefixed(msg)
  local whole = detail and (msg .. ' (' .. detail .. ')') or msg
  level = level or levels.WARN
  table.insert(M.recent, whole)
  if #M.recent > KEEP then
    table.remove(M.recent, 1)
  end
  vim.schedule(function()
    if stock_notify() then
      vim.api.nvim_echo({ { M.fit(msg), HIGHLIGHT[level] } }, true, {})
    else
      vim.notify(whole, level)
    end
  end)
end

--- A notice given once per session for each `key`.
--- @param key string
--- @param msg string
--- @param level integer?
--- @param detail string?
function M.once(key, msg, level, detail)
  if not told[key] then
    told[key] = true
    M.notice(msg, level, detail)
  end
end

return M
