-- Small facts about files that several parts need: one definition each.
local M = {}

--- The whole of the file at `path`, or nil.
--- @param path string
--- @return string?
function M.read(path)
  local file = io.open(path, 'rb')
  if not file then
    return nil
  end
  local text = file:read('*a')
  file:close()
  return text
end

--- Whether two stats (uv.fs_stat) are of the same file, unchanged: a
--- rewrite, a chmod or a replacement moves one of these.
--- @param a table
--- @param b table
--- @return boolean
function M.unchanged(a, b)
  return a.ino == b.ino
    and a.dev == b.dev
    and a.size == b.size
    and a.mode == b.mode
    and a.mtime.sec == b.mtime.sec
    and a.mtime.nsec == b.mtime.nsec
    and a.ctime.sec == b.ctime.sec
    and a.ctime.nsec == b.ctime.nsec
end

--- {state, ppid, pgrp, start} of `pid` from /proc/<pid>/stat, or nil. No
--- editor function: callable in a fast event.
--- @param pid integer
--- @return {state: string, ppid: integer, pgrp: integer, start: string}?
function M.process_stat(pid)
  local file = io.open('/proc/' .. pid .. '/stat', 'r')
  if not file then
    return nil
  end
  local line = file:read('*l')
  file:close()
  -- The name in parentheses may hold anything, ')' too: the fields after
  -- the last ')' are the state, ppid, pgrp, ... and the start time 20th.
  local rest = line and line:match('.*%) (.*)$')
  if not rest then
    return nil
  end
  local fields, n = {}, 0
  for field in rest:gmatch('%S+') do
    n = n + 1
    fields[n] = field
    if n == 20 then
      break
    end
  end
  if n < 20 then
    return nil
  end
  return { state = fields[1], ppid = tonumber(fields[2]), pgrp = tonumber(fields[3]), start = fields[20] }
end

return M
