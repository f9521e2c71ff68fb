-- The stock of spare ptys, allocated ahead so a spawn costs no round trip
-- to the host: taken by spawns, refilled, grown in bursts and shrunk back.
local M = {}

local layout = require('ttyoffer.shared.layout')
local notify = require('ttyoffer.shared.notify')
local process = require('ttyoffer.host.process')
local rpc = require('ttyoffer.host.rpc')

local stock = {} --- @type {[1]: integer, [2]: string}[]
-- Ptys are the machine's, not the editor's: 4096 by default for every
-- terminal, tmux pane and ssh login (1024 of them reserved), so an idle
-- editor keeps STOCK_IDLE at most, refilled below half that. A burst of
-- spawns that never yields to the event loop (a plugin starting a job per
-- item in a loop) can only use what is in stock: past it, commands run
-- plainly; each time that happens the stock grows, up to STOCK_MAX, and it
-- goes back to STOCK_IDLE once no spawn has found it empty for
-- shrink_delay ms.
local STOCK_IDLE, STOCK_MAX = 8, 256
-- A stock that needs refilling again within BUSY_MS of the last refill
-- grows too, up to STOCK_BUSY: a busy editor asks the host less often
-- (each refill is a round trip and a message to the keeper).
local STOCK_BUSY, BUSY_MS = 32, 1000
-- What a refill brings the stock up to.
local stock_target = STOCK_IDLE
-- Milliseconds after the stock last ran dry before the spares above
-- STOCK_IDLE go back to the host (a setting of the tests; at most a minute).
local shrink_delay = 30000
local shrink_timer = nil --- @type uv.uv_timer_t?
local last_growth = 0 -- vim.uv.now() when the stock last grew
-- A refill not answered within this long means the host is not answering.
local ANSWER_MS = 1000
-- When the refill in flight was asked for (vim.uv.now()).
local refill_asked = nil --- @type integer?
-- Times a spawn found no spare pty (and ran without an offer).
local dry = 0
-- Spares given back to the host as the stock shrank.
local retired = 0
local refilling = false

process.subscribe({
  -- The first refill is queued in the pipe with the host's configuration.
  spawned = function()
    local height, width = layout.size()
    refilling = true
    rpc.notify('refill', stock_target, height, width)
  end,
  -- The spares lived in the host.
  ended = function()
    stock = {}
    stock_target = STOCK_IDLE
    refilling = false
  end,
})

local grow -- below

local function request_stock()
  if vim.in_fast_event() then
    -- A spawn from a luv callback: the editor's size is read on the loop.
    return vim.schedule(request_stock)
  end
  if refilling or not process.ready() then
    return
  end
  local now = vim.uv.now()
  if refill_asked and now - refill_asked < BUSY_MS and stock_target < STOCK_BUSY then
    grow(STOCK_BUSY)
  end
  local wanted = stock_target - #stock
  if wanted <= 0 then
    return
  end
  refilling = true
  refill_asked = now
  local height, width = layout.size()
  if not rpc.notify('refill', wanted, height, width) then
    refilling = false
  end
end

--- Spares above the target go back to the host, which closes them.
local function retire_surplus()
  if #stock <= stock_target then
    return
  end
  local surplus = {}
  while #stock > stock_target do
    table.insert(surplus, table.remove(stock)[1])
  end
  retired = retired + #surplus
  rpc.notify('retire', surplus)
end

--- The spares above STOCK_IDLE go back to the host, which closes them;
--- unless it grew again within shrink_delay.
local function shrink()
  local since = vim.uv.now() - last_growth
  if since < shrink_delay then
    shrink_timer:start(shrink_delay - since, 0, vim.schedule_wrap(shrink))
    return
  end
  stock_target = STOCK_IDLE
  retire_surplus()
end

--- The stock grows (up to `limit`), and shrinks back later.
--- @param limit integer
function grow(limit)
  last_growth = vim.uv.now()
  stock_target = math.max(stock_target, math.min(stock_target * 2, limit))
  if not shrink_timer then
    shrink_timer = assert(vim.uv.new_timer())
  end
  if not shrink_timer:is_active() then
    shrink_timer:start(shrink_delay, 0, vim.schedule_wrap(shrink))
  end
end

--- A spawn found the stock empty.
local function ran_dry()
  dry = dry + 1
  grow(STOCK_MAX)
end

--- Freshly allocated ptys from the host (its `stock` event).
--- @param ptys {[1]: integer, [2]: string}[]
--- @param err string
function M.add(ptys, err)
  refilling = false
  local first = process.become_ready()
  vim.list_extend(stock, ptys)
  -- A refill asked for before the stock shrank back brings too many; one
  -- asked for before a burst grew it, too few.
  retire_surplus()
  if #stock < stock_target / 2 then
    request_stock()
  end
  if err ~= '' then
    notify.once('alloc:' .. err, err .. '; commands run without an offer until ptys can be had')
  end
  if first then
    process.announce_ready()
  end
end

--- Take a spare pty, or nil when the stock is empty: the command then runs
--- plainly. Never waits: a spawn must not block on a host that may be
--- stopped or stalled, nor run the editor's other events inside the
--- caller's jobstart(). (A burst that empties the stock has not yielded to
--- the event loop, so no prompt of it could have opened before it ended
--- anyway.)
--- @return integer? id, string? slave
function M.take()
  if not process.ready() then
    return nil
  end
  local entry = table.remove(stock)
  if not entry then
    ran_dry()
  end
  if #stock < stock_target / 2 then
    request_stock()
  end
  if not entry then
    return nil
  end
  return entry[1], entry[2]
end

--- Ask for spare ptys unless there are enough or some are on their way.
function M.refill()
  if #stock < stock_target / 2 then
    request_stock()
  end
end

--- Milliseconds the host has left a refill unanswered, when that is long
--- enough to say so (it is stopped or stalled), or nil.
--- @return integer?
function M.unanswered_for()
  local waited = refilling and refill_asked and (vim.uv.now() - refill_asked)
  return waited and waited >= ANSWER_MS and waited or nil
end

--- @return integer
function M.size()
  return #stock
end

--- @return integer times a spawn found no spare pty
function M.dry_count()
  return dry
end

--- @return integer spares given back to the host as the stock shrank
function M.retired_count()
  return retired
end

--- @return integer
function M.get_shrink_delay()
  return shrink_delay
end

--- @param ms integer
function M.set_shrink_delay(ms)
  shrink_delay = ms
end

return M
