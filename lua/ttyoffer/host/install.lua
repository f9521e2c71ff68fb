-- The host's own Python: a virtualenv in the plugin's data folder with the
-- pynvim and pyte the plugin pins (pyproject.toml), so that installing the
-- plugin never means touching the system Python or g:python3_host_prog.
-- `:TtyOffer install` and the plugin managers' build step run it; the
-- host then starts at once, without a restart.
local M = {}

local data_folder = require('ttyoffer.shared.data_folder')
local leader = require('ttyoffer.host.leader')
local notify = require('ttyoffer.shared.notify')
local originals = require('ttyoffer.shared.originals')

--- True while an install runs: the host's "no Python" is then expected,
--- and the install's own messages are the ones to show.
M.running = false

--- The plugin's checkout: four folders above this file.
M.root = leader.root

--- @return string
function M.venv()
  return data_folder.path() .. '/ttyoffer/venv'
end

--- The venv's Python, when it has been made.
--- @return string?
function M.python()
  local python = M.venv() .. '/bin/python'
  return vim.fn.executable(python) == 1 and python or nil
end

-- The compiled leader (ttyoffer.host.leader): what it is built from, and
-- into; this install builds it. Fields, so that a test can point a build
-- elsewhere.
M.leader_source = leader.source
M.leader_flags = leader.flags
M.leader_dir = leader.dir
M.leader_name = leader.name
--- The leader that leads the next command, or nil (see leader.current).
M.leader = leader.current
--- Look again at the next spawn (after a build).
M.forget_leader = leader.forget

local read = require('ttyoffer.shared.files').read

--- The builds of the leader to try, in order: each a list of cc flags
--- (ttyoffer-lead.flags: a line each; `#` begins a comment line).
--- @return string[][]
function M.leader_builds()
  local builds = {}
  for line in vim.gsplit(read(M.leader_flags) or '', '\n', { plain = true }) do
    if line:find('%S') and not line:find('^%s*#') then
      table.insert(builds, vim.split(vim.trim(line), '%s+'))
    end
  end
  return builds
end

--- The pinned requirements of the host, read from pyproject.toml (one place
--- says which versions).
--- @return string[]
function M.requirements()
  local ok, lines = pcall(vim.fn.readfile, M.root .. '/pyproject.toml')
  local text = ok and table.concat(lines, '\n') or ''
  local block = text:match('\ndependencies = %[(.-)%]') or ''
  local found = {}
  for requirement in block:gmatch('"([^"]+)"') do
    table.insert(found, requirement)
  end
  return #found > 0 and found or { 'pynvim', 'pyte' }
end

--- What to tell the user when a step failed: the tool's own last words, and
--- the fix where it is known.
local function failure(step, result)
  local said = vim.trim((result.stderr or '') .. '\n' .. (result.stdout or ''))
  local last = said:match('([^\n]*)$') or ''
  if said:find('ensurepip') or said:find('No module named venv') then
    return step .. ' failed: Python has no venv module; install it (Debian: apt-get install python3-venv)'
  end
  return string.format('%s failed (exit %d): %s', step, result.code, last)
end

--- Run `argv`, then `next` with its result: at once with `sync`, else when it
--- ends, on the editor's loop.
local function step(argv, sync, next)
  if sync then
    return next(originals.system(argv, { text = true, cwd = '/' }):wait())
  end
  -- From /, so that nothing of the editor's current folder is imported.
  originals.system(argv, { text = true, cwd = '/' }, vim.schedule_wrap(next))
end

--- Build the leader into leader_dir(), then `next` with what to add to the
--- install's message. Never fails the install: without a compiler, or if
--- the build fails, the /bin/sh prologue leads, and :checkhealth says so.
--- @param sync boolean?
--- @param next fun(message: string, built: boolean?) built: a leader leads now
function M.build_leader(sync, next)
  local cc = vim.fn.exepath('cc')
  cc = cc ~= '' and cc or vim.fn.exepath('gcc')
  local name = M.leader_name()
  if cc == '' or not name then
    return next('; no C compiler, so commands start through /bin/sh (sudo apt-get install gcc, then :TtyOffer install)')
  end
  local dir = M.leader_dir()
  vim.fn.mkdir(dir, 'p', tonumber('700', 8))
  local stat = vim.uv.fs_lstat(dir)
  if not (stat and stat.type == 'directory' and stat.uid == vim.uv.getuid()) then
    return next('; ' .. dir .. ' is not a folder of yours: commands start through /bin/sh')
  end
  vim.uv.fs_chmod(dir, tonumber('700', 8))
  local final = dir .. '/' .. name
  local temporary = string.format('%s/.%s.%d.tmp', dir, name, vim.uv.os_getpid())
  local function compile(flags, then_)
    local argv = vim.list_extend({ cc }, flags)
    vim.list_extend(argv, { '-o', temporary, M.leader_source })
    step(argv, sync, then_)
  end
  local function finish(built)
    if built.code ~= 0 then
      os.remove(temporary)
      return next('; the leader did not build, so commands start through /bin/sh: ' .. failure('cc', built))
    end
    vim.uv.fs_chmod(temporary, tonumber('700', 8))
    vim.uv.fs_rename(temporary, final)
    -- Leaders of older sources are never used again, but by editors that
    -- run still, with the older plugin they loaded: each holds its own
    -- open, and a later build removes it.
    local in_use = leader.held_open()
    for entry in vim.fs.dir(dir) do
      local path = dir .. '/' .. entry
      if entry:find('^ttyoffer%-lead%-') and entry ~= name and not in_use[vim.uv.fs_realpath(path) or path] then
        os.remove(path)
      end
    end
    M.forget_leader()
    next('; commands start through ' .. final, true)
  end
  -- The first build that compiles here: without libc, or on a static
  -- libc, where they can be (no loader to run at each spawn).
  local builds = M.leader_builds()
  if #builds == 0 then
    return next('; ' .. M.leader_flags .. ' names no build, so commands start through /bin/sh')
  end
  -- A build is kept only if it runs: given /dev/null for a terminal, the
  -- leader does all it does but take one, and must end as its program did.
  -- (Every wrapped command would fail behind one that cannot.)
  local function runs(then_)
    step({ temporary, '/dev/null', '-', '/bin/sh', '-c', 'exit 7' }, sync, function(ran)
      then_(ran.code == 7)
    end)
  end
  local function try(index)
    local function next_build(built)
      if index < #builds then
        return try(index + 1)
      end
      finish(built)
    end
    compile(builds[index], function(built)
      if built.code ~= 0 then
        return next_build(built)
      end
      runs(function(ok)
        if ok then
          return finish(built)
        end
        next_build({ code = 1, stderr = 'the leader it built does not run' })
      end)
    end)
  end
  try(1)
end

-- What the editor shows of the install: one line short enough to be read
-- whole beside the ruler of an 80-column editor, and so kept whole in
-- :messages, naming where the rest is: the paths, a tool's last words go to
-- :TtyOffer status. A build step's output (headless) is the lead and the
-- rest, whole.
local SAID = {
  start = { "installing the host's Python packages …", 'installing ' },
  installed = { 'installed (:TtyOffer status says where)', 'installed; ' },
  without_leader = { 'installed, no leader (:TtyOffer status)', 'installed; ' },
  failed = { 'install failed (:TtyOffer status says why)', '' },
}

--- Make (or update) the venv and install the host's requirements into it.
--- @param opts {sync: boolean?, on_done: fun(ok: boolean, message: string)?}?
function M.run(opts)
  opts = opts or {}
  --- In the editor the install runs in the background, and a message that
  --- raised a hit-enter prompt would hold its own completion up (nothing
  --- else runs under that prompt): the short line there, the whole kept.
  --- @param what string a key of SAID
  --- @param detail string the rest
  local function say(what, detail, level)
    local short, lead = unpack(SAID[what])
    if opts.sync then
      notify.answer(lead .. detail, level)
    else
      notify.notice(short, level, detail)
    end
  end
  M.running = true
  local function done(ok, detail, what)
    M.running = false
    say(what or (ok and 'installed' or 'failed'), detail, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
    if opts.on_done then
      opts.on_done(ok, detail)
    end
  end
  local base = vim.fn.exepath('python3')
  if base == '' then
    return done(false, 'no python3 found: install Python 3 (Debian: apt-get install python3 python3-venv)')
  end
  local venv, requirements = M.venv(), M.requirements()
  say('start', string.format('%s into %s …', table.concat(requirements, ' '), venv), vim.log.levels.INFO)
  local python = venv .. '/bin/python'
  step({ base, '-I', '-m', 'venv', venv }, opts.sync, function(made)
    if made.code ~= 0 then
      return done(false, failure('making the virtualenv', made))
    end
    local pip = { python, '-I', '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-cache-dir' }
    step(vim.list_extend(pip, requirements), opts.sync, function(installed)
      if installed.code ~= 0 then
        return done(false, failure('pip install', installed))
      end
      step({ python, '-I', '-c', 'import pynvim, pyte' }, opts.sync, function(checked)
        if checked.code ~= 0 then
          return done(false, failure('importing pynvim and pyte', checked))
        end
        -- :help ttyoffer, for plain packages too.
        pcall(vim.cmd.helptags, vim.fn.fnameescape(M.root .. '/doc'))
        M.build_leader(opts.sync, function(leader_message, built)
          done(true, 'the host uses ' .. python .. leader_message, built and 'installed' or 'without_leader')
        end)
      end)
    end)
  end)
end

return M
