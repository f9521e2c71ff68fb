-- The compiled leader (libexec/ttyoffer-lead.c): what the /bin/sh prologue
-- does for a wrapped command, for one exec of a small program instead of a
-- shell's (:help ttyoffer-leader). Built by :TtyOffer install and by
-- scripts/build_leader, never shipped as a binary; named by the hash of its
-- source and its builds (ttyoffer-lead.flags), so that one built from older
-- ones is never used.
--
-- The name says nothing of what the file holds now: it may be empty or cut
-- short (a full disk, a crash mid-copy), built for another machine (a home
-- shared with an arm64 one), removed or replaced under a running editor (a
-- plugin update's build). Every wrapped command would fail behind a leader
-- that cannot run, so none leads until it has been seen to run here: it is
-- started once on a command with a known answer, in the background (the
-- /bin/sh prologue leads meanwhile), and again whenever the file changes
-- (a stat per spawn, against the one it was seen to run with). What is
-- wrong is kept for :TtyOffer status and :checkhealth.
local M = {}

local data_folder = require('ttyoffer.shared.data_folder')
local files = require('ttyoffer.shared.files')
local originals = require('ttyoffer.shared.originals')

local uv = vim.uv

--- The plugin's checkout: four folders above this file.
M.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h:h')
M.source = M.root .. '/libexec/ttyoffer-lead.c'
M.flags = M.root .. '/libexec/ttyoffer-lead.flags'

--- The folder :TtyOffer install builds the leader into (the user's alone).
--- @return string
function M.dir()
  return data_folder.path() .. '/ttyoffer/bin'
end

local read = files.read

local name --- @type string? the current source's, once read
--- `ttyoffer-lead-<first 16 hex digits of the sha256 of the source, then
--- the flags>`; nil in a fast event before it was first read
--- (vim.fn.sha256 cannot run there).
--- @return string?
function M.name()
  if not name and not vim.in_fast_event() then
    local source, flags = read(M.source), read(M.flags)
    if not (source and flags) then
      return nil
    end
    name = 'ttyoffer-lead-' .. vim.fn.sha256(source .. flags):sub(1, 16)
  end
  return name
end

--- Whether `path` is a file of the user's own that only they can change.
local function owned(path)
  local stat = uv.fs_lstat(path)
  return stat ~= nil
    and stat.type == 'file'
    and stat.uid == uv.getuid()
    and bit.band(stat.mode, tonumber('022', 8)) == 0
    and uv.fs_access(path, 'X')
end

local same = files.unchanged

-- The known answer: the leader given /dev/null for a terminal does all it
-- does but take one, and must pass on its command's output and status.
local PROOF_OUTPUT, PROOF_CODE = 'ttyoffer-lead runs\n', 7
local PROOF = { '/bin/sh', '-c', 'echo "$0 runs"; exit 7', 'ttyoffer-lead' }
-- A leader that hangs is as bad as one that fails (ms).
local PROOF_TIMEOUT = 10000

local disabled = uv.os_getenv('TTYOFFER_LEADER') == 'sh'
local found --- @type string|false|nil the leader's path; false: looked, none
local candidates --- @type string[]? where it is looked for, first first
--- What a proof found of one state of the file: ok, or what is wrong.
local verdict --- @type {path: string, stat: table, ok: boolean}?
local proving --- @type {path: string, stat: table}? a proof under way
local held --- @type integer? a descriptor of the leader that leads
local held_path --- @type string?

--- What is wrong with the leader, once found: nil when nothing is (or it
--- is still being tried). For :TtyOffer status and :checkhealth.
--- @type string?
M.problem = nil

--- Keep `path` open while it leads: builds leave a leader alone that a
--- running editor holds open (see held_open()).
local function hold(path, fd)
  if held then
    uv.fs_close(held)
  end
  held, held_path = fd, path
end

--- How a proof's run ended, in words.
local function outcome(out)
  if out.signal and out.signal ~= 0 then
    return 'killed by signal ' .. out.signal
  end
  local said = vim.trim(out.stderr or ''):match('([^\n]*)$') or ''
  return 'exit ' .. out.code .. (said ~= '' and (': ' .. said) or '')
end

local function refuse(path, stat, why)
  verdict = { path = path, stat = stat, ok = false }
  M.problem =
    string.format('%s %s: commands start through the /bin/sh prologue (:TtyOffer install builds it again)', path, why)
end

--- Run `argv` with luv's own spawn and pipes as the plugin found them at
--- load, not vim.system(): it calls whatever vim.uv.spawn holds when it
--- runs, and a test framework's mock of it (mini.test's) would then decide
--- whether the leader leads. `done` gets vim.system()'s result table once
--- the program has ended and its output is read, or once PROOF_TIMEOUT has
--- passed (then it was killed). Callable in a fast event.
--- @param argv string[]
--- @param done fun(out: {code: integer, signal: integer, stdout: string, stderr: string})
--- @return boolean started
--- @return string? err why it could not be started
local function run(argv, done)
  local stdout, stderr = originals.new_pipe(false), originals.new_pipe(false)
  local output = { [stdout] = {}, [stderr] = {} }
  local reading, code, signal = 2, nil, nil
  local handle --- @type uv.uv_process_t?
  local timer = uv.new_timer()
  local function close(h)
    if h and not h:is_closing() then
      h:close()
    end
  end
  local function finish()
    if code and reading == 0 then
      close(timer)
      done({
        code = code,
        signal = signal,
        stdout = table.concat(output[stdout]),
        stderr = table.concat(output[stderr]),
      })
    end
  end
  local function reader(pipe)
    return function(err, data)
      if data and not err then
        table.insert(output[pipe], data)
      elseif not pipe:is_closing() then
        close(pipe)
        reading = reading - 1
        finish()
      end
    end
  end
  local called, pid_or_err
  called, handle, pid_or_err = pcall(originals.uv_spawn, argv[1], {
    args = vim.list_slice(argv, 2),
    stdio = { nil, stdout, stderr },
    cwd = '/',
  }, function(exit_code, exit_signal)
    code, signal = exit_code, exit_signal
    close(handle)
    finish()
  end)
  if not (called and handle) then
    close(stdout)
    close(stderr)
    close(timer)
    return false, tostring(called and pid_or_err or handle)
  end
  stdout:read_start(reader(stdout))
  stderr:read_start(reader(stderr))
  timer:start(PROOF_TIMEOUT, 0, function()
    -- Hung: killed, and what it left holding its output is not waited for.
    if not code then
      handle:kill('sigkill')
    end
    for _, pipe in ipairs({ stdout, stderr }) do
      if not pipe:is_closing() then
        close(pipe)
        reading = reading - 1
      end
    end
    finish()
  end)
  return true
end

--- Start `path` (whose stat is `stat`) on the known answer; the verdict
--- comes when it ends. Callable in a fast event.
local function prove(path, stat)
  if not owned(path) then
    return refuse(path, stat, 'is not a file of yours alone')
  end
  -- Opened first: what runs is then the file held, or the proof is void.
  local fd = uv.fs_open(path, 'r', 0)
  local fd_stat = fd and uv.fs_fstat(fd)
  if not (fd_stat and same(fd_stat, stat)) then
    if fd then
      uv.fs_close(fd)
    end
    return -- changed while looked at: tried again at the next spawn
  end
  local this_proof = { path = path, stat = stat }
  proving = this_proof
  local argv = vim.list_extend({ path, '/dev/null', '-' }, PROOF)
  local started, err = run(argv, function(out)
    -- A proof of a newer state of the file may have started meanwhile.
    if proving == this_proof then
      proving = nil
    end
    local now = uv.fs_fstat(fd)
    if not (now and same(now, stat)) then
      uv.fs_close(fd) -- changed while it ran: tried again at the next spawn
    elseif out.code == PROOF_CODE and out.stdout == PROOF_OUTPUT and (out.signal or 0) == 0 then
      verdict = { path = path, stat = stat, ok = true }
      M.problem = nil
      hold(path, fd)
    else
      uv.fs_close(fd)
      refuse(path, stat, 'does not run here (' .. outcome(out) .. ')')
    end
  end)
  if not started then
    proving = nil
    uv.fs_close(fd)
    refuse(path, stat, 'cannot be started (' .. err .. ')')
  end
end

--- The first of the places a leader is built into that holds one of the
--- current source, or false; nil in a fast event before they were known.
local function look()
  if not candidates then
    local current = M.name()
    if not current or vim.in_fast_event() then
      return nil
    end
    candidates = { M.dir() .. '/' .. current, M.root .. '/.cache/leader/' .. current }
  end
  for _, path in ipairs(candidates) do
    if owned(path) then
      return path
    end
  end
  return false
end

--- The compiled leader to start the next command with, or nil: none built
--- (the /bin/sh prologue leads then), not yet seen to run, or not running
--- here; or $TTYOFFER_LEADER is `sh` (the tests' way to run the
--- prologue's path). One stat a call; callable in a fast event.
--- @return string?
function M.current()
  if disabled then
    return nil
  end
  if found == nil then
    found = look()
  end
  if not found then
    return nil
  end
  local path = found
  local stat = uv.fs_stat(path)
  if not stat then
    -- Removed (a build of another version): looked for again next time.
    found = nil
    if held_path == path then
      hold(nil, nil)
    end
    if verdict and verdict.path == path then
      verdict = nil
      M.problem = path .. ' was removed: commands start through the /bin/sh prologue'
    end
    return nil
  end
  if verdict and verdict.path == path and same(verdict.stat, stat) then
    return verdict.ok and path or nil
  end
  if not (proving and proving.path == path and same(proving.stat, stat)) then
    prove(path, stat)
  end
  return nil
end

--- Whether a leader was looked for and, if there is one, tried: for the
--- tests and benchmarks, which want the one that will lead.
--- @return boolean
function M.settled()
  M.current()
  return disabled or found == false or (found ~= nil and proving == nil and verdict ~= nil)
end

--- Look again at the next spawn (after a build).
function M.forget()
  found, candidates = nil, nil
end

--- The paths of the files some process of the user's holds open (what
--- /proc/*/fd link to, without a " (deleted)" suffix): the leaders running
--- editors lead with. Only at a build.
--- @return table<string, true>
function M.held_open()
  local paths = {}
  local procs = uv.fs_scandir('/proc')
  while procs do
    local pid = uv.fs_scandir_next(procs)
    if not pid then
      break
    end
    local fd_dir = pid:find('^%d+$') and uv.fs_scandir('/proc/' .. pid .. '/fd')
    while fd_dir do
      local fd = uv.fs_scandir_next(fd_dir)
      if not fd then
        break
      end
      local link = uv.fs_readlink('/proc/' .. pid .. '/fd/' .. fd)
      if link and link:sub(1, 1) == '/' then
        paths[(link:gsub(' %(deleted%)$', ''))] = true
      end
    end
  end
  return paths
end

return M
