-- The kinds of run, one module each, behind one interface (INTERFACE): a
-- plain pane (pane.lua), a persistent dtach session (dtach.lua), a tmux
-- session (tmux.lua) and a persistent session on another machine
-- (remote.lua). A run holds its kind; the run, its spec and :TtyRun ask it
-- what differs instead of branching on the kind, and each kind's requests
-- to the host are made in its own module, and nowhere else
-- (tests/unit/test_run_kinds_lua.py).
local M = {}

local dtach = require('ttyoffer.runs.kinds.dtach')
local pane = require('ttyoffer.runs.kinds.pane')
local remote = require('ttyoffer.runs.kinds.remote')
local tmux = require('ttyoffer.runs.kinds.tmux')

--- What every kind answers, by name, and the Lua type of each.
--- @class ttyoffer.RunKind
--- @field name string
--- @field keys string[] the run() options it takes, besides everyone's
--- @field check fun(opts: table): string? why its options, when given, are wrong
--- @field claims fun(opts: table): boolean whether the options ask for it
--- @field names fun(opts: table): string?, string? the session's name, and where it is
--- @field attaches_by_name boolean whether a run of it may come without argv
--- @field shell_there boolean whether a :TtyRun line runs by the far side's sh
--- @field label fun(where: string?, name: string): string how a session of it is named
--- @field prepare fun(spec: ttyoffer.RunSpec): table? before any pane opens (may
---   raise what was refused); `ended`: re-attached to a program that had ended
--- @field environment fun(env: table<string, string>): table<string, string> what its program gets
--- @field start_options fun(run: ttyoffer.Run, spec: ttyoffer.RunSpec): table its part of run_start
--- @field without_host fun(spec: ttyoffer.RunSpec): string? why it cannot run without the host
--- @field signal fun(run: ttyoffer.Run, number: integer) run:kill()
--- @field close_question fun(run: ttyoffer.Run): string what closing a running pane would do
--- @field reattach fun(opts: table): table? the options that attach again after a dropped connection
--- @field sessions fun(where: string?): table[], string? its sessions, read now (none: {})
--- @field list_lines fun(where: string?, late: fun(lines: string[])): string[] its part of :TtyRun list
--- @field kill fun(where: string?, name: string, tell: fun(message: string, level: integer?)) :TtyRun's kill
--- @field places fun(): string[] where its sessions may be (completion)
M.INTERFACE = {
  name = 'string',
  keys = 'table',
  check = 'function',
  claims = 'function',
  names = 'function',
  attaches_by_name = 'boolean',
  shell_there = 'boolean',
  label = 'function',
  prepare = 'function',
  environment = 'function',
  start_options = 'function',
  without_host = 'function',
  signal = 'function',
  close_question = 'function',
  reattach = 'function',
  sessions = 'function',
  list_lines = 'function',
  kill = 'function',
  places = 'function',
}

-- Every kind, the plainest first (its options are listed in this order).
M.all = { pane, dtach, tmux, remote }

--- The kinds, the most particular first: the first that claims a run's
--- options is its kind, and :TtyRun list shows their sessions in this order.
--- @return ttyoffer.RunKind[]
local function most_particular_first()
  return vim.iter(M.all):rev():totable()
end

--- The run() options that choose a kind.
--- @return string[]
function M.keys()
  local keys = {}
  for _, kind in ipairs(M.all) do
    vim.list_extend(keys, kind.keys)
  end
  return keys
end

--- @class ttyoffer.RunKindChoice
--- @field kind ttyoffer.RunKind
--- @field session string? the session's name, as given
--- @field where string? where it is (another machine's destination)
--- @field label string? how the session is named to the user (kind.label)

--- The kind `opts` ask for, each kind's options checked; nil and why not.
--- @param opts table
--- @return ttyoffer.RunKindChoice?, string? problem
function M.choose(opts)
  for _, kind in ipairs(M.all) do
    local problem = kind.check(opts)
    if problem then
      return nil, problem
    end
  end
  for _, kind in ipairs(most_particular_first()) do
    if kind.claims(opts) then
      local session, where = kind.names(opts)
      return { kind = kind, session = session, where = where, label = session and kind.label(where, session) }
    end
  end
end

--- `dest:name` split at its last colon (a session name has none): dest,
--- name; nil for a name alone.
--- @param word string
--- @return string? dest, string name
function M.split_address(word)
  local dest, name = word:match('^(.*):([^:]*)$')
  if dest and dest ~= '' then
    return dest, name
  end
  return nil, word
end

--- The kind of a persistent session named as :TtyRun! and :TtyRun kill take
--- it (`name`, or `dest:name` on another machine), where it is, its name.
--- @param word string
--- @return ttyoffer.RunKind, string? where, string name
function M.of_address(word)
  local dest, name = M.split_address(word)
  return dest and remote or dtach, dest, name
end

--- The places sessions may be (`dest` for `:TtyRun list` and `check`) that
--- start with `arglead`.
--- @param arglead string
--- @param suffix string? after each ('' unless given)
--- @return string[]
function M.complete_place(arglead, suffix)
  local found = {}
  for _, kind in ipairs(M.all) do
    for _, place in ipairs(kind.places()) do
      if vim.startswith(place .. (suffix or ''), arglead) then
        table.insert(found, place .. (suffix or ''))
      end
    end
  end
  return found
end

--- The persistent sessions named as `arglead` begins (after :TtyRun! and
--- :TtyRun kill): those of its place, read now (or what is known when that
--- place does not answer at once), then, for a name without a place, the
--- places themselves (`dest:`).
--- @param arglead string
--- @return string[]
function M.complete_session(arglead)
  local kind, where = M.of_address(arglead)
  local names = {}
  for _, s in ipairs((kind.sessions(where))) do
    local label = kind.label(where, s.name)
    if vim.startswith(label, arglead) then
      table.insert(names, label)
    end
  end
  if not arglead:find(':', 1, true) then
    vim.list_extend(names, M.complete_place(arglead, ':'))
  end
  return names
end

--- The sessions of every kind, as :TtyRun list shows them (`where`: the
--- sessions there only); `late` shows lines that come later.
--- @param where string?
--- @param late fun(lines: string[])
--- @return string[]
function M.list_lines(where, late)
  local lines = {}
  for _, kind in ipairs(most_particular_first()) do
    vim.list_extend(lines, kind.list_lines(where, late))
  end
  return lines
end

return M
