-- The protocol between the editor and the Python host, declared once, in
-- ttyoffer_nvim/protocol.py: this file is written from it by
-- scripts/protocol_lua.py (a test holds it current; edit the declaration).
local M = {}

--- Host -> editor: notifications, each served by the function of the same
--- name in `ttyoffer.events`, with these arguments in this order.
M.events = {
  -- Freshly allocated spare ptys ({offer id, slave path} pairs), and why
  -- fewer than asked could be had ('' when all were).
  stock = { 'ptys', 'error' },
  -- The command wrote to its terminal for the first time: these bytes.
  present = { 'offer_id', 'data' },
  -- More bytes for a prompt whose window is attached.
  output = { 'offer_id', 'data' },
  -- The question the screen asks changed (for the window's title).
  prompt = { 'offer_id', 'text' },
  -- A presented offer's command ended; its window may show the end and go.
  closed = { 'offer_id' },
  -- These bound offers are over (their commands ended or were declined).
  released = { 'offer_ids' },
  -- Processes given no offer wrote to a spare terminal and were hung up.
  turned_away = { 'writers' },
  -- No keeper holds the terminals any more, and none could be started: why.
  no_keeper = { 'reason' },
  -- The command asked (the question on its screen, may be '') while the
  -- editor served nothing, and was hung up.
  unserved = { 'offer_id', 'question' },
  -- The command asked (the question on its screen, may be '') what the user
  -- declined for this burst (`dismiss_all`), and was hung up with no window.
  declined = { 'offer_id', 'question' },
  -- A run's program started, with this pid; session: a persistent run's
  -- session name (after the sanitiser), '' for others.
  run_started = { 'run_id', 'pid', 'session' },
  -- Bytes for a run's pane.
  run_output = { 'run_id', 'data' },
  -- A run's program ended, or could not start: {code, signal, signal_name,
  -- reason, message}.
  run_exit = { 'run_id', 'result' },
  -- The answer to an `ask`: the request's value, or why there is none.
  answer = { 'token', 'result', 'error' },
  -- A remote list or kill answered after its request stopped waiting: what it
  -- would have given.
  remote_answer = { 'dest', 'action', 'name', 'answer' },
}

--- Editor -> host: RPC methods ('ttyoffer_' .. name), their arguments, and
--- whether a value comes back (request) or not (notify).
M.methods = {
  status = { kind = 'request', args = {} },
  screen = { kind = 'request', args = { 'offer_id' } },
  refill = { kind = 'notify', args = { 'count', 'rows', 'cols' } },
  bind = { kind = 'notify', args = { 'offer_id', 'pid' } },
  dismiss = { kind = 'notify', args = { 'offer_id' } },
  -- The user declined these at once: each is hung up, and the same questions
  -- are declined with no window while the burst lasts.
  dismiss_all = { kind = 'notify', args = { 'offer_ids' } },
  -- Spare ptys the editor no longer wants (its stock shrinks after a burst).
  retire = { kind = 'notify', args = { 'offer_ids' } },
  attach = { kind = 'notify', args = { 'offer_id', 'rows', 'cols' } },
  input = { kind = 'notify', args = { 'offer_id', 'data' } },
  -- The window's terminal has taken `count` relayed bytes (flow control).
  ack = { kind = 'notify', args = { 'offer_id', 'count' } },
  resize = { kind = 'notify', args = { 'offer_id', 'rows', 'cols' } },
  resize_armed = { kind = 'notify', args = { 'rows', 'cols' } },
  -- This offer's `present` was received (window or not yet): the editor
  -- serves its events now; the next check of it starts from here.
  seen = { kind = 'notify', args = { 'offer_id' } },
  -- The offer's window is drawn, the command's first bytes in its terminal:
  -- the user sees the question, and a busy editor no longer hangs it up.
  drawn = { kind = 'notify', args = { 'offer_id' } },
  -- The offer's command has ended (one never bound to a pid, such as a
  -- synchronous system()'s).
  release_unbound = { kind = 'notify', args = { 'offer_id' } },
  -- A Unix socket the editor listens on: the host connects and writes the id
  -- of each offer it presents there (a line), after its `present`, so that a
  -- wait serving fast events only learns a prompt is on its way.
  knock = { kind = 'notify', args = { 'path' } },
  -- Milliseconds a command may wait on a question while the editor serves
  -- nothing before it is hung up (half between checks of the editor's mode,
  -- half for the answer); 0 or less: never.
  configure = { kind = 'notify', args = { 'blocked_ms' } },
  -- The PATH runs get: {path, source}, or {pending = true} while the login
  -- shell is being asked.
  run_path = { kind = 'request', args = {} },
  -- The sessions of one kind of run (`kind`: dtach, tmux or remote) where
  -- they are (`where`: nil for dtach, the tmux server's name, the ssh
  -- destination; `ssh`: the ssh command's words, for remote), read now:
  -- {sessions = [{name, created, ..., ended?}]}; remote waits `wait_ms` at
  -- most, else answers what is known with {stale = true, known_at} (the
  -- answer comes later as `remote_answer`); or {error}.
  run_sessions = { kind = 'request', args = { 'kind', 'where', 'ssh', 'wait_ms' } },
  -- End session `name` of one kind of run (`kind`, `where`, `ssh` as for
  -- run_sessions): {name, count} (dtach), {name, ended} (tmux, remote),
  -- {name, pending = true} (remote, told later as `remote_answer`), or
  -- {error} for a name that is not one.
  run_session_kill = { kind = 'request', args = { 'kind', 'where', 'name', 'ssh', 'wait_ms' } },
  -- What one kind of run makes before its pane opens, from the run's spec:
  -- for tmux, the pane of the program (or the one to re-attach to): {session,
  -- pane, attach (the argv that attaches to it), ended (how the program
  -- ended, when it had)}; {} for the other kinds; or {error}.
  run_prepare = { kind = 'request', args = { 'kind', 'spec' } },
  -- The local argv that checks what one kind of run needs where it runs, run
  -- in a pane (remote: `:TtyRun check` on the ssh destination `where`, with
  -- the ssh command's words `ssh`): {argv}, {} when there is nothing to
  -- check, or {error}.
  run_check = { kind = 'request', args = { 'kind', 'where', 'ssh' } },
  -- A request the editor waits for with a bound of its own (host.request):
  -- the answer comes as the `answer` event with the same token.
  ask = { kind = 'notify', args = { 'token', 'name', 'args' } },
  -- Start a run: {argv, cwd, base_env, env, rows, cols, persist, tmux, host,
  -- ssh}.
  run_start = { kind = 'notify', args = { 'run_id', 'spec' } },
  run_input = { kind = 'notify', args = { 'run_id', 'data' } },
  run_ack = { kind = 'notify', args = { 'run_id', 'count' } },
  run_resize = { kind = 'notify', args = { 'run_id', 'rows', 'cols' } },
  -- The pane is closed: hang up what still runs; the run is forgotten.
  run_close = { kind = 'notify', args = { 'run_id' } },
  -- run:kill(signal): to the program, while it runs (a session's program,
  -- where its kind has it: the session's, the tmux pane's, the one on the far
  -- machine).
  run_signal = { kind = 'notify', args = { 'run_id', 'signum' } },
}

--- The RPC method name of `name`; raises for a name the protocol lacks, so a
--- typo fails where it is written, not as a silently ignored message.
--- @param name string
--- @param kind 'request'|'notify'
--- @return string
function M.method(name, kind)
  local spec = M.methods[name]
  if not spec or spec.kind ~= kind then
    error(string.format('(ttyoffer) %s is not a %s of the host protocol', name, kind), 2)
  end
  return 'ttyoffer_' .. name
end

return M
