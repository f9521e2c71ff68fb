-- A private terminal for a process the plugin did not start (gpg run by
-- git's gpg.program, libexec/ttyoffer-gpg; ssh run by git's core.sshCommand,
-- libexec/ttyoffer-ssh), asked for over RPC. Granted only
-- within bounds: to a live descendant of this editor (a process of another
-- editor's, or one that names any pid it likes, gets none), one at a time
-- per process, and within max_offers like every other offer.
local M = {}

local config = require('ttyoffer.config')
local host = require('ttyoffer.host')
local files = require('ttyoffer.shared.files')
local notify = require('ttyoffer.shared.notify')
local records = require('ttyoffer.offer.records')
local title = require('ttyoffer.shared.title')

-- Deeper than any real chain of processes (git → gpg's wrapper under a
-- terminal's shell under a plugin's job): a bound on the walk, no more.
local MAX_DEPTH = 64

--- The parent of `pid`, from /proc (no process started), or nil.
--- @param pid integer
--- @return integer?
local function parent_of(pid)
  local stat = files.process_stat(pid)
  return stat and stat.ppid
end

--- The argv of `pid`, from /proc, or nil.
--- @param pid integer
--- @return string[]?
function M.argv_of(pid)
  local file = io.open('/proc/' .. pid .. '/cmdline', 'rb')
  if not file then
    return nil
  end
  local raw = file:read('*a')
  file:close()
  if not raw or raw == '' then
    return nil
  end
  return vim.split((raw:gsub('%z$', '')), '\0', { plain = true })
end

--- Whether `pid` is a process below `ancestor` (not `ancestor` itself).
--- @param pid integer
--- @param ancestor integer
--- @return boolean
function M.descends_from(pid, ancestor)
  local current = pid
  for _ = 1, MAX_DEPTH do
    local parent = parent_of(current)
    if not parent or parent <= 1 then
      return false
    end
    if parent == ancestor then
      return true
    end
    current = parent
  end
  return false
end

--- Why `pid` gets no terminal, or nil.
--- @param pid integer
--- @return string?
local function refusal(pid)
  if not config.current.enabled then
    return 'ttyoffer is off'
  end
  if not host.ready() then
    return 'the host is not running'
  end
  if not M.descends_from(pid, vim.fn.getpid()) then
    return 'not a process of this editor'
  end
  if require('ttyoffer.offer.waiting').plugins_wait() == 'fast' then
    -- Asked from inside a plugin's own wait that serves fast events only:
    -- a window would open, but no key typed could reach it until the wait
    -- is over (a plugin's wait that serves the rest is served: offer/held.lua).
    return 'the editor is inside a wait that passes no keys'
  end
  for _, record in ipairs(records.list()) do
    if record.pid == pid and not record.released then
      return 'it holds one already'
    end
  end
  if records.live() >= config.current.max_offers then
    return 'the offer limit is reached (max_offers)'
  end
  return nil
end

-- Why an ssh of this editor's got no terminal, by its pid: told only if
-- it then fails (the wrapper says so, through unanswered()), since an ssh
-- whose agent holds the key asks nothing. Forgotten when told, and all of
-- it past REFUSALS_KEPT (ssh that never failed).
local ssh_refusals = {} --- @type table<integer, string>
local ssh_refusal_count = 0
local REFUSALS_KEPT = 256

-- What asks through a lease, and the command to name when no git command
-- line could be read.
local ASKERS = {
  gpg = { verb = 'to sign, run', example = 'git commit -S …' },
  ssh = { verb = 'to reach the remote, run', example = 'git fetch …' },
}

--- See ttyoffer.lease(): the slave's path, or '' (the wrapper then lets gpg
--- or ssh ask where it would without us, or fail at once).
--- @param pid any
--- @param what any 'gpg' (the default) or 'ssh': which wrapper asks
--- @return string
function M.grant(pid, what)
  what = ASKERS[what] and what or 'gpg'
  local asker = ASKERS[what]
  pid = tonumber(pid)
  if not (pid and pid > 1 and pid % 1 == 0) then
    return ''
  end
  local reason = refusal(pid)
  -- The command to run again where it can be answered: git's, the
  -- wrapper's parent.
  local parent = parent_of(pid)
  local rerun = parent and M.argv_of(parent)
  local offer_id, slave
  if not reason then
    offer_id, slave = host.take()
    reason = not offer_id and 'no pty to spare' or nil
  end
  if reason then
    records.skipped('lease refused: ' .. reason)
    local ours = reason ~= 'ttyoffer is off' and reason ~= 'not a process of this editor'
    if ours and what == 'ssh' then
      if ssh_refusal_count >= REFUSALS_KEPT then
        ssh_refusals, ssh_refusal_count = {}, 0
      end
      ssh_refusals[pid], ssh_refusal_count = reason, ssh_refusal_count + 1
    elseif ours then
      -- A gpg of this editor's that will fail: say once how to run git so
      -- that it can be answered.
      local command = rerun and title.sanitize(require('ttyoffer.offer.unserved').as_bang_argument(rerun), math.huge)
        or asker.example
      notify.once(
        'lease-refused-' .. what,
        what .. ' got no window to ask in: ' .. asker.verb .. ' :Bang ' .. command,
        vim.log.levels.WARN,
        what .. ' got no window to ask in (' .. reason .. '): ' .. asker.verb .. ' :Bang ' .. command
      )
    end
    return ''
  end
  records.add({ id = offer_id, pid = pid, cmd = { what }, rerun = rerun, state = 'armed' })
  host.notify('bind', offer_id, pid)
  return slave
end

-- The most of a command line the wrapper sends (hex, two digits a byte).
local UNANSWERED_LIMIT = 16384

--- A gpg or ssh of this editor's asked for a terminal while the editor was
--- blocked (Vimscript system(): it serves nothing until git ends), gave up
--- after about a second, as the host does, and failed; told now that the
--- editor is free: which command to run again, and how, so it can ask. Or
--- an ssh refused a terminal (grant()) failed: told why, and the same.
--- @param hex_argv any the argv of the wrapper's caller (git),
---   NUL-terminated entries in hex; '' or anything else when it could not
---   be read
--- @param what any 'gpg' (the default) or 'ssh'
--- @param refused_pid any given when the editor refused the wrapper (its
---   pid): told only for a refusal grant() kept
function M.unanswered(hex_argv, what, refused_pid)
  what = ASKERS[what] and what or 'gpg'
  local refused = nil --- @type string?
  if refused_pid ~= nil then
    refused = what == 'ssh' and ssh_refusals[tonumber(refused_pid)] or nil
    if not refused then
      return -- off, or not a process of this editor's: nothing to tell
    end
    ssh_refusals[tonumber(refused_pid)] = nil
  end

  local argv = nil --- @type string[]?
  local readable = type(hex_argv) == 'string' and #hex_argv <= UNANSWERED_LIMIT and #hex_argv % 2 == 0
  if readable and hex_argv:find('^%x*$') then
    local raw = hex_argv:gsub('%x%x', function(byte)
      return string.char(tonumber(byte, 16))
    end)
    -- Whole (its last entry ended) and not empty: else no command is named.
    if raw:sub(-1) == '\0' and #raw > 1 then
      argv = vim.split(raw:sub(1, -2), '\0', { plain = true })
    end
  end
  local unserved = require('ttyoffer.offer.unserved')
  local command = argv and title.sanitize(unserved.as_bang_argument(argv), math.huge) or ASKERS[what].example
  if refused then
    local verb = ASKERS[what].verb
    notify.once(
      'lease-refused-' .. what,
      what .. ' got no window to ask in: ' .. verb .. ' :Bang ' .. command,
      vim.log.levels.WARN,
      what .. ' got no window to ask in (' .. refused .. '): ' .. verb .. ' :Bang ' .. command
    )
    return
  end
  notify.notice('editor busy, ' .. what .. ' could not ask: run :Bang ' .. command .. ' to answer it')
end

return M
