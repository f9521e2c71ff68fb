-- The routes by which the editor's commands reach a shell, and which of them
-- carry the offer: `:!` as the user types it, and the spawners Lua plugins
-- call (vim.fn.jobstart, vim.system, vim.fn.system, vim.fn.systemlist).
--
-- A wrapper is put in place of the editor's own function, and taken out by
-- putting that very function back. A caller that kept its own reference to
-- a spawner before the plugin started keeps the original; a plugin that
-- wrapped ours in turn keeps its wrapper (and ours under it) until it
-- removes it: taking ours out would take theirs with it.
local M = {}

local config = require('ttyoffer.config')
local originals = require('ttyoffer.originals')

--- Where each Lua spawner lives, and the function of ttyoffer that stands in
--- for it.
local LUA_SPAWNERS = {
  { owner = vim.fn, name = 'jobstart', original = 'jobstart', ours = 'jobstart' },
  { owner = vim.fn, name = 'system', original = 'fn_system', ours = 'fn_system' },
  { owner = vim.fn, name = 'systemlist', original = 'systemlist', ours = 'systemlist' },
  { owner = vim, name = 'system', original = 'system', ours = 'system' },
}

local wrapped = false

--- Put each spawner's `to` function in place where its `from` one still is
--- (one put there by another plugin since is left alone).
--- @param from table<string, function> by spawner.original or spawner.ours
--- @param from_key 'original'|'ours'
--- @param to table<string, function>
--- @param to_key 'original'|'ours'
local function swap(from, from_key, to, to_key)
  for _, spawner in ipairs(LUA_SPAWNERS) do
    if rawequal(spawner.owner[spawner.name], from[spawner[from_key]]) then
      spawner.owner[spawner.name] = to[spawner[to_key]]
    end
  end
end

local function wrap_lua_spawners()
  swap(originals, 'original', require('ttyoffer'), 'ours')
  wrapped = true
end

local function unwrap_lua_spawners()
  swap(require('ttyoffer'), 'ours', originals, 'original')
  wrapped = false
end

--- Whether the Lua spawners are ours now (all of them).
--- @return boolean
function M.lua_wrapped()
  local ttyoffer = require('ttyoffer')
  for _, spawner in ipairs(LUA_SPAWNERS) do
    if not rawequal(spawner.owner[spawner.name], ttyoffer[spawner.ours]) then
      return false
    end
  end
  return true
end

--- Put the routes in line with the configuration: each on when the offer
--- and its option are, else exactly stock.
function M.apply()
  local on = config.current.enabled
  local want_lua = on and config.current.routes.lua
  if want_lua and not wrapped then
    wrap_lua_spawners()
  elseif not want_lua and wrapped then
    unwrap_lua_spawners()
  end
  require('ttyoffer.bangline').set(on and config.current.routes.bang)
  require('ttyoffer.gitenv').set(on and config.current.routes.git)
end

--- Which routes carry the offer now, for :checkhealth and :TtyOffer status.
--- @return {bang: boolean, lua: boolean, git: boolean, bang_blocked_by: string?, git_problem: string?}
function M.active()
  local bangline = require('ttyoffer.bangline')
  local gitenv = require('ttyoffer.gitenv')
  return {
    bang = bangline.active(),
    lua = M.lua_wrapped(),
    git = gitenv.active(),
    bang_blocked_by = bangline.conflict(),
    git_problem = gitenv.problem,
  }
end

return M
