-- Runs: one interactive program in a pane of its own, and how it ended.
-- This module is the editor's runs: it starts one (run()), finds them
-- (get, list, in_buffer, close) and hands them the host's events. What a
-- run is lives beside it, one job a module:
--   run.lua       the run object (shaped like vim.system()'s)
--   backends.lua  what runs its program: the host, or Neovim's own job
--   kinds/        the kind of run: a pane, a dtach, tmux or remote session
--   runspec.lua   what run() accepts; ending.lua how a run ended
--   pane.lua      its window; runcmd.lua :TtyRun
--
-- The part runs/ (these, shellwords, names, columns, rules): a program in
-- a pane of its own. It requires only its own part and those below it
-- (routes/, offer/, host/, shared/, config); only the entry points are
-- above it, and nothing here requires them (shared/ and config < host/ <
-- offer/ < routes/ < runs/ < the entry points; scripts/require_graph.py).
local M = {}

local backends = require('ttyoffer.runs.backends')
local config = require('ttyoffer.config')
local ending = require('ttyoffer.runs.ending')
local host = require('ttyoffer.host')
local pane_ui = require('ttyoffer.runs.pane')
local rules = require('ttyoffer.runs.rules')
local run_object = require('ttyoffer.runs.run')
local runspec = require('ttyoffer.runs.runspec')
local title_rule = require('ttyoffer.shared.title')

local TITLE_LENGTH = 80
-- The names run:kill() takes, generated from the host's rules.
M.signals = rules.signals
M.describe = ending.describe

--- @type table<integer, ttyoffer.Run>
local runs = {}
local next_id = 1

--- The run's pane: a channel terminal the host feeds (with `fed`), or a
--- window for Neovim's own terminal job.
--- @param run ttyoffer.Run
--- @param placement string
--- @param fed boolean
--- @return ttyoffer.Pane
local function open_pane(run, placement, fed)
  local pane
  pane = pane_ui.open({
    id = run.id,
    title = run.title,
    placement = placement,
    on_input = fed and function(data)
      run._backend.write(run, data)
    end or nil,
    on_close = function()
      -- Not a pane swapped for another (the host did not come): wiping it
      -- from inside its own wipe failed (E937) and closed the run.
      if run.pane == pane then
        run:close()
      end
    end,
    close_question = function()
      return run:close_question()
    end,
  })
  return pane
end

--- A new run of `spec`, in the table (its pane not open yet).
--- @param spec ttyoffer.RunSpec checked by runspec
--- @param opts table what the caller gave (a run may attach again with it)
--- @param prepared table? what its kind prepared
--- @return ttyoffer.Run
local function new_run(spec, opts, prepared)
  local id = next_id
  next_id = next_id + 1
  local run = run_object.new({
    id = id,
    title = title_rule.sanitize(spec.title, TITLE_LENGTH),
    argv = spec.argv,
    started = os.time(),
    closing = false,
    kind = spec.kind,
    where = spec.where,
    prepared = prepared,
    _on_exit = spec.on_exit,
    _forget = function()
      runs[id] = nil
    end,
  })
  backends.use(run, backends.on_host)
  local again = spec.kind.reattach(opts)
  if again then
    run._reattach = function()
      M.run(again)
    end
  end
  runs[id] = run
  return run
end

--- The program started once the host is up; a host that does not come
--- makes it Neovim's own terminal job, in a pane of its own in the same
--- place (the first one has a channel terminal already).
--- @param run ttyoffer.Run
--- @param spec ttyoffer.RunSpec
local function start_when_the_host_is_ready(run, spec)
  if host.get_state() == 'stopped' then
    -- Runs are asked for by name: they start the host even while the offer
    -- is off.
    host.start()
  end
  host.when_ready(config.current.startup_wait, function(ready)
    if run.closing then
      return
    end
    if ready then
      backends.start_on_host(run, spec)
      return
    end
    local channel_pane = run.pane
    run.pane = nil
    pane_ui.close(channel_pane)
    run.pane = open_pane(run, spec.placement, false)
    backends.start_as_job(run, spec)
  end)
end

--- Start a run; see :help ttyoffer.run().
--- @param opts table
--- @return ttyoffer.Run
function M.run(opts)
  local spec = runspec.check(opts)
  -- Before any pane opens: what the kind refuses is an error of run().
  local prepared = spec.kind.prepare(spec)
  local run = new_run(spec, opts, prepared)
  local state = host.get_state()
  local use_host = state == 'ready' or state == 'starting' or state == 'stopped'
  run.pane = open_pane(run, spec.placement, use_host)
  if prepared and prepared.ended then
    -- Re-attached to a session whose program had ended: that ending.
    run:_ended(prepared.ended)
  elseif use_host then
    start_when_the_host_is_ready(run, spec)
  else
    backends.start_as_job(run, spec)
  end
  return run
end

--- @param id integer
--- @return ttyoffer.Run?
function M.get(id)
  return runs[id]
end

--- Every run whose pane is still there, oldest first.
--- @return ttyoffer.Run[]
function M.list()
  local list = vim.tbl_values(runs)
  table.sort(list, function(a, b)
    return a.id < b.id
  end)
  return list
end

--- Close run `id`; false when there is none.
--- @param id integer
--- @return boolean
function M.close(id)
  local run = runs[id]
  if not run then
    return false
  end
  run:close()
  return true
end

--- The run whose pane is in buffer `buf`.
--- @param buf integer
--- @return ttyoffer.Run?
function M.in_buffer(buf)
  local id = vim.b[buf].ttyoffer_run
  return id and runs[id] or nil
end

-- Host events ----------------------------------------------------------------

--- @param session string the session's name as the host made it, or ''
function M.started(run_id, pid, session)
  local run = runs[run_id]
  if run then
    -- 0: a persistent run that is the ending of a session gone before it.
    run.pid = pid ~= 0 and pid or nil
    run.session = session ~= '' and session or nil
    if pane_ui.valid(run.pane) then
      pane_ui.set_state(run.pane, run.id, run.title, 'running', nil)
    end
  end
end

function M.output(run_id, data)
  local run = runs[run_id]
  if run and pane_ui.valid(run.pane) then
    pane_ui.send(run.pane, data)
  end
end

function M.exited(run_id, result)
  local run = runs[run_id]
  if run then
    -- Keys typed with echo off just before: the pane's, not the result's.
    run._typing_secret = result.typing_secret == true
    result.typing_secret = nil
    run:_ended(result)
  end
end

--- New window sizes: the terminals of the panes shown follow.
function M.resized()
  for _, run in pairs(runs) do
    if not run.result and pane_ui.valid(run.pane) then
      local rows, cols = pane_ui.size(run.pane)
      if rows and (rows ~= run._rows or cols ~= run._cols) then
        run._rows, run._cols = rows, cols
        run._backend.resize(run, rows, cols)
      end
    end
  end
end

--- The host went away: its runs went with it (it hung them up).
function M.host_lost()
  for _, run in pairs(runs) do
    if not run.result then
      run._backend.lost(run)
    end
  end
end

return M
