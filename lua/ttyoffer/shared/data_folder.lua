-- The plugin's data folder, stdpath('data') as it was at its first use,
-- read without changing what the editor reads after: Neovim 0.11 keeps
-- each environment variable it reads until its own setenv, so once we had
-- read it, a plugin that changes one with vim.uv.os_setenv (mini.test's
-- child editors point XDG_DATA_HOME at a test folder so) got stdpath() of
-- the value we kept, where stock gave the new one. Setting each again to
-- what it is drops the kept copy. Kept here, so that such a plugin does
-- not move our venv and leader either.
local M = {}

-- What stdpath('data') reads from the environment.
local READ = { 'XDG_DATA_HOME', 'NVIM_APPNAME' }

local path --- @type string?

--- @return string
function M.path()
  if not path then
    path = vim.fn.stdpath('data')
    for _, name in ipairs(READ) do
      vim.fn.setenv(name, vim.uv.os_getenv(name) or vim.NIL)
    end
  end
  return path
end

return M
