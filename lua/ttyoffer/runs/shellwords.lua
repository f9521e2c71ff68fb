-- A command line split into words as a POSIX shell would, for the lines
-- that need nothing else of a shell: quotes ('…', "…") and backslashes are
-- honoured; anything a shell would act on (pipes, redirections, `;`, `&`,
-- expansions, globs, a variable assignment in front, `~`) makes the line one
-- for the shell, and split() says so instead of guessing.
local M = {}

-- Outside quotes: characters a shell acts on.
local SPECIAL = {
  ['|'] = true,
  ['&'] = true,
  [';'] = true,
  ['<'] = true,
  ['>'] = true,
  ['('] = true,
  [')'] = true,
  ['$'] = true,
  ['`'] = true,
  ['*'] = true,
  ['?'] = true,
  ['['] = true,
  ['{'] = true,
  ['}'] = true,
  ['#'] = true,
  ['\n'] = true,
}
-- Inside double quotes: expansions.
local SPECIAL_QUOTED = { ['$'] = true, ['`'] = true }

--- The words of `line`, or nil when the line needs a shell (and why), or an
--- error for a quote left open.
--- @param line string
--- @return string[]? words, string? needs_shell_or_error
function M.split(line)
  local words = {}
  local word, in_word = {}, false
  local i, n = 1, #line
  local function finish()
    if in_word then
      table.insert(words, table.concat(word))
    end
    word, in_word = {}, false
  end
  while i <= n do
    local c = line:sub(i, i)
    if c == ' ' or c == '\t' then
      finish()
    elseif c == '\\' then
      if i == n then
        return nil, 'ends in a backslash'
      end
      i = i + 1
      table.insert(word, line:sub(i, i))
      in_word = true
    elseif c == "'" then
      local close = line:find("'", i + 1, true)
      if not close then
        return nil, 'a single quote is not closed'
      end
      table.insert(word, line:sub(i + 1, close - 1))
      in_word, i = true, close
    elseif c == '"' then
      i = i + 1
      in_word = true
      while true do
        if i > n then
          return nil, 'a double quote is not closed'
        end
        local q = line:sub(i, i)
        if q == '"' then
          break
        elseif SPECIAL_QUOTED[q] then
          return nil, 'shell'
        elseif q == '\\' and i < n and line:sub(i + 1, i + 1):match('[\\"$`]') then
          i = i + 1
          table.insert(word, line:sub(i, i))
        else
          table.insert(word, q)
        end
        i = i + 1
      end
    elseif SPECIAL[c] then
      return nil, 'shell'
    elseif c == '~' and not in_word then
      return nil, 'shell'
    elseif c == '=' and #words == 0 and not in_word then
      table.insert(word, c)
      in_word = true
    elseif c == '=' and #words == 0 then
      -- NAME=value before the command: an assignment only a shell makes.
      return nil, 'shell'
    else
      table.insert(word, c)
      in_word = true
    end
    i = i + 1
  end
  finish()
  return words
end

return M
