-- ttyoffer.config: defaults, deep merge, and errors that name the fix.
local config = require('ttyoffer.config')

describe('merge', function()
  it('fills in the defaults and merges deeply', function()
    local merged = config.merge({ float = { width = 100 } })
    eq(100, merged.float.width)
    eq(24, merged.float.height)
    eq('<C-q>', merged.keys.dismiss)
  end)

  local cases = {
    { { nope = 1 }, 'unknown option "nope"' },
    { { float = { widht = 1 } }, 'unknown option "float.widht"' },
    { { enabled = 'yes' }, 'option "enabled" must be a boolean' },
    { { float = { width = -3 } }, 'option "float.width" must be a whole number greater than 0' },
    { { float = { height = 2.5 } }, 'option "float.height" must be a whole number greater than 0' },
    { { float = { typing_pause = -1 } }, 'option "float.typing_pause" must be a whole number of milliseconds' },
    { { float = { border = 'bogus' } }, 'Neovim says: invalid border style "bogus"' },
    { { float = { border = { 'ab' } } }, 'Neovim says: border chars must be one cell' },
    { { keys = { dismiss = '' } }, 'option "keys.dismiss" must be a key' },
    { { float = 3 }, 'option "float" must be a table' },
    { { keys = { dismiss = true } }, 'option "keys.dismiss" must be a key' },
    { { max_offers = 'many' }, 'option "max_offers" must be a number' },
    { { routes = { bang = 'yes' } }, 'option "routes.bang" must be a boolean' },
    { { routes = { luaa = true } }, 'unknown option "routes.luaa"; known options under "routes": bang, git, lua' },
    { { routes = false }, 'option "routes" must be a table' },
    { { blocked_timeout = -5 }, 'option "blocked_timeout" must be a whole number of milliseconds' },
    { { startup_wait = '3s' }, 'option "startup_wait" must be a number' },
  }
  it('accepts every border Neovim takes', function()
    for _, border in ipairs({ 'none', 'single', 'double', 'rounded', 'solid', 'shadow', { '+' }, { '+', '-' } }) do
      eq(border, config.merge({ float = { border = border } }).float.border)
    end
  end)

  for _, case in ipairs(cases) do
    local opts, message = case[1], case[2]
    it('rejects ' .. vim.inspect(opts, { newline = ' ', indent = '' }), function()
      local err = errors(function()
        config.merge(opts)
      end, vim.pesc(message))
      matches(vim.pesc('(ttyoffer)'), err)
    end)
  end
end)
