-- ttyoffer.shared.shell_option: 'shell' and 'shellcmdflag' split, and the
-- command quoted, as Neovim's shell_build_argv() does (src/nvim/os/shell.c);
-- tests/nvim/test_nvim_stock_properties.py holds it to the real editor.
local shell_option = require('ttyoffer.shared.shell_option')

describe('words', function()
  local cases = {
    { '/bin/sh', { '/bin/sh' } },
    { '/bin/bash --rcfile "$HOME/x y/my rc"', { '/bin/bash', '--rcfile', '$HOME/x y/my rc' } },
    { '  ', { '' } },
    { ' /bin/sh', { '', '/bin/sh' } },
    { '/bin/sh  \t-l\t', { '/bin/sh', '-l' } },
    { '"/opt/my shell"', { '/opt/my shell' } },
    { 'a"b c"d e', { 'ab cd', 'e' } },
    { '"a\\"b" "c\\\\d" "e\\f"', { 'a"b', 'c\\d', 'e\\f' } },
    { 'a\\"b c', { 'a\\b c' } }, -- no backslash outside quotes: the quote opens
    { "'a b'", { "'a", "b'" } },
    { '"" x', { '', 'x' } },
    { '"unclosed word', { 'unclosed word' } },
    { '', {} },
  }
  for _, case in ipairs(cases) do
    it('splits ' .. vim.inspect(case[1]), function()
      eq(case[2], shell_option.words(case[1]))
    end)
  end
end)

describe('argv', function()
  local function argv(cmd, xquote, xescape)
    return shell_option.argv(cmd, {
      shell = '"/bin/my sh" -f',
      shellcmdflag = '-c "x y"',
      shellxquote = xquote,
      shellxescape = xescape,
    })
  end
  it('ends with the command as it is', function()
    eq({ '/bin/my sh', '-f', '-c', 'x y', 'echo "a b"' }, argv('echo "a b"'))
    eq({ '/bin/my sh', '-f', '-c', 'x y', 'ls' }, argv('ls', '', '^|'))
  end)
  it("wraps it in 'shellxquote'", function()
    eq('"ls"', argv('ls', '"', '')[5])
    eq('(ls)', argv('ls', '(', '')[5])
    eq('"(ls)"', argv('ls', '"(', '')[5])
    -- 'shellxescape' only with `(`, before each of its characters.
    eq('(a^|b^&é)', argv('a|b&é', '(', '|&')[5])
    eq('"a|b"', argv('a|b', '"', '|')[5])
  end)
end)
