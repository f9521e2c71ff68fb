-- ttyoffer.spawn: the skip table, the prologue run by a real /bin/sh, command
-- wrapping for list and string commands, titles.
local spawn = require('ttyoffer.spawn')

local SH = { shell = '/bin/sh', shellcmdflag = '-c' }

describe('skip_reason', function()
  -- caller's opts, enabled, host ready, at capacity, expected reason
  local cases = {
    { {}, true, true, false, nil },
    { {}, false, true, false, 'disabled' },
    { {}, true, false, false, 'host not available' },
    { { pty = true }, true, true, false, 'owns a terminal' },
    { { term = true }, true, true, false, 'owns a terminal' },
    { { detach = true }, true, true, false, 'detached' },
    { { rpc = true }, true, true, false, 'rpc channel' },
    { { pty = true }, false, false, false, 'disabled' },
    { { cwd = '/tmp', env = { A = '1' } }, true, true, false, nil },
    { {}, true, true, true, 'offer limit reached' },
  }
  for _, case in ipairs(cases) do
    local opts, enabled, ready, full, expected = unpack(case, 1, 5)
    local name = ('%s enabled=%s ready=%s full=%s -> %s'):format(
      vim.inspect(opts, { newline = ' ', indent = '' }),
      enabled,
      ready,
      full,
      expected
    )
    it(name, function()
      eq(expected, spawn.skip_reason(opts, { enabled = enabled, host_ready = ready, at_capacity = full }))
    end)
  end
end)

--- Run the real wrapped `env` (with /dev/null standing in for the pty) in an
--- environment of exactly PATH, `inherited` and the caller's `env`, and return
--- the environment the child ends up with.
local function child_env(inherited, opts, as_string)
  local argv
  if as_string then
    argv = { '/bin/sh', '-c', spawn.command('env', '/dev/null', SH, opts or {}) }
  else
    argv = spawn.command({ 'env' }, '/dev/null', SH, opts or {})
  end
  local env = vim.tbl_extend('force', { PATH = vim.env.PATH }, inherited, (opts or {}).env or {})
  local result = vim.system(argv, { env = env, clear_env = true, text = true }):wait()
  eq(0, result.code, 'exit code, stderr ' .. vim.inspect(result.stderr))
  local out = {}
  for line in vim.gsplit(result.stdout, '\n', { plain = true }) do
    local key, value = line:match('^([^=]+)=(.*)$')
    if key then
      out[key] = value
    end
  end
  return out
end

for _, as_string in ipairs({ false, true }) do
  describe(as_string and 'env (string command)' or 'env (list command)', function()
    it('GPG_TTY beats an inherited one', function()
      local env = child_env({ GPG_TTY = '/dev/pts/999', TERM = 'xterm' }, nil, as_string)
      eq('/dev/null', env.GPG_TTY)
      eq('xterm', env.TERM)
    end)

    it("the caller's GPG_TTY stays", function()
      local env = child_env({ GPG_TTY = '/dev/pts/999' }, { env = { GPG_TTY = '/dev/pts/1', X = 'y' } }, as_string)
      eq('/dev/pts/1', env.GPG_TTY)
      eq('y', env.X)
    end)

    it('TERM only when absent', function()
      eq('xterm-256color', child_env({}, nil, as_string).TERM)
      eq('xterm-256color', child_env({ TERM = '' }, nil, as_string).TERM)
      eq('screen', child_env({ TERM = 'screen' }, nil, as_string).TERM)
      eq('dumb', child_env({}, { env = { TERM = 'dumb' } }, as_string).TERM)
    end)
  end)
end

describe('command', function()
  it("does not mutate the caller's table", function()
    local opts = { env = { A = '1' }, cwd = '/' }
    spawn.command({ 'true' }, '/dev/pts/3', { shell = 'sh', shellcmdflag = '-c' }, opts)
    eq({ env = { A = '1' }, cwd = '/' }, opts)
  end)

  it('runs a list command under the sh prologue', function()
    local argv = spawn.command({ 'git', 'commit', '-S' }, '/dev/pts/4', { shell = '/bin/bash', shellcmdflag = '-c' })
    eq({ '/bin/sh', '-c' }, { argv[1], argv[2] })
    matches('^' .. vim.pesc('exec 3<>"$0" 3>&-; '), argv[3])
    matches(vim.pesc('exec "$@"') .. '$', argv[3])
    eq({ '/dev/pts/4', 'git', 'commit', '-S' }, vim.list_slice(argv, 4))
  end)

  for _, shell in ipairs({ '/bin/sh', 'bash', '/usr/bin/zsh', 'dash', '/bin/ksh -l' }) do
    it('joins the prologue to a string for ' .. shell, function()
      local cmd = spawn.command('ls -l', '/dev/pts/4', { shell = shell, shellcmdflag = '-c' })
      matches('^' .. vim.pesc("exec 3<>'/dev/pts/4' 3>&-; export GPG_TTY='/dev/pts/4'; "), cmd)
      matches('; ls %-l$', cmd)
    end)
  end

  for _, case in ipairs({ { '/usr/bin/fish', '-c' }, { 'nu', '-c' }, { '/usr/bin/env bash', '-c' } }) do
    local shell, flag = case[1], case[2]
    it('runs a string for ' .. shell .. ' under the list prologue', function()
      local argv = spawn.command('ls -l', '/dev/pts/4', { shell = shell, shellcmdflag = flag })
      eq({ '/bin/sh', '-c' }, { argv[1], argv[2] })
      eq('/dev/pts/4', argv[4])
      local expected = vim.split(shell, ' ')
      vim.list_extend(expected, { flag, 'ls -l' })
      eq(expected, vim.list_slice(argv, 5))
    end)
  end
end)

describe('title', function()
  it('joins, flattens control characters and truncates', function()
    eq('git push', spawn.title({ 'git', 'push' }))
    eq('a b c', spawn.title('a\nb\27c'))
    eq(40, vim.fn.strchars(spawn.title(('x'):rep(100))))
  end)
end)
