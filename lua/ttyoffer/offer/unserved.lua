-- A command asked while the editor served nothing (blocked in system(),
-- jobwait(), a plugin's busy loop): no window could open, so the host hung
-- it up rather than let it wait for good. Now that the editor is free the
-- user is told which command asked, what, and how to run it so that the
-- question can be answered.
local M = {}

local labels = require('ttyoffer.offer.labels')
local notify = require('ttyoffer.shared.notify')
local prompts = require('ttyoffer.offer.prompts')
local records = require('ttyoffer.offer.records')
local title = require('ttyoffer.shared.title')

-- Room for the question in the notice.
local QUESTION_LIMIT = 60

--- The command as a :Bang argument.
--- @param cmd string|string[]
--- @return string
function M.as_bang_argument(cmd)
  if type(cmd) == 'string' then
    return cmd
  end
  return table.concat(vim.tbl_map(vim.fn.shellescape, cmd), ' ')
end

--- @param offer_id integer
--- @param question string what the command's screen asked ('' if unknown)
function M.tell(offer_id, question)
  local record = records.get(offer_id)
  -- Its `present` came first, when the editor got free: no window for it.
  prompts.hung_up(offer_id)
  records.set_state(offer_id, 'closed')
  local what = labels.command(offer_id)
  local asked = question ~= '' and string.format(' "%s"', title.sanitize(question, QUESTION_LIMIT)) or ''
  local rerun = record and title.sanitize(M.as_bang_argument(record.rerun or record.cmd), math.huge) or nil
  -- The fix first: a notice is cut to one line, and the command's text
  -- and its question can be long (the whole is in :TtyOffer status).
  if rerun then
    notify.notice(string.format('editor busy, hung up: run :Bang %s to answer it (it asked%s)', rerun, asked))
  else
    notify.notice(string.format('editor busy, hung up: %s asked%s', what, asked))
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'TtyOfferUnserved',
    modeline = false,
    data = { id = offer_id, title = what, question = question, rerun = rerun },
  })
end

return M
