-- Waiting for a command whose prompt may need an answer meanwhile.
--
-- vim.system():wait() waits serving only "fast" events, so the prompt's
-- window could not open before the command ended, and it would never end.
-- The wait here serves fast events only, as stock's, until the host knocks
-- (`knock.lua`: a prompt is on its way); then, while a prompt is up, it
-- serves the editor's events (as vim.wait() does by default), so the window
-- opens, and passes the keys the user types to the prompt on screen: during
-- a wait the editor does not read them itself. A wait whose command never
-- asks serves what stock's serves.
local M = {}

local config = require('ttyoffer.config')
local knock = require('ttyoffer.host.knock')
local prompts = require('ttyoffer.offer.prompts')
local typing = require('ttyoffer.offer.typing')

-- vim.wait()'s longest wait, as vim.system's own.
local FOREVER = 2 ^ 31 - 1
-- How long a wait may take for the host to connect to a knock socket just
-- made (fast events only meanwhile); it does in well under a millisecond.
local CONNECT_MS = 200

-- How often the screen is redrawn while a prompt is up (ms): the editor
-- redraws only when the wait is over.
local REDRAW_MS = 20

-- Keys as getcharstr() returns them -> what a terminal sends for them.
local TERMINAL_KEYS = {
  ['<BS>'] = '\127',
  ['<Del>'] = '\27[3~',
  ['<Up>'] = '\27[A',
  ['<Down>'] = '\27[B',
  ['<Right>'] = '\27[C',
  ['<Left>'] = '\27[D',
  ['<Home>'] = '\27[H',
  ['<End>'] = '\27[F',
  ['<S-Tab>'] = '\27[Z',
  ['<PageUp>'] = '\27[5~',
  ['<PageDown>'] = '\27[6~',
}
local translated = nil --- @type table<string, string>?

--- What the terminal gets for `key`; nil for a key it has no bytes for
--- (mouse, function keys of the editor's own).
--- @param key string
--- @return string?
local function terminal_bytes(key)
  if not translated then
    translated = {}
    for name, bytes in pairs(TERMINAL_KEYS) do
      translated[vim.keycode(name)] = bytes
    end
  end
  if translated[key] then
    return translated[key]
  end
  if key:byte(1) == 0x80 then -- one of the editor's special keys
    return nil
  end
  return key
end

--- Give what the user typed to the prompt on screen; the dismiss keys
--- decline it (and those waiting), as in its window.
local function pass_typed_keys()
  local keys = config.current.keys
  local dismiss_key = keys.dismiss and vim.keycode(keys.dismiss)
  local dismiss_all_key = keys.dismiss_all and vim.keycode(keys.dismiss_all)
  while vim.fn.getchar(1) ~= 0 do
    local key = vim.fn.getcharstr()
    if key == dismiss_key then
      prompts.dismiss()
    elseif key == dismiss_all_key then
      prompts.dismiss_all(true)
    else
      local bytes = terminal_bytes(key)
      if bytes then
        prompts.type(bytes)
      end
    end
  end
end

--- Keys typed after a prompt window went, while they are dropped (the
--- typing gate drops each as it is read).
local function drop_typed_keys()
  -- Only while the gate drops them: read, they are dropped by it. Bounded.
  for _ = 1, 1000 do
    if not (typing.dropping() and vim.fn.getchar(1) ~= 0) then
      return
    end
    vim.fn.getcharstr(0)
  end
end

--- One turn of what a wait does for a prompt while it holds the editor: the
--- keys typed go to the prompt on screen, which is drawn; with none on
--- screen, keys still being typed for one that went are dropped.
function M.serve_prompt()
  if prompts.current_id() ~= nil then
    pass_typed_keys()
    vim.cmd.redraw()
  else
    drop_typed_keys()
  end
end

--- Whether the wait has more to serve than stock's: a prompt is up or on its
--- way, or keys typed for one that went are being dropped. Without a knock
--- from the host it cannot tell, and serves all the time.
local function prompt_up()
  return not knock.connected()
    or knock.pending()
    or prompts.current_id() ~= nil
    or prompts.queued() > 0
    or typing.dropping()
end

--- Wait until `done()`, at most `timeout` ms (nil: no limit). Fast events
--- only, as stock's wait, until a prompt is up; while it is, the editor's
--- events are served and the user's keys passed to it.
--- @param done fun(): boolean
--- @param timeout integer?
--- @return boolean whether done
function M.until_done(done, timeout)
  local deadline = timeout and timeout >= 0 and (vim.uv.now() + timeout) or nil
  knock.ensure()
  if knock.connecting() then
    vim.wait(math.min(CONNECT_MS, timeout or CONNECT_MS), function()
      return done() or not knock.connecting()
    end, nil, true)
  end
  while not done() do
    local left = deadline and (deadline - vim.uv.now()) or nil
    if left and left <= 0 then
      return false
    end
    if not prompt_up() then
      local ok, why = vim.wait(left or FOREVER, function()
        return done() or prompt_up()
      end, nil, true)
      if not ok and why == -2 then
        return false -- interrupted (CTRL-C): as stock, the command is killed
      end
    else
      vim.wait(math.min(left or REDRAW_MS, REDRAW_MS), function()
        return done() or (prompts.current_id() ~= nil and vim.fn.getchar(1) ~= 0)
      end, 5)
      M.serve_prompt()
    end
  end
  return true
end

--- Make `obj:wait()` (a vim.system() object) answerable. Falls back to the
--- object's own wait where it cannot serve events (in a fast callback) or
--- when vim.system's internals are not those it knows.
--- @param obj vim.SystemObj
function M.answerable_wait(obj)
  local stock_wait = obj.wait
  local state = rawget(obj, '_state')
  if type(state) ~= 'table' or type(obj._timeout) ~= 'function' then
    return
  end
  -- Ready before the wait: the host connects meanwhile.
  knock.ensure()
  obj.wait = function(self, timeout)
    if vim.in_fast_event() then
      return stock_wait(self, timeout)
    end
    local limit = timeout or state.timeout
    if M.until_done(function()
      return state.result ~= nil
    end, limit) then
      return state.result
    end
    -- As stock: out of time, the command is killed (exit code 124).
    self:_timeout(9)
    vim.wait(limit or vim._maxint, function()
      return state.result ~= nil
    end, nil, true)
    return state.result
  end
end

-- vim.wait() is a C function: its frame holds its arguments, then what
-- the call running above it pushed first (Neovim calls every callback, a
-- timer's, a scheduled one, the condition, through a pcall whose message
-- handler is debug.traceback, pushed just below it).
local MAX_WAIT_ARGS = 4

--- Whether the vim.wait() whose frame is at `level` serves fast events
--- only (its 4th argument, `fast_only`): no scheduled callback, no
--- notification, no request runs inside it. Read from its frame; nil when
--- the frame is not laid out as known (another Neovim's).
--- @param level integer the frame's level as its caller counts it
---   (plugins_wait(); one more from here)
--- @return boolean?
local function serves_fast_events_only(level)
  local slots = {}
  for index = 1, MAX_WAIT_ARGS + 1 do
    local name, value = debug.getlocal(level + 1, index)
    if name == nil then
      break
    end
    slots.n, slots[index] = index, value
  end
  local count = slots.n or 0
  if count == 0 or slots[count] ~= debug.traceback then
    return nil
  end
  local args = count - 1
  return args >= MAX_WAIT_ARGS and slots[MAX_WAIT_ARGS] ~= nil and slots[MAX_WAIT_ARGS] ~= false
end

--- The vim.wait() of someone else's that what runs now (a timer's callback,
--- a scheduled one, a host's notification) runs inside, if any: a plugin's
--- (mini.git's, mini.deps', plenary.job's sync()), the innermost on the Lua
--- stack. Ours (until_done) passes the keys to the prompt itself, and
--- nothing here is needed. A plugin's wait passes no key typed to any
--- window: where it serves scheduled callbacks (`'served'`, vim.wait()'s
--- default) the held prompt's pump does (offer/held.lua); where it serves
--- fast events only (`'fast'`: vim.wait(..., true)) nothing can.
--- @return 'served'|'fast'|nil
function M.plugins_wait()
  for level = 2, 200 do
    local info = debug.getinfo(level, 'f')
    if not info then
      return nil
    end
    if info.func == vim.wait then
      local caller = debug.getinfo(level + 1, 'S')
      if caller and caller.source:find('ttyoffer/offer/waiting.lua', 1, true) then
        return nil
      end
      -- A frame not laid out as known counts as served: the pump is tried,
      -- and the host's own checks hang up a prompt nothing serves.
      return serves_fast_events_only(level) and 'fast' or 'served'
    end
  end
  return nil
end

return M
