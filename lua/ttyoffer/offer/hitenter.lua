-- A hit-enter prompt over a prompt window. While "Press ENTER" is up the
-- editor serves no event: the window is not drawn (what the command writes
-- waits in the host), and the keys typed for the command go to the hit-enter
-- prompt. One arises when something prints more than the command line holds
-- just as the window opens (a GUI's or a plugin's WinEnter autocommand) or
-- while it is up (a plugin's timer). So while the prompt window has focus, a
-- hit-enter or more prompt is answered for the user, and the messages stay in
-- :messages. A question (confirm(), 'r?') is left for the user to answer.
local M = {}

local api = vim.api

-- How often the mode is looked at while a prompt window has focus (ms).
local CHECK_MS = 50

--- What answers each prompt: Enter a hit-enter prompt, `q` the more prompt
--- (the rest of a long listing is in :messages).
local ANSWERS = { r = '<CR>', rm = 'q' }

--- Watch over the prompt window showing `buf` until the returned function is
--- called.
--- @param buf integer
--- @return fun() stop
function M.guard(buf)
  -- The window opens focused; where focus is cannot be asked from the
  -- timer (a fast callback may only ask the mode), so it is tracked here.
  local focused = true
  local group = api.nvim_create_augroup('ttyoffer.hitenter.' .. buf, { clear = true })
  api.nvim_create_autocmd('WinEnter', {
    group = group,
    buffer = buf,
    callback = function()
      focused = true
    end,
  })
  api.nvim_create_autocmd('WinLeave', {
    group = group,
    buffer = buf,
    callback = function()
      focused = false
    end,
  })
  -- Seen on two checks in a row before it is answered: a key the user typed
  -- a moment ago, not yet read, is the editor's to take first.
  local seen = nil --- @type string?
  local timer = assert(vim.uv.new_timer())
  timer:start(CHECK_MS, CHECK_MS, function()
    local mode = api.nvim_get_mode()
    local answer = focused and mode.blocking and ANSWERS[mode.mode]
    if answer and seen == mode.mode then
      seen = nil
      api.nvim_input(answer)
    else
      seen = answer and mode.mode or nil
    end
  end)
  return function()
    if not timer:is_closing() then
      timer:stop()
      timer:close()
    end
    pcall(api.nvim_del_augroup_by_id, group)
  end
end

return M
