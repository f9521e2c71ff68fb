-- :TtyRun: run a command in a pane (`:TtyRun {cmd}`), list the runs, close one.
local M = {}

local notify = require('ttyoffer.notify')

local ERROR = vim.log.levels.ERROR

local function runs()
  return require('ttyoffer.runs')
end

--- "12s", "3m", "2h", "4d"
--- @param seconds integer
--- @return string
function M.age(seconds)
  if seconds < 60 then
    return seconds .. 's'
  elseif seconds < 3600 then
    return math.floor(seconds / 60) .. 'm'
  elseif seconds < 86400 then
    return math.floor(seconds / 3600) .. 'h'
  end
  return math.floor(seconds / 86400) .. 'd'
end

--- The lines of `:TtyRun list`.
--- @return string[]
function M.list_lines()
  local list = runs().list()
  if #list == 0 then
    return { 'no runs' }
  end
  local lines = { ('%-4s %-32s %-20s %s'):format('id', 'title', 'state', 'age') }
  local now = os.time()
  for _, run in ipairs(list) do
    local title = vim.fn.strcharpart(run.title, 0, 32)
    table.insert(lines, ('%-4d %-32s %-20s %s'):format(run.id, title, run:describe(), M.age(now - run.started)))
  end
  return lines
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
--- @return string[]
function M.argv(line)
  local words, why = require('ttyoffer.shellwords').split(line)
  if words and not SHELL_WORDS[words[1]] then
    return words
  end
  if words then
    why = 'shell'
  end
  if why ~= 'shell' then
    error(('(ttyoffer) :TtyRun: %s in %s'):format(why, vim.inspect(line)), 0)
  end
  local argv = vim.split(vim.o.shell, ' ', { trimempty = true })
  vim.list_extend(argv, vim.split(vim.o.shellcmdflag, ' ', { trimempty = true }))
  table.insert(argv, line)
  return argv
end

M.subcommands = {
  list = function()
    notify.answer(table.concat(M.list_lines(), '\n'))
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

--- @param opts {args: string, fargs: string[]}
function M.run(opts)
  local ok, err = pcall(function()
    local first = opts.fargs[1]
    if not first then
      error('(ttyoffer) :TtyRun needs a command to run, or list or close (see :help :TtyRun)', 0)
    end
    if M.subcommands[first] then
      return M.subcommands[first](vim.list_slice(opts.fargs, 2))
    end
    -- `:TtyRun -- list` runs a program called list.
    local line = opts.args:gsub('^%s*%-%-%s+', '')
    runs().run({ argv = M.argv(line), title = line })
  end)
  if not ok then
    notify.answer(tostring(err), ERROR)
  end
end

--- Subcommands and executables first, then files.
function M.complete(arglead, cmdline)
  local before = cmdline:sub(1, #cmdline - #arglead)
  local words = vim.split(before, '%s+', { trimempty = true })
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
