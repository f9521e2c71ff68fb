"""The protocol between the editor and the host, declared once.

Each message is declared here, once: its name, its arguments in order, what
each argument is taken as on this side, and what it means. The rest follows:
the remote-plugin shell registers an RPC export for every method
(``exports_of_the_protocol``), the host takes each argument as declared
(``arguments``, in ``TtyOfferHost.handle``), and the editor's
``lua/ttyoffer/host/protocol.lua`` is written from this module by
``scripts/protocol_lua.py`` (a test holds it current, and the handlers on
each side to the names and arguments).

Host -> editor: notifications, each a call of the function of the same name
in ``require('ttyoffer.events')``. Editor -> host: RPC methods named
``ttyoffer_<name>``, requests (a value comes back) or notifications.

One rule for a request's value: a table, or ``{error = why}`` when the host
refuses (never an empty ``error`` beside a value); the editor's
``host.request`` gives the table, or nil and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


def as_bytes(data: Any) -> bytes:
    """Lua strings arrive as msgpack str; surrogateescape restores the raw bytes."""
    if isinstance(data, bytes):
        return data
    return str(data).encode("utf-8", "surrogateescape")


def _ints(values: Any) -> list[int]:
    return [int(value) for value in values]


def _as_is(value: Any) -> Any:
    return value


# What an argument is taken as: its name in a declaration, and the function
# that takes it so. "any" is passed on as it came (the handler checks it).
TYPES: dict[str, Callable[[Any], Any]] = {
    "int": int,
    "float": float,
    "str": str,
    "bytes": as_bytes,
    "ints": _ints,
    "any": _as_is,
}


@dataclass(frozen=True)
class Message:
    kind: str  # "event", "request" or "notify"
    args: tuple[str, ...]
    types: tuple[str, ...]
    doc: str
    # Its arguments carry what a terminal showed or was typed: never written
    # to a log in full.
    terminal: bool = False


def _message(kind: str, doc: str, terminal: bool, args: dict[str, str]) -> Message:
    for name, type_name in args.items():
        if type_name not in TYPES:
            raise ValueError(f"{name}: no argument type {type_name!r}")
    return Message(kind, tuple(args), tuple(args.values()), doc, terminal)


def event(doc: str, *args: str, terminal: bool = False) -> Message:
    return _message("event", doc, terminal, dict.fromkeys(args, "any"))


def request(doc: str = "", terminal: bool = False, **args: str) -> Message:
    return _message("request", doc, terminal, args)


def notify(doc: str = "", terminal: bool = False, **args: str) -> Message:
    return _message("notify", doc, terminal, args)


# Host -> editor: served by the function of the same name in
# `ttyoffer.events`, with these arguments in this order.
EVENT_MESSAGES: dict[str, Message] = {
    "stock": event(
        "Freshly allocated spare ptys ({offer id, slave path} pairs), and why fewer than asked "
        "could be had ('' when all were).",
        "ptys",
        "error",
    ),
    "present": event(
        "The command wrote to its terminal for the first time: these bytes.",
        "offer_id",
        "data",
        terminal=True,
    ),
    "output": event("More bytes for a prompt whose window is attached.", "offer_id", "data", terminal=True),
    "prompt": event("The question the screen asks changed (for the window's title).", "offer_id", "text"),
    "closed": event("A presented offer's command ended; its window may show the end and go.", "offer_id"),
    "released": event("These bound offers are over (their commands ended or were declined).", "offer_ids"),
    "turned_away": event("Processes given no offer wrote to a spare terminal and were hung up.", "writers"),
    "no_keeper": event("No keeper holds the terminals any more, and none could be started: why.", "reason"),
    "unserved": event(
        "The command asked (the question on its screen, may be '') while the editor served "
        "nothing, and was hung up.",
        "offer_id",
        "question",
        terminal=True,
    ),
    "declined": event(
        "The command asked (the question on its screen, may be '') what the user declined for "
        "this burst (`dismiss_all`), and was hung up with no window.",
        "offer_id",
        "question",
        terminal=True,
    ),
    "run_started": event(
        "A run's program started, with this pid; session: a persistent run's session name "
        "(after the sanitiser), '' for others.",
        "run_id",
        "pid",
        "session",
    ),
    "run_output": event("Bytes for a run's pane.", "run_id", "data", terminal=True),
    "run_exit": event(
        "A run's program ended, or could not start: {code, signal, signal_name, reason, message}.",
        "run_id",
        "result",
    ),
    "answer": event(
        "The answer to an `ask`: the request's value, or why there is none.", "token", "result", "error"
    ),
    "remote_answer": event(
        "A remote list or kill answered after its request stopped waiting: what it would have given.",
        "dest",
        "action",
        "name",
        "answer",
    ),
}

# Editor -> host: RPC methods ('ttyoffer_' .. name), each argument with what
# the host takes it as, and whether a value comes back (request) or not.
METHODS: dict[str, Message] = {
    "status": request(),
    "screen": request(terminal=True, offer_id="int"),
    "refill": notify(count="int", rows="int", cols="int"),
    "bind": notify(offer_id="int", pid="int"),
    "dismiss": notify(offer_id="int"),
    "dismiss_all": notify(
        "The user declined these at once: each is hung up, and the same questions are declined "
        "with no window while the burst lasts.",
        offer_ids="ints",
    ),
    "retire": notify(
        "Spare ptys the editor no longer wants (its stock shrinks after a burst).", offer_ids="ints"
    ),
    "attach": notify(offer_id="int", rows="int", cols="int"),
    "input": notify(terminal=True, offer_id="int", data="bytes"),
    "ack": notify(
        "The window's terminal has taken `count` relayed bytes (flow control).", offer_id="int", count="int"
    ),
    "resize": notify(offer_id="int", rows="int", cols="int"),
    "resize_armed": notify(rows="int", cols="int"),
    "seen": notify(
        "This offer's `present` was received (window or not yet): the editor serves its events "
        "now; the next check of it starts from here.",
        offer_id="int",
    ),
    "drawn": notify(
        "The offer's window is drawn, the command's first bytes in its terminal: the user sees "
        "the question, and a busy editor no longer hangs it up.",
        offer_id="int",
    ),
    "release_unbound": notify(
        "The offer's command has ended (one never bound to a pid, such as a synchronous system()'s).",
        offer_id="int",
    ),
    "knock": notify(
        "A Unix socket the editor listens on: the host connects and writes the id of each offer "
        "it presents there (a line), after its `present`, so that a wait serving fast events only "
        "learns a prompt is on its way.",
        path="str",
    ),
    "configure": notify(
        "Milliseconds a command may wait on a question while the editor serves nothing before it "
        "is hung up (half between checks of the editor's mode, half for the answer); 0 or less: never.",
        blocked_ms="float",
    ),
    "run_path": request(
        "The PATH runs get: {path, source}, or {pending = true} while the login shell is being asked."
    ),
    "run_sessions": request(
        "The sessions of one kind of run (`kind`: dtach, tmux or remote) where they are (`where`: "
        "nil for dtach, the tmux server's name, the ssh destination; `ssh`: the ssh command's words, "
        "for remote), read now: {sessions = [{name, created, ..., ended?}]}; remote waits `wait_ms` "
        "at most, else answers what is known with {stale = true, known_at} (the answer comes later as "
        "`remote_answer`); or {error}.",
        kind="any",
        where="any",
        ssh="any",
        wait_ms="int",
    ),
    "run_session_kill": request(
        "End session `name` of one kind of run (`kind`, `where`, `ssh` as for run_sessions): {name, "
        "count} (dtach), {name, ended} (tmux, remote), {name, pending = true} (remote, told later as "
        "`remote_answer`), or {error} for a name that is not one.",
        kind="any",
        where="any",
        name="any",
        ssh="any",
        wait_ms="int",
    ),
    "run_prepare": request(
        "What one kind of run makes before its pane opens, from the run's spec: for tmux, the pane of "
        "the program (or the one to re-attach to): {session, pane, attach (the argv that attaches to "
        "it), ended (how the program ended, when it had)}; {} for the other kinds; or {error}.",
        kind="any",
        spec="any",
    ),
    "run_check": request(
        "The local argv that checks what one kind of run needs where it runs, run in a pane (remote: "
        "`:TtyRun check` on the ssh destination `where`, with the ssh command's words `ssh`): {argv}, "
        "{} when there is nothing to check, or {error}.",
        kind="any",
        where="any",
        ssh="any",
    ),
    "ask": notify(
        "A request the editor waits for with a bound of its own (host.request): the answer comes as "
        "the `answer` event with the same token.",
        token="any",
        name="any",
        args="any",
    ),
    "run_start": notify(
        "Start a run: {argv, cwd, base_env, env, rows, cols, persist, tmux, host, ssh}.",
        run_id="int",
        spec="any",
    ),
    "run_input": notify(terminal=True, run_id="int", data="bytes"),
    "run_ack": notify(run_id="int", count="int"),
    "run_resize": notify(run_id="int", rows="int", cols="int"),
    "run_close": notify("The pane is closed: hang up what still runs; the run is forgotten.", run_id="int"),
    "run_signal": notify(
        "run:kill(signal): to the program, while it runs (a session's program, where its kind has it: "
        "the session's, the tmux pane's, the one on the far machine).",
        run_id="int",
        signum="int",
    ),
}

EVENTS: dict[str, tuple[str, ...]] = {name: m.args for name, m in EVENT_MESSAGES.items()}
REQUESTS: dict[str, tuple[str, ...]] = {name: m.args for name, m in METHODS.items() if m.kind == "request"}
NOTIFICATIONS: dict[str, tuple[str, ...]] = {
    name: m.args for name, m in METHODS.items() if m.kind == "notify"
}

METHOD_PREFIX = "ttyoffer_"


def method_name(name: str) -> str:
    return METHOD_PREFIX + name


def event_call(name: str) -> str:
    """The Lua chunk that delivers event `name` with its arguments."""
    if name not in EVENTS:
        raise KeyError(f"{name} is not an event of the protocol")
    return f"require('ttyoffer.events').{name}(...)"


# Messages whose arguments carry what a terminal showed or was typed, as
# they appear in pynvim's log lines: never written to a log in full.
TERMINAL_TRAFFIC = tuple(
    [method_name(name) for name, m in METHODS.items() if m.terminal]
    + [
        event_call(name).removesuffix("(...)").removeprefix("require('")
        for name, m in EVENT_MESSAGES.items()
        if m.terminal
    ]
)


def arguments(name: str, values: Any) -> list[Any]:
    """The arguments of method `name`, each taken as declared; TypeError for
    the wrong number of them, ValueError or TypeError for one that cannot
    be taken so (as a handler's own int() would raise)."""
    message = METHODS[name]
    values = list(values) if isinstance(values, (list, tuple)) else []
    if len(values) != len(message.args):
        raise TypeError(
            f"{name} takes {len(message.args)} arguments ({', '.join(message.args)}), not {len(values)}"
        )
    return [TYPES[type_name](value) for type_name, value in zip(message.types, values)]
