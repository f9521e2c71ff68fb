-- The Python host process and the wire to it: the façade of host/, over its
-- four jobs, one module each:
--   python.lua   finding the Python the host runs with, without blocking
--   process.lua  the process: start, state, end, coming back after a crash
--   stock.lua    the stock of spare ptys: taken, refilled, grown, shrunk
--   rpc.lua      notifications, and requests waited for within a bound
-- It runs this checkout's remote plugin (rplugin/python3/ttyoffer) in a
-- process of its own, so no other remote plugin can stall the relay and it
-- can come back after a crash. The host's state is read through functions
-- (get_state, get_pid, ...), never fields.
--
-- The part host/ (these, protocol, knock, install, leader): the process and
-- the wire to it. It requires only host/, shared/ and config; nothing here
-- requires back up the chain of parts (shared/ and config < host/ < offer/
-- < routes/ < runs/ < the entry points; scripts/require_graph.py).
local M = {}

local process = require('ttyoffer.host.process')
local python = require('ttyoffer.host.python')
local rpc = require('ttyoffer.host.rpc')
local stock = require('ttyoffer.host.stock')

M.plugin_path = process.plugin_path
M.REQUEST_MS = rpc.REQUEST_MS
M.find_python = python.find

M.get_state = process.get_state
M.get_channel = process.get_channel
M.get_job = process.get_job
M.get_pid = process.get_pid
M.get_error = process.get_error
M.get_stderr = process.get_stderr
M.get_python = process.get_python
M.ready = process.ready
M.forget_failure = process.forget_failure
M.when_ready = process.when_ready
M.set_exit_handler = process.set_exit_handler
M.start = process.start

M.add_stock = stock.add
M.take = stock.take
M.refill = stock.refill
M.unanswered_for = stock.unanswered_for
M.stock_size = stock.size
M.stock_dry = stock.dry_count
M.stock_retired = stock.retired_count
M.get_shrink_delay = stock.get_shrink_delay
M.set_shrink_delay = stock.set_shrink_delay

M.notify = rpc.notify
M.request_within = rpc.request_within
M.request = rpc.request
M.answered = rpc.answered

return M
