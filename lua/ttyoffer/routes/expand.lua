-- The expansion :!{cmd} applies (|cmdline-special|): %, #, #n and <cword>-style
-- keywords with filename modifiers. Unlike expandcmd(), $VARS and ~ are left
-- for the shell, which is what :! does.
local M = {}

local KEYWORDS = {
  '<cword>',
  '<cWORD>',
  '<cexpr>',
  '<cfile>',
  '<afile>',
  '<abuf>',
  '<amatch>',
  '<sfile>',
  '<stack>',
  '<script>',
  '<slnum>',
  '<sflnum>',
  '<client>',
}

-- Filename modifiers after a special: :p :h :t :r :e :~ :. :S
local function modifiers(text, pos)
  local mods = ''
  while true do
    local mod = text:match('^:[phtre~.S]', pos)
    if not mod then
      return mods, pos
    end
    mods = mods .. mod
    pos = pos + #mod
  end
end

--- @param text string
--- @return string expanded
function M.expand(text)
  local out = {}
  local i = 1
  while i <= #text do
    local c = text:sub(i, i)
    local token
    if c == '\\' and text:sub(i + 1, i + 1):match('[%%#]') then
      table.insert(out, text:sub(i + 1, i + 1))
      i = i + 2
    elseif c == '%' then
      token, i = '%', i + 1
    elseif c == '#' then
      local digits = text:match('^%d+', i + 1) or ''
      token, i = '#' .. digits, i + 1 + #digits
    elseif c == '<' then
      for _, keyword in ipairs(KEYWORDS) do
        if text:sub(i, i + #keyword - 1) == keyword then
          token, i = keyword, i + #keyword
          break
        end
      end
      if not token then
        table.insert(out, c)
        i = i + 1
      end
    else
      table.insert(out, c)
      i = i + 1
    end
    if token then
      local mods
      mods, i = modifiers(text, i)
      local value = vim.fn.expand(token .. mods)
      if value == '' and (token:sub(1, 1) == '%' or token:sub(1, 1) == '#') then
        error(string.format("E499: Empty file name for '%s' or '#', only works with \":p:h\"", '%'), 0)
      end
      table.insert(out, value)
    end
  end
  return table.concat(out)
end

return M
