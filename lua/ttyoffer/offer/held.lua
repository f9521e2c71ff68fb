-- A prompt that asks while a plugin waits in a vim.wait() of its own
-- (mini.git's `:Git commit`, plenary's Job:sync(), a loop that waits for
-- something between spawns). No key typed reaches any window until that
-- wait is over. Its window opens as any other (a short wait ends, and the
-- user answers then), and the prompt is watched: when the plugin still
-- holds the editor in its wait WAIT_LIMIT_MS after the command asked (most
-- often it waits for that very command, which waits for the answer: it
-- would wait for the plugin's own timeout, if it has one), the command is
-- hung up as a blocked editor's is, and the user told how to run it so it
-- can be answered. Whether the editor is inside such a wait is read from
-- the Lua stack (waiting.inside_a_plugins_wait), looked at again every
-- tick: a timer's callback runs inside the wait while it lasts, and the
-- first tick outside it ends the watch.
local M = {}

local host = require('ttyoffer.host')
local unserved = require('ttyoffer.offer.unserved')
local waiting = require('ttyoffer.offer.waiting')

local uv = vim.uv

-- How long a plugin's wait may hold a prompt's window unanswerable (ms):
-- longer than the waits a plugin makes between spawns, shorter than the
-- timeouts of those that wait for their command (mini.git's 30 s).
M.WAIT_LIMIT_MS = 5000
-- How often the stack is looked at while a prompt is watched (ms).
local TICK_MS = 20

local watched = {} --- @type {id: integer, since: number}[] in arrival order
local timer = nil --- @type uv.uv_timer_t?

local function now_ms()
  return uv.hrtime() / 1e6
end

--- Let go of what is answerable now, hang up what waited too long.
local function tick()
  local inside = waiting.inside_a_plugins_wait()
  local still = {}
  for _, entry in ipairs(watched) do
    if inside and now_ms() - entry.since >= M.WAIT_LIMIT_MS then
      host.notify('dismiss', entry.id)
      vim.schedule(function()
        unserved.tell(entry.id, '')
      end)
    elseif inside then
      still[#still + 1] = entry
    end
  end
  watched = still
  if #watched == 0 and timer then
    timer:stop()
  end
end

--- Watch the prompt of offer `id` if it asked inside a plugin's wait.
--- @param id integer
function M.watch_if_waiting(id)
  if not waiting.inside_a_plugins_wait() then
    return
  end
  table.insert(watched, { id = id, since = now_ms() })
  timer = timer or uv.new_timer()
  if not timer:is_active() then
    timer:start(TICK_MS, TICK_MS, tick)
  end
end

--- The command of offer `id` ended: nothing left to watch.
--- @param id integer
function M.forget(id)
  for i, entry in ipairs(watched) do
    if entry.id == id then
      table.remove(watched, i)
      return
    end
  end
end

return M
