-- A command the /bin/sh prologue leads, stopped as stock stops it. Its
-- shell cannot pass a signal on (dash runs a trap only once `fg` is over):
-- a signal for the job ends the shell, and the kernel hangs up the
-- command's group instead, which a command may ignore and outlive. So the
-- Lua side passes the signal on itself, where it is sent from Lua:
-- - jobstop() (vim.fn.jobstop): SIGTERM to the command's process group, as
--   stock's reaches the job's group; then the editor's own jobstop(), which
--   ends the shell; and, as stock's 2 s later to a job that did not end,
--   SIGKILL to that group if the command still lives (the very process:
--   its start time is the one seen at the stop).
-- - vim.system()'s kill(), which its timeout and a timed-out wait() call
--   too: the signal goes to the command alone, as stock's goes to its pid,
--   and the shell ends with the command's status or by its signal.
-- The compiled leader passes signals on itself: nothing is done for it.
-- Nothing runs on the spawn path but a look at the argv: the command (the
-- shell's child) is looked for at the stop, in /proc.
local M = {}

local files = require('ttyoffer.shared.files')
local originals = require('ttyoffer.shared.originals')
local spawn = require('ttyoffer.routes.spawn')

local uv = vim.uv

-- How long stock waits after jobstop()'s SIGTERM before its SIGKILL
-- (KILL_TIMEOUT_MS, src/nvim/event/proc.c): one timer, restarted by every
-- stop, for every job stopped and not ended.
local KILL_TIMEOUT_MS = 2000

local stat_of = files.process_stat

--- The children of `pid`: /proc's list, or where the kernel keeps none
--- (CONFIG_PROC_CHILDREN unset) every process whose parent it is.
--- @param pid integer
--- @return integer[]
local function children_of(pid)
  local children = {}
  local file = io.open(('/proc/%d/task/%d/children'):format(pid, pid), 'r')
  if file then
    for child in (file:read('*a') or ''):gmatch('%d+') do
      children[#children + 1] = tonumber(child)
    end
    file:close()
    return children
  end
  local dir = uv.fs_scandir('/proc')
  while dir do
    local name = uv.fs_scandir_next(dir)
    if not name then
      break
    end
    local child = tonumber(name)
    local stat = child and stat_of(child)
    if stat and stat.ppid == pid then
      children[#children + 1] = child
    end
  end
  return children
end

--- The command the prologue's shell `leader` runs, {pid, start}, or nil:
--- its oldest child (a `sleep 1` the shell runs while the command is
--- stopped comes later), alive and leading a process group of its own, as
--- job control makes it (before that it is in the shell's, which the
--- editor's own signal reaches).
--- @param leader integer
--- @return {pid: integer, start: string}?
local function command_of(leader)
  -- Still the prologue's shell: one that could not take the terminal
  -- exec'd the command itself, whose own children stock never signals.
  local cmdline = files.read('/proc/' .. leader .. '/cmdline')
  if not (cmdline and spawn.led_by_prologue(vim.split(cmdline, '\0', { plain = true }))) then
    return nil
  end
  local found, found_start
  for _, child in ipairs(children_of(leader)) do
    local stat = stat_of(child)
    if stat and (not found_start or tonumber(stat.start) < tonumber(found_start)) then
      found, found_start = { pid = child, stat = stat }, stat.start
    end
  end
  if not found or found.stat.state == 'Z' or found.stat.pgrp ~= found.pid then
    return nil
  end
  return { pid = found.pid, start = found_start }
end

-- Commands stopped by jobstop() whose SIGKILL is due, by job id.
local due = {} --- @type table<integer, {pid: integer, start: string}>
local kill_timer = nil --- @type uv.uv_timer_t?

--- Stock's SIGKILL, for each command still there (the same process: same
--- start time, not a zombie): to its group while it leads it.
local function kill_the_stubborn()
  local stopped = due
  due = {}
  for _, command in pairs(stopped) do
    local stat = stat_of(command.pid)
    if stat and stat.start == command.start and stat.state ~= 'Z' and stat.state ~= 'X' then
      uv.kill(stat.pgrp == command.pid and -command.pid or command.pid, 'sigkill')
    end
  end
end

--- The command of job `id` if the prologue leads it, or nil.
--- @param id any
--- @return {pid: integer, start: string}?
local function prologue_command_of_job(id)
  if type(id) ~= 'number' or id % 1 ~= 0 or due[id] or vim.in_fast_event() then
    return nil
  end
  local ok, info = pcall(vim.api.nvim_get_chan_info, id)
  if not (ok and info.stream == 'job' and type(info.argv) == 'table' and spawn.led_by_prologue(info.argv)) then
    return nil
  end
  local found, leader = pcall(vim.fn.jobpid, id)
  return found and type(leader) == 'number' and leader > 0 and command_of(leader) or nil
end

--- Same contract as |jobstop()|; behind the prologue, with stock's signals
--- for the command's group (see the top).
--- @return integer 1 if the job was stopped, 0 if not
function M.jobstop(...)
  local command = prologue_command_of_job((...))
  if command then
    uv.kill(-command.pid, 'sigterm')
  end
  local stopped = originals.jobstop(...)
  if stopped == 1 then
    -- A stop that counts (a job stopped already gives 0): stock's timer
    -- starts again.
    due[(...)] = command
    if next(due) then
      kill_timer = kill_timer or uv.new_timer()
      kill_timer:start(KILL_TIMEOUT_MS, 0, kill_the_stubborn)
      kill_timer:unref()
    end
  end
  return stopped
end

--- vim.system()'s kill() for an object the prologue leads: the signal for
--- the command alone, as stock's for its pid; to the shell, as before,
--- when there is no command to give it to (not started yet, or ended).
--- @param self vim.SystemObj
--- @param signal integer|string?
function M.kill(self, signal)
  local state = rawget(self, '_state')
  local handle = type(state) == 'table' and state.handle
  if signal ~= 0 and handle and not handle:is_closing() then
    local command = command_of(self.pid)
    if command then
      local ok, sent = pcall(uv.kill, command.pid, signal or 'sigterm')
      if ok and sent == 0 then
        return
      end
    end
  end
  return getmetatable(self).__index.kill(self, signal)
end

--- A vim.system() object whose `command` (as spawned) the prologue leads
--- gets the kill() above.
--- @param obj vim.SystemObj
--- @param command string[]
function M.mind(obj, command)
  if spawn.led_by_prologue(command) then
    obj.kill = M.kill
  end
end

--- The jobstop() above in place of the editor's own, where that still is.
function M.put_in()
  if rawequal(vim.fn.jobstop, originals.jobstop) then
    vim.fn.jobstop = M.jobstop
  end
end

--- The editor's very own jobstop() back, where ours still is.
function M.take_out()
  if rawequal(vim.fn.jobstop, M.jobstop) then
    vim.fn.jobstop = originals.jobstop
  end
end

return M
