-- The prompt window itself: a centered float holding a terminal that shows
-- what the command wrote and sends back what the user types. It knows
-- nothing of the host or of other prompts: callers pass what to do with
-- input and with a decline.
local M = {}

local api = vim.api
local config = require('ttyoffer.config')
local highlights = require('ttyoffer.shared.highlights')
local hitenter = require('ttyoffer.offer.hitenter')
local layout = require('ttyoffer.shared.layout')
local term_channel = require('ttyoffer.shared.term_channel')

local WINHIGHLIGHT =
  'Normal:TtyOfferNormal,NormalFloat:TtyOfferNormal,FloatBorder:TtyOfferBorder,FloatTitle:TtyOfferTitle'

--- @class ttyoffer.Window
--- @field win integer
--- @field buf integer
--- @field chan integer
--- @field unguard fun() stops answering hit-enter prompts over it

-- A scratch buffer made ahead of the next prompt: one less thing to do
-- between the command's first byte and the window.
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

local function title_config(text)
  return { { ' ' .. text .. ' ', 'TtyOfferTitle' } }
end

local function footer_config(text)
  return text ~= '' and { { ' ' .. text .. ' ', 'TtyOfferBorder' } } or ''
end

--- Open the window, focused, in Terminal mode, showing `first`.
--- `on_gone` runs the moment the window is closed by anyone (a plugin closing
--- windows, the user), before `on_dismiss`, which is scheduled;
--- `on_dismiss_all`, scheduled too, when the user declines it with the key
--- that declines the prompts waiting behind it as well.
--- @param opts {title: string, footer: string, first: string, on_input: fun(data: string),
---   on_dismiss: fun(by_key: boolean), on_dismiss_all: fun(), on_gone: fun()?}
--- @return ttyoffer.Window, integer height, integer width
function M.open(opts)
  highlights.define()
  local buf = take_buffer()
  local win_config = layout.geometry()
  win_config.style = 'minimal'
  win_config.border = config.current.float.border
  win_config.zindex = 200
  win_config.title = title_config(opts.title)
  win_config.title_pos = 'center'
  local win = api.nvim_open_win(buf, true, win_config)
  api.nvim_set_option_value('winhighlight', WINHIGHLIGHT, { win = win })
  if opts.footer ~= '' then
    M.set_footer({ win = win }, opts.footer)
  end
  -- The window exists first, so the terminal starts at its final size.
  local chan = term_channel.open(buf, opts.on_input)
  term_channel.send(chan, opts.first)
  vim.cmd.startinsert()

  -- Declined with the dismiss key: the user stopped typing for it on
  -- purpose, so their next keys (the Enter of a hit-enter prompt) are the
  -- editor's at once; any other way the window goes, they are dropped until
  -- a pause (on_gone).
  local by_key = false
  local function dismiss()
    -- Not from inside terminal-mode input handling: deleting the terminal
    -- buffer there pulls it from under Neovim's own feet.
    vim.schedule(function()
      opts.on_dismiss(by_key)
    end)
  end
  local key = config.current.keys.dismiss
  if key then
    vim.keymap.set('t', key, function()
      by_key = true
      dismiss()
    end, { buffer = buf, desc = 'Decline this ttyoffer prompt' })
  end
  local all_key = config.current.keys.dismiss_all
  if all_key then
    vim.keymap.set('t', all_key, function()
      by_key = true
      vim.schedule(opts.on_dismiss_all)
    end, { buffer = buf, desc = 'Decline this ttyoffer prompt and those waiting behind it' })
  end
  api.nvim_create_autocmd('WinClosed', {
    pattern = tostring(win),
    once = true,
    callback = function()
      if opts.on_gone and not by_key then
        pcall(opts.on_gone)
      end
      dismiss()
    end,
  })
  return { win = win, buf = buf, chan = chan, unguard = hitenter.guard(buf) }, win_config.height, win_config.width
end

-- How often, and how many times at most, whether the terminal shows the
-- first bytes is looked at before the window is taken as drawn all the same
-- (bytes that change nothing on screen, such as a lone cursor move). Counted
-- only while the editor serves its events: a blocked editor draws nothing.
local DRAWN_POLL_MS, DRAWN_POLLS = 5, 40

--- Run `fn` once the window is on the user's screen with the first bytes in
--- its terminal: Neovim's terminal takes sent bytes into its buffer on a
--- timer of its own (the buffer's changedtick moves then), and the screen is
--- redrawn after that. Never while the editor waits for the user at a
--- hit-enter prompt (a redraw there would wipe the message): once it is
--- back. Not at all when the window is gone first.
--- @param window ttyoffer.Window
--- @param fn fun()
function M.when_drawn(window, fn)
  local start = api.nvim_buf_is_valid(window.buf) and api.nvim_buf_get_changedtick(window.buf) or 0
  local polls = 0
  local timer = assert(vim.uv.new_timer())
  local function stop()
    if not timer:is_closing() then
      timer:stop()
      timer:close()
    end
  end
  timer:start(
    DRAWN_POLL_MS,
    DRAWN_POLL_MS,
    vim.schedule_wrap(function()
      if timer:is_closing() then
        return
      end
      if not (api.nvim_win_is_valid(window.win) and api.nvim_buf_is_valid(window.buf)) then
        return stop()
      end
      polls = polls + 1
      local filled = api.nvim_buf_get_changedtick(window.buf) > start
      if (filled or polls >= DRAWN_POLLS) and not api.nvim_get_mode().blocking then
        stop()
        vim.cmd.redraw()
        fn()
      end
    end)
  )
end

--- @param window ttyoffer.Window
--- @param data string
function M.send(window, data)
  term_channel.send(window.chan, data)
end

--- @param window ttyoffer.Window
--- @param text string already sanitized
function M.set_title(window, text)
  if api.nvim_win_is_valid(window.win) then
    api.nvim_win_set_config(window.win, { title = title_config(text), title_pos = 'center' })
  end
end

--- @param window ttyoffer.Window
--- @param text string already sanitized; '' for none
function M.set_footer(window, text)
  if api.nvim_win_is_valid(window.win) then
    -- A border of "none" has no room for a footer (Neovim refuses one).
    pcall(api.nvim_win_set_config, window.win, { footer = footer_config(text), footer_pos = 'center' })
  end
end

--- Center it again for the editor's new size.
--- @param window ttyoffer.Window
--- @return integer height, integer width
function M.recenter(window)
  local geometry = layout.geometry()
  if api.nvim_win_is_valid(window.win) then
    api.nvim_win_set_config(window.win, geometry)
  end
  return geometry.height, geometry.width
end

--- @param window ttyoffer.Window
--- @return boolean
function M.has_focus(window)
  return api.nvim_get_current_win() == window.win
end

--- Close the window and wipe its buffer (and with it the terminal's text).
--- @param window ttyoffer.Window
function M.close(window)
  window.unguard()
  if api.nvim_win_is_valid(window.win) then
    pcall(api.nvim_win_close, window.win, true)
  end
  term_channel.wipe(window.buf)
end

return M
