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
    { { float = { width = -3 } }, 'option "float.width" must be positive' },
    { { float = 3 }, 'option "float" must be a table' },
    { { keys = { dismiss = true } }, 'option "keys.dismiss" must be a key' },
    { { max_offers = 'many' }, 'option "max_offers" must be a number' },
  }
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
