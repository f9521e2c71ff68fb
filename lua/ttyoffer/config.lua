-- One defaults table, deep-merged with the user's, every key type-checked.
local M = {}

--- @class ttyoffer.Config
M.defaults = {
  -- Offer a private terminal to every command spawned through the plugin.
  enabled = true,
  float = {
    -- Preferred size of the prompt window; clamped to fit the editor.
    width = 80,
    height = 24,
    -- Any 'winborder' value or a list of eight characters.
    border = 'rounded',
    -- Milliseconds the window stays up showing the exit before it closes.
    close_delay = 700,
    -- Milliseconds without a keypress before focus moves into the window or
    -- back out, so keys typed for the editor never reach a prompt and keys
    -- typed for a prompt never reach the editor. 0: move at once.
    typing_pause = 300,
  },
  keys = {
    -- Terminal-mode key in the prompt window that declines the offer.
    -- false: no mapping (`:TtyOffer dismiss` still works).
    dismiss = '<C-q>',
    -- Normal-mode key in a run's pane that closes it (hanging up the
    -- program if it still runs). false: no mapping (`:TtyRun close` and the
    -- bar's Close still work).
    run_close = 'q',
  },
  runs = {
    -- Where require('ttyoffer').run() and :TtyRun open a pane: 'split' (along
    -- the bottom), 'float' (centered) or 'tab'.
    placement = 'split',
    -- Height of a 'split' pane, in lines.
    height = 15,
    -- The tmux server of tmux runs: '' for your default one (or the one
    -- Neovim runs inside), a name (tmux -L) or a socket path (tmux -S).
    tmux_server = '',
  },
  bang = {
    -- Milliseconds before `:Bang` says that the command is still running.
    notice_delay = 1000,
  },
  -- Commands holding an offer at once; past it commands run without one.
  max_offers = 256,
  -- The routes by which commands get the offer (besides :Bang and
  -- require('ttyoffer').jobstart(), which always do).
  routes = {
    -- `:!{cmd}` typed on the command line runs like :Bang.
    bang = true,
    -- vim.fn.jobstart(), vim.system(), vim.fn.system() and
    -- vim.fn.systemlist() called from Lua (by any plugin) are wrapped.
    lua = true,
    -- git's gpg.program, in the editor's environment, for every git it
    -- starts: the user's own gpg, asking where it can be answered.
    git = true,
  },
  -- Milliseconds a command that asks may wait for an editor that serves
  -- nothing (blocked in system(), jobwait(), a busy loop) before it is hung
  -- up and the user told how to run it. 0: never hang up.
  blocked_timeout = 1000,
  -- Milliseconds :Bang and `:!` wait for a host that is still starting (the
  -- first moments after startup) before they run without an offer.
  startup_wait = 3000,
  -- Milliseconds after startup before the host (a Python process) starts,
  -- unless a command is spawned first: an editor that lives a few seconds
  -- and spawns nothing (git's commit-message editor, `nvim -d`) starts no
  -- Python. 0: at once.
  host_start_delay = 1500,
}

--- Whether Neovim takes `border` for a float, and why not: asked of Neovim
--- itself with a hidden window, so the rule is exactly the one it applies
--- when a prompt opens.
--- @param border string|table
--- @return string? error
local function check_border(border)
  local buf = vim.api.nvim_create_buf(false, true)
  local ok, win = pcall(vim.api.nvim_open_win, buf, false, {
    relative = 'editor',
    row = 0,
    col = 0,
    width = 1,
    height = 1,
    border = border,
    hide = true,
    noautocmd = true,
  })
  if ok then
    vim.api.nvim_win_close(win, true)
  end
  vim.api.nvim_buf_delete(buf, { force = true })
  if not ok then
    local reason = tostring(win):gsub('^.-: ', '')
    return (
      'a style such as "rounded", "single", "double", "solid", "none" or a list of border '
      .. 'characters (Neovim says: %s; see :help nvim_open_win())'
    ):format(reason)
  end
end

--- @param value number
--- @return string?
local function whole_positive(value)
  if value <= 0 or value % 1 ~= 0 then
    return 'a whole number greater than 0'
  end
end

--- @param value number
--- @return string?
local function whole_non_negative(value)
  if value < 0 or value % 1 ~= 0 then
    return 'a whole number of milliseconds, 0 or more'
  end
end

--- @param value string|boolean
--- @return string?
local function key_or_false(value)
  if value == true or value == '' then
    return 'a key like "<C-q>", or false for none'
  end
end

--- @param value string
--- @return string?
local function placement(value)
  if value ~= 'split' and value ~= 'float' and value ~= 'tab' then
    return '"split", "float" or "tab"'
  end
end

-- path -> { accepted types, check(value) -> what it must be, or nil }
local validators = {
  enabled = { 'boolean' },
  ['float.width'] = { 'number', whole_positive },
  ['float.height'] = { 'number', whole_positive },
  ['float.border'] = { { 'string', 'table' }, check_border },
  ['float.close_delay'] = { 'number', whole_non_negative },
  ['float.typing_pause'] = { 'number', whole_non_negative },
  ['keys.dismiss'] = { { 'string', 'boolean' }, key_or_false },
  ['keys.run_close'] = { { 'string', 'boolean' }, key_or_false },
  ['runs.placement'] = { 'string', placement },
  ['runs.height'] = { 'number', whole_positive },
  ['runs.tmux_server'] = { 'string' },
  ['bang.notice_delay'] = { 'number', whole_non_negative },
  max_offers = { 'number', whole_positive },
  ['routes.bang'] = { 'boolean' },
  ['routes.lua'] = { 'boolean' },
  ['routes.git'] = { 'boolean' },
  blocked_timeout = { 'number', whole_non_negative },
  startup_wait = { 'number', whole_non_negative },
  host_start_delay = { 'number', whole_non_negative },
}

local function fail(fmt, ...)
  error(string.format('(ttyoffer) ' .. fmt, ...), 0)
end

--- Raise for a key the defaults at this level do not have, naming them.
local function unknown(path, prefix, defaults)
  local known = vim.tbl_keys(defaults)
  table.sort(known)
  local where = prefix == '' and '' or (' under "' .. prefix:sub(1, -2) .. '"')
  fail('unknown option "%s"; known options%s: %s (see :help ttyoffer-config)', path, where, table.concat(known, ', '))
end

--- Raise when `value` breaks the rule of option `path`.
local function check(path, value, default, rule)
  local types = type(rule[1]) == 'table' and rule[1] or { rule[1] }
  if not vim.tbl_contains(types, type(value)) then
    local want = table.concat(types, ' or ')
    fail(
      'option "%s" must be a %s, got %s (%s); default: %s',
      path,
      want,
      type(value),
      vim.inspect(value),
      vim.inspect(default)
    )
  end
  local wrong = rule[2] and rule[2](value)
  if wrong then
    fail('option "%s" must be %s, got %s', path, wrong, vim.inspect(value))
  end
end

--- Check every key of `tbl` against `defaults`, depth first.
local function walk(tbl, defaults, prefix)
  for key, value in pairs(tbl) do
    local path = prefix .. tostring(key)
    local default = defaults[key]
    if default == nil then
      unknown(path, prefix, defaults)
    end
    if validators[path] then
      check(path, value, default, validators[path])
    elseif type(default) == 'table' then
      if type(value) ~= 'table' then
        fail('option "%s" must be a table, got %s', path, type(value))
      end
      walk(value, default, path .. '.')
    end
  end
end

--- Validate `user` against the defaults. Returns the merged table or raises
--- an error naming the key and the fix; nothing is changed on error.
--- @param user table?
--- @param base table? the configuration to merge into (defaults when nil)
--- @return ttyoffer.Config
function M.merge(user, base)
  base = base or M.defaults
  if user == nil then
    return vim.deepcopy(base)
  end
  if type(user) ~= 'table' then
    fail('setup() expects a table, got %s', type(user))
  end
  walk(user, M.defaults, '')
  return vim.tbl_deep_extend('force', vim.deepcopy(base), user)
end

--- @type ttyoffer.Config
M.current = vim.deepcopy(M.defaults)

return M
