-- What runs a run's program, an object of one interface (RunBackend), and
-- the start on each:
--   host: the Python host is the program's parent (ttyoffer_nvim/runs/runs.py):
--         it tells the program's own exit from a signal, from "not found" and
--         from the user closing the pane, and hangs up what is left.
--   job:  Neovim's own terminal job, when there is no host: the program runs
--         all the same, but a signal cannot be told from an exit code above
--         128 (the user is told once).
-- What differs by the kind of run (the program's environment, the start's
-- options, the signal's way) is asked of the run's kind.
local M = {}

local api = vim.api
local ending = require('ttyoffer.runs.ending')
local host = require('ttyoffer.host')
local notify = require('ttyoffer.shared.notify')
local originals = require('ttyoffer.shared.originals')
local pane_ui = require('ttyoffer.runs.pane')
local rules = require('ttyoffer.runs.rules')

--- What a run asks of what runs its program.
--- @class ttyoffer.RunBackend
--- @field name 'host'|'job'
--- @field says_end boolean whether the pane is told the end (a job's
---   terminal says it itself)
--- @field signal fun(run: ttyoffer.Run, number: integer)
--- @field write fun(run: ttyoffer.Run, data: string)
--- @field close fun(run: ttyoffer.Run) the pane is closing: hang up what
---   still runs, let go of what is kept for the run
--- @field resize fun(run: ttyoffer.Run, rows: integer, cols: integer)
--- @field lost fun(run: ttyoffer.Run) the host went away

--- The host is the program's parent (or its dtach, tmux or ssh client's).
--- @type ttyoffer.RunBackend
M.on_host = {
  name = 'host',
  says_end = true,
  signal = function(run, number)
    run.kind.signal(run, number)
  end,
  write = function(run, data)
    host.notify('run_input', run.id, data)
  end,
  close = function(run)
    host.notify('run_close', run.id)
  end,
  resize = function(run, rows, cols)
    host.notify('run_resize', run.id, rows, cols)
  end,
  lost = function(run)
    run:_ended(ending.made(129, 'signal', 'the host exited', 'HUP'))
  end,
}

--- Neovim's own terminal job in the pane's window, when there is no host.
--- @type ttyoffer.RunBackend
M.as_job = {
  name = 'job',
  says_end = false,
  signal = function(run, number)
    if run.pid then
      pcall(vim.uv.kill, run.pid, number)
    end
  end,
  write = function(run, data)
    if run._job then
      pcall(api.nvim_chan_send, run._job, data)
    end
  end,
  close = function(run)
    if run.result or not run._job then
      return
    end
    if run.pid then
      -- A hang-up and, 200 ms later, a kill.
      pcall(vim.uv.kill, -run.pid, 'sighup')
      local pid, job = run.pid, run._job
      vim.defer_fn(function()
        if vim.fn.jobwait({ job }, 0)[1] == -1 then
          pcall(vim.uv.kill, -pid, 'sigkill')
        end
      end, 200)
    end
    run:_ended(ending.made(129, 'closed', '', 'HUP'))
  end,
  resize = function() end, -- Neovim's terminal follows its window itself
  lost = function() end, -- not the host's
}

--- @param run ttyoffer.Run
--- @param backend ttyoffer.RunBackend
function M.use(run, backend)
  run._backend, run.backend = backend, backend.name
end

--- What the program gets besides its own `env`: the editor's environment,
--- with NVIM naming this editor, as in a :terminal, as its kind has it.
--- @param run ttyoffer.Run
local function base_env(run)
  local env = vim.fn.environ()
  if vim.v.servername ~= '' then
    env.NVIM = vim.v.servername
  end
  return run.kind.environment(env)
end

--- Start the program on the host (which tells its start, output and end).
--- @param run ttyoffer.Run
--- @param spec ttyoffer.RunSpec
function M.start_on_host(run, spec)
  local rows, cols = pane_ui.size(run.pane)
  host.notify(
    'run_start',
    run.id,
    vim.tbl_extend('error', {
      argv = spec.argv,
      cwd = spec.cwd,
      base_env = base_env(run),
      env = vim.tbl_isempty(spec.env) and vim.empty_dict() or spec.env,
      rows = rows or 24,
      cols = cols or 80,
    }, run.kind.start_options(run, spec))
  )
end

--- No host: Neovim's own terminal job in the pane's window (a kind that
--- cannot run so ends at once, saying why).
--- @param run ttyoffer.Run
--- @param spec ttyoffer.RunSpec
function M.start_as_job(run, spec)
  M.use(run, M.as_job)
  local refusal = run.kind.without_host(spec)
  if refusal then
    run:_ended(ending.made(127, 'cannot_start', refusal))
    return
  end
  if #spec.argv == 0 then
    -- 'shell' split as Neovim splits it for :terminal.
    spec.argv = require('ttyoffer.shared.shell_option').words(vim.o.shell)
  end
  notify.once(
    'runs-without-host',
    'runs go without the host ('
      .. (host.get_error() or host.get_state())
      .. '): a signal is told as its exit code only'
  )
  local env = vim.tbl_extend('force', { TERM = 'xterm-256color' }, spec.env)
  local ok, job = pcall(api.nvim_win_call, run.pane.win, function()
    return originals.jobstart(spec.argv, {
      term = true,
      cwd = spec.cwd,
      env = env,
      on_exit = function(_, code)
        run:_ended(ending.made(code, 'exited', ''))
      end,
    })
  end)
  if not ok or job <= 0 then
    local message = ok and rules.words.not_executable or tostring(job):gsub('^.-: ', '')
    run:_ended(ending.made(127, 'cannot_start', message))
    return
  end
  run._job = job
  run.pid = vim.fn.jobpid(job)
end

return M
