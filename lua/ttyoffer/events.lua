-- The host's notifications, one handler each, named as in ttyoffer.host.protocol
-- (the host calls `require('ttyoffer.events').<name>(...)`).
local M = {}

local held = require('ttyoffer.offer.held')
local host = require('ttyoffer.host')
local knock = require('ttyoffer.host.knock')
local notify = require('ttyoffer.shared.notify')
local prompts = require('ttyoffer.offer.prompts')
local records = require('ttyoffer.offer.records')
local title = require('ttyoffer.shared.title')

--- @param ptys {[1]: integer, [2]: string}[]
--- @param error string
function M.stock(ptys, error)
  host.add_stock(ptys, error)
end

--- @param offer_id integer
--- @param data string
function M.present(offer_id, data)
  -- Received: the editor is serving events, whether or not the window can
  -- open now (the host hangs up commands whose prompt is never received).
  host.notify('seen', offer_id)
  knock.served(offer_id)
  prompts.present(offer_id, data)
  -- Inside a plugin's own vim.wait() no key reaches its window: the held
  -- prompt's pump passes them while it is up.
  held.watch(offer_id)
end

--- @param offer_id integer
--- @param data string
function M.output(offer_id, data)
  prompts.output(offer_id, data)
  -- Taken (or dropped, for a window already gone): the host may read more.
  host.notify('ack', offer_id, #data)
end

--- @param offer_id integer
--- @param text string
function M.prompt(offer_id, text)
  prompts.question(offer_id, text)
end

--- @param offer_id integer
function M.closed(offer_id)
  held.forget(offer_id)
  prompts.closed(offer_id)
end

--- @param offer_ids integer[]
function M.released(offer_ids)
  records.released(offer_ids)
end

--- The command asked what the user declined for this burst
--- (|ttyoffer-storm|): the host hung it up with no window (the message of
--- the decline said so). If its `present` came first, its window goes.
--- @param offer_id integer
--- @param question string
function M.declined(offer_id, question) -- luacheck: no unused args
  held.forget(offer_id)
  prompts.hung_up(offer_id, 'declined')
  records.set_state(offer_id, 'closed')
end

--- A spare terminal, given to no command, was written to: most likely a
--- pinentry that gpg-agent's ssh support sent to the terminal the agent was
--- started from, an offer long ended whose number the spare now has.
--- @param writers string[] process names (theirs to choose: sanitized)
function M.turned_away(writers)
  local names = vim.tbl_map(title.sanitize, writers)
  notify.once(
    'turned_away',
    (
      '%s hung up: it asked on a terminal no command was given. If that was a pinentry '
      .. 'for ssh, gpg-agent asks on the terminal it was started from, which is closed; '
      .. '`gpg-connect-agent updatestartuptty /bye` in your terminal makes it ask there.'
    ):format(#names > 0 and table.concat(names, ', ') or 'A program')
  )
end

--- The keeper, which holds a copy of every terminal so that commands in
--- flight outlive the host, is gone and could not be replaced.
--- @param reason string
function M.no_keeper(reason)
  notify.once(
    'no_keeper',
    'no keeper: running commands are hung up if the host dies',
    nil,
    title.sanitize(reason) .. '; the host restarted after its death starts a keeper of its own'
  )
end

--- A run's program started.
--- @param run_id integer
--- @param pid integer
--- @param session string a persistent run's session name, or ''
function M.run_started(run_id, pid, session)
  require('ttyoffer.runs').started(run_id, pid, session)
end

--- @param run_id integer
--- @param data string
function M.run_output(run_id, data)
  require('ttyoffer.runs').output(run_id, data)
  host.notify('run_ack', run_id, #data)
end

--- @param run_id integer
--- @param result ttyoffer.RunResult
function M.run_exit(run_id, result)
  require('ttyoffer.runs').exited(run_id, result)
end

--- The answer to a request (host.request).
--- @param token integer
--- @param result any
--- @param error string
function M.answer(token, result, error)
  host.answered(token, result, error)
end

--- A remote list or kill answered after its request stopped waiting.
function M.remote_answer(dest, action, name, answer)
  require('ttyoffer.runs.kinds.remote').answered(dest, action, name, answer)
end

--- The command asked while the editor served nothing, and was hung up.
--- @param offer_id integer
--- @param question string
function M.unserved(offer_id, question)
  held.forget(offer_id)
  require('ttyoffer.offer.unserved').tell(offer_id, question)
end

return M
