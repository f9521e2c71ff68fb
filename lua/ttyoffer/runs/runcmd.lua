-- :TtyRun: run a command in a pane (`:TtyRun {cmd}`), list the runs, close one.
local M = {}

local columns = require('ttyoffer.runs.columns')
local kinds = require('ttyoffer.runs.kinds')
local notify = require('ttyoffer.shared.notify')

local ERROR = vim.log.levels.ERROR

local function runs()
  return require('ttyoffer.runs')
end

--- The lines of `:TtyRun list`: this editor's runs, then every kind's
--- sessions (read now, from any editor).
--- @return string[]
function M.list_lines()
  local list = runs().list()
  local now = os.time()
  local lines = {}
  if #list == 0 then
    table.insert(lines, 'no runs')
  else
    table.insert(lines, ('%-4s %-32s %-20s %s'):format('id', 'title', 'state', 'age'))
    for _, run in ipairs(list) do
      local line = ('%-4d %-32s %-20s %s'):format(
        run.id,
        columns.cut(run.title, 32),
        run:describe(),
        columns.age(now - run.started)
      )
      table.insert(lines, line)
    end
  end
  return vim.list_extend(lines, kinds.list_lines(nil, function() end))
end

-- Words a shell acts on itself: a line starting with one needs the shell.
local SHELL_WORDS = {}
for word in
  ([[
  ! . : alias bg break case cd command continue do done elif else eval exec exit export false fg
  fi for getopts hash if jobs local read readonly return set shift source test then times trap true
  type ulimit umask unalias unset until wait while
]]):gmatch('%S+')
do
  SHELL_WORDS[word] = true
end

--- The argv for a command line: its words when it needs no shell, else the
--- user's 'shell' running it.
--- @param line string
--- @param far boolean? for the far side's sh (the local 'shell' may not be
---   there): a run's kind says (shell_there)
--- @return string[]
function M.argv(line, far)
  local words, why = require('ttyoffer.runs.shellwords').split(line)
  if words and not SHELL_WORDS[words[1]] then
    return words
  end
  if words then
    why = 'shell'
  end
  if why ~= 'shell' then
    error(('(ttyoffer) :TtyRun: %s in %s'):format(why, vim.inspect(line)), 0)
  end
  if far then
    return { 'sh', '-c', line }
  end
  -- As jobstart() would run the line (quotes in 'shell' honoured).
  local shell_option = require('ttyoffer.shared.shell_option')
  return shell_option.argv(line, shell_option.current())
end

M.subcommands = {
  list = function(args)
    if args[1] then
      -- The sessions there: now, and again when a late answer comes.
      local function show(lines)
        notify.answer(table.concat(lines, '\n'))
      end
      show(kinds.list_lines(args[1], show))
      return
    end
    notify.answer(table.concat(M.list_lines(), '\n'))
  end,
  check = function(args)
    if not args[1] then
      error('(ttyoffer) :TtyRun check needs an ssh destination (see :help ttyoffer-remote)', 0)
    end
    local argv, err = require('ttyoffer.runs.kinds.remote').check_argv(args[1])
    if not argv then
      error('(ttyoffer) :TtyRun check: ' .. require('ttyoffer.shared.title').sanitize(tostring(err), 300), 0)
    end
    runs().run({ argv = argv, title = 'check ' .. args[1] })
  end,
  tmux = function(args, line)
    if not args[1] then
      error('(ttyoffer) :TtyRun tmux needs a session name (see :help :TtyRun-tmux)', 0)
    end
    local rest = line:gsub('^%s*tmux%s+%S+%s*', '', 1)
    runs().run({ tmux = args[1], argv = rest ~= '' and M.argv(rest) or nil })
  end,
  ['tmux-kill'] = function(args)
    if not args[1] then
      error('(ttyoffer) :TtyRun tmux-kill needs a session name, ttyoffer-… (see :TtyRun list)', 0)
    end
    require('ttyoffer.runs.kinds.tmux').kill(nil, args[1], notify.answer)
  end,
  kill = function(args)
    if not args[1] then
      error('(ttyoffer) :TtyRun kill needs a session name (see :TtyRun list)', 0)
    end
    local kind, where, name = kinds.of_address(args[1])
    kind.kill(where, name, notify.answer)
  end,
  close = function(args)
    local id
    if args[1] then
      id = tonumber(args[1])
      if not id then
        error(('(ttyoffer) :TtyRun close takes a run id, got %q (see :TtyRun list)'):format(args[1]), 0)
      end
    else
      local run = runs().in_buffer(vim.api.nvim_get_current_buf())
      if not run then
        error("(ttyoffer) :TtyRun close: this is not a run's pane; give an id (see :TtyRun list)", 0)
      end
      id = run.id
    end
    if not runs().close(id) then
      error(('(ttyoffer) no run with id %d (see :TtyRun list)'):format(id), 0)
    end
  end,
}

--- The first word of a command's arguments as Neovim splits them into
--- fargs (a backslash before a space or tab makes it part of the word), and
--- the rest of the line after it: the name and the command are split one way.
--- @param args string
--- @return string? word, string rest
function M.first_word(args)
  local _, blanks = args:find('^[ \t]*')
  local i = blanks + 1
  local word = {}
  while i <= #args do
    local c = args:sub(i, i)
    if c == ' ' or c == '\t' then
      break
    elseif c == '\\' and args:sub(i + 1, i + 1):match('[ \t]') then
      i = i + 1
      c = args:sub(i, i)
    end
    table.insert(word, c)
    i = i + 1
  end
  local rest = args:sub(i):gsub('^[ \t]+', '')
  return #word > 0 and table.concat(word) or nil, rest
end

--- `:TtyRun! {name} [cmd]`: attach to the persistent session, making it
--- (with cmd, or the login shell) when it does not exist.
--- @param opts {args: string, fargs: string[]}
local function persistent(opts)
  local name, line = M.first_word(opts.args)
  if not name then
    error('(ttyoffer) :TtyRun! needs a session name (see :help :TtyRun!)', 0)
  end
  local kind, dest, session = kinds.of_address(name)
  local label = kind.label(dest, session)
  runs().run({
    persist = session,
    host = dest,
    argv = line ~= '' and M.argv(line, kind.shell_there) or nil,
    title = line ~= '' and (label .. ': ' .. line) or label,
  })
end

--- @param opts {args: string, fargs: string[], bang: boolean}
function M.run(opts)
  local ok, err = pcall(function()
    if opts.bang then
      return persistent(opts)
    end
    local first = opts.fargs[1]
    if not first then
      error('(ttyoffer) :TtyRun needs a command to run, or list or close (see :help :TtyRun)', 0)
    end
    if M.subcommands[first] then
      return M.subcommands[first](vim.list_slice(opts.fargs, 2), opts.args)
    end
    -- `:TtyRun -- list` runs a program called list; `--` alone is no command.
    if opts.args:match('^%s*%-%-%s*$') then
      error('(ttyoffer) :TtyRun -- needs a command after it (see :help :TtyRun)', 0)
    end
    local line = opts.args:gsub('^%s*%-%-%s+', '')
    runs().run({ argv = M.argv(line), title = line })
  end)
  if not ok then
    notify.answer(tostring(err), ERROR)
  end
end

--- Subcommands and executables first, then files; session names after
--- `:TtyRun!` and `:TtyRun kill` (`{dest}:` too), ssh hosts after
--- `:TtyRun list` and `:TtyRun check`.
function M.complete(arglead, cmdline)
  local before = cmdline:sub(1, #cmdline - #arglead)
  local words = vim.split(before, '%s+', { trimempty = true })
  local bang = (words[1] or ''):sub(-1) == '!'
  if (bang and #words <= 1) or (words[2] == 'kill' and #words == 2) then
    return kinds.complete_session(arglead)
  end
  if (words[2] == 'list' or words[2] == 'check') and #words == 2 then
    return kinds.complete_place(arglead)
  end
  if #words <= 1 then
    local names = vim.tbl_filter(function(name)
      return vim.startswith(name, arglead)
    end, vim.tbl_keys(M.subcommands))
    table.sort(names)
    return vim.list_extend(names, vim.fn.getcompletion(arglead, 'shellcmd'))
  end
  if words[2] == 'close' and #words == 2 then
    return vim.tbl_map(function(run)
      return tostring(run.id)
    end, runs().list())
  end
  return vim.fn.getcompletion(arglead, 'file')
end

return M
