-- :TtyRun: run a command in a pane (`:TtyRun {cmd}`), list the runs, close one.
local M = {}

local notify = require('ttyoffer.shared.notify')

local ERROR = vim.log.levels.ERROR

local function runs()
  return require('ttyoffer.runs')
end

local function runspec()
  return require('ttyoffer.runs.runspec')
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

--- `text` cut to `width` display cells.
local function cut(text, width)
  return vim.fn.strcharpart(text, 0, width)
end

--- The lines of `:TtyRun list`: this editor's runs, then the persistent
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
      local line = ('%-4d %-32s %-20s %s'):format(run.id, cut(run.title, 32), run:describe(), M.age(now - run.started))
      table.insert(lines, line)
    end
  end
  local tmux_sessions, tmux_err = {}, nil
  if vim.fn.executable('tmux') == 1 then
    tmux_sessions, tmux_err = runs().tmux_sessions()
  end
  -- Without a host, the persistent sessions' line below says so once.
  if tmux_err and tmux_err ~= 'host not running' then
    table.insert(lines, 'tmux sessions: ' .. require('ttyoffer.shared.title').sanitize(tmux_err, 200))
  end
  if #tmux_sessions > 0 then
    table.insert(lines, '')
    table.insert(lines, ('%-24s %-8s %-9s %-16s %s'):format('tmux session', 'age', 'attached', 'running', 'title'))
    for _, s in ipairs(tmux_sessions) do
      local row = ('%-24s %-8s %-9s %-16s %s'):format(
        s.name,
        M.age(now - s.created),
        tostring(s.attached),
        -- A program that has ended: how (its pane stays until told).
        cut(s.ended and runs().describe(s.ended) or s.command, 16),
        s.title
      )
      table.insert(lines, row)
    end
  end
  local sessions, err = runs().sessions()
  if err then
    table.insert(lines, 'persistent sessions: ' .. require('ttyoffer.shared.title').sanitize(err, 200))
  elseif #sessions > 0 then
    table.insert(lines, '')
    table.insert(lines, ('%-20s %-8s %-16s %s'):format('session', 'age', 'running', 'title'))
    for _, s in ipairs(sessions) do
      -- Names, commands and titles come sanitized from the host.
      local running = s.ended and ('(' .. runs().describe(s.ended) .. ')') or cut(s.command, 16)
      table.insert(lines, ('%-20s %-8s %-16s %s'):format(s.name, M.age(now - s.created), running, s.title))
    end
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
--- @param remote boolean? for another machine: its sh runs the line (the
---   local 'shell' may not be there)
--- @return string[]
function M.argv(line, remote)
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
  if remote then
    return { 'sh', '-c', line }
  end
  -- As jobstart() would run the line (quotes in 'shell' honoured).
  local shell_option = require('ttyoffer.shared.shell_option')
  return shell_option.argv(line, shell_option.current())
end

--- `dest:name` split at its last colon (a session name has none): dest,
--- name; nil for a name alone.
--- @param word string
--- @return string? dest, string name
function M.split_remote(word)
  local dest, name = word:match('^(.*):([^:]*)$')
  if dest and dest ~= '' then
    return dest, name
  end
  return nil, word
end

local function remote_runs()
  return require('ttyoffer.runs.remote')
end

--- The lines of `:TtyRun list {dest}`: the sessions on that machine; when
--- it has not answered in time, what is known of them, said to be stale.
--- @param dest string
--- @return string[]
function M.remote_list_lines(dest, sessions, err, stale, known_at)
  local sanitize = require('ttyoffer.shared.title').sanitize
  if err then
    return { ('sessions on %s: %s'):format(dest, sanitize(err, 300)) }
  end
  local now = os.time()
  local lines = {}
  if stale then
    local since = (known_at or 0) > 0 and ('known %s ago'):format(M.age(math.max(0, now - math.floor(known_at))))
      or 'nothing known yet'
    table.insert(lines, ('%s has not answered yet (%s); its answer follows when it comes'):format(dest, since))
  end
  if #sessions == 0 then
    table.insert(lines, (stale and 'no sessions known on ' or 'no sessions on ') .. dest)
    return lines
  end
  table.insert(lines, ('%-20s %-8s %s'):format('session on ' .. dest, 'age', 'state'))
  for _, s in ipairs(sessions) do
    local state = s.state
    if s.ended then
      state = '(' .. runs().describe(s.ended) .. ')'
    elseif s.state == 'unreachable' then
      state = 'unreachable: its terminal is gone (kill ends it)'
    end
    table.insert(lines, ('%-20s %-8s %s'):format(s.name, M.age(math.max(0, now - s.created)), state))
  end
  return lines
end

--- What `:TtyRun kill {dest}:{name}` says of an answer (now or late).
local function tell_remote_kill(dest, name, answer)
  local sanitize = require('ttyoffer.shared.title').sanitize
  if answer.error then
    notify.answer(('(ttyoffer) :TtyRun kill %s:%s: %s'):format(dest, name, sanitize(answer.error, 300)), ERROR)
  elseif answer.pending then
    notify.answer(('asking %s to end session %s; you will be told'):format(dest, name))
  elseif answer.ended then
    notify.answer(('session %s on %s ended'):format(name, dest))
  else
    notify.answer(('no live session %s on %s'):format(name, dest), vim.log.levels.WARN)
  end
end

M.subcommands = {
  list = function(args)
    if args[1] then
      remote_runs().list(args[1], function(...)
        notify.answer(table.concat(M.remote_list_lines(args[1], ...), '\n'))
      end)
      return
    end
    notify.answer(table.concat(M.list_lines(), '\n'))
  end,
  check = function(args)
    if not args[1] then
      error('(ttyoffer) :TtyRun check needs an ssh destination (see :help ttyoffer-remote)', 0)
    end
    local argv, err = remote_runs().check_argv(args[1])
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
    local ended, err = runs().kill_tmux(args[1])
    if err then
      error('(ttyoffer) :TtyRun tmux-kill: ' .. require('ttyoffer.shared.title').sanitize(err, 300), 0)
    end
    notify.answer(ended and ('tmux session %s ended'):format(args[1]) or ('no tmux session %s'):format(args[1]))
  end,
  kill = function(args)
    if not args[1] then
      error('(ttyoffer) :TtyRun kill needs a session name (see :TtyRun list)', 0)
    end
    local dest, name = M.split_remote(args[1])
    if dest then
      remote_runs().kill(dest, name, function(answer)
        tell_remote_kill(dest, name, answer)
      end)
      return
    end
    local answer, err = runs().kill_session(args[1])
    if not answer then
      error('(ttyoffer) :TtyRun kill: ' .. require('ttyoffer.shared.title').sanitize(tostring(err), 300), 0)
    end
    if answer.count == 0 then
      notify.answer(('no live session %s (its files are gone)'):format(answer.name), vim.log.levels.WARN)
    else
      notify.answer(('session %s ended'):format(answer.name))
    end
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
  local dest, session = M.split_remote(name)
  local where = dest and (dest .. ':') or ''
  runs().run({
    persist = session,
    host = dest,
    argv = line ~= '' and M.argv(line, dest ~= nil) or nil,
    title = line ~= '' and (where .. session .. ': ' .. line) or (where .. session),
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

local function session_names(arglead)
  local dest = M.split_remote(arglead)
  if dest then
    -- Asked of that machine now (over the open connection, if any), or
    -- what is known of it when it does not answer at once.
    return vim.tbl_map(
      function(s)
        return dest .. ':' .. s.name
      end,
      vim.tbl_filter(function(s)
        return vim.startswith(dest .. ':' .. s.name, arglead)
      end, (remote_runs().sessions(dest)))
    )
  end
  local names = vim.tbl_map(function(s)
    return s.name
  end, (runs().sessions()))
  return vim.tbl_filter(function(name)
    return vim.startswith(name, arglead)
  end, names)
end

--- The Host names of ~/.ssh/config (no patterns), read now: what
--- `:TtyRun list`, `check`, and `{dest}:` complete to.
--- @return string[]
function M.ssh_hosts()
  local hosts, seen = {}, {}
  local ok, lines = pcall(vim.fn.readfile, vim.fn.expand('~/.ssh/config'))
  for _, line in ipairs(ok and lines or {}) do
    local names = line:match('^%s*[Hh][Oo][Ss][Tt]%s+(.*)$')
    for name in (names or ''):gmatch('%S+') do
      if not name:find('[*?!]') and not seen[name] and not runspec().destination_problem(name) then
        seen[name] = true
        table.insert(hosts, name)
      end
    end
  end
  return hosts
end

--- Subcommands and executables first, then files; session names after
--- `:TtyRun!` and `:TtyRun kill` (`{dest}:` too), ssh hosts after
--- `:TtyRun list` and `:TtyRun check`.
function M.complete(arglead, cmdline)
  local before = cmdline:sub(1, #cmdline - #arglead)
  local words = vim.split(before, '%s+', { trimempty = true })
  local bang = (words[1] or ''):sub(-1) == '!'
  local function with_hosts(names, suffix)
    for _, name in ipairs(M.ssh_hosts()) do
      if vim.startswith(name .. suffix, arglead) then
        table.insert(names, name .. suffix)
      end
    end
    return names
  end
  local remote = arglead:find(':', 1, true) ~= nil
  if bang and #words <= 1 then
    return remote and session_names(arglead) or with_hosts(session_names(arglead), ':')
  end
  if words[2] == 'kill' and #words == 2 then
    return remote and session_names(arglead) or with_hosts(session_names(arglead), ':')
  end
  if (words[2] == 'list' or words[2] == 'check') and #words == 2 then
    return with_hosts({}, '')
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
