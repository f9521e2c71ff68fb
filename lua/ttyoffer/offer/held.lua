-- A prompt that asks while a plugin waits in a vim.wait() of its own
-- (mini.git's `:Git commit`, plenary's Job:sync(), a loop that waits for
-- something between spawns). No key typed reaches any window until that
-- wait is over, so the prompt is held, its window not opened: shown as soon
-- as the wait is over, or, when the plugin still holds the editor in its
-- wait `blocked_timeout` after the command asked (most often it waits for
-- that very command, which waits for the answer), hung up as a blocked
-- editor's is, and the user told how to run it so it can be answered.
-- Whether the editor is inside such a wait is read from the Lua stack
-- (waiting.inside_a_plugins_wait), looked at again every tick: a timer's
-- callback runs inside the wait while it lasts.
local M = {}

local config = require('ttyoffer.config')
local host = require('ttyoffer.host')
local prompts = require('ttyoffer.offer.prompts')
local unserved = require('ttyoffer.offer.unserved')
local waiting = require('ttyoffer.offer.waiting')

local uv = vim.uv

-- How often the stack is looked at while a prompt is held (ms).
local TICK_MS = 20

local held = {} --- @type {id: integer, data: string, since: number}[] in arrival order
local timer = nil --- @type uv.uv_timer_t?

local function now_ms()
  return uv.hrtime() / 1e6
end

--- Show what waited, or hang up what waited too long; in arrival order.
local function tick()
  local inside = waiting.inside_a_plugins_wait()
  local limit = config.current.blocked_timeout
  local still = {}
  for _, entry in ipairs(held) do
    if not inside then
      vim.schedule(function()
        prompts.present(entry.id, entry.data)
      end)
    elseif now_ms() - entry.since >= limit then
      host.notify('dismiss', entry.id)
      vim.schedule(function()
        unserved.tell(entry.id, '')
      end)
    else
      still[#still + 1] = entry
    end
  end
  held = still
  if #held == 0 and timer then
    timer:stop()
  end
end

--- Hold the prompt of offer `id` if the editor is inside a plugin's wait.
--- @param id integer
--- @param data string the command's first bytes
--- @return boolean held
function M.hold_if_waiting(id, data)
  if not waiting.inside_a_plugins_wait() then
    return false
  end
  table.insert(held, { id = id, data = data, since = now_ms() })
  timer = timer or uv.new_timer()
  if not timer:is_active() then
    timer:start(TICK_MS, TICK_MS, tick)
  end
  return true
end

--- The command of offer `id` ended: nothing left to show for it.
--- @param id integer
function M.forget(id)
  for i, entry in ipairs(held) do
    if entry.id == id then
      table.remove(held, i)
      return
    end
  end
end

return M
