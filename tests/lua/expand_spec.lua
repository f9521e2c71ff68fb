-- ttyoffer.routes.expand: what :!{cmd} expands (%, modifiers, escapes), and what it
-- leaves for the shell.
local expand = require('ttyoffer.routes.expand').expand

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

describe(':! and :Bang put the previous command for !', function()
  local bang = require('ttyoffer.routes.bang')
  it('says E34 when there is none, and keeps \\! literal', function()
    errors(function()
      bang.with_previous('echo !')
    end, 'E34: No previous command')
    eq('echo !', bang.with_previous('echo \\!'))
  end)
end)

describe('the :! line', function()
  local bangline = require('ttyoffer.routes.bangline')
  it('takes a plain :!{cmd} only', function()
    eq('ls -l', bangline.command_of('!ls -l'))
    eq('ls', bangline.command_of(': :!ls'))
    eq('!', bangline.command_of('!!'))
    for _, line in ipairs({ '!', '!  ', '%!sort', "'<,'>!sort", 'r !ls', 'w !cat', 'silent !ls', '3!ls', 'echo 1' }) do
      eq(nil, bangline.command_of(line))
    end
  end)
end)
