-- One defaults table, deep-merged with the user's, every key type-checked.
local M = {}

--- @class ttyoffer.Config
-- The one description of every option: the comment above a key is its
-- entry in :help ttyoffer-config, and the README's and the help's setup()
-- examples are these defaults (scripts/config_reference.py writes both; a
-- test keeps them current). Help markup is allowed; lines of at most 62
-- characters; a line holding "<" alone ends an example.
M.defaults = {
  -- Offer a terminal to spawned commands. See |:TtyOffer-off|.
  enabled = true,
  -- The prompt window.
  float = {
    -- Columns of the prompt window, clamped to fit the editor.
    width = 80,
    -- Lines of the prompt window, clamped to fit the editor.
    height = 24,
    -- As in |nvim_open_win()|: a style or a list of eight
    -- characters.
    border = 'rounded',
    -- Milliseconds the window shows the exit of its command before
    -- it closes.
    close_delay = 700,
    -- Milliseconds without a keypress before focus moves into the
    -- window or back out of it. A prompt that arrives while you are
    -- typing opens when you pause, so keys meant for the editor
    -- never reach it; when the command ends, keys still being typed
    -- for the prompt are dropped and focus returns once you pause.
    -- 0: move at once.
    typing_pause = 300,
  },
  -- Keys of the prompt window and of a run's pane.
  keys = {
    -- Terminal-mode key in the prompt window that declines it.
    -- false: no mapping (|:TtyOffer-dismiss| still works).
    dismiss = '<C-q>',
    -- Terminal-mode key in the prompt window that declines it and
    -- every prompt waiting behind it, and the same questions for the
    -- rest of the burst (|ttyoffer-storm|). false: no mapping
    -- (`:TtyOffer dismiss all` still works).
    dismiss_all = '<M-q>',
    -- Normal-mode key in a run's pane that closes it
    -- (|:TtyRun-close|); while its program still runs it asks first
    -- (a stray key never ends a REPL). false: no mapping; the bar's
    -- Close and |:TtyRun-close| remain.
    run_close = 'q',
  },
  -- The panes of |ttyoffer-run|.
  runs = {
    -- Where a pane opens: "split" (a window along the whole
    -- bottom), "float" (centered, the size of a prompt window) or
    -- "tab" (a new tab page).
    placement = 'split',
    -- Lines of a "split" pane.
    height = 15,
    -- The tmux server of tmux runs: "" for your default one (or the
    -- one Neovim runs inside, `$TMUX`), a name (`tmux -L {name}`) or
    -- a socket path (`tmux -S`).
    tmux_server = '',
    -- The ssh command of runs on another machine
    -- (|ttyoffer-remote|), as a list of words: your ssh reads your
    -- ~/.ssh/config; e.g. { 'ssh', '-F', '/path/to/config' }.
    ssh = { 'ssh' },
  },
  -- |:Bang|.
  bang = {
    -- Milliseconds before |:Bang| says that its command is still
    -- running.
    notice_delay = 1000,
  },
  -- Commands holding an offer at once. Past it commands still run,
  -- without an offer, and |:TtyOffer-status| says so.
  max_offers = 256,
  -- Which routes carry the offer, besides |:Bang| and
  -- |ttyoffer.jobstart()|, which always do (|ttyoffer-routes|).
  routes = {
    -- |:!| typed on the command line runs like |:Bang|. false: |:!|
    -- is stock, the rest stays. >lua
    --     require('ttyoffer').setup({ routes = { bang = false } })
    -- <
    bang = true,
    -- `vim.fn.jobstart`, `vim.system`, `vim.fn.system` and
    -- `vim.fn.systemlist` are wrapped for every Lua caller. false:
    -- they are Neovim's own again (the very same functions). >lua
    --     require('ttyoffer').setup({ routes = { lua = false } })
    -- <
    lua = true,
    -- git's `gpg.program`, for every git the editor starts, is
    -- ttyoffer's, which runs yours and chooses where it asks
    -- (|ttyoffer-git|). false: the editor's environment is as it
    -- was. >lua
    --     require('ttyoffer').setup({ routes = { git = false } })
    -- <
    git = true,
  },
  -- Milliseconds a command that asks may wait for an editor that
  -- serves nothing (blocked in |system()|, |jobwait()|, a plugin's
  -- busy loop) before it is hung up and you are told which command
  -- asked, what, and how to run it so that it can be answered
  -- (|ttyoffer-blocked|). At a |hit-enter| prompt, or while you
  -- answer another question, it waits for you. A prompt already on
  -- screen outlasts a busy spell: it is hung up only after 30 s of
  -- an editor that serves nothing. 0: never hang up (the command
  -- waits until the editor is free). >lua
  --     require('ttyoffer').setup({ blocked_timeout = 3000 })
  -- <
  blocked_timeout = 1000,
  -- Milliseconds |:Bang| and a typed |:!| wait for a host that is
  -- still starting (the first moments after startup) before they
  -- run without an offer, with a notice. The editor does not wait:
  -- the command is started when the host is ready.
  startup_wait = 3000,
  -- Milliseconds after startup before the host (a Python
  -- process) is started, unless a command is spawned first (then
  -- it starts at once; that command runs without an offer, or
  -- waits for the host if it is |:Bang| or a typed |:!|). An
  -- editor that quits sooner and spawned nothing (git's
  -- commit-message editor, `nvim -d`) starts no Python. 0: at
  -- once, at |VimEnter|.
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

--- @param value table
--- @return string?
local function words(value)
  if not vim.islist(value) or #value == 0 then
    return 'a list of words like { "ssh" }'
  end
  for _, word in ipairs(value) do
    if type(word) ~= 'string' or word == '' then
      return 'a list of words like { "ssh" }'
    end
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
  ['keys.dismiss_all'] = { { 'string', 'boolean' }, key_or_false },
  ['keys.run_close'] = { { 'string', 'boolean' }, key_or_false },
  ['runs.placement'] = { 'string', placement },
  ['runs.height'] = { 'number', whole_positive },
  ['runs.tmux_server'] = { 'string' },
  ['runs.ssh'] = { 'table', words },
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
  local merged = vim.tbl_deep_extend('force', vim.deepcopy(base), user)
  -- A list replaces the one before it (deep_extend would merge them by index).
  if type(user.runs) == 'table' and user.runs.ssh then
    merged.runs.ssh = vim.deepcopy(user.runs.ssh)
  end
  return merged
end

--- @type ttyoffer.Config
M.current = vim.deepcopy(M.defaults)

return M
