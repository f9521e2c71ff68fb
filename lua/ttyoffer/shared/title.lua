-- Text from a command that the editor shows (a window's title, a notice):
-- the one rule of ttyoffer_nvim/term/text.py. Unprintable characters (controls,
-- bidi overrides and other format characters, private use, line and
-- paragraph separators) become spaces, space folds, the text is cut short.
local M = {}

local LIMIT = 40

-- BEGIN unprintable ranges (scripts/unprintable.py)
-- Unicode 14.0.0, categories Cc, Cf, Co, Cs, Zl, Zp
local UNPRINTABLE = {
  { 0x0000, 0x001F },
  { 0x007F, 0x009F },
  { 0x00AD, 0x00AD },
  { 0x0600, 0x0605 },
  { 0x061C, 0x061C },
  { 0x06DD, 0x06DD },
  { 0x070F, 0x070F },
  { 0x0890, 0x0891 },
  { 0x08E2, 0x08E2 },
  { 0x180E, 0x180E },
  { 0x200B, 0x200F },
  { 0x2028, 0x202E },
  { 0x2060, 0x2064 },
  { 0x2066, 0x206F },
  { 0xD800, 0xF8FF },
  { 0xFEFF, 0xFEFF },
  { 0xFFF9, 0xFFFB },
  { 0x110BD, 0x110BD },
  { 0x110CD, 0x110CD },
  { 0x13430, 0x13438 },
  { 0x1BCA0, 0x1BCA3 },
  { 0x1D173, 0x1D17A },
  { 0xE0001, 0xE0001 },
  { 0xE0020, 0xE007F },
  { 0xF0000, 0xFFFFD },
  { 0x100000, 0x10FFFD },
}
-- END unprintable ranges

--- @param cp integer
--- @return boolean
local function unprintable(cp)
  local lo, hi = 1, #UNPRINTABLE
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local range = UNPRINTABLE[mid]
    if cp < range[1] then
      hi = mid - 1
    elseif cp > range[2] then
      lo = mid + 1
    else
      return true
    end
  end
  return false
end

--- The code point of the UTF-8 sequence at byte `i`, and its length; an
--- invalid byte counts as one unprintable character.
--- @param s string
--- @param i integer
--- @return integer cp, integer len
local function decode(s, i)
  local b = s:byte(i)
  local len = b < 0x80 and 1 or b >= 0xF0 and b < 0xF8 and 4 or b >= 0xE0 and 3 or b >= 0xC2 and b < 0xE0 and 2 or 0
  if len == 0 then
    return 0, 1
  end
  local cp = len == 1 and b or b % (2 ^ (7 - len))
  for j = i + 1, i + len - 1 do
    local c = s:byte(j)
    if not c or c < 0x80 or c >= 0xC0 then
      return 0, 1
    end
    cp = cp * 64 + c % 64
  end
  return cp, len
end

--- Printable text on one line, at most `limit` characters (default 40).
--- @param text string
--- @param limit integer?
--- @return string
function M.sanitize(text, limit)
  limit = limit or LIMIT
  local parts, i, n = {}, 1, #text
  while i <= n do
    local cp, len = decode(text, i)
    parts[#parts + 1] = unprintable(cp) and ' ' or text:sub(i, i + len - 1)
    i = i + len
  end
  -- Only the plain space folds: every other ASCII space is a control and
  -- became one; other Unicode spaces are printable and stay.
  local folded = table.concat(parts):gsub(' +', ' '):gsub('^ ', ''):gsub(' $', '')
  if vim.fn.strchars(folded) > limit then
    folded = vim.fn.strcharpart(folded, 0, limit - 1):gsub(' +$', '') .. '…'
  end
  return folded
end

--- A short title for a command as the caller gave it.
--- @param cmd string|string[]
--- @return string
function M.of_command(cmd)
  return M.sanitize(type(cmd) == 'table' and table.concat(cmd, ' ') or tostring(cmd))
end

return M
