-- The float: one prompt window at a time, the rest queued in arrival order.
local M = {}

local api = vim.api
local host = require('ttyoffer.host')

require('ttyoffer.highlights').define()

--- @class ttyoffer.Shown
--- @field id integer offer id
--- @field first string bytes of the first write
--- @field prompt string prompt text from the host's screen model
--- @field win integer?
--- @field buf integer?
--- @field chan integer?
--- @field prev_win integer?
--- @field prev_mode string?
--- @field closing boolean?
--- @field focus_returned boolean?

--- Benchmarks set this to see when relayed bytes reach a window.
--- @type fun(id: integer, data: string)?
M.trace = nil

local queue = {} --- @type ttyoffer.Shown[]  waiting, in arrival order
local current = nil --- @type ttyoffer.Shown?
local waiting_for_mode = false
local waiting_for_pause = false

local function cfg()
  return require('ttyoffer.config').current
end

local function offers()
  return require('ttyoffer')
end

-- When the user last pressed a key (vim.uv.now()). Focus only moves between
-- the editor and a prompt once typing has paused, so keys meant for one
-- never reach the other.
local last_key = 0
vim.on_key(function()
  last_key = vim.uv.now()
end, api.nvim_create_namespace('ttyoffer.typing'))

--- Milliseconds until the user will have paused typing long enough.
--- @return integer
local function until_pause()
  local pause = cfg().float.typing_pause
  local since = vim.uv.now() - last_key
  return since >= pause and 0 or pause - since
end

--- Run `fn` once the user has paused typing.
--- @param fn fun()
local function after_pause(fn)
  local wait = until_pause()
  if wait == 0 then
    return fn()
  end
  vim.defer_fn(function()
    after_pause(fn)
  end, wait)
end

--- Size (rows, columns) of the prompt window for the current editor size.
--- @return integer height, integer width
function M.size()
  local c = cfg().float
  local lines = vim.o.lines - vim.o.cmdheight
  local width = math.max(math.min(c.width, vim.o.columns - 4), 10)
  local height = math.max(math.min(c.height, lines - 4), 2)
  return height, width
end

local function geometry()
  local height, width = M.size()
  local lines = vim.o.lines - vim.o.cmdheight
  return {
    relative = 'editor',
    width = width,
    height = height,
    row = math.max(math.floor((lines - height - 2) / 2), 0),
    col = math.max(math.floor((vim.o.columns - width - 2) / 2), 0),
  }
end

local function title_text(entry)
  local record = offers()._record(entry.id)
  local text = record and record.title or ('offer ' .. entry.id)
  if entry.prompt ~= '' then
    text = text .. ' — ' .. entry.prompt
  end
  local total = #queue + (current and 1 or 0)
  if total > 1 then
    text = string.format('%s (1/%d)', text, total)
  end
  return ' ' .. text .. ' '
end

local function refresh_title()
  if current and current.win and api.nvim_win_is_valid(current.win) then
    api.nvim_win_set_config(current.win, {
      title = { { title_text(current), 'TtyOfferTitle' } },
      title_pos = 'center',
    })
  end
end

local function event(pattern, entry, extra)
  local record = offers()._record(entry.id)
  local data = { id = entry.id, title = record and record.title or '', pid = record and record.pid or 0 }
  for k, v in pairs(extra or {}) do
    data[k] = v
  end
  api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

local show_next

-- Modes in which a window may take focus without eating what the user is
-- typing: not the command line, a hit-enter or confirm prompt, or the cmdwin.
local function can_show_now()
  local mode = api.nvim_get_mode()
  if mode.blocking then
    return false
  end
  local m = mode.mode
  if m:match('^c') or m:match('^r') or m:match('^no') then
    return false
  end
  return vim.fn.getcmdwintype() == ''
end

local function wait_for_mode()
  if waiting_for_mode then
    return
  end
  waiting_for_mode = true
  api.nvim_create_autocmd('ModeChanged', {
    group = api.nvim_create_augroup('ttyoffer.wait_mode', { clear = true }),
    callback = function()
      if can_show_now() then
        waiting_for_mode = false
        vim.schedule(show_next)
        return true
      end
    end,
  })
end

local function restore_mode(mode)
  if mode:match('^[it]') then
    vim.cmd.startinsert()
  else
    vim.cmd.stopinsert()
  end
end

--- Give focus back to the window and mode the user was in, if the prompt
--- window still has it. `done` runs once that is settled.
--- @param entry ttyoffer.Shown
--- @param done fun()
local function give_back_focus(entry, done)
  if entry.focus_returned or not entry.win or api.nvim_get_current_win() ~= entry.win then
    -- Returned already, or the user went elsewhere: leave them there.
    entry.focus_returned = true
    done()
    return
  end
  entry.focus_returned = true
  local mode = entry.prev_mode or 'n'
  local leaving_terminal = api.nvim_get_mode().mode == 't'
  if entry.prev_win and api.nvim_win_is_valid(entry.prev_win) then
    pcall(api.nvim_set_current_win, entry.prev_win)
  else
    vim.cmd.wincmd('p')
  end
  if not leaving_terminal then
    restore_mode(mode)
    done()
    return
  end
  -- Neovim leaves Terminal mode on its next turn; a mode set before that
  -- would be undone.
  local settled = false
  local function settle()
    if settled then
      return
    end
    settled = true
    restore_mode(mode)
    done()
  end
  api.nvim_create_autocmd('ModeChanged', {
    pattern = 't:*',
    once = true,
    callback = function()
      vim.schedule(settle)
    end,
  })
  vim.defer_fn(settle, 200)
end

--- Take the window down. A dismissal hangs the command's terminal up.
--- @param entry ttyoffer.Shown
--- @param reason string
local function close(entry, reason)
  if entry.closing then
    return
  end
  entry.closing = true
  if reason == 'dismissed' then
    host.notify('ttyoffer_dismiss', entry.id)
  end
  give_back_focus(entry, function()
    if entry.win and api.nvim_win_is_valid(entry.win) then
      pcall(api.nvim_win_close, entry.win, true)
    end
    if entry.buf and api.nvim_buf_is_valid(entry.buf) then
      pcall(api.nvim_buf_delete, entry.buf, { force = true })
    end
    if current == entry then
      current = nil
    end
    offers()._set_state(entry.id, 'closed')
    event('TtyOfferClose', entry, { reason = reason })
    -- The next prompt in line starts from the restored place, so that its
    -- own close returns there too.
    vim.schedule(show_next)
  end)
end

local WINHIGHLIGHT =
  'Normal:TtyOfferNormal,NormalFloat:TtyOfferNormal,FloatBorder:TtyOfferBorder,FloatTitle:TtyOfferTitle'

-- A scratch buffer made ahead of the next prompt: one less thing to do
-- between the child's first byte and the window.
local spare_buf = nil --- @type integer?

--- A scratch buffer: no swap file, unlisted; a terminal keeps no undo; wiped
--- when its window closes.
local function new_buffer()
  local buf = api.nvim_create_buf(false, true)
  api.nvim_set_option_value('bufhidden', 'wipe', { buf = buf })
  return buf
end

local function take_buffer()
  local buf = spare_buf
  spare_buf = nil
  vim.schedule(function()
    if not spare_buf then
      spare_buf = new_buffer()
    end
  end)
  if buf and api.nvim_buf_is_valid(buf) and api.nvim_buf_line_count(buf) == 1 then
    return buf
  end
  return new_buffer()
end

local function open(entry)
  entry.prev_win = api.nvim_get_current_win()
  entry.prev_mode = api.nvim_get_mode().mode
  local buf = take_buffer()
  entry.buf = buf
  current = entry
  local config = geometry()
  config.style = 'minimal'
  config.border = cfg().float.border
  config.zindex = 200
  config.title = { { title_text(entry), 'TtyOfferTitle' } }
  config.title_pos = 'center'
  entry.win = api.nvim_open_win(buf, true, config)
  api.nvim_set_option_value('winhighlight', WINHIGHLIGHT, { win = entry.win })
  -- The window exists first, so the terminal starts at its final size.
  local id = entry.id
  entry.chan = api.nvim_open_term(buf, {
    force_crlf = false,
    on_input = function(_, _, _, data)
      host.notify('ttyoffer_input', id, data)
    end,
  })
  api.nvim_chan_send(entry.chan, entry.first)
  entry.first = ''
  offers()._set_state(id, 'shown')
  vim.cmd.startinsert()
  event('TtyOfferPresent', entry)
  -- Now the host may relay the rest: the kernel has held it until here.
  host.notify('ttyoffer_attach', id, config.height, config.width)

  local key = cfg().keys.dismiss
  if key then
    vim.keymap.set('t', key, function()
      -- Not from inside terminal-mode input handling: deleting the terminal
      -- buffer there pulls it from under Neovim's own feet.
      vim.schedule(function()
        close(entry, 'dismissed')
      end)
    end, { buffer = buf, desc = 'Decline this ttyoffer prompt' })
  end
  api.nvim_create_autocmd('WinClosed', {
    pattern = tostring(entry.win),
    once = true,
    callback = function()
      vim.schedule(function()
        close(entry, 'dismissed')
      end)
    end,
  })
end

show_next = function()
  if current or #queue == 0 or waiting_for_pause then
    return
  end
  if not can_show_now() then
    wait_for_mode()
    return
  end
  if until_pause() > 0 then
    -- The user is typing into the editor: those keys stay the editor's.
    waiting_for_pause = true
    after_pause(function()
      waiting_for_pause = false
      show_next()
    end)
    return
  end
  local entry = table.remove(queue, 1)
  local ok, err = pcall(open, entry)
  if not ok then
    host.tell_once('open:' .. tostring(err), 'cannot open the prompt window: ' .. tostring(err))
    close(entry, 'dismissed')
  end
end

local function find(id)
  if current and current.id == id then
    return current, nil
  end
  for i, entry in ipairs(queue) do
    if entry.id == id then
      return entry, i
    end
  end
end

--- Events from the host, in the order it sent them.
function M.on_host_event(kind, id, data, prompt)
  if kind == 'present' then
    -- data is the first write, prompt the text the screen asks.
    table.insert(queue, { id = id, first = data, prompt = prompt or '' })
    offers()._set_state(id, 'queued')
    if current then
      refresh_title()
    else
      show_next()
    end
  elseif kind == 'output' then
    if current and current.id == id and current.chan then
      api.nvim_chan_send(current.chan, data)
      if M.trace then
        M.trace(id, data)
      end
    end
  elseif kind == 'prompt' then
    local entry = find(id)
    if entry then
      entry.prompt = data or ''
      if entry == current then
        refresh_title()
      end
    end
  elseif kind == 'released' then
    offers()._on_released(data)
  elseif kind == 'turned_away' then
    -- A spare terminal, given to no command, was written to: most likely a
    -- pinentry that gpg-agent's ssh support sent to the terminal the agent
    -- was started from, an offer long ended whose number the spare now has.
    require('ttyoffer.host').tell_once(
      'turned_away',
      (
        '%s wrote to a terminal no command was given, and was hung up. If that was a pinentry '
        .. 'for ssh, gpg-agent asks on the terminal it was started from, which is closed; '
        .. '`gpg-connect-agent updatestartuptty /bye` in your terminal makes it ask there.'
      ):format(#data > 0 and table.concat(data, ', ') or 'A program')
    )
  elseif kind == 'closed' then
    local entry, index = find(id)
    if not entry then
      return
    end
    if index then
      -- The command ended while its prompt waited: nothing left to answer.
      table.remove(queue, index)
      offers()._set_state(id, 'closed')
      event('TtyOfferClose', entry, { reason = 'exited' })
      refresh_title()
      return
    end
    local record = offers()._record(id)
    local code = record and record.code
    if entry.chan then
      local text = code and string.format('\r\n[Process exited %d]', code) or '\r\n[Process exited]'
      pcall(api.nvim_chan_send, entry.chan, text)
    end
    -- The window stays a moment to show the end. Focus returns once the user
    -- has stopped typing: keys meant for the prompt are dropped with it,
    -- keys typed after the pause are the editor's.
    after_pause(function()
      give_back_focus(entry, function()
        vim.defer_fn(function()
          close(entry, 'exited')
        end, cfg().float.close_delay)
      end)
    end)
  end
end

--- Decline the prompt on screen (or the given offer, shown or queued).
--- @param id integer?
--- @return boolean whether anything was dismissed
function M.dismiss(id)
  local entry, index = current, nil
  if id then
    entry, index = find(id)
  end
  if not entry then
    return false
  end
  if index then
    table.remove(queue, index)
    entry.closing = true
    host.notify('ttyoffer_dismiss', entry.id)
    offers()._set_state(entry.id, 'closed')
    event('TtyOfferClose', entry, { reason = 'dismissed' })
    refresh_title()
    return true
  end
  close(entry, 'dismissed')
  return true
end

--- The editor was resized: re-center the window, tell the pty its size.
function M.on_resized()
  local height, width = M.size()
  host.notify('ttyoffer_resize_armed', height, width)
  if current and current.win and api.nvim_win_is_valid(current.win) then
    local config = geometry()
    api.nvim_win_set_config(current.win, config)
    host.notify('ttyoffer_resize', current.id, config.height, config.width)
  end
end

--- The host died: every window goes, the commands carry on without a tty.
function M.host_lost()
  for _, entry in ipairs(queue) do
    entry.closing = true
    offers()._set_state(entry.id, 'closed')
    event('TtyOfferClose', entry, { reason = 'host exited' })
  end
  queue = {}
  if current then
    close(current, 'host exited')
  end
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
