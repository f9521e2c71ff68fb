-- ttyoffer.runs.shellwords: a :TtyRun line split as sh splits it, or sent to the
-- shell when it needs one; and runcmd's choice of argv.
local shellwords = require('ttyoffer.runs.shellwords')
local runcmd = require('ttyoffer.runs.runcmd')

describe('split', function()
  local words = {
    { 'gh auth login', { 'gh', 'auth', 'login' } },
    { '  spaced   out  ', { 'spaced', 'out' } },
    { [[git commit -m 'a message']], { 'git', 'commit', '-m', 'a message' } },
    { [[echo "double \"quoted\" \\ text"]], { 'echo', [[double "quoted" \ text]] } },
    { [[printf a\ b]], { 'printf', 'a b' } },
    { [[echo ''"" x]], { 'echo', '', 'x' } },
    { [[echo 'it''s']], { 'echo', 'its' } },
    { 'ssh host --opt=value', { 'ssh', 'host', '--opt=value' } },
    { [[echo "a|b;c>d"]], { 'echo', 'a|b;c>d' } },
    { [[echo '$HOME *']], { 'echo', '$HOME *' } },
    { [[a~b]], { 'a~b' } },
  }
  for _, case in ipairs(words) do
    it('splits ' .. case[1], function()
      eq(case[2], shellwords.split(case[1]))
    end)
  end

  local needs_shell = {
    'ls | wc -l',
    'make && make install',
    'echo $HOME',
    'echo "$HOME"',
    'ls *.lua',
    'cat < file',
    'echo hi > out',
    'cd ~',
    'FOO=1 cmd',
    'sleep 1 &',
    'a; b',
    'echo `date`',
    'echo $(date)',
    'echo {a,b}',
    'echo # comment',
  }
  for _, line in ipairs(needs_shell) do
    it('sends to the shell: ' .. line, function()
      local got, why = shellwords.split(line)
      eq(nil, got)
      eq('shell', why)
    end)
  end

  it('says what is wrong with an open quote', function()
    eq({ nil, 'a single quote is not closed' }, { shellwords.split("echo 'oops") })
    eq({ nil, 'a double quote is not closed' }, { shellwords.split('echo "oops') })
    eq({ nil, 'ends in a backslash' }, { shellwords.split('echo \\') })
  end)
end)

describe('runcmd.argv', function()
  it('runs plain words without a shell', function()
    eq({ 'gh', 'auth', 'login' }, runcmd.argv('gh auth login'))
  end)
  it("runs what needs one with 'shell' and 'shellcmdflag'", function()
    vim.o.shell = '/bin/sh'
    vim.o.shellcmdflag = '-c'
    eq({ '/bin/sh', '-c', 'ls | wc -l' }, runcmd.argv('ls | wc -l'))
    -- A builtin: only the shell knows it.
    eq({ '/bin/sh', '-c', 'cd /tmp' }, runcmd.argv('cd /tmp'))
    eq({ '/bin/sh', '-c', 'exit 4' }, runcmd.argv('exit 4'))
  end)
  it('refuses an open quote, naming it', function()
    local err = errors(function()
      runcmd.argv("echo 'oops")
    end)
    assert(err:find('(ttyoffer) :TtyRun: a single quote is not closed', 1, true), err)
  end)
end)

describe('columns.age', function()
  it('says ages the short way', function()
    local columns = require('ttyoffer.runs.columns')
    eq('5s', columns.age(5))
    eq('2m', columns.age(150))
    eq('3h', columns.age(3 * 3600 + 5))
    eq('2d', columns.age(2 * 86400))
  end)
end)
