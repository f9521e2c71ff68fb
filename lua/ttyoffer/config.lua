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
  },
  bang = {
    -- Milliseconds before `:Bang` says that the command is still running.
    notice_delay = 1000,
  },
  -- Commands holding an offer at once; past it commands run without one.
  max_offers = 256,
}

local validators = {
  enabled = { 'boolean' },
  ['float.width'] = { 'number', 'positive' },
  ['float.height'] = { 'number', 'positive' },
  ['float.border'] = { { 'string', 'table' } },
  ['float.close_delay'] = { 'number', 'non-negative' },
  ['float.typing_pause'] = { 'number', 'non-negative' },
  ['keys.dismiss'] = { { 'string', 'boolean' } },
  ['bang.notice_delay'] = { 'number', 'non-negative' },
  max_offers = { 'number', 'positive' },
}

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
    error(string.format('(ttyoffer) setup() expects a table, got %s', type(user)), 0)
  end
  local function walk(tbl, defaults, prefix)
    for key, value in pairs(tbl) do
      local path = prefix .. tostring(key)
      local default = defaults[key]
      if default == nil then
        local known = vim.tbl_keys(defaults)
        table.sort(known)
        error(
          string.format(
            '(ttyoffer) unknown option "%s"; known options%s: %s (see :help ttyoffer-config)',
            path,
            prefix == '' and '' or (' under "' .. prefix:sub(1, -2) .. '"'),
            table.concat(known, ', ')
          ),
          0
        )
      end
      local rule = validators[path]
      if rule then
        local types = type(rule[1]) == 'table' and rule[1] or { rule[1] }
        if not vim.tbl_contains(types, type(value)) then
          error(
            string.format(
              '(ttyoffer) option "%s" must be a %s, got %s (%s); default: %s',
              path,
              table.concat(types, ' or '),
              type(value),
              vim.inspect(value),
              vim.inspect(default)
            ),
            0
          )
        end
        if rule[2] == 'positive' and value <= 0 or rule[2] == 'non-negative' and value < 0 then
          error(string.format('(ttyoffer) option "%s" must be %s, got %s', path, rule[2], tostring(value)), 0)
        end
        if path == 'keys.dismiss' and value == true then
          error('(ttyoffer) option "keys.dismiss" must be a key like "<C-q>" or false', 0)
        end
      elseif type(default) == 'table' then
        if type(value) ~= 'table' then
          error(string.format('(ttyoffer) option "%s" must be a table, got %s', path, type(value)), 0)
        end
        walk(value, default, path .. '.')
      end
    end
  end
  walk(user, M.defaults, '')
  return vim.tbl_deep_extend('force', vim.deepcopy(base), user)
end

--- @type ttyoffer.Config
M.current = vim.deepcopy(M.defaults)

return M
