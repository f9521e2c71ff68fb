-- :TtyOffer {subcommand}, one command with completion (gitsigns' shape).
local M = {}

local function ttyoffer()
  return require('ttyoffer')
end

local function say(msg, hl)
  vim.api.nvim_echo({ { msg, hl } }, true, {})
end

local function status_lines()
  local s = ttyoffer().status()
  local lines = {
    string.format(
      'ttyoffer: %s; host %s%s',
      s.enabled and 'on' or 'off',
      s.host,
      s.host_pid and (' (pid ' .. s.host_pid .. ')') or ''
    ),
  }
  if s.host_error then
    table.insert(lines, '  host: ' .. s.host_error)
  end
  table.insert(
    lines,
    string.format('  %d of at most %d offers in flight, %d spare ptys', s.live, s.max_offers, s.spare)
  )
  if s.live >= s.max_offers then
    table.insert(lines, '  offer limit reached: new commands run without an offer (see max_offers)')
  end
  for _, o in ipairs(s.offers) do
    table.insert(lines, string.format('  #%d  pid %-7d %-7s %s', o.id, o.pid, o.state, o.title))
  end
  local skipped = {}
  for reason, n in pairs(s.skipped) do
    table.insert(skipped, string.format('%s: %d', reason, n))
  end
  if #skipped > 0 then
    table.sort(skipped)
    table.insert(lines, '  without an offer so far: ' .. table.concat(skipped, ', '))
  end
  return lines
end

M.subcommands = {
  on = function()
    ttyoffer().enable()
    say('ttyoffer: on')
  end,
  off = function()
    ttyoffer().disable()
    say('ttyoffer: off (commands run as in stock Neovim)')
  end,
  toggle = function()
    ttyoffer().toggle()
    say('ttyoffer: ' .. (ttyoffer().enabled() and 'on' or 'off'))
  end,
  status = function()
    say(table.concat(status_lines(), '\n'))
  end,
  dismiss = function(args)
    local id = args[1] and tonumber(args[1])
    if args[1] and not id then
      error(string.format('(ttyoffer) dismiss takes an offer id, got %q (see :TtyOffer status)', args[1]), 0)
    end
    if not ttyoffer().dismiss(id) then
      say(id and ('ttyoffer: no prompt with id ' .. id) or 'ttyoffer: no prompt is shown', 'WarningMsg')
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
    vim.api.nvim_echo({
      {
        string.format('(ttyoffer) unknown subcommand %q; use one of: %s', name, table.concat(names(), ', ')),
        'ErrorMsg',
      },
    }, true, {})
    return
  end
  local ok, err = pcall(fn, vim.list_slice(opts.fargs, 2))
  if not ok then
    vim.api.nvim_echo({ { tostring(err), 'ErrorMsg' } }, true, {})
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
