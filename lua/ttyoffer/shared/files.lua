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

return M
