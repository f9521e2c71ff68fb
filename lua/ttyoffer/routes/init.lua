-- The routes by which the editor's commands reach a shell, and which of them
-- carry the offer: `:!` as the user types it, and the spawners Lua plugins
-- call (vim.fn.jobstart, vim.system, vim.fn.system, vim.fn.systemlist).
--
-- A stand-in (ttyoffer.routes.stand_ins) is put in place of the editor's own
-- function as soon as the plugin loads, and serves the offer from the start;
-- it is taken out by putting that very function back. A caller that kept
-- its own reference to a spawner before the plugin loaded keeps the
-- original (:checkhealth names it); one that kept a stand-in gets the offer
-- while it is on, and stock while it is off; a plugin that
-- wrapped ours in turn keeps its wrapper (and ours under it) until it
-- removes it: taking ours out would take theirs with it.
--
-- The part routes/ (this module, spawners, spawn, startable, stand_ins,
-- stopping, synchronous, bang, bangline, expand, lease, gitenv, terminals):
-- how a command gets its offer. It requires only routes/, offer/, host/,
-- shared/ and config; nothing here requires back up the chain of parts
-- (shared/ and config < host/ < offer/ < routes/ < runs/ < the entry
-- points; scripts/require_graph.py).
local M = {}

local config = require('ttyoffer.config')
local stand_ins = require('ttyoffer.routes.stand_ins')

local wrapped = false

--- @param spawners table the wrappers the stand-ins serve (ttyoffer's)
local function wrap_lua_spawners(spawners)
  stand_ins.put_in()
  stand_ins.serve(spawners)
  -- jobstop() too, for the commands the /bin/sh prologue leads.
  require('ttyoffer.routes.stopping').put_in()
  wrapped = true
end

local function unwrap_lua_spawners()
  stand_ins.take_out()
  stand_ins.serve(nil)
  require('ttyoffer.routes.stopping').take_out()
  wrapped = false
end

--- Whether the Lua spawners are ours now (all of them, serving).
--- @return boolean
function M.lua_wrapped()
  if not stand_ins.serving() then
    return false
  end
  for _, spawner in ipairs(stand_ins.SPAWNERS) do
    if not rawequal(spawner.owner[spawner.name], stand_ins[spawner.key]) then
      return false
    end
  end
  return true
end

--- Before the start (setup() called early): the Lua spawners' stand-ins in
--- place, or out, as the configuration says; they serve from the start.
function M.early()
  if config.current.enabled and config.current.routes.lua then
    stand_ins.put_in()
  else
    stand_ins.take_out()
  end
end

--- Put the routes in line with the configuration: each on when the offer
--- and its option are, else exactly stock. `spawners` is the module whose
--- jobstart, system, fn_system and systemlist the stand-ins serve (the
--- caller's: this module requires nothing above it).
--- @param spawners table
function M.apply(spawners)
  local on = config.current.enabled
  local want_lua = on and config.current.routes.lua
  if want_lua and not wrapped then
    wrap_lua_spawners(spawners)
  elseif not want_lua and wrapped then
    unwrap_lua_spawners()
  end
  require('ttyoffer.routes.bangline').set(on and config.current.routes.bang)
  require('ttyoffer.routes.gitenv').set(on and config.current.routes.git)
end

--- Which routes carry the offer now, for :checkhealth and :TtyOffer status.
--- @return {bang: boolean, lua: boolean, git: boolean, bang_blocked_by: string?, git_problem: string?}
function M.active()
  local bangline = require('ttyoffer.routes.bangline')
  local gitenv = require('ttyoffer.routes.gitenv')
  return {
    bang = bangline.active(),
    lua = M.lua_wrapped(),
    git = gitenv.active(),
    bang_blocked_by = bangline.conflict(),
    git_problem = gitenv.problem,
  }
end

return M
