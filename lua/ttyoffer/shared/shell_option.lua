-- The argv Neovim runs a string command with: 'shell' and 'shellcmdflag'
-- split into words, then the command as 'shellxquote' and 'shellxescape'
-- make it (shell_build_argv in src/nvim/os/shell.c). A wrapped string
-- command must start the very argv stock would.
local M = {}

local function blank(c)
  return c == ' ' or c == '\t'
end

--- An option's words as Neovim's tokenize() splits it: a word ends at a
--- blank (space or tab) outside double quotes; the quotes are dropped, and
--- inside them a backslash keeps a `"` or a `\` after it literal (any other
--- backslash stays). Nothing else is special: no single quotes, no
--- backslash outside quotes, no expansion. A value starting with a blank
--- has an empty first word, as in Neovim (which then cannot start it).
--- @param text string
--- @return string[]
function M.words(text)
  local words = {}
  local i, n = 1, #text
  while i <= n do
    local word, quoted = {}, false
    while i <= n do
      local c = text:sub(i, i)
      if blank(c) and not quoted then
        break
      end
      local after = text:sub(i + 1, i + 1)
      if c == '"' then
        quoted = not quoted
      elseif c == '\\' and quoted and (after == '\\' or after == '"') then
        i = i + 1
        word[#word + 1] = after
      else
        word[#word + 1] = c
      end
      i = i + 1
    end
    words[#words + 1] = table.concat(word)
    while i <= n and blank(text:sub(i, i)) do
      i = i + 1
    end
  end
  return words
end

--- `cmd` as 'shellxquote' wraps it, after 'shellxescape' when that is `(`
--- (shell_xescape_xquote): each of its characters in `cmd` gets a `^`.
--- @param cmd string
--- @param xquote string
--- @param xescape string
--- @return string
local function xquoted(cmd, xquote, xescape)
  if xquote == '' then
    return cmd
  end
  if xescape ~= '' and xquote == '(' then
    -- Bytes of ASCII only: Neovim steps over a multibyte character whole.
    cmd = cmd:gsub('[%z\1-\127]', function(c)
      return xescape:find(c, 1, true) and ('^' .. c) or c
    end)
  end
  if xquote == '(' then
    return '(' .. cmd .. ')'
  elseif xquote == '"(' then
    return '"(' .. cmd .. ')"'
  end
  return xquote .. cmd .. xquote
end

--- The argv Neovim runs the string command `cmd` with.
--- @param cmd string
--- @param options {shell: string, shellcmdflag: string, shellxquote: string?, shellxescape: string?}
--- @return string[]
function M.argv(cmd, options)
  local argv = M.words(options.shell)
  vim.list_extend(argv, M.words(options.shellcmdflag))
  argv[#argv + 1] = xquoted(cmd, options.shellxquote or '', options.shellxescape or '')
  return argv
end

--- The options M.argv() reads, as they are now.
--- @return {shell: string, shellcmdflag: string, shellxquote: string, shellxescape: string}
function M.current()
  local o = vim.o
  return { shell = o.shell, shellcmdflag = o.shellcmdflag, shellxquote = o.shellxquote, shellxescape = o.shellxescape }
end

return M
