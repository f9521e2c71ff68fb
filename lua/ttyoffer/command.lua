-- :TtyOffer {subcommand}, one command with completion (gitsigns' shape).
local M = {}

local notify = require('ttyoffer.shared.notify')

local function ttyoffer()
  return require('ttyoffer')
end

local say = notify.answer
local WARN, ERROR = vim.log.levels.WARN, vim.log.levels.ERROR

local function status_lines()
  local s = ttyoffer().status()
  local lines = {
    string.format(
      '%s; host %s%s',
      s.enabled and 'on' or 'off',
      s.host,
      s.host_pid and (' (pid ' .. s.host_pid .. ')') or ''
    ),
  }
  table.insert(
    lines,
    string.format(
      '  routes: :! typed %s, Lua spawners %s, git signing and ssh %s',
      s.routes.bang and 'offered' or 'stock',
      s.routes.lua and 'wrapped' or 'stock',
      s.routes.git and 'ours' or 'stock'
    )
  )
  if s.host_error then
    table.insert(lines, '  host: ' .. s.host_error)
  end
  if s.leader_problem then
    table.insert(lines, '  leader: ' .. s.leader_problem)
  end
  if s.host_unanswered_ms then
    table.insert(
      lines,
      string.format('  host: not answering for %d ms; new commands run without an offer', s.host_unanswered_ms)
    )
  end
  table.insert(
    lines,
    string.format('  %d of at most %d offers in flight, %d spare ptys', s.live, s.max_offers, s.spare)
  )
  if s.live >= s.max_offers then
    table.insert(lines, '  offer limit reached: new commands run without an offer (see max_offers)')
  end
  for _, o in ipairs(s.offers) do
    table.insert(lines, string.format('  #%d  pid %-7d %-9s %s', o.id, o.pid, o.state, o.title))
  end
  local skipped = {}
  for reason, n in pairs(s.skipped) do
    table.insert(skipped, string.format('%s: %d', reason, n))
  end
  if #skipped > 0 then
    table.sort(skipped)
    table.insert(lines, '  without an offer so far: ' .. table.concat(skipped, ', '))
  end
  for _, notice in ipairs(s.notices) do
    table.insert(lines, '  told: ' .. notice)
  end
  return lines
end

M.subcommands = {
  on = function()
    ttyoffer().enable()
    say('on')
  end,
  off = function()
    ttyoffer().disable()
    say('off (commands run as in stock Neovim)')
  end,
  toggle = function()
    ttyoffer().toggle()
    say(ttyoffer().enabled() and 'on' or 'off')
  end,
  status = function()
    say(table.concat(status_lines(), '\n'))
  end,
  install = function()
    require('ttyoffer.host.install').run({
      -- Headless is a build step (`nvim --headless '+TtyOffer install' +qa`):
      -- it must be done before the editor quits.
      sync = #vim.api.nvim_list_uis() == 0,
      on_done = function(ok)
        if ok then
          -- No restart: the host starts (or starts again) with the new Python.
          local host = require('ttyoffer.host')
          host.forget_failure()
          ttyoffer().start()
        end
      end,
    })
  end,
  dismiss = function(args)
    if args[1] == 'all' then
      if ttyoffer().dismiss_all() == 0 then
        say('no prompt is shown', WARN)
      end
      return
    end
    local id = args[1] and tonumber(args[1])
    if args[1] and not id then
      error(string.format('(ttyoffer) dismiss takes an offer id or "all", got %q (see :TtyOffer status)', args[1]), 0)
    end
    if not ttyoffer().dismiss(id) then
      say(id and ('no prompt with id ' .. id) or 'no prompt is shown', WARN)
    end
  end,
}

M.status_lines = status_lines

local function names()
  local list = vim.tbl_keys(M.subcommands)
  table.sort(list)
  return list
end

--- @param opts {fargs: string[]}
function M.run(opts)
  local name = opts.fargs[1] or 'status'
  local fn = M.subcommands[name]
  if not fn then
    say(string.format('unknown subcommand %q; use one of: %s', name, table.concat(names(), ', ')), ERROR)
    return
  end
  local ok, err = pcall(fn, vim.list_slice(opts.fargs, 2))
  if not ok then
    say(tostring(err), ERROR)
  end
end

function M.complete(arglead, cmdline)
  local words = vim.split(cmdline, '%s+', { trimempty = true })
  local completing_first = #words == 1 or (#words == 2 and arglead ~= '')
  if not completing_first then
    return {}
  end
  return vim.tbl_filter(function(name)
    return vim.startswith(name, arglead)
  end, names())
end

return M
