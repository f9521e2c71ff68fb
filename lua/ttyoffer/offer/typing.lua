-- The typing gate: focus only moves between the editor and a prompt once
-- the user has paused typing, so keys meant for one never reach the other.
local M = {}

local config = require('ttyoffer.config')

local last_key = 0 -- vim.uv.now() of the last key the user pressed
-- While keys are dropped: the last time the editor's loop was seen served
-- before a hold whose queued keys may not all have come yet (nil: none).
local held_from = nil --- @type integer?
local watching = false
local dropping = false -- keys are dropped until the user pauses
-- Keys are dropped to the end of the line (Enter), then until a pause: a
-- secret was being typed (a run pane's terminal had echo off).
local secret_line = false
-- A pause this long ends a secret line without its Enter (ms).
local SECRET_PAUSE_MS = 3000
-- A vim.on_key() callback can drop a key (by returning '') from 0.11 on.
local CAN_DROP = vim.fn.has('nvim-0.11') == 1

--- Start noting keypresses (once; from startup, so the first prompt already
--- knows whether the user is typing).
function M.watch()
  if watching then
    return
  end
  watching = true
  vim.on_key(function(key, typed)
    local now = vim.uv.now()
    -- A key that comes out of a hold was typed at any time during it: the
    -- pause before it is only sure up to the hold's start.
    local since = (held_from or now) - last_key
    local paused = since >= config.current.float.typing_pause
    last_key = now
    if secret_line and since < SECRET_PAUSE_MS then
      local pressed = typed ~= nil and typed ~= '' and typed or key
      if pressed == '\r' or pressed == '\n' or pressed == '\27' then
        secret_line = false -- the line's end: dropped too, then until a pause
      end
      return CAN_DROP and '' or nil
    end
    secret_line = false
    if dropping then
      if not paused then
        return ''
      end
      dropping = false
    end
  end, vim.api.nvim_create_namespace('ttyoffer.offer.typing'))
end

-- While keys are dropped, the editor's loop is looked at this often (ms):
-- a pause is measured where keys are processed, and keys typed while a
-- plugin held the editor all come at once after it, the first of them late.
-- A gap in the ticks (the editor served nothing) is a hold: its keys, if
-- any, come in the next ticks, each judged as typed as early as the hold's
-- start. A hold is not typing: the pause runs on through it, so a loop that
-- is slow all the time (a plugin's busy timer, a loaded machine) delays the
-- judgment by one hold at most, never keeps the keys dropped.
local TICK_MS = 20
-- Ticks on time after a hold by which its queued keys have come (the loop
-- read its input and served it in between).
local SETTLE_TICKS = 2
local ticker = nil --- @type uv.uv_timer_t?

local function stop_ticking()
  if ticker and not ticker:is_closing() then
    ticker:stop()
    ticker:close()
  end
  ticker = nil
  held_from = nil
end

local function start_ticking()
  if ticker then
    return
  end
  local last_tick = vim.uv.now()
  local on_time = 0 -- ticks on time since the last hold
  ticker = assert(vim.uv.new_timer())
  ticker:start(TICK_MS, TICK_MS, function()
    local now = vim.uv.now()
    if now - last_tick > 4 * TICK_MS then
      held_from, on_time = last_tick, 0 -- the editor was held: keys may be queued behind it
    else
      on_time = on_time + 1
      if on_time >= SETTLE_TICKS then
        held_from = nil
      end
    end
    last_tick = now
    if not dropping or M.until_pause() == 0 then
      stop_ticking()
    end
  end)
end

--- Drop the keys the user is still typing, until they pause: those meant
--- for a prompt window that went must not reach whatever has focus after it
--- (the document, in whatever mode). Nothing when they are not typing.
function M.drop_until_pause()
  if not (CAN_DROP and watching) then
    return
  end
  -- Keys waiting to be read are being typed too (a wait reads them late).
  if M.until_pause() > 0 or vim.fn.getchar(1) ~= 0 then
    last_key = vim.uv.now()
    dropping = true
    start_ticking()
  end
end

--- The same for a run's pane whose program ended (nothing else takes
--- focus): the pause is the user's own, measured between their keys only
--- (a loaded machine's slow ticks do not keep it going).
--- @param secret boolean? what is being typed is a secret (the last line
---   went to a terminal with echo off): dropped to the end of its line
---   even across a pause (up to SECRET_PAUSE_MS).
function M.drop_typed_ahead(secret)
  if not (CAN_DROP and watching) then
    return
  end
  if M.until_pause() > 0 or vim.fn.getchar(1) ~= 0 then
    dropping = true
    secret_line = secret == true
  end
end

--- @return boolean whether typed keys are being dropped
function M.dropping()
  local secret = secret_line and vim.uv.now() - last_key < SECRET_PAUSE_MS
  return secret or (dropping and M.until_pause() > 0)
end

--- Milliseconds until the user will have paused typing long enough.
--- @return integer
function M.until_pause()
  local pause = config.current.float.typing_pause
  local since = vim.uv.now() - last_key
  if since < pause then
    return pause - since
  end
  if held_from and held_from - last_key < pause then
    -- A hold began before the pause was over: keys typed in it may still
    -- be on their way in. Looked at again once the loop has served them.
    return TICK_MS
  end
  return 0
end

--- Run `fn` once the user has paused typing.
--- @param fn fun()
function M.after_pause(fn)
  local wait = M.until_pause()
  if wait == 0 then
    return fn()
  end
  vim.defer_fn(function()
    M.after_pause(fn)
  end, wait)
end

return M
