-- Finding the Python the host runs with, without blocking the editor: the
-- first job of host/ (the others: process.lua, stock.lua, rpc.lua).
local M = {}

local originals = require('ttyoffer.shared.originals')

-- The host needs both: pynvim to talk to the editor, pyte for the screen.
local REQUIRED = 'import neovim, pyte'
local CANDIDATES = { 'python3', 'python3.13', 'python3.12', 'python3.11', 'python3.10', 'python3.9', 'python' }
local NONE_FOUND = 'no Python 3 with pynvim and pyte: run :TtyOffer install (or set g:python3_host_prog)'

--- Whether `python` can run the host: imports pynvim and pyte. Isolated
--- (-I) and run from /, so that no file of the editor's current folder is
--- ever imported by it.
--- @param python string
--- @param callback fun(ok: boolean)
local function usable(python, callback)
  originals.system(
    { python, '-I', '-c', REQUIRED },
    { cwd = '/' },
    vim.schedule_wrap(function(out)
      callback(out.code == 0)
    end)
  )
end

--- The Python the host runs with, without blocking: g:python3_host_prog when
--- set, else the plugin's own virtualenv (:TtyOffer install), else the first
--- Python 3 on PATH that has pynvim and pyte. Each is checked (the check runs
--- it, and the editor must not wait for that after startup).
--- @param callback fun(python: string?, err: string?)
function M.find(callback)
  local prog = vim.g.python3_host_prog
  if prog and prog ~= '' then
    local path = vim.fn.exepath(vim.fn.expand(prog))
    if path == '' then
      return callback(nil, 'g:python3_host_prog (' .. prog .. ') is not executable')
    end
    return usable(path, function(ok)
      if ok then
        return callback(path)
      end
      callback(
        nil,
        'g:python3_host_prog (' .. path .. ') cannot import pynvim and pyte: install them there, or unset it'
      )
    end)
  end
  local own = require('ttyoffer.host.install').python()
  if own then
    return usable(own, function(ok)
      if ok then
        return callback(own)
      end
      callback(nil, "the plugin's Python (" .. own .. ') cannot import pynvim and pyte: run :TtyOffer install')
    end)
  end
  local function try(i)
    local exe = CANDIDATES[i]
    if not exe then
      return callback(nil, NONE_FOUND)
    end
    if vim.fn.executable(exe) ~= 1 then
      return try(i + 1)
    end
    usable(exe, function(ok)
      if ok then
        return callback(vim.fn.exepath(exe))
      end
      try(i + 1)
    end)
  end
  try(1)
end

return M
