-- Benchmarks that run inside the editor, timed with its own clock
-- (vim.uv.hrtime, CLOCK_MONOTONIC like Python's time.monotonic_ns).
-- Each returns raw samples in milliseconds; bench/run.py does the statistics.
local B = {}

local hrtime = vim.uv.hrtime
-- Loaded also where the plugin is not (gitsigns' baseline editor): only the
-- figures that need the plugin need these.
local _, ttyoffer = pcall(require, 'ttyoffer')
-- Neovim's own spawners: the plugin wraps vim.fn.jobstart, vim.system,
-- vim.uv.spawn.
local _, originals = pcall(require, 'ttyoffer.shared.originals')

local function ms(ns)
  return ns / 1e6
end

-- The compiled leader, when one was built: its floor is one exec of it
-- more (given no terminal to take, it execs the command at once).
-- A leader leads once it has been seen to run (host/leader.lua tries it in
-- the background): wait for that verdict, or the rows behind it are lost.
local _, install = pcall(require, 'ttyoffer.host.install')
local has_leader, leader_state = pcall(require, 'ttyoffer.host.leader')
if has_leader then
  vim.wait(20000, leader_state.settled, 10)
end
local leader = type(install) == 'table' and install.leader() or nil
--- `argv` behind a bare leader that takes no terminal.
local function behind_leader(argv)
  return vim.list_extend({ leader, '/nonexistent', '-' }, argv)
end

--- The rotation's names: `names`, and 'lead' when a leader was built.
local function with_lead(names)
  return leader and vim.list_extend(vim.list_slice(names), { 'lead' }) or names
end

--- `run(argv)` with `argv` behind the leader given one of the host's spare
--- ptys to take, as an offer's command runs: the leader's whole cost (its
--- exec, the terminal, the command as its child) without the wrapper's Lua
--- or the host's `bind`. False when no pty was spare (not a sample then).
local function behind_leader_with_tty(argv, run)
  local host = require('ttyoffer.host')
  local id, slave = host.take()
  if not id then
    return false
  end
  run(vim.list_extend({ leader, slave, 'gp' }, argv))
  host.notify('release_unbound', id)
  return true
end

--- `n` rounds of each of `fns` (name -> a spawn that returns once its
--- command has ended), in an order that rotates so drift hits all alike.
--- @param n integer
--- @param names string[]
--- @param fns table<string, fun()>
local function rotating(n, names, fns)
  local samples = { plain = {}, offer = {}, sh = {}, lead = {}, tty = {} }
  for i = 1, n do
    for k = 1, #names do
      local name = names[(i + k) % #names + 1]
      local t0 = hrtime()
      if fns[name]() ~= false then
        table.insert(samples[name], ms(hrtime() - t0))
      end
    end
    -- Let the host's refills and releases land, as between user commands.
    if i % 16 == 0 then
      vim.wait(0)
    end
  end
  return samples
end

--- Sequential spawn + jobwait of `true`: plain, through the offer, and (for
--- list commands) through a bare `/bin/sh -c 'exec "$@"'`, the floor any
--- shell prologue pays.
--- @param n integer
--- @param kind 'list'|'string'
function B.spawn(n, kind)
  local cmd = kind == 'list' and { 'true' } or 'true'
  local function ended(job)
    vim.fn.jobwait({ job }, 10000)
  end
  local fns = {
    plain = function()
      ended(originals.jobstart(cmd))
    end,
    offer = function()
      ended(ttyoffer.jobstart(cmd))
    end,
    sh = function()
      ended(originals.jobstart({ '/bin/sh', '-c', 'exec "$@"', 'sh', 'true' }))
    end,
    lead = function()
      ended(originals.jobstart(behind_leader({ 'true' })))
    end,
  }
  return rotating(n, kind == 'list' and with_lead({ 'plain', 'offer', 'sh' }) or { 'plain', 'offer' }, fns)
end

--- Sequential vim.system({'true'}):wait(): Neovim's own, the wrapped one
--- (what every Lua caller gets), and the floor of any prologue: a bare
--- `/bin/sh -c 'exec "$@"'` in a session of its own.
--- @param n integer
function B.system(n)
  return rotating(n, with_lead({ 'plain', 'offer', 'sh' }), {
    plain = function()
      originals.system({ 'true' }):wait()
    end,
    lead = function()
      originals.system(behind_leader({ 'true' }), { detach = true }):wait()
    end,
    offer = function()
      ttyoffer.system({ 'true' }):wait()
    end,
    sh = function()
      originals.system({ '/bin/sh', '-c', 'exec "$@"', 'sh', 'true' }, { detach = true }):wait()
    end,
  })
end

--- A plugin's real git call, `git --version`, through each Lua spawner as
--- plugins call it (vim.system():wait(), jobstart + jobwait, vim.fn.system,
--- vim.uv.spawn):
--- Neovim's own against the wrapped one, in the same rotation.
--- @param n integer
--- @param spawner 'system'|'jobstart'|'fn_system'|'uv_spawn'
function B.git_version(n, spawner)
  local cmd = { 'git', '--version' }
  local fns = {
    system = {
      plain = function()
        originals.system(cmd, { text = true }):wait()
      end,
      offer = function()
        ttyoffer.system(cmd, { text = true }):wait()
      end,
    },
    jobstart = {
      plain = function()
        vim.fn.jobwait({ originals.jobstart(cmd, { stdout_buffered = true }) }, 10000)
      end,
      offer = function()
        vim.fn.jobwait({ ttyoffer.jobstart(cmd, { stdout_buffered = true }) }, 10000)
      end,
    },
    fn_system = {
      plain = function()
        originals.fn_system(cmd)
      end,
      offer = function()
        ttyoffer.fn_system(cmd)
      end,
    },
  }
  -- vim.uv.spawn as plenary.job and mini.git call it: stdout read to its
  -- end and the exit, waited for as vim.system():wait() waits (fast events).
  local function uv_run(spawn, argv, detached)
    local stdout = vim.uv.new_pipe()
    local exited, read = false, false
    local handle = spawn(argv[1], {
      args = vim.list_slice(argv, 2),
      stdio = { nil, stdout, nil },
      detached = detached,
    }, function()
      exited = true
    end)
    stdout:read_start(function(_, data)
      if not data then
        read = true
        stdout:close()
      end
    end)
    vim.wait(10000, function()
      return exited and read
    end, nil, true)
    handle:close()
  end
  fns.uv_spawn = {
    plain = function()
      uv_run(originals.uv_spawn, cmd)
    end,
    offer = function()
      uv_run(vim.uv.spawn, cmd)
    end,
  }
  -- The floor: one exec more, a bare /bin/sh -c 'exec "$@"' (in a session
  -- of its own for vim.system and uv.spawn, as the wrappers start them).
  local sh = { '/bin/sh', '-c', 'exec "$@"', 'sh', 'git', '--version' }
  fns.uv_spawn.sh = function()
    uv_run(originals.uv_spawn, sh, true)
  end
  fns.system.sh = function()
    originals.system(sh, { text = true, detach = true }):wait()
  end
  fns.jobstart.sh = function()
    vim.fn.jobwait({ originals.jobstart(sh, { stdout_buffered = true }) }, 10000)
  end
  fns.fn_system.sh = function()
    originals.fn_system(sh)
  end
  if leader then
    local lead = behind_leader(cmd)
    fns.system.lead = function()
      originals.system(lead, { text = true, detach = true }):wait()
    end
    fns.jobstart.lead = function()
      vim.fn.jobwait({ originals.jobstart(lead, { stdout_buffered = true }) }, 10000)
    end
    fns.fn_system.lead = function()
      originals.fn_system(lead)
    end
    fns.uv_spawn.lead = function()
      uv_run(originals.uv_spawn, lead, true)
    end
    fns.system.tty = function()
      return behind_leader_with_tty(cmd, function(argv)
        originals.system(argv, { text = true, detach = true }):wait()
      end)
    end
    fns.jobstart.tty = function()
      return behind_leader_with_tty(cmd, function(argv)
        vim.fn.jobwait({ originals.jobstart(argv, { stdout_buffered = true }) }, 10000)
      end)
    end
    fns.fn_system.tty = function()
      return behind_leader_with_tty(cmd, originals.fn_system)
    end
    fns.uv_spawn.tty = function()
      return behind_leader_with_tty(cmd, function(argv)
        uv_run(originals.uv_spawn, argv, true)
      end)
    end
  end
  local names = with_lead({ 'plain', 'offer', 'sh' })
  if leader then
    table.insert(names, 'tty')
  end
  return rotating(n, names, fns[spawner])
end

--- gitsigns.nvim from `path`, set up now: after startup, so that it takes
--- whichever vim.system the editor has then (it keeps the one it found).
function B.gitsigns_setup(path)
  vim.opt.rtp:append(path)
  require('gitsigns').setup({})
end

--- Milliseconds from opening `file` (changed against the repository's
--- HEAD) until gitsigns has placed its signs (extmarks in a namespace of
--- its own, polled every millisecond); the buffer is wiped after.
function B.gitsigns_signs(file)
  local namespaces = {}
  local function placed(buf)
    if #namespaces == 0 then
      for name, ns in pairs(vim.api.nvim_get_namespaces()) do
        if name:find('gitsigns_signs', 1, true) then
          table.insert(namespaces, ns)
        end
      end
    end
    for _, ns in ipairs(namespaces) do
      if next(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { limit = 1 })) then
        return true
      end
    end
    return false
  end
  local t0 = hrtime()
  vim.cmd.edit(vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local ok = vim.wait(10000, function()
    return placed(buf)
  end, 1)
  local elapsed = ms(hrtime() - t0)
  vim.cmd('bwipeout!')
  return ok and elapsed or nil
end

--- A burst of `n` spawns from a loop that never yields, each ended before
--- the next; spare ptys settle after.
function B.burst(n)
  local jobs = {}
  for i = 1, n do
    jobs[i] = vim.fn.jobstart({ 'true' })
  end
  vim.fn.jobwait(jobs, 10000)
  return require('ttyoffer.host').stock_dry()
end

--- Start `n` commands that hold an offer and never use it.
function B.idle(n, argv)
  local host = require('ttyoffer.host')
  local jobs = {}
  for _ = 1, n do
    -- A spawn never waits for spare ptys: between spawns, as a user's
    -- commands would, the refills land.
    vim.wait(1000, function()
      return host.stock_size() > 0
    end, 1)
    table.insert(jobs, ttyoffer.jobstart(argv or { 'sleep', '600' }))
  end
  return jobs
end

function B.stop(jobs)
  for _, job in ipairs(jobs) do
    vim.fn.jobstop(job)
  end
  vim.fn.jobwait(jobs, 10000)
  vim.wait(5000, function()
    return #ttyoffer.offers() == 0
  end)
end

local function wait_event(pattern, timeout)
  local fired = nil
  local id = vim.api.nvim_create_autocmd('User', {
    pattern = pattern,
    once = true,
    callback = function(ev)
      fired = { hrtime(), ev.data }
    end,
  })
  return function()
    vim.wait(timeout or 10000, function()
      return fired ~= nil
    end)
    pcall(vim.api.nvim_del_autocmd, id)
    return fired
  end
end

--- From the child's first write to /dev/tty until those bytes are in the
--- float's terminal (TtyOfferPresent fires right after they are handed over).
--- @param trials integer
--- @param python string
function B.time_to_prompt(trials, python)
  local script = table.concat({
    'import os, time',
    "fd = os.open('/dev/tty', os.O_RDWR)",
    't = time.monotonic_ns()',
    "os.write(fd, b'Password: ')",
    'print(t, flush=True)',
    'os.read(fd, 1)',
  }, '\n')
  local samples = {}
  for _ = 1, trials do
    local written
    local presented = wait_event('TtyOfferPresent')
    local job = ttyoffer.jobstart({ python, '-I', '-S', '-c', script }, {
      on_stdout = function(_, data)
        written = written or tonumber(data[1])
      end,
    })
    local fired = presented()
    vim.wait(5000, function()
      return written ~= nil
    end)
    if fired and written then
      table.insert(samples, ms(fired[1] - written))
    end
    local closed = wait_event('TtyOfferClose')
    ttyoffer.dismiss()
    closed()
    vim.fn.jobwait({ job }, 5000)
  end
  return samples
end

--- Relay `path` through a float and through a native :terminal of the same
--- size; milliseconds from spawn to the last byte shown, per round.
function B.throughput(path, rounds)
  local height, width = require('ttyoffer.shared.layout').size()
  local samples = { native = {}, offer = {} }
  for round = 1, rounds do
    local order = round % 2 == 0 and { 'native', 'offer' } or { 'offer', 'native' }
    for _, name in ipairs(order) do
      local t0 = hrtime()
      if name == 'native' then
        local buf = vim.api.nvim_create_buf(false, true)
        local win = vim.api.nvim_open_win(buf, true, {
          relative = 'editor',
          row = 1,
          col = 1,
          width = width,
          height = height,
        })
        local done = false
        originals.jobstart({ 'cat', path }, {
          term = true,
          on_exit = function()
            done = true
          end,
        })
        vim.wait(120000, function()
          return done
        end)
        table.insert(samples.native, ms(hrtime() - t0))
        vim.api.nvim_win_close(win, true)
        vim.api.nvim_buf_delete(buf, { force = true })
      else
        local closed = wait_event('TtyOfferClose', 120000)
        ttyoffer.jobstart({ 'sh', '-c', 'cat "$1" > /dev/tty', 'sh', path })
        local fired = closed()
        table.insert(samples.offer, ms((fired and fired[1] or hrtime()) - t0))
      end
    end
  end
  return samples
end

--- Start a command that floods its terminal for `seconds`, then asks; the
--- trace notes when the question reaches the window. B.flood_result() tells
--- {written, shown} (hrtime ns), once both are known.
function B.flood_start(python, seconds)
  local marker = 'PROMPT-AFTER-FLOOD'
  local tail = ''
  _G.bench_flood = {}
  require('ttyoffer.offer.prompts').trace = function(_, data)
    if not _G.bench_flood.shown then
      tail = (tail .. data):sub(-64)
      if tail:find(marker, 1, true) then
        _G.bench_flood.shown = hrtime()
      end
    end
  end
  local script = table.concat({
    'import os, sys, time',
    "fd = os.open('/dev/tty', os.O_RDWR)",
    "line = b'flood ' * 10 + b'\\r\\n'",
    'end = time.monotonic() + float(sys.argv[1])',
    'while time.monotonic() < end:',
    '    os.write(fd, line * 100)',
    't = time.monotonic_ns()',
    "os.write(fd, b'\\r\\n" .. marker .. ": ')",
    'print(t, flush=True)',
    'os.read(fd, 100)',
  }, '\n')
  _G.bench_flood.job = ttyoffer.jobstart({ python, '-I', '-S', '-c', script, tostring(seconds) }, {
    on_stdout = function(_, data)
      _G.bench_flood.written = _G.bench_flood.written or tonumber(data[1])
    end,
  })
end

function B.flood_result()
  local f = _G.bench_flood
  if f.written and f.shown then
    return { f.written, f.shown }
  end
  return nil
end

--- Install a trace of relayed bytes for the keystroke round trip.
function B.trace_echoes()
  _G.bench_echoes = {}
  require('ttyoffer.offer.prompts').trace = function(_, data)
    table.insert(_G.bench_echoes, { hrtime(), data })
  end
end

function B.untrace()
  require('ttyoffer.offer.prompts').trace = nil
end

--- @param n integer commands run one after another through the offer
function B.churn(n)
  for i = 1, n do
    vim.fn.jobwait({ ttyoffer.jobstart({ 'true' }) }, 10000)
    if i % 16 == 0 then
      vim.wait(0)
    end
  end
  vim.wait(5000, function()
    return #ttyoffer.offers() == 0
  end)
end

--- Time from starting a program in a pane to its first output shown there:
--- a run (require('ttyoffer').run()) against the same program in a plain
--- terminal buffer (jobstart with term = true) in the same bottom split.
--- `argv` prints "ready"; an interactive program then waits, and both
--- terminals show what it wrote on their next refresh.
--- @param n integer
--- @param argv string[]
function B.run_first_output(n, argv)
  local function shows_ready(buf)
    local line = vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1]
    return line ~= nil and line:find('ready', 1, true) ~= nil
  end
  -- Each returns the milliseconds to the first output; the teardown after
  -- it is not timed.
  local function plain()
    local t0 = hrtime()
    local buf = vim.api.nvim_create_buf(true, true)
    local win = vim.api.nvim_open_win(buf, true, { split = 'below', win = -1, height = 15 })
    local job = originals.jobstart(argv, { term = true })
    assert(vim.wait(5000, function()
      return shows_ready(buf)
    end, 1))
    local elapsed = ms(hrtime() - t0)
    vim.fn.jobstop(job)
    vim.fn.jobwait({ job }, 5000)
    vim.api.nvim_win_close(win, true)
    vim.api.nvim_buf_delete(buf, { force = true })
    return elapsed
  end
  local function run()
    local t0 = hrtime()
    local r = ttyoffer.run({ argv = argv, placement = 'split' })
    assert(vim.wait(5000, function()
      return shows_ready(r.pane.buf)
    end, 1))
    local elapsed = ms(hrtime() - t0)
    r:close()
    r:wait(5000)
    return elapsed
  end
  -- One each first: the login shell's PATH, modules, the host's import.
  plain()
  run()
  local samples = { plain = {}, offer = {} }
  for i = 1, n do
    -- Alternating which goes first, so drift hits both alike.
    if i % 2 == 0 then
      table.insert(samples.plain, plain())
      table.insert(samples.offer, run())
    else
      table.insert(samples.offer, run())
      table.insert(samples.plain, plain())
    end
  end
  vim.cmd('stopinsert')
  return samples
end

--- Attaching to a persistent session with a 256 KB recording, until the
--- tail's last line is in the pane, against a plain run that prints the
--- same file, until the same line is in its pane. `path` holds the bytes,
--- ending in `marker`.
--- @param n integer
--- @param path string
--- @param marker string
function B.session_attach(n, path, marker)
  local function shown(run)
    return vim.wait(10000, function()
      local lines = vim.api.nvim_buf_get_lines(run.pane.buf, 0, -1, false)
      for i = #lines, 1, -1 do
        if lines[i]:find(marker, 1, true) then
          return true
        end
      end
      return false
    end, 1)
  end
  -- The session, made once: it prints the file, then waits.
  local made = ttyoffer.run({ persist = 'bench', argv = { 'sh', '-c', 'cat "$0"; exec sleep 600', path } })
  assert(shown(made))
  made:close()
  made:wait(5000)
  local samples = { plain = {}, offer = {} }
  for _ = 1, n do
    local t0 = hrtime()
    local plain = ttyoffer.run({ argv = { 'sh', '-c', 'cat "$0"; exec sleep 600', path } })
    assert(shown(plain))
    table.insert(samples.plain, ms(hrtime() - t0))
    plain:close()
    plain:wait(5000)
    t0 = hrtime()
    local attached = ttyoffer.run({ persist = 'bench' })
    assert(shown(attached))
    table.insert(samples.offer, ms(hrtime() - t0))
    attached:close()
    attached:wait(5000)
  end
  require('ttyoffer.runs.kinds.dtach').kill_session('bench')
  vim.cmd('stopinsert')
  return samples
end

--- Attaching to a persistent session on another machine over ssh, until
--- the first line of the replay is in the pane: with the connection of the
--- last run reused, and with a fresh one (its master ended first by
--- `exit_argv`), against a plain `ssh dest true` (`ssh_true`, a fresh
--- connection too).
--- @param n integer
--- @param dest string
--- @param ssh_true string[]
--- @param exit_argv string[]
function B.remote_attach(n, dest, ssh_true, exit_argv)
  local marker = 'remote-ready'
  local function shown(run)
    return vim.wait(20000, function()
      local lines = vim.api.nvim_buf_get_lines(run.pane.buf, 0, -1, false)
      for i = #lines, 1, -1 do
        if lines[i]:find(marker, 1, true) then
          return true
        end
      end
      return false
    end, 1)
  end
  local made =
    ttyoffer.run({ persist = 'rbench', host = dest, argv = { 'sh', '-c', 'echo remote-ready; exec sleep 600' } })
  assert(shown(made), 'the remote session was not made')
  made:close()
  made:wait(5000)
  local samples = { plain = {}, fresh = {}, reused = {} }
  for _ = 1, n do
    local t0 = hrtime()
    assert(vim.system(ssh_true):wait().code == 0, 'ssh dest true failed')
    table.insert(samples.plain, ms(hrtime() - t0))
    vim.system(exit_argv):wait()
    for _, kind in ipairs({ 'fresh', 'reused' }) do
      t0 = hrtime()
      local attached = ttyoffer.run({ persist = 'rbench', host = dest })
      assert(shown(attached), 'no replay')
      table.insert(samples[kind], ms(hrtime() - t0))
      attached:close()
      attached:wait(5000)
    end
  end
  local killed = false
  require('ttyoffer.runs.kinds.remote').kill(dest, 'rbench', function(answer)
    killed = not answer.pending
  end)
  vim.wait(15000, function()
    return killed
  end)
  vim.system(exit_argv):wait()
  vim.cmd('stopinsert')
  return samples
end

--- One `list` of the persistent sessions with `count` live ones, against
--- the same with none.
--- @param n integer
--- @param count integer
function B.session_list(n, count)
  local dtach = require('ttyoffer.runs.kinds.dtach')
  local function timed()
    local out = {}
    for _ = 1, n do
      local t0 = hrtime()
      dtach.sessions()
      table.insert(out, ms(hrtime() - t0))
    end
    return out
  end
  local samples = { plain = timed() }
  local names = {}
  local made, err = pcall(function()
    for i = 1, count do
      names[i] = 'listed-' .. i
      local run = ttyoffer.run({ persist = names[i], argv = { 'sleep', '600' } })
      -- Detached once the session exists (closing the pane before would end
      -- the attempt to make it).
      local listed = vim.wait(20000, function()
        return #dtach.sessions() == i
      end, 5)
      assert(listed, ('session %s not listed: %s'):format(names[i], vim.inspect(dtach.sessions())))
      run:close()
    end
    samples.offer = timed()
  end)
  -- Ended whatever happened: a failed bench leaves no session behind.
  for _, name in ipairs(names) do
    dtach.kill_session(name)
  end
  assert(made, err)
  return samples
end

--- One list of the tmux sessions with `count` of ours on the (private)
--- server, against the bare `tmux list-panes -a` it runs.
--- @param n integer
--- @param count integer
function B.tmux_list(n, count)
  local tmux = require('ttyoffer.runs.kinds.tmux')
  for i = 1, count do
    originals.system({ 'tmux', 'new-session', '-d', '-s', 'ttyoffer-listed-' .. i, 'sleep', '600' }):wait()
  end
  assert(#tmux.sessions() == count)
  local samples = { plain = {}, offer = {} }
  for _ = 1, n do
    local t0 = hrtime()
    originals.system({ 'tmux', 'list-panes', '-a', '-F', '#{session_name}' }):wait()
    table.insert(samples.plain, ms(hrtime() - t0))
    t0 = hrtime()
    tmux.sessions()
    table.insert(samples.offer, ms(hrtime() - t0))
  end
  originals.system({ 'tmux', 'kill-server' }):wait()
  return samples
end

return B
