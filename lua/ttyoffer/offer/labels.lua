-- What the editor says of a prompt: the command's title, the window's title
-- and its border's foot, and the message that names a declined storm of
-- questions. Text only: the queue (offer/prompts.lua) decides when each is
-- shown. Every piece a command gave passes through shared/title.lua.
local M = {}

local config = require('ttyoffer.config')
local records = require('ttyoffer.offer.records')
local title = require('ttyoffer.shared.title')

-- Room for the screen's question in a window's title or a message.
local QUESTION_LIMIT = 60

-- The user's own ways to be asked once for many commands, named when a
-- storm of questions is declined: nothing here keeps a secret to answer the
-- next one.
M.ASKED_ONCE = "to be asked once: ssh-add (ssh-agent), gpg-agent's cache (default-cache-ttl)"

--- The command's title, computed once, when first asked for.
--- @param id integer
--- @return string
function M.command(id)
  local record = records.get(id)
  if not record then
    return 'offer ' .. id
  end
  record.title = record.title or title.of_command(record.cmd)
  return record.title
end

--- The window's title: the command, what its screen asks, and its place
--- among the prompts on screen or waiting.
--- @param id integer
--- @param question string '' when the screen asks nothing yet
--- @param total integer prompts shown or waiting, this one included
--- @return string
function M.title(id, question, total)
  local text = M.command(id)
  if question ~= '' then
    text = text .. ' — ' .. title.sanitize(question, QUESTION_LIMIT)
  end
  if total > 1 then
    text = string.format('%s (1/%d)', text, total)
  end
  return text
end

--- What the border's foot says: how many wait behind the window, and the
--- key that declines them all with it.
--- @param waiting integer
--- @return string
function M.footer(waiting)
  if waiting == 0 then
    return ''
  end
  local key = config.current.keys.dismiss_all
  local text = string.format('%d more waiting', waiting)
  return key and string.format('%s · %s declines all', text, key) or text
end

--- The one message for a storm declined at once: how many, and each
--- different command and question once.
--- @param prompts ttyoffer.Prompt[]
--- @return string
function M.declined(prompts)
  local what, seen = {}, {}
  for _, prompt in ipairs(prompts) do
    local name = M.command(prompt.id)
    if prompt.question ~= '' then
      name = name .. ' "' .. title.sanitize(prompt.question, QUESTION_LIMIT) .. '"'
    end
    if not seen[name] then
      seen[name] = true
      table.insert(what, name)
    end
  end
  return string.format(
    'declined %d question%s, and the same again in this burst: %s',
    #prompts,
    #prompts == 1 and '' or 's',
    table.concat(what, ', ')
  )
end

return M
