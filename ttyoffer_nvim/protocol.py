"""The protocol between the editor and the host, named once on this side.

``lua/ttyoffer/host/protocol.lua`` lists the same names and arguments, and a test
holds both sides, and the handlers on each, to it.

Host -> editor: notifications, each a call of the function of the same name
in ``require('ttyoffer.events')``. Editor -> host: RPC methods named
``ttyoffer_<name>``, requests (a value comes back) or notifications.
"""

from __future__ import annotations

EVENTS: dict[str, tuple[str, ...]] = {
    "stock": ("ptys", "error"),
    "present": ("offer_id", "data"),
    "output": ("offer_id", "data"),
    "prompt": ("offer_id", "text"),
    "closed": ("offer_id",),
    "released": ("offer_ids",),
    "turned_away": ("writers",),
    "no_keeper": ("reason",),
    # The command asked (the question on its screen, may be "") while the
    # editor served nothing, and was hung up.
    "unserved": ("offer_id", "question"),
    # A run's program started, with this pid.
    "run_started": ("run_id", "pid", "session"),
    # Bytes for a run's pane.
    "run_output": ("run_id", "data"),
    # A run's program ended, or could not start: {code, signal, signal_name,
    # reason, message}.
    "run_exit": ("run_id", "result"),
    # The answer to an `ask`: the request's value, or why there is none.
    "answer": ("token", "result", "error"),
}

REQUESTS: dict[str, tuple[str, ...]] = {
    "status": (),
    "screen": ("offer_id",),
    # The PATH runs get: {path, source}, or {pending = true} while the
    # login shell is being asked.
    "run_path": (),
    # The persistent sessions, read now: {sessions = [{name, created,
    # command, title, pid, ended}], error}.
    "sessions": (),
    # End a persistent session: {name, count}, or {error} for a name that is not one.
    "session_kill": ("name",),
    # Make the pane of a tmux run's program (or find the one to re-attach
    # to): {session, pane, attach (the argv that attaches to it), ended (how
    # the program ended, when it had)}, or {error}.
    "tmux_prepare": ("spec",),
    # Our tmux sessions, read now: {sessions = [{name, created, attached,
    # command, title}], error}.
    "tmux_list": ("server",),
    # End one of our tmux sessions: {ended} or {error}.
    "tmux_kill": ("session", "server"),
    # The local argv that does `action` (list, kill, check, signal: with
    # signum) on an ssh destination: {argv}, or {error}. Built here, run by
    # the editor.
    "remote_command": ("dest", "action", "name", "ssh", "signum"),
}

NOTIFICATIONS: dict[str, tuple[str, ...]] = {
    "refill": ("count", "rows", "cols"),
    "bind": ("offer_id", "pid"),
    "dismiss": ("offer_id",),
    # Spare ptys the editor no longer wants (its stock shrinks after a burst).
    "retire": ("offer_ids",),
    "attach": ("offer_id", "rows", "cols"),
    "input": ("offer_id", "data"),
    "ack": ("offer_id", "count"),
    "resize": ("offer_id", "rows", "cols"),
    "resize_armed": ("rows", "cols"),
    # The editor has received the offer's `present` (window or not yet): it
    # serves its events now; the next check of it starts from here.
    "seen": ("offer_id",),
    # The offer's window is drawn, the command's first bytes in its
    # terminal: the user sees the question, and a busy editor no longer
    # hangs it up.
    "drawn": ("offer_id",),
    # The offer's command has ended (one never bound to a pid, such as a
    # synchronous system()'s).
    "release": ("offer_id",),
    # A Unix socket the editor listens on: the host connects and writes the
    # id of each offer it presents there (a line), after its `present`, so
    # that a wait serving fast events only learns a prompt is on its way.
    "knock": ("path",),
    # Milliseconds a command may wait on a question while the editor serves
    # nothing before it is hung up (half between checks of the editor's mode,
    # half for the answer); 0 or less: never.
    "configure": ("blocked_ms",),
    # A request the editor waits for with a bound of its own: the answer
    # comes as the `answer` event with the same token.
    "ask": ("token", "name", "args"),
    # Start a run: {argv, cwd, base_env, env, rows, cols, persist, tmux}.
    "run_start": ("run_id", "spec"),
    "run_input": ("run_id", "data"),
    "run_ack": ("run_id", "count"),
    "run_resize": ("run_id", "rows", "cols"),
    # The pane is closed: hang up what still runs; the run is forgotten.
    "run_close": ("run_id",),
    # run:kill(signal): to the program, while it runs.
    "run_signal": ("run_id", "signal"),
}

METHOD_PREFIX = "ttyoffer_"
# Messages whose arguments carry what a terminal showed or was typed: never
# written to a log in full.
TERMINAL_TRAFFIC = (
    "ttyoffer_input",
    "ttyoffer_screen",
    "ttyoffer.events').present",
    "ttyoffer.events').output",
    "ttyoffer.events').unserved",
    "ttyoffer_run_input",
    "ttyoffer.events').run_output",
)


def method_name(name: str) -> str:
    return METHOD_PREFIX + name


def event_call(name: str) -> str:
    """The Lua chunk that delivers event `name` with its arguments."""
    if name not in EVENTS:
        raise KeyError(f"{name} is not an event of the protocol")
    return f"require('ttyoffer.events').{name}(...)"
