-- The demo's first step without a terminal (scripts/demo runs it in the
-- headless embedded Neovim when it has none): `:Bang git commit -S`,
-- pinentry-curses asking in the prompt window, the passphrase typed into it
-- as a user would, and the signature checked. Everything happens in
-- callbacks, so that the editor's own loop takes the typed keys. Prints what
-- happened, each line whole, on stdout; exits 1 if the commit was not
-- signed. Neovim's own messages are not among it: headless, it writes them
-- to stderr without ending their lines (a notice, `:!git commit …` and git's
-- output ran together with what this says), so scripts/demo keeps them
-- aside and shows them only on a failure. What :! printed is said here.
local PASSPHRASE = 'ttyoffer' -- the demo key's, as the welcome text says
local GIVE_UP_MS = 120000
vim.o.showmode = false -- no "-- TERMINAL --" among what it prints

local function say(text)
  io.stdout:write(text .. '\n')
end

local function fail(why)
  say('ttyoffer demo: ' .. why .. ' (see :checkhealth ttyoffer)')
  vim.cmd('cquit 1')
end

--- The prompt window's text, '' while there is none.
local function window_text()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
      return table.concat(lines, '\n')
    end
  end
  return ''
end

--- Lines of a command's output as its terminal gave them (CR LF).
local function say_output(lines)
  for _, line in ipairs(lines or {}) do
    line = line:gsub('\r$', '')
    if line:find('%S') then
      say('  ' .. line)
    end
  end
end

local function check_signature(result)
  say('git commit printed:')
  say_output(result.output)
  say('git log --show-signature -1:')
  local verify = vim.system({ 'git', 'log', '--show-signature', '-1', '--format=%s' }, { text = true }):wait()
  local output = (verify.stdout or '') .. (verify.stderr or '')
  for line in output:gmatch('[^\n]+') do
    say('  ' .. line)
  end
  if result.code == 0 and output:find('Good signature', 1, true) then
    say('signed: the commit verifies. Run ./scripts/demo from a terminal to try it yourself.')
    vim.cmd('qall!')
  end
  fail('the commit was not signed')
end

vim.api.nvim_create_autocmd('User', {
  pattern = 'TtyOfferBangDone',
  callback = function(args)
    vim.schedule(function()
      check_signature(args.data)
    end)
  end,
})
vim.defer_fn(function()
  fail('no signed commit after ' .. GIVE_UP_MS / 1000 .. ' s')
end, GIVE_UP_MS)

-- Look for pinentry's passphrase line in the window, then type.
local poll = assert(vim.uv.new_timer())
poll:start(
  50,
  50,
  vim.schedule_wrap(function()
    local text = window_text()
    if not text:find('Passphrase', 1, true) or poll:is_closing() then
      return
    end
    poll:close()
    say('pinentry asks in the prompt window:')
    for line in text:gmatch('[^\n]+') do
      if line:find('%S') then
        say('  ' .. line)
      end
    end
    say('typing the passphrase, then Enter')
    vim.api.nvim_input(PASSPHRASE .. '<CR>')
  end)
)

vim.cmd('Bang git commit -S -m "signed inside Neovim, without a terminal"')
