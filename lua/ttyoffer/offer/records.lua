-- Offer records: which command holds which offer, and in which state. The one
-- source of truth for `offers()` and `:TtyOffer status`; the host uses the
-- same words for the same states.
--
--   armed ──first write──> presented ──window──> attached ──> closed
--     └─────────────────────────┴──────────────────────────────┘
--
-- A record lives while the host holds its pty or its window is up, whichever
-- is longer.
local M = {}

--- @alias ttyoffer.State 'armed'|'presented'|'attached'|'closed'

--- @class ttyoffer.Record
--- @field id integer offer id
--- @field job integer job id
--- @field pid integer
--- @field cmd string|string[] the command as the caller gave it
--- @field state ttyoffer.State
--- @field released boolean? the host is done with its pty
--- @field code integer? exit code, when the caller's on_exit told it
--- @field rerun string[]? what to run again where it can be answered (a lease's git)

local records = {} --- @type table<integer, ttyoffer.Record>
local live = 0 -- bound offers the host still holds
local skipped = {} --- @type table<string, integer> why commands ran without one

local function forget_if_done(record)
  if record.state == 'closed' and record.released then
    records[record.id] = nil
  end
end

--- @param record ttyoffer.Record
function M.add(record)
  records[record.id] = record
  live = live + 1
end

--- @param id integer
--- @return ttyoffer.Record?
function M.get(id)
  return records[id]
end

--- @param id integer
--- @param state ttyoffer.State
function M.set_state(id, state)
  local record = records[id]
  if record then
    record.state = state
    forget_if_done(record)
  end
end

--- The host is done with these offers: their commands ended or declined.
--- @param ids integer[]
function M.released(ids)
  for _, id in ipairs(ids) do
    local record = records[id]
    if record and not record.released then
      record.released = true
      live = live - 1
      if record.state == 'armed' then
        record.state = 'closed'
      end
      forget_if_done(record)
    end
  end
end

--- The host died: the ptys it held are gone.
function M.host_lost()
  for _, record in pairs(records) do
    record.state, record.released = 'closed', true
    forget_if_done(record)
  end
  live = 0
end

--- @return integer
function M.live()
  return live
end

--- A command ran without an offer, for this reason.
--- @param reason string
function M.skipped(reason)
  skipped[reason] = (skipped[reason] or 0) + 1
end

--- @return table<string, integer>
function M.skip_counts()
  return vim.deepcopy(skipped)
end

--- Offers in flight, by id.
--- @return ttyoffer.Record[]
function M.list()
  local list = {}
  for _, record in pairs(records) do
    if record.state ~= 'closed' then
      table.insert(list, record)
    end
  end
  table.sort(list, function(a, b)
    return a.id < b.id
  end)
  return list
end

return M
