-- Cheap at startup: commands, highlight links and autocmds; modules load lazily.
if vim.g.loaded_ttyoffer then
  return
end
vim.g.loaded_ttyoffer = 1

-- An editor the plugin cannot run on (too old, not Linux) gets the commands
-- only, each saying so once; nothing else runs, nothing is said at startup.
if require('ttyoffer.shared.support').problem() then
  for _, name in ipairs({ 'Bang', 'TtyRun' }) do
    vim.cmd('command! -nargs=* ' .. name .. " lua require('ttyoffer.shared.support').tell_inactive()")
  end
  vim.cmd("command! -nargs=* TtyOffer lua require('ttyoffer.shared.support').command(<q-args>)")
  return
end

local api = vim.api

-- The Lua spawners' stand-ins go in now, before a plugin loaded after this
-- one keeps its own reference to a spawner; stock until the plugin starts.
-- (A setup() that ran already has put them in, or left them out.)
if not package.loaded['ttyoffer.config'] then
  require('ttyoffer.routes.stand_ins').put_in()
end

api.nvim_create_user_command('Bang', function(opts)
  require('ttyoffer.routes.bang').run(opts.args)
end, { nargs = '*', complete = 'shellcmd', desc = 'Run {cmd} like :! without blocking, with a prompt window' })

api.nvim_create_user_command('TtyOffer', function(opts)
  require('ttyoffer.command').run(opts)
end, {
  nargs = '*',
  complete = function(arglead, cmdline)
    return require('ttyoffer.command').complete(arglead, cmdline)
  end,
  desc = 'ttyoffer: on, off, toggle, status, dismiss, install',
})

api.nvim_create_user_command('TtyRun', function(opts)
  require('ttyoffer.runs.runcmd').run(opts)
end, {
  nargs = '*',
  bang = true,
  complete = function(arglead, cmdline)
    return require('ttyoffer.runs.runcmd').complete(arglead, cmdline)
  end,
  desc = 'ttyoffer: run {cmd} in a pane of its own; list, close, kill; ! for a persistent session',
})

-- Highlight groups are defined when the prompt window's module loads (they
-- are linked with default = true, so a colorscheme's own always win).
local group = api.nvim_create_augroup('ttyoffer', { clear = true })
api.nvim_create_autocmd('ColorScheme', {
  group = group,
  callback = function()
    require('ttyoffer.shared.highlights').define()
  end,
})
api.nvim_create_autocmd({ 'WinResized', 'VimResized' }, {
  group = group,
  callback = function()
    if package.loaded['ttyoffer.runs'] then
      require('ttyoffer.runs').resized()
    end
  end,
})
api.nvim_create_autocmd('VimResized', {
  group = group,
  callback = function()
    if package.loaded['ttyoffer.offer.prompts'] then
      require('ttyoffer.offer.prompts').resized()
    end
  end,
})

-- The host starts after startup, in the background, at the first spawn or
-- after `host_start_delay`: startup never waits for Python, an editor that
-- quits at once starts none, and commands spawned before it is up simply
-- run without an offer.
local function start_host()
  vim.schedule(function()
    -- Loading the modules here, after startup, spares the first command.
    require('ttyoffer')._start_soon()
  end)
end
if vim.v.vim_did_enter == 1 then
  start_host()
else
  api.nvim_create_autocmd('VimEnter', { group = group, once = true, callback = start_host })
end
