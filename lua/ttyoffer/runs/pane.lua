-- A run's pane: a window of its own (a bottom split, a centered float or a
-- tab) holding a terminal that shows the program and sends back what the user
-- types, with a bar (winbar) that says what runs, how it stands, and Close.
-- It knows nothing of the host: callers pass what to do with input, a new
-- size and the pane going away.
local M = {}

local api = vim.api
local config = require('ttyoffer.config')
local highlights = require('ttyoffer.shared.highlights')
local layout = require('ttyoffer.shared.layout')
local term_channel = require('ttyoffer.shared.term_channel')

--- @class ttyoffer.Pane
--- @field win integer
--- @field buf integer
--- @field chan integer

local CLOSE_FUNCTION = 'TtyOfferRunClose'

-- What the bar's Close does, by run id: the caller's on_close (the pane
-- knows no runs; it only hands the click back).
local closers = {}

--- The Vimscript function the bar's Close calls (a click function must be
--- one); the run's id comes as its `minwid`.
local function define_close_function()
  if vim.fn.exists('*' .. CLOSE_FUNCTION) == 1 then
    return
  end
  vim.cmd(([[
    function! %s(id, clicks, button, mods) abort
      call luaeval("require('ttyoffer.runs.pane').close_clicked(_A)", a:id)
    endfunction
  ]]):format(CLOSE_FUNCTION))
end

--- The bar's Close was clicked in the pane of run `id`.
--- @param id integer
function M.close_clicked(id)
  local close = closers[id]
  if close then
    close()
  end
end

--- @param placement string
--- @param buf integer
--- @return integer win
local open_window
function open_window(placement, buf)
  if placement == 'float' then
    local geometry = layout.geometry()
    geometry.border = config.current.float.border
    return api.nvim_open_win(buf, true, geometry)
  elseif placement == 'tab' then
    vim.cmd.tabnew()
    local scratch = api.nvim_get_current_buf()
    api.nvim_win_set_buf(0, buf)
    if scratch ~= buf and api.nvim_buf_is_valid(scratch) then
      api.nvim_buf_delete(scratch, { force = true })
    end
    return api.nvim_get_current_win()
  end
  -- A split along the whole bottom of the editor, as :botright split; where
  -- there is no room left for one (E36), a tab of its own.
  local ok, win =
    pcall(api.nvim_open_win, buf, true, { split = 'below', win = -1, height = config.current.runs.height })
  if ok then
    return win
  end
  return open_window('tab', buf)
end

--- `text` as literal statusline text.
--- @param text string
local function literal(text)
  return (text:gsub('%%', '%%%%'))
end

--- How the close key is reached from where the user is: while the program
--- runs the pane is in Terminal mode, where the key goes to the program.
--- @param running boolean
--- @return string
local function close_hint(running)
  local key = config.current.keys.run_close
  if not key then
    return ''
  end
  return (running and '<C-\\><C-n> then ' or '') .. key .. ' closes '
end

--- The bar: `title` (already sanitized), the state, how to close, and Close.
--- @param id integer
--- @param title string
--- @param state string
--- @param state_group string highlight group of the state
local function bar(id, title, state, state_group)
  return table.concat({
    '%#TtyOfferRunTitle# ',
    literal(title),
    ' %#',
    state_group,
    '# ',
    literal(state),
    ' %*%=',
    literal(close_hint(state_group == 'TtyOfferRunRunning')),
    '%#TtyOfferRunClose#%',
    tostring(id),
    '@',
    CLOSE_FUNCTION,
    '@ Close %X%*',
  })
end

--- The text area of a window: what a terminal shown there gets (the bar
--- takes a line; nvim_win_get_height() counts it).
--- @param win integer
--- @return integer rows, integer cols
local function text_area(win)
  local info = vim.fn.getwininfo(win)[1]
  return info.height, info.width - info.textoff
end

--- Open the pane, focused, in Terminal mode. With `on_input` its terminal is
--- a channel the caller feeds (M.send); without, the caller starts a terminal
--- job in the pane's window itself.
--- `close_question` says what closing would do to a program still running
--- (nil when nothing runs): the close key then asks first, so one stray key
--- never ends a program.
--- @param opts {id: integer, title: string, placement: string, on_input: fun(data: string)?, on_close: fun(),
---   close_question: (fun(): string?)?}
--- @return ttyoffer.Pane, integer rows, integer cols
function M.open(opts)
  highlights.define()
  define_close_function()
  local buf = api.nvim_create_buf(true, true)
  -- :q hides the pane and the program goes on (as with :terminal); wiping
  -- the buffer (Close, :bwipeout, :TtyRun close) ends it.
  api.nvim_set_option_value('bufhidden', 'hide', { buf = buf })
  local win = open_window(opts.placement, buf)
  api.nvim_set_option_value('winbar', bar(opts.id, opts.title, 'starting', 'TtyOfferRunRunning'), { win = win })
  pcall(api.nvim_buf_set_name, buf, ('ttyrun://%d/%s'):format(opts.id, opts.title))
  -- The window exists first, so the terminal starts at its final size.
  local chan = 0
  if opts.on_input then
    chan = term_channel.open(buf, opts.on_input)
  end
  vim.b[buf].ttyoffer_run = opts.id
  local key = config.current.keys.run_close
  if key then
    vim.keymap.set('n', key, function()
      -- Not from inside the mapping's own buffer handling.
      vim.schedule(function()
        local question = opts.close_question and opts.close_question()
        if question and vim.fn.confirm(question, '&Close\n&Keep', 2, 'Question') ~= 1 then
          return
        end
        opts.on_close()
      end)
    end, { buffer = buf, desc = 'Close this ttyoffer run (asks first while its program runs)' })
  end
  closers[opts.id] = opts.on_close
  api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      closers[opts.id] = nil
      opts.on_close()
    end,
  })
  if opts.on_input then
    vim.cmd.startinsert()
  end
  local rows, cols = text_area(win)
  return { win = win, buf = buf, chan = chan }, rows, cols
end

--- The program ended: a pane the user is typing into leaves Terminal mode,
--- so that its keys (`q`, scrolling, search) are Normal mode's at once
--- instead of going to a terminal nothing reads any more. The keys still
--- being typed were meant for the program: they are dropped until the user
--- pauses (as when a prompt window goes), and to the end of their line when
--- they were a secret (typed into a terminal with echo off), so none
--- becomes a Normal-mode or Ex command, a history entry or a register.
--- @param pane ttyoffer.Pane
--- @param secret boolean?
function M.finished(pane, secret)
  if api.nvim_get_current_win() == pane.win and api.nvim_get_mode().mode == 't' then
    require('ttyoffer.offer.typing').drop_typed_ahead(secret)
    vim.cmd.stopinsert()
  end
end

--- @param pane ttyoffer.Pane
--- @param data string
function M.send(pane, data)
  term_channel.send(pane.chan, data)
end

--- Show the run's state in the bar of every window showing the pane.
--- @param pane ttyoffer.Pane
--- @param id integer
--- @param title string
--- @param state string
--- @param failed boolean|nil nil while it runs
function M.set_state(pane, id, title, state, failed)
  local group = failed == nil and 'TtyOfferRunRunning' or (failed and 'TtyOfferRunFailed' or 'TtyOfferRunExited')
  local text = bar(id, title, state, group)
  for _, win in ipairs(vim.fn.win_findbuf(pane.buf)) do
    pcall(api.nvim_set_option_value, 'winbar', text, { win = win })
  end
end

--- The size of the pane's terminal: its smallest window's, as Neovim sizes it.
--- @param pane ttyoffer.Pane
--- @return integer? rows, integer? cols
function M.size(pane)
  local rows, cols
  for _, win in ipairs(vim.fn.win_findbuf(pane.buf)) do
    local h, w = text_area(win)
    rows, cols = math.min(rows or h, h), math.min(cols or w, w)
  end
  return rows, cols
end

--- Wipe the buffer (and with it every window showing it).
--- @param pane ttyoffer.Pane
function M.close(pane)
  term_channel.wipe(pane.buf)
end

--- @param pane ttyoffer.Pane
--- @return boolean
function M.valid(pane)
  return api.nvim_buf_is_valid(pane.buf)
end

return M
