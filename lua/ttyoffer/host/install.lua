-- The host's own Python: a virtualenv in the plugin's data folder with the
-- pynvim and pyte the plugin pins (pyproject.toml), so that installing the
-- plugin never means touching the system Python or g:python3_host_prog.
-- `:TtyOffer install` and the plugin managers' build step run it; the
-- host then starts at once, without a restart.
local M = {}

local notify = require('ttyoffer.shared.notify')
local originals = require('ttyoffer.shared.originals')

--- True while an install runs: the host's "no Python" is then expected,
--- and the install's own messages are the ones to show.
M.running = false

--- The plugin's checkout: four folders above this file.
M.root = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h:h')

--- @return string
function M.venv()
  return vim.fn.stdpath('data') .. '/ttyoffer/venv'
end

--- The venv's Python, when it has been made.
--- @return string?
function M.python()
  local python = M.venv() .. '/bin/python'
  return vim.fn.executable(python) == 1 and python or nil
end

--- The pinned requirements of the host, read from pyproject.toml (one place
--- says which versions).
--- @return string[]
function M.requirements()
  local ok, lines = pcall(vim.fn.readfile, M.root .. '/pyproject.toml')
  local text = ok and table.concat(lines, '\n') or ''
  local block = text:match('\ndependencies = %[(.-)%]') or ''
  local found = {}
  for requirement in block:gmatch('"([^"]+)"') do
    table.insert(found, requirement)
  end
  return #found > 0 and found or { 'pynvim', 'pyte' }
end

--- What to tell the user when a step failed: the tool's own last words, and
--- the fix where it is known.
local function failure(step, result)
  local said = vim.trim((result.stderr or '') .. '\n' .. (result.stdout or ''))
  local last = said:match('([^\n]*)$') or ''
  if said:find('ensurepip') or said:find('No module named venv') then
    return step .. ' failed: Python has no venv module; install it (Debian: apt-get install python3-venv)'
  end
  return string.format('%s failed (exit %d): %s', step, result.code, last)
end

--- Run `argv`, then `next` with its result: at once with `sync`, else when it
--- ends, on the editor's loop.
local function step(argv, sync, next)
  if sync then
    return next(originals.system(argv, { text = true, cwd = '/' }):wait())
  end
  -- From /, so that nothing of the editor's current folder is imported.
  originals.system(argv, { text = true, cwd = '/' }, vim.schedule_wrap(next))
end

--- Make (or update) the venv and install the host's requirements into it.
--- @param opts {sync: boolean?, on_done: fun(ok: boolean, message: string)?}?
function M.run(opts)
  -- A build step's output is read whole; in the editor the install runs in
  -- the background, and a message that raised a hit-enter prompt would
  -- hold its own completion up (nothing else runs under that prompt).
  local say = opts and opts.sync and notify.answer or notify.notice
  opts = opts or {}
  M.running = true
  local function done(ok, message)
    M.running = false
    say(message, ok and vim.log.levels.INFO or vim.log.levels.ERROR)
    if opts.on_done then
      opts.on_done(ok, message)
    end
  end
  local base = vim.fn.exepath('python3')
  if base == '' then
    return done(false, 'no python3 found: install Python 3 (Debian: apt-get install python3 python3-venv)')
  end
  local venv, requirements = M.venv(), M.requirements()
  say(string.format('installing %s into %s …', table.concat(requirements, ' '), venv), vim.log.levels.INFO)
  local python = venv .. '/bin/python'
  step({ base, '-I', '-m', 'venv', venv }, opts.sync, function(made)
    if made.code ~= 0 then
      return done(false, failure('making the virtualenv', made))
    end
    local pip = { python, '-I', '-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-cache-dir' }
    step(vim.list_extend(pip, requirements), opts.sync, function(installed)
      if installed.code ~= 0 then
        return done(false, failure('pip install', installed))
      end
      step({ python, '-I', '-c', 'import pynvim, pyte' }, opts.sync, function(checked)
        if checked.code ~= 0 then
          return done(false, failure('importing pynvim and pyte', checked))
        end
        -- :help ttyoffer, for plain packages too.
        pcall(vim.cmd.helptags, vim.fn.fnameescape(M.root .. '/doc'))
        done(true, 'installed; the host uses ' .. python)
      end)
    end)
  end)
end

return M
