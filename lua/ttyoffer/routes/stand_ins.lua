-- The functions that stand in for the editor's Lua spawners (vim.fn.jobstart,
-- vim.fn.system, vim.fn.systemlist, vim.system, vim.uv.spawn). They go in as
-- soon as the plugin loads (plugin/ttyoffer.lua) or is set up, long before
-- the host starts, so that a plugin loaded after ttyoffer that keeps its
-- own reference to a spawner (gitsigns' system.lua, overseer) keeps one of
-- these. Each calls ttyoffer's wrapper while the Lua route serves, and the
-- editor's own function otherwise (before the start, after :TtyOffer off),
-- with the caller's very arguments.
--
-- Loaded at startup: nothing here but the originals and a table.
local M = {}

local originals = require('ttyoffer.shared.originals')

--- The module whose wrappers serve (ttyoffer's), or nil: stock.
--- @type table?
local serving = nil

function M.jobstart(...)
  local to = serving
  if to then
    return to.jobstart(...)
  end
  return originals.jobstart(...)
end

function M.fn_system(...)
  local to = serving
  if to then
    return to.fn_system(...)
  end
  return originals.fn_system(...)
end

function M.systemlist(...)
  local to = serving
  if to then
    return to.systemlist(...)
  end
  return originals.systemlist(...)
end

function M.system(...)
  local to = serving
  if to then
    return to.system(...)
  end
  return originals.system(...)
end

--- Whether the caller of the function that calls this is Neovim's own
--- vim.system(), whose uv.spawn() must stay stock: vim.system() is
--- wrapped on its own (a command would be wrapped twice), and one kept
--- from before the plugin loaded stays stock, as :checkhealth says.
--- @return boolean
local function from_vim_system()
  local caller = debug.getinfo(3, 'S')
  return caller ~= nil and caller.source:find('vim/_system%.lua$') ~= nil
end

function M.uv_spawn(...)
  local to = serving
  if to and not from_vim_system() then
    return to.uv_spawn(...)
  end
  return originals.uv_spawn(...)
end

--- Where each spawner lives, under the name the stand-in and the original
--- have here and in originals.
M.SPAWNERS = {
  { owner = vim.fn, name = 'jobstart', key = 'jobstart', shown = 'vim.fn.jobstart' },
  { owner = vim.fn, name = 'system', key = 'fn_system', shown = 'vim.fn.system' },
  { owner = vim.fn, name = 'systemlist', key = 'systemlist', shown = 'vim.fn.systemlist' },
  { owner = vim, name = 'system', key = 'system', shown = 'vim.system' },
  { owner = vim.uv, name = 'spawn', key = 'uv_spawn', shown = 'vim.uv.spawn' },
}

--- Put `to`'s function of each spawner where `from`'s still is (one put
--- there by another plugin since is left alone).
local function swap(from, to)
  for _, spawner in ipairs(M.SPAWNERS) do
    if rawequal(spawner.owner[spawner.name], from[spawner.key]) then
      spawner.owner[spawner.name] = to[spawner.key]
    end
  end
end

--- The stand-ins in place of the editor's own spawners.
function M.put_in()
  swap(originals, M)
end

--- The editor's very own spawners back, where the stand-ins still are.
function M.take_out()
  swap(M, originals)
end

--- From now on the stand-ins call `module`'s wrappers (nil: the originals).
--- @param module table?
function M.serve(module)
  serving = module
end

--- @return boolean
function M.serving()
  return serving ~= nil
end

return M
