-- The host's knock: a Unix socket the editor listens on, to which the host
-- writes the id of each offer it presents (a line each), right after its
-- `present`. Reading a socket is a fast event, served where the notification
-- itself waits: a wrapped vim.system():wait() serves fast events only, as
-- stock's does, until a knock says a prompt is on its way.
--
-- The socket is made in Neovim's own temporary folder (0700, the user's
-- alone) and unlinked at the first connection: the host's, nobody's after.
-- One per host; a host that restarts is given a new one.
local M = {}

local host = require('ttyoffer.host')
local originals = require('ttyoffer.shared.originals')

local listening_for = nil --- @type integer? the host channel told the path
local server = nil --- @type uv.uv_pipe_t?
local client = nil --- @type uv.uv_pipe_t?
local path = nil --- @type string?
local connected = false
local pending = {} --- @type table<integer, true> knocked, `present` not yet served

local function close(handle)
  if handle and not handle:is_closing() then
    handle:close()
  end
end

local function unlink()
  if path then
    vim.uv.fs_unlink(path)
    path = nil
  end
end

local function reset()
  close(server)
  close(client)
  server, client, connected, pending = nil, nil, false, {}
  unlink()
end

--- Read the ids, a line each.
local function reader()
  local partial = ''
  return function(err, data)
    if err or not data then
      -- The host is gone: what it knocked for is gone with it.
      close(client)
      client, connected, pending = nil, false, {}
      return
    end
    partial = partial .. data
    for line in partial:gmatch('([^\n]*)\n') do
      local id = tonumber(line)
      if id then
        pending[id] = true
      end
    end
    partial = partial:match('[^\n]*$') or ''
  end
end

--- Listen for the running host's knocks, if not already (not from a fast
--- callback: Neovim's temporary folder is asked through vim.fn).
function M.ensure()
  if vim.in_fast_event() or not host.get_channel() or host.get_channel() == listening_for then
    return
  end
  reset()
  listening_for = host.get_channel()
  local socket_path = vim.fn.tempname()
  -- luv's own pipe: a test framework's later mock of new_pipe (mini.test's)
  -- must not reach the host's socket.
  local pipe = originals.new_pipe(false)
  if not pipe then
    return
  end
  local ok = pipe:bind(socket_path)
  if not ok then
    close(pipe)
    return
  end
  server, path = pipe, socket_path
  pipe:listen(1, function(err)
    if err or server ~= pipe then
      return
    end
    local conn = originals.new_pipe(false)
    if not conn or not pipe:accept(conn) then
      close(conn)
      return
    end
    -- The host's, the only one: nobody else may connect after it.
    close(pipe)
    server = nil
    unlink()
    client, connected = conn, true
    conn:read_start(reader())
  end)
  if not host.notify('knock', socket_path) then
    reset()
  end
end

--- Whether the host can knock: it has connected.
--- @return boolean
function M.connected()
  return connected
end

--- Whether the host is told but not connected yet.
--- @return boolean
function M.connecting()
  return server ~= nil and not connected
end

--- Whether a knocked offer's `present` is still to be served.
--- @return boolean
function M.pending()
  return next(pending) ~= nil
end

--- The offer's `present` is served.
--- @param id integer
function M.served(id)
  pending[id] = nil
end

return M
