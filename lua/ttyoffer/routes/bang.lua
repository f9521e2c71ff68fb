-- :Bang {cmd}: the asynchronous :!{cmd}, with the offer.
local M = {}

local api = vim.api
local config = require('ttyoffer.config')
local expand = require('ttyoffer.routes.expand')
local host = require('ttyoffer.host')
local notify = require('ttyoffer.shared.notify')
local prompts = require('ttyoffer.offer.prompts')
local spawners = require('ttyoffer.routes.spawners')

-- The previous command, which `!` in a command stands for (as in :!).
local previous = nil --- @type string?

local function err(msg)
  notify.answer(msg, vim.log.levels.ERROR)
end

--- Collects a job's stdout and stderr as :! shows them: one stream of lines
--- in arrival order.
local function collector()
  local lines, partial = {}, { stdout = '', stderr = '' }
  local function on_data(_, data, name)
    -- jobstart() splits on newlines; the last item continues in the next call.
    data[1] = partial[name] .. data[1]
    for i = 1, #data - 1 do
      table.insert(lines, (data[i]:gsub('\r$', '')))
    end
    partial[name] = data[#data]
  end
  local function finish()
    for _, name in ipairs({ 'stdout', 'stderr' }) do
      if partial[name] ~= '' then
        table.insert(lines, partial[name])
        partial[name] = ''
      end
    end
    return lines
  end
  return on_data, finish
end

--- Show what :! shows when a command has ended: the command, its output,
--- "shell returned N" when it failed; then tell TtyOfferBangDone.
local function report(cmd, job, code, lines)
  local chunks = { { ':!' .. cmd .. '\n' } }
  if #lines > 0 then
    table.insert(chunks, { table.concat(lines, '\n') .. '\n' })
  end
  if code ~= 0 then
    table.insert(chunks, { string.format('\nshell returned %d', code) })
  end
  chunks[#chunks][1] = chunks[#chunks][1]:gsub('\n$', '')
  api.nvim_echo(chunks, true, {})
  api.nvim_exec_autocmds('User', {
    pattern = 'TtyOfferBangDone',
    modeline = false,
    data = { cmd = cmd, code = code, job = job, output = lines },
  })
end

--- After `bang.notice_delay`, say that the command is still running. Returns
--- the function that calls it off.
local function running_notice(cmd, job)
  local timer = assert(vim.uv.new_timer())
  local function stop()
    if not timer:is_closing() then
      timer:stop()
      timer:close()
    end
  end
  timer:start(config.current.bang.notice_delay, 0, function()
    stop()
    vim.schedule(function()
      if vim.fn.jobwait({ job }, 0)[1] == -1 then
        -- Cut to the command line: a wrapped notice would stop the user with
        -- a hit-enter prompt under a prompt window. What it says first, the
        -- command after: the cut takes the command's tail.
        local text = notify.fit(string.format('(running, pid %d) :!%s', vim.fn.jobpid(job), cmd), '…')
        api.nvim_echo({ { text, 'MoreMsg' } }, false, {})
      end
    end)
  end)
  return stop
end

--- `!` in `cmd` replaced by the previous command, `\!` by `!`, as :! does.
--- @param cmd string
--- @return string
function M.with_previous(cmd)
  return (
    cmd:gsub('(\\?)!', function(escape)
      if escape ~= '' then
        return '!'
      end
      if not previous then
        error('E34: No previous command', 0)
      end
      return previous
    end)
  )
end

--- v:shell_error, which only the editor's own shell calls set.
--- @param code integer
local function set_shell_error(code)
  require('ttyoffer.routes.synchronous').set_shell_error(math.max(0, math.min(code, 255)))
end

--- Start `cmd` (expanded already) and report it when it ends.
--- @return integer? job id
local function start(cmd)
  local on_data, finish = collector()
  local stop_notice = function() end
  local started, job
  started, job = pcall(spawners.jobstart, cmd, {
    on_stdout = on_data,
    on_stderr = on_data,
    stdin = 'null',
    on_exit = function(_, code)
      stop_notice()
      local lines = finish()
      set_shell_error(code)
      -- The output may raise a hit-enter prompt, under which the editor
      -- serves nothing: the command's prompt window goes first.
      prompts.after_window_of(job, function()
        report(cmd, job, code, lines)
      end)
    end,
  })
  if started and job == 0 then
    err(string.format('Bang: invalid command %q', cmd))
    return nil
  elseif not started or job < 0 then
    local why = started and 'not executable' or tostring(job):gsub('^Vim:', '')
    err(string.format("Bang: cannot start 'shell' (%s): %s; check :set shell?", vim.o.shell, why))
    return nil
  end
  stop_notice = running_notice(cmd, job)
  return job
end

--- Whether the host is on its way, so that a command the user started now
--- is better off waiting for it a moment: the first moments after startup,
--- or `nvim +'Bang …'`, which runs before the host is started at all.
local function host_on_its_way()
  return config.current.enabled and (host.get_state() == 'starting' or host.get_state() == 'stopped')
end

--- Run `args` like :!{args}, without blocking the editor.
--- @param args string the command as typed
--- @param opts {typed: boolean?}? typed: it came from `:!` on the command line
--- @return integer? job id; nil when it failed or waits for the host
function M.run(args, opts)
  local name = (opts and opts.typed) and ':!' or 'Bang'
  if vim.trim(args or '') == '' then
    err('Bang: no command given; usage: :Bang {cmd} (see :help :Bang)')
    return nil
  end
  -- Expanded now, where the user is: the buffer may change while it waits.
  local ok, cmd = pcall(function()
    return M.with_previous(expand.expand(args))
  end)
  if not ok then
    err(name .. ': ' .. tostring(cmd))
    return nil
  end
  previous = cmd
  if host_on_its_way() then
    if host.get_state() == 'stopped' then
      host.start()
      host.refill()
    end
    host.when_ready(config.current.startup_wait, function(ready)
      if not ready then
        notify.notice(
          string.format('the host was not ready: ran without a prompt window: %s', cmd),
          vim.log.levels.WARN,
          host.get_error() or 'see :checkhealth ttyoffer'
        )
      end
      start(cmd)
    end)
    return nil
  end
  return start(cmd)
end

return M
