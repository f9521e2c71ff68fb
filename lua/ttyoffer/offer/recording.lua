-- A macro being recorded (`qq`) while a prompt takes the keyboard: what is
-- typed for the prompt (into its window in Terminal mode, or read by our
-- waits with getcharstr() and passed to it) would be recorded with the rest,
-- and the register would hold the passphrase. So the recording is stopped as
-- the prompt takes the keys (the register keeps what was typed before) and,
-- for registers a-z, resumed appending (`qQ`) once the prompt has given them
-- back and keys still typed for it are dropped: the register holds what was
-- typed before and after, never what went to the prompt. A register that
-- cannot be appended to (0-9, ") stays stopped, and the user is told once.
--
-- Both are done with `:normal! q`: keys run by :normal are not typed, so not
-- recorded themselves. Neovim refuses :normal in Terminal mode, so this runs
-- before the prompt's window enters it, and after it has left it.
local M = {}

local notify = require('ttyoffer.shared.notify')

local paused = nil --- @type string? the register whose recording is stopped

--- Stop the recording, if any, before a prompt takes the keys. Nothing when
--- one is already stopped for a prompt, or when it cannot be stopped here
--- (the editor is in Terminal mode).
function M.pause()
  local register = vim.fn.reg_recording()
  if paused or register == '' then
    return
  end
  if pcall(vim.cmd, 'normal! q') and vim.fn.reg_recording() == '' then
    paused = register
  end
end

--- Whether the recording into `register` can go on appending.
--- @param register string
--- @return boolean
local function appendable(register)
  return register:match('^%a$') ~= nil
end

local function tell_stopped(register)
  notify.once(
    'recording:' .. register,
    string.format('recording @%s stopped: a prompt took the keys, and it could not resume appending', register)
  )
end

--- The prompt gave the keys back: resume the recording stopped for it,
--- appending to its register.
function M.resume()
  local register = paused
  if not register then
    return
  end
  paused = nil
  if vim.fn.reg_recording() ~= '' then
    return -- the user started one of their own meanwhile
  end
  if not appendable(register) then
    return tell_stopped(register)
  end
  if not (pcall(vim.cmd, 'normal! q' .. register:upper()) and vim.fn.reg_recording() ~= '') then
    tell_stopped(register)
  end
end

--- @return string? the register whose recording a prompt stopped
function M.paused()
  return paused
end

return M
