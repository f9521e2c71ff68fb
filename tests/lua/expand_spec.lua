-- ttyoffer.expand: what :!{cmd} expands (%, modifiers, escapes), and what it
-- leaves for the shell.
local expand = require('ttyoffer.expand').expand

describe('expand', function()
  before_each(function()
    vim.cmd.edit('/tmp/some file.txt')
  end)

  after_each(function()
    vim.cmd('silent! %bwipeout!')
  end)

  it('expands % and its modifiers like :!', function()
    eq('echo /tmp/some file.txt', expand('echo %'))
    eq('echo some file', expand('echo %:t:r'))
  end)

  it('leaves escaped %, $VARS, ~ and other text alone', function()
    eq('echo % $HOME ~', expand('echo \\% $HOME ~'))
    eq("printf '<b>'", expand("printf '<b>'"))
  end)

  it('fails like :! without a file name', function()
    vim.cmd.enew()
    errors(function()
      expand('echo %')
    end, 'E499')
  end)
end)
