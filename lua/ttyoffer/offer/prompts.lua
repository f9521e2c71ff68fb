-- The prompts: one window at a time, the rest queued in arrival order; when
-- each opens, takes focus, shows its end and goes.
--
-- The main module of the part offer/ (prompts, window, labels, focus,
-- typing, hitenter, waiting, held, records, recording, unserved): what the user sees
-- and types when a command asks. It requires only offer/, host/, shared/
-- and config; nothing here requires back up the chain of parts (shared/
-- and config < host/ < offer/ < routes/ < runs/ < the entry points;
-- scripts/require_graph.py).
local M = {}

local api = vim.api
local config = require('ttyoffer.config')
local focus = require('ttyoffer.offer.focus')
local host = require('ttyoffer.host')
local labels = require('ttyoffer.offer.labels')
local layout = require('ttyoffer.shared.layout')
local notify = require('ttyoffer.shared.notify')
local records = require('ttyoffer.offer.records')
local recording = require('ttyoffer.offer.recording')
local typing = require('ttyoffer.offer.typing')
local window = require('ttyoffer.offer.window')

--- @class ttyoffer.Prompt
--- @field id integer offer id
--- @field first string bytes of the command's first write
--- @field question string what the screen asks, from the host's screen model
--- @field window ttyoffer.Window?
--- @field place ttyoffer.Place? where the user was
--- @field closing boolean?
--- @field closed boolean? over, and TtyOfferClose fired
--- @field after_close fun()[]? what waits for it to be over

--- Benchmarks set this to see when relayed bytes reach a window.
--- @type fun(id: integer, data: string)?
M.trace = nil

local queue = {} --- @type ttyoffer.Prompt[] waiting, in arrival order
local current = nil --- @type ttyoffer.Prompt?
local waiting_for_mode = false
local waiting_for_pause = false

local function title_text(prompt)
  return labels.title(prompt.id, prompt.question, #queue + (current and 1 or 0))
end

local function refresh_title()
  if current and current.window then
    window.set_title(current.window, title_text(current))
    window.set_footer(current.window, labels.footer(#queue))
  end
end

local function event(pattern, prompt, extra)
  local record = records.get(prompt.id)
  local data = { id = prompt.id, title = labels.command(prompt.id), pid = record and record.pid or 0 }
  for k, v in pairs(extra or {}) do
    data[k] = v
  end
  api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

--- The prompt is over, shown or not: say so, and run what waited for it.
--- @param prompt ttyoffer.Prompt
--- @param reason string
local function finished(prompt, reason)
  prompt.closed = true
  event('TtyOfferClose', prompt, { reason = reason })
  for _, fn in ipairs(prompt.after_close or {}) do
    fn()
  end
end

--- Give focus back to where the user was, if the prompt took it, then `fn`.
local function return_focus(prompt, fn)
  if prompt.window and prompt.place then
    focus.give_back(prompt.place, prompt.window.win, fn)
  else
    fn()
  end
end

local show_next

local function wait_for_mode()
  if waiting_for_mode then
    return
  end
  waiting_for_mode = true
  api.nvim_create_autocmd('ModeChanged', {
    group = api.nvim_create_augroup('ttyoffer.wait_mode', { clear = true }),
    callback = function()
      if focus.can_take() then
        waiting_for_mode = false
        vim.schedule(show_next)
        return true
      end
    end,
  })
end

--- Take the window down. A decline hangs the command's terminal up.
--- @param prompt ttyoffer.Prompt
--- @param reason 'dismissed'|'exited'|'host exited'|'hung up'|'declined'
--- @param by_key boolean? declined with the dismiss key in the window
local function close(prompt, reason, by_key)
  if prompt.closing then
    return
  end
  prompt.closing = true
  if prompt.window and not by_key then
    -- Whatever took it down (a hang-up, the host's death, a plugin closing
    -- windows), keys still being typed for it are dropped until the user
    -- pauses: the rest of a passphrase must not land where focus goes.
    typing.drop_until_pause()
  end
  if reason == 'dismissed' then
    host.notify('dismiss', prompt.id)
  end
  local function take_down()
    if prompt.window then
      window.close(prompt.window)
    end
    if current == prompt then
      current = nil
    end
    records.set_state(prompt.id, 'closed')
    finished(prompt, reason)
    -- A recording stopped for the prompt goes on, unless another prompt
    -- takes the keys next; while keys typed for this one are dropped, once
    -- they no longer are (a dropped key is recorded all the same).
    local function resume_recording()
      if not current and #queue == 0 then
        recording.resume()
      end
    end
    if typing.dropping() then
      typing.after_pause(resume_recording)
    else
      resume_recording()
    end
    -- The next prompt in line starts from the restored place, so that its
    -- own close returns there too.
    vim.schedule(show_next)
  end
  return_focus(prompt, take_down)
end

local function open(prompt)
  current = prompt
  prompt.place = focus.remember()
  -- Before the window enters Terminal mode: keys typed for the prompt are
  -- not recorded into a macro (offer/recording.lua).
  recording.pause()
  local id = prompt.id
  local opened, height, width = window.open({
    title = title_text(prompt),
    footer = labels.footer(#queue),
    first = prompt.first,
    on_input = function(data)
      host.notify('input', id, data)
    end,
    on_dismiss = function(by_key)
      close(prompt, 'dismissed', by_key)
    end,
    on_dismiss_all = function()
      M.dismiss_all(true)
    end,
    -- Closed under the user's fingers: their next keys are dropped from
    -- now, not from when the decline is served (the editor may be held
    -- between the two, and its queued keys come first).
    on_gone = typing.drop_until_pause,
  })
  prompt.window = opened
  if M.trace then
    M.trace(id, prompt.first)
  end
  prompt.first = ''
  records.set_state(id, 'attached')
  event('TtyOfferPresent', prompt)
  -- Now the host may relay the rest: the kernel has held it until here.
  host.notify('attach', id, height, width)
  -- Once the user can see it, a busy editor only delays their keys: the
  -- host no longer hangs it up for one.
  window.when_drawn(opened, function()
    if not prompt.closing then
      host.notify('drawn', id)
    end
  end)
end

show_next = function()
  if current or #queue == 0 or waiting_for_pause then
    return
  end
  if not focus.can_take() then
    wait_for_mode()
    return
  end
  if typing.until_pause() > 0 then
    -- The user is typing into the editor: those keys stay the editor's.
    waiting_for_pause = true
    typing.after_pause(function()
      waiting_for_pause = false
      show_next()
    end)
    return
  end
  local prompt = table.remove(queue, 1)
  local ok, err = pcall(open, prompt)
  if not ok then
    notify.once('open:' .. tostring(err), 'cannot open the prompt window: ' .. tostring(err))
    close(prompt, 'dismissed')
  end
end

--- @return ttyoffer.Prompt?, integer? index in the queue when queued
local function find(id)
  if current and current.id == id then
    return current, nil
  end
  for i, prompt in ipairs(queue) do
    if prompt.id == id then
      return prompt, i
    end
  end
end

--- Take a queued prompt out of line without showing it.
local function unqueue(prompt, index, reason)
  table.remove(queue, index)
  prompt.closing = true
  records.set_state(prompt.id, 'closed')
  finished(prompt, reason)
  refresh_title()
end

--- The command wrote to its terminal for the first time.
--- @param id integer
--- @param first string
function M.present(id, first)
  table.insert(queue, { id = id, first = first, question = '' })
  records.set_state(id, 'presented')
  if current then
    refresh_title()
  else
    show_next()
  end
end

--- More bytes for the window on screen.
--- @param id integer
--- @param data string
function M.output(id, data)
  if current and current.id == id and current.window then
    window.send(current.window, data)
    if M.trace then
      M.trace(id, data)
    end
  end
end

--- Keys for the prompt on screen, typed while the editor waits on a
--- command (the window does not take them itself then).
--- @param data string
function M.type(data)
  if current and current.window and not current.closing then
    host.notify('input', current.id, data)
  end
end

--- The command was hung up before its prompt could be shown: it is taken
--- down without a trace of a window.
--- @param id integer
--- @param reason string? 'hung up' unless said
function M.hung_up(id, reason)
  local prompt, index = find(id)
  if not prompt then
    return
  end
  if index then
    return unqueue(prompt, index, reason or 'hung up')
  end
  close(prompt, reason or 'hung up')
end

--- The question on the command's screen changed.
--- @param id integer
--- @param question string
function M.question(id, question)
  local prompt = find(id)
  if prompt then
    prompt.question = question
    if prompt == current then
      refresh_title()
    end
  end
end

--- The host closed the offer (its command ended): a queued prompt has
--- nothing left to answer; a shown one shows the end a moment, then goes.
--- @param id integer
function M.closed(id)
  local prompt, index = find(id)
  if not prompt then
    return
  end
  if index then
    return unqueue(prompt, index, 'exited')
  end
  if prompt.window then
    local record = records.get(id)
    local code = record and record.code
    window.send(prompt.window, code and string.format('\r\n[Process exited %d]', code) or '\r\n[Process exited]')
  end
  -- Focus returns once the user has stopped typing: keys meant for the
  -- prompt are dropped with it, keys typed after the pause are the editor's.
  typing.after_pause(function()
    return_focus(prompt, function()
      vim.defer_fn(function()
        close(prompt, 'exited')
      end, config.current.float.close_delay)
    end)
  end)
end

--- Decline the prompt on screen (or the given offer, shown or queued).
--- @param id integer?
--- @return boolean whether anything was declined
function M.dismiss(id)
  local prompt, index = current, nil
  if id then
    prompt, index = find(id)
  end
  if not prompt then
    return false
  end
  if index then
    host.notify('dismiss', prompt.id)
    unqueue(prompt, index, 'dismissed')
    return true
  end
  close(prompt, 'dismissed')
  return true
end

--- Decline the prompt on screen and every one waiting behind it; the host
--- declines the same questions, with no window, while the burst lasts
--- (ttyoffer_nvim/offer/burst.py). One message says what was declined.
--- @param by_key boolean? from the window's key (the user stopped typing for it)
--- @return integer how many were declined
function M.dismiss_all(by_key)
  local all = vim.list_extend(current and not current.closing and { current } or {}, queue)
  if #all == 0 then
    return 0
  end
  -- First, while their programs still hold the terminals: the host reads
  -- who asks from them.
  host.notify(
    'dismiss_all',
    vim.tbl_map(function(prompt)
      return prompt.id
    end, all)
  )
  local message = labels.declined(all)
  local function tell()
    notify.notice(message, nil, labels.ASKED_ONCE)
  end
  for i = #queue, 1, -1 do
    unqueue(queue[i], i, 'dismissed')
  end
  if current and not current.closing then
    -- Told once the window is gone and the mode is back: leaving Terminal
    -- mode would wipe a message given before.
    current.after_close = current.after_close or {}
    table.insert(current.after_close, tell)
    close(current, 'dismissed', by_key)
  else
    tell()
  end
  return #all
end

--- The editor was resized: re-center the window, tell the ptys their size.
function M.resized()
  local height, width = layout.size()
  host.notify('resize_armed', height, width)
  if current and current.window then
    height, width = window.recenter(current.window)
    host.notify('resize', current.id, height, width)
  end
end

--- The host died: every window goes, the commands carry on without a tty.
function M.host_lost()
  for _, prompt in ipairs(queue) do
    prompt.closing = true
    records.set_state(prompt.id, 'closed')
    finished(prompt, 'host exited')
  end
  queue = {}
  if current then
    close(current, 'host exited')
  end
end

--- Run `fn` once the prompt window of `job`'s command is gone, and no
--- other is on screen (a hit-enter prompt `fn` may raise would keep any
--- window from closing); at once when there is none.
--- @param job integer
--- @param fn fun()
function M.after_window_of(job, fn)
  local prompt
  for _, candidate in ipairs(vim.list_extend({ current }, queue)) do
    local record = candidate and records.get(candidate.id)
    if record and record.job == job and not candidate.closed then
      prompt = candidate
    end
  end
  prompt = prompt or (current and not current.closed and current) or nil
  if not prompt then
    return fn()
  end
  prompt.after_close = prompt.after_close or {}
  table.insert(prompt.after_close, fn)
end

--- @return integer? id of the offer on screen
function M.current_id()
  return current and current.id
end

--- @return integer
function M.queued()
  return #queue
end

return M
