-- :checkhealth ttyoffer
local M = {}

local health = vim.health

local function check_python(host)
  local python, err = host.python()
  if not python then
    health.error('No Python 3 for the remote plugin host: ' .. tostring(err), {
      'Install pynvim into a Python 3 and point Neovim at it:',
      'python3 -m pip install --user pynvim pyte',
      'let g:python3_host_prog = "/path/to/python3"',
    })
    return nil
  end
  health.ok('Python host program: ' .. python)
  for _, module in ipairs({ 'pynvim', 'pyte' }) do
    local out = vim.system({ python, '-c', 'import ' .. module }, { text = true }):wait()
    if out.code == 0 then
      health.ok(module .. ' is importable')
    else
      health.error(module .. ' cannot be imported by ' .. python, {
        string.format('%s -m pip install %s', python, module),
      })
    end
  end
  return python
end

function M.check()
  local host = require('ttyoffer.host')
  local ttyoffer = require('ttyoffer')

  health.start('ttyoffer: Neovim')
  if vim.fn.has('nvim-0.10') == 1 then
    health.ok('Neovim ' .. tostring(vim.version()))
  else
    health.error('Neovim 0.10 or newer is required', { 'Upgrade Neovim' })
  end

  health.start('ttyoffer: Python host')
  local python = check_python(host)
  local path = host.registered_path()
  if path then
    health.ok('Remote plugin registered: ' .. path)
  else
    health.error('The remote plugin is not registered in the rplugin manifest', {
      'Run :UpdateRemotePlugins, then restart Neovim',
      'Manifest: ' .. tostring(vim.g.loaded_remote_plugins or vim.env.NVIM_RPLUGIN_MANIFEST),
    })
  end
  if host.state == 'ready' then
    health.ok(string.format('Host running (pid %d)', host.pid or 0))
  elseif host.state == 'starting' then
    health.warn('Host is still starting')
  else
    health.warn('Host is not running: ' .. tostring(host.error or host.state), {
      'Commands run without an offer until it is. :TtyOffer on starts it',
    })
  end
  if not ttyoffer.enabled() then
    health.warn('The offer is off (:TtyOffer on)')
  end

  health.start('ttyoffer: pseudo-terminals')
  local ok, out = pcall(function()
    return vim
      .system({ python or 'python3', '-c', 'import os; m, s = os.openpty(); print(os.ttyname(s))' }, { text = true })
      :wait()
  end)
  if ok and out.code == 0 then
    health.ok('A pty can be opened (' .. vim.trim(out.stdout) .. ')')
  else
    health.error('Cannot open a pty', {
      'Mount devpts on /dev/pts and make /dev/ptmx readable and writable',
    })
  end
  if vim.fn.executable('/bin/sh') ~= 1 then
    health.error('/bin/sh is missing: list commands are started through it')
  end
end

return M
