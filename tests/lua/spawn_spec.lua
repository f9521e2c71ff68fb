-- ttyoffer.routes.spawn: the skip table, the prologue run by a real /bin/sh, command
-- wrapping for list and string commands, what stock would pass.
local spawn = require('ttyoffer.routes.spawn')

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
    argv = spawn.command('env', '/dev/null', SH, opts or {})
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
    matches('^' .. vim.pesc('if true 2>/dev/null 3<>"$0"; then '), argv[3])
    -- The shell stays as the leader, the command its job (not exec'd).
    matches(vim.pesc('set -m 2>/dev/null; fi; '), argv[3])
    matches(vim.pesc('"$@" & exec 2>/dev/null; fg >/dev/null; s=$?; '), argv[3])
    matches(vim.pesc('exit "$s"') .. '$', argv[3])
    eq({ '/dev/pts/4', 'git', 'commit', '-S' }, vim.list_slice(argv, 4))
  end)

  local shells = {
    { '/bin/sh', '-c' },
    { 'bash', '-c' },
    { '/bin/ksh -l', '-c' },
    { '/usr/bin/fish', '-c' },
    { 'nu', '-c' },
    { '/usr/bin/env bash', '-c' },
  }
  for _, case in ipairs(shells) do
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

describe('a terminal that cannot be opened', function()
  -- The pty went away with a dying host: the command runs as without us.
  for _, as_string in ipairs({ false, true }) do
    it(as_string and 'leaves a string command to run' or 'leaves a list command to run', function()
      local script = 'echo "ran GPG_TTY=${GPG_TTY-unset}"; exit 3'
      local argv
      if as_string then
        argv = spawn.command(script, '/dev/pts/does-not-exist', SH)
      else
        argv = spawn.command({ 'sh', '-c', script }, '/dev/pts/does-not-exist', SH)
      end
      local result = vim.system(argv, { env = { PATH = vim.env.PATH }, clear_env = true, text = true }):wait()
      eq({ 3, 'ran GPG_TTY=unset\n', '' }, { result.code, result.stdout, result.stderr })
    end)
  end
end)

describe('what stock would pass', function()
  it("puts the program's full path in argv[0], as jobstart() does", function()
    local argv = spawn.command({ './rel', 'x' }, '/dev/pts/4', SH, {}, { program = '/home/u/rel' })
    eq({ '/home/u/rel', 'x' }, vim.list_slice(argv, 5))
  end)

  it("passes the caller's, the editor's or no $PWD", function()
    eq('/c', spawn.stock_pwd({ env = { PWD = '/c' }, clear_env = true }, '/e'))
    eq('/e', spawn.stock_pwd({ env = { A = '1' } }, '/e'))
    eq('/e', spawn.stock_pwd(nil, '/e'))
    eq(nil, spawn.stock_pwd({ clear_env = true }, '/e'))
    eq(nil, spawn.stock_pwd({}, nil))
    local argv = spawn.command({ 'pwd' }, '/dev/pts/4', SH, { cwd = '/' }, { program = '/bin/pwd', pwd = '/e' })
    eq({ '/dev/pts/4', '/e', '/bin/pwd' }, vim.list_slice(argv, 4))
  end)

  it('runs with the $PWD stock would pass, through a real /bin/sh', function()
    local function pwd_of(opts, editor_pwd)
      -- printenv, not a shell: a shell would set $PWD itself, in stock too.
      local argv = spawn.command({ 'printenv', 'PWD' }, '/dev/null', SH, opts, { pwd = editor_pwd })
      local out = vim.system(argv, { cwd = '/', text = true }):wait().stdout
      return out == '' and 'unset' or vim.trim(out)
    end
    eq('/stale', pwd_of({}, '/stale'))
    eq('unset', pwd_of({ clear_env = true }, '/stale'))
    eq('/mine', pwd_of({ env = { PWD = '/mine' } }, '/stale'))
  end)

  it('names what /bin/sh would drop from the environment', function()
    eq({}, spawn.entries_sh_would_drop({ env = { A_1 = 'x', _b = 'y' } }, { HOME = '/h' }))
    eq({ 'A-B=x' }, spawn.entries_sh_would_drop({ env = { ['A-B'] = 'x' } }, {}))
    eq({ '1X=y' }, spawn.entries_sh_would_drop(nil, { ['1X'] = 'y' }))
    eq({ '1X=mine' }, spawn.entries_sh_would_drop({ env = { ['1X'] = 'mine' } }, { ['1X'] = 'theirs' }))
    eq({}, spawn.entries_sh_would_drop({ clear_env = true, env = { OK = '1' } }, { ['a.b'] = 'x' }))
  end)

  it('puts them back through env(1), through a real /bin/sh', function()
    local argv = spawn.command({ 'printenv', 'BASH_FUNC_which%%' }, '/dev/null', SH, { clear_env = true }, {
      program = vim.fn.exepath('printenv'),
      env_program = vim.fn.exepath('env'),
      restore = { 'BASH_FUNC_which%%=() {  x\n}', '-odd=1' },
    })
    local out = vim.system(argv, { env = { PATH = vim.env.PATH }, clear_env = true, text = true }):wait()
    eq({ 0, '() {  x\n}\n' }, { out.code, out.stdout })
  end)
end)

describe('the compiled leader', function()
  local LEADER = '/data/ttyoffer/bin/ttyoffer-lead-0123456789abcdef'

  it('takes the slave, its flags and the command as jobstart() would exec it', function()
    local editor = { program = '/usr/bin/git', pwd = '/e', leader = LEADER }
    eq(
      { LEADER, '/dev/pts/4', 'g', '/usr/bin/git', 'commit', '-S' },
      spawn.command({ 'git', 'commit', '-S' }, '/dev/pts/4', SH, {}, editor)
    )
    -- The caller's GPG_TTY is kept; vim.system()'s kill() signals a pid.
    editor.to_program = true
    eq(
      { LEADER, '/dev/pts/4', 'p', '/usr/bin/git' },
      spawn.command({ 'git' }, '/dev/pts/4', SH, { env = { GPG_TTY = 'mine' } }, editor)
    )
    editor.to_program = false
    eq(
      { LEADER, '/dev/pts/4', '-', '/usr/bin/git' },
      spawn.command({ 'git' }, '/dev/pts/4', SH, { env = { GPG_TTY = 'mine' } }, editor)
    )
    -- A string command: 'shell' as written in argv[0], as stock has it.
    eq(
      { LEADER, '/dev/pts/4', 'g', 'bash', '-c', 'ls -l' },
      spawn.command('ls -l', '/dev/pts/4', { shell = 'bash', shellcmdflag = '-c' }, {}, { leader = LEADER })
    )
    -- No env(1), no $PWD: the leader drops nothing and leaves $PWD alone.
    eq(
      { LEADER, '/dev/pts/4', 'g', '/usr/bin/env' },
      spawn.command({ 'env' }, '/dev/pts/4', SH, {}, {
        program = '/usr/bin/env',
        pwd = '/e',
        leader = LEADER,
        env_program = '/usr/bin/env',
        restore = { 'A-B=1' },
      })
    )
  end)

  local built = require('ttyoffer.host.install').leader()
  if not built then
    return -- scripts/build_leader had no C compiler: nothing to run
  end

  it('passes the environment on whole, adding GPG_TTY and TERM', function()
    local argv = spawn.command({ 'env' }, '/dev/null', SH, {}, { program = vim.fn.exepath('env'), leader = built })
    local env = { PATH = vim.env.PATH, ['A-B'] = '1', ['BASH_FUNC_x%%'] = '() { y\n}', PWD = '/stale', TERM = '' }
    local out = vim.system(argv, { env = env, clear_env = true, text = true, cwd = '/' }):wait()
    eq(0, out.code, out.stderr)
    local lines = vim.split(vim.trim(out.stdout), '\n')
    table.sort(lines)
    eq({
      'A-B=1',
      'BASH_FUNC_x%%=() { y',
      'GPG_TTY=/dev/null',
      'PATH=' .. vim.env.PATH,
      'PWD=/stale',
      'TERM=xterm-256color',
      '}',
    }, lines)
  end)

  it("exits with the program's status, dies by its signal, reports as sh", function()
    local function run(argv)
      local out = vim.system(vim.list_extend({ built, '/dev/null', '-' }, argv), { text = true }):wait()
      return { out.code, out.signal, out.stderr }
    end
    eq({ 7, 0, '' }, run({ 'sh', '-c', 'exit 7' }))
    eq({ 0, 15, '' }, run({ 'sh', '-c', 'kill -TERM $$' }))
    eq({ 127, 0, 'ttyoffer-lead: no-such-program: not found\n' }, run({ 'no-such-program' }))
    eq({ 126, 0, 'ttyoffer-lead: /: Permission denied\n' }, run({ '/' }))
    -- No terminal to be had: the program runs as it is.
    local out = vim.system({ built, '/nonexistent', 'g', 'sh', '-c', 'echo "${GPG_TTY-none}"' }, { text = true }):wait()
    eq({ 0, 'none\n' }, { out.code, out.stdout })
  end)
end)
