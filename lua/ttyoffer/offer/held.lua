-- Prompts that ask while a plugin holds the editor in a vim.wait() of its
-- own (mini.deps waiting for its git clones, mini.git's `:Git push`,
-- plenary's Job:sync()). Inside such a wait Neovim reads no key and draws
-- nothing: the plugin's command would wait for an answer nobody can give.
--
-- So while a prompt is up (or keys typed for one that went are dropped), a
-- ticker looks at the Lua stack: its callback runs inside whatever wait
-- holds the editor (waiting.plugins_wait()).
-- - A plugin's wait that serves scheduled callbacks (vim.wait()'s default):
--   the pump is scheduled, and runs there, as our own wait does each turn
--   (waiting.serve_prompt): the keys typed go to the prompt on screen, the
--   same dismiss keys decline it (and those waiting), the window is drawn,
--   and keys typed after it went are dropped by the typing gate.
-- - A plugin's wait that serves fast events only (vim.wait(..., true)): no
--   callback of ours can run there, no key can reach the prompt. Once the
--   editor has been in such a wait WAIT_LIMIT_MS, the prompts up are hung
--   up, as a blocked editor's are, and the user told how to run each so it
--   can be answered (offer/unserved.lua), once the wait is over.
-- - Anywhere else (the editor's own loop, our own wait): nothing to do.
local M = {}

local host = require('ttyoffer.host')
local typing = require('ttyoffer.offer.typing')
local unserved = require('ttyoffer.offer.unserved')
local waiting = require('ttyoffer.offer.waiting')

local uv = vim.uv

-- How long a wait that serves fast events only may hold prompts
-- unanswerable (ms): longer than the short waits a plugin makes between
-- spawns, far shorter than the timeouts of those that wait for their
-- command (mini.git's 30 s).
M.WAIT_LIMIT_MS = 5000
-- How often the stack is looked at, and the pump run (ms): as our own wait
-- passes keys and redraws.
local TICK_MS = 20

local watched = {} --- @type table<integer, true> prompts presented, not closed
local ticker = nil --- @type uv.uv_timer_t?
local pump_pending = false
local fast_since = nil --- @type number? uv.now() the editor entered a fast-only wait

--- Whether anything is left to serve: a prompt up, or keys being dropped.
local function anything_up()
  return next(watched) ~= nil or typing.dropping()
end

--- One turn of the pump, scheduled: runs inside the plugin's wait (nothing
--- at all when that wait ended before it ran: the editor serves the window).
local function pump()
  pump_pending = false
  if waiting.plugins_wait() == 'served' then
    waiting.serve_prompt()
  end
end

local function hang_up_all()
  for id in pairs(watched) do
    watched[id] = nil
    host.notify('dismiss', id)
    -- Told once the wait is over (nothing is drawn inside it).
    vim.schedule(function()
      unserved.tell(id, '')
    end)
  end
end

local function tick()
  if not anything_up() then
    fast_since = nil
    if ticker then
      ticker:stop()
    end
    return
  end
  local kind = waiting.plugins_wait()
  if kind ~= 'fast' then
    fast_since = nil
  end
  if kind == 'served' and not pump_pending then
    pump_pending = true
    vim.schedule(pump)
  elseif kind == 'fast' then
    fast_since = fast_since or uv.now()
    if uv.now() - fast_since >= M.WAIT_LIMIT_MS then
      fast_since = nil
      hang_up_all()
    end
  end
end

--- The prompt of offer `id` was presented: served inside whichever plugin's
--- wait holds the editor while it is up.
--- @param id integer
function M.watch(id)
  watched[id] = true
  ticker = ticker or uv.new_timer()
  if ticker and not ticker:is_active() then
    ticker:start(TICK_MS, TICK_MS, tick)
  end
end

--- The command of offer `id` ended: its prompt needs no more serving (the
--- ticker runs on while keys typed for it are dropped).
--- @param id integer
function M.forget(id)
  watched[id] = nil
end

return M
