-- The run object: one program in a pane of its own, shaped like
-- vim.system()'s (id, pid, wait, kill, write, close, is_closing), with a
-- backend behind it (backends.lua: what runs the program) and a kind
-- (kinds/: what kind of session it is, if any). It asks them; it never
-- branches on either. Its end is one RunResult (ending.lua): what wait()
-- returns, on_exit gets and TtyRunExit carries (with the run's id).
local M = {}

local api = vim.api
local ending = require('ttyoffer.runs.ending')
local notify = require('ttyoffer.shared.notify')
local pane_ui = require('ttyoffer.runs.pane')
local rules = require('ttyoffer.runs.rules')
local title_rule = require('ttyoffer.shared.title')

--- @class ttyoffer.Run
--- @field id integer
--- @field pid integer? once started
--- @field title string
--- @field argv string[]
--- @field backend 'host'|'job' the name of `_backend`
--- @field kind ttyoffer.RunKind what kind of session it is, if any (kinds/)
--- @field session string? a session's name (after the host's sanitiser), once the host tells it
--- @field where string? where the session is (another machine's destination)
--- @field prepared table? what its kind prepared before the pane opened
--- @field started integer os.time() of the start
--- @field result ttyoffer.RunResult? once it has ended
--- @field closing boolean
--- @field pane ttyoffer.Pane
--- @field private _backend ttyoffer.RunBackend
--- @field private _on_exit function?
--- @field private _forget fun() takes it out of the editor's runs
--- @field private _reattach function? attaches again after a dropped connection
--- @field private _typing_secret boolean? keys were typed with echo off just before the end
--- @field private _timed_out boolean?
local Run = {}
Run.__index = Run

--- A new run (not started, its pane not open yet).
--- @param fields table
--- @return ttyoffer.Run
function M.new(fields)
  return setmetatable(fields, Run)
end

--- A few words on how the run stands: running, exited 3, killed by SIGTERM,
--- not found, closed.
--- @return string
function Run:describe()
  local r = self.result
  if not r then
    return self.pid and 'running' or 'starting'
  end
  return ending.describe(r)
end

--- Wait for the end, serving the editor's events: the RunResult. As
--- vim.system's wait(): past `timeout` ms the program is killed (SIGKILL)
--- and the code is 124.
--- @param timeout integer?
--- @return ttyoffer.RunResult
function Run:wait(timeout)
  local limit = timeout or vim._maxint
  if not vim.wait(limit, function()
    return self.result ~= nil
  end) then
    self._timed_out = true
    self:kill('KILL')
    vim.wait(1000, function()
      return self.result ~= nil
    end)
    if not self.result then
      self:_ended(ending.made(124, 'signal', 'timed out', 'KILL'))
    end
  end
  return self.result --[[@as ttyoffer.RunResult]]
end

--- Send a signal (a number, or a name: 'TERM', 'sigterm', 'SIGTERM') to the
--- program while it runs.
--- @param sig integer|string?
function Run:kill(sig)
  local number = sig or 15
  if type(sig) == 'string' then
    number = rules.signals[sig:upper():gsub('^SIG', '')]
  end
  if type(number) ~= 'number' or number < 1 or number % 1 ~= 0 then
    error(
      ('(ttyoffer) kill(): %s is not a signal; use a number or one of: %s'):format(
        vim.inspect(sig),
        table.concat(vim.fn.sort(vim.tbl_keys(rules.signals)), ', ')
      ),
      2
    )
  end
  if self.result then
    return
  end
  self._backend.signal(self, number)
end

--- Type into the program's terminal, as a user would (vim.system()'s
--- write(): a string, or a list of lines each ended by a newline; nil
--- does nothing, a terminal has no end of input to close).
--- @param data string|string[]?
function Run:write(data)
  if type(data) == 'table' then
    data = table.concat(data, '\n') .. '\n'
  end
  if data ~= nil and type(data) ~= 'string' then
    error(('(ttyoffer) write(): a string or a list of strings, got %s'):format(type(data)), 2)
  end
  if data and not self.result then
    self._backend.write(self, data)
  end
end

--- Close the pane; a program still running is hung up (then killed 200 ms
--- later) and the run ends with 129.
function Run:close()
  if self.closing then
    return
  end
  self.closing = true
  self._backend.close(self)
  pane_ui.close(self.pane)
  if self.result then
    self._forget()
  end
end

--- @return boolean
function Run:is_closing()
  return self.closing or self.result ~= nil
end

--- What closing the pane would do to a program still running (nil when
--- nothing runs): the close key asks it first.
--- @return string?
function Run:close_question()
  if self.result then
    return nil
  end
  return self.kind.close_question(self)
end

--- The end, told once: the pane, the bar, on_exit, User TtyRunExit.
--- @param result ttyoffer.RunResult
function Run:_ended(result)
  if self.result then
    return
  end
  if self._timed_out then
    result = vim.tbl_extend('force', result, { code = 124 })
  end
  if (result.said or '') == '' then -- one the editor made: the host's words for it
    result = vim.tbl_extend('force', result, { said = ending.describe(result) })
  end
  self.result = result
  if self.closing then
    self._forget()
  end
  if pane_ui.valid(self.pane) then
    local line = self:describe()
    if result.message ~= '' then
      line = line .. ': ' .. title_rule.sanitize(result.message, 200)
    end
    if self._backend.says_end then
      pane_ui.send(self.pane, '\r\n[' .. line .. ']\r\n')
    end
    local failed = result.reason ~= 'exited' or result.code ~= 0
    pane_ui.set_state(self.pane, self.id, self.title, self:describe(), failed)
    pane_ui.finished(self.pane, self._typing_secret)
    if result.reason == 'disconnected' and self._reattach then
      -- The program goes on there: r attaches again, in a new pane.
      local reattach = self._reattach
      vim.keymap.set('n', 'r', function()
        self:close()
        reattach()
      end, { buffer = self.pane.buf, nowait = true, desc = 'ttyoffer: re-attach to the remote session' })
    end
  end
  if self._on_exit then
    -- A copy each: what one handler changes, the next does not see.
    local ok, err = pcall(self._on_exit, vim.deepcopy(result))
    if not ok then
      notify.notice('on_exit of run ' .. self.id .. ' failed: ' .. tostring(err), vim.log.levels.ERROR)
    end
  end
  api.nvim_exec_autocmds('User', {
    pattern = 'TtyRunExit',
    modeline = false,
    data = vim.tbl_extend('force', result, { id = self.id }),
  })
end

return M
