"""The runs' rules, written once. The host applies them (sessions.refusal,
remote.refusal, the remote sh's list) and answers with an error; what the
editor must know up front, for completion and an instant error before any
pane opens, is generated from here into lua/ttyoffer/runs/rules.lua by
scripts/rules_lua.py (a test holds it current, and another fails when one of
these constants is written by hand on the Lua side).

Templates name what they are filled with ({name}); Lua fills them with the
same names (rules.fill).
"""

from __future__ import annotations

import re
import signal

# -- session names: what reaches a path or an argument --------------------------

# The characters a session name is made of (a character class's body, the
# same in a Python regex, a Lua pattern and an sh glob); any other becomes '-'.
NAME_CHARACTERS = "A-Za-z0-9_-"
NAME_LENGTH = 40
DEFAULT_NAME = "main"
NAME_RULE = f"letters, digits, _ and - (not at either end), at most {NAME_LENGTH}"
NAME_REFUSAL = "{shown} is not a session name: {rule}; say {suggested} if you mean that one"

# -- a session's recording ----------------------------------------------------------

# The most a session's recording keeps, here and on another machine: the
# current file (NAME.log) goes to NAME.log.1 once it holds half of it.
# (sessionwrap.py runs alone and keeps its own copy; a test holds it equal.)
RECORDING_BYTES = 1024 * 1024

# -- ssh destinations -------------------------------------------------------------

# What ssh takes as a destination (an alias, user@host, ssh://user@host:port,
# [v6]:port), and no shell metacharacter a ProxyCommand of the user's could
# see in %h: letters, digits and these, and '-' after the first character.
DESTINATION_PUNCTUATION = "._@:/[]%+"
DESTINATION_LENGTH = 255
DESTINATION_REFUSAL = (
    "{shown} is not an ssh destination: a Host of your ~/.ssh/config, user@host or "
    "ssh://user@host:port (letters, digits and . _ @ : / [ ] % + -, not starting with -)"
)

# -- signals a run can be sent by name --------------------------------------------

SIGNAL_NAMES = ("HUP", "INT", "QUIT", "KILL", "USR1", "USR2", "TERM", "CONT", "STOP", "TSTP", "WINCH")


def signals() -> dict[str, int]:
    """The names run:kill() takes, and their numbers on this system (the
    Lua side's are this table as generated)."""
    return {name: int(getattr(signal, "SIG" + name)) for name in SIGNAL_NAMES}


def destination_regex() -> re.Pattern[str]:
    punctuation = "".join("\\" + c for c in DESTINATION_PUNCTUATION)
    return re.compile(f"[A-Za-z0-9{punctuation}][A-Za-z0-9{punctuation}-]*")


def fill(template: str, **values: object) -> str:
    """A rule's template with its names filled (as Lua's rules.fill does)."""
    return re.sub(r"\{(\w+)\}", lambda m: str(values[m.group(1)]), template)
