"""How a run's program ended: one type for every kind of run (a pane, a
dtach session, a tmux pane, a session on another machine), described in one
place, and one dict for the wire.

`reason` says how: one of REASONS. `describe()` gives the few words the user
reads ("exited 3", "killed by SIGTERM", "not found", "detached"); the editor
shows them as the host wrote them (`said`), and for the endings it makes
itself (a job run, the host gone) formats the same WORDS, generated into
lua/ttyoffer/runs/rules.lua by scripts/rules_lua.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass

from . import rules

# How a program can have ended, and the words each is described with
# ({code} and {signal_name} are filled in).
WORDS = {
    "exited": "exited {code}",
    "signal": "killed by {signal_name}",
    "not_found": "not found",
    "not_executable": "not executable",
    "cannot_start": "cannot start",
    # The pane was closed, or its client detached while the program goes on.
    "closed": "closed",
    "detached": "detached",
    # A remote run's connection ended while its program goes on there.
    "disconnected": "disconnected",
}
REASONS = tuple(WORDS)
# The reasons of a program that never started (127 is told).
NOT_STARTED = ("not_found", "not_executable", "cannot_start")
# How a session's runtime writes its program's ending down (NAME.status),
# on this machine (sessionwrap.py) and on another (remote_sh.py) alike: one
# line, "CODE SIGNAL REASON ENDED[ MESSAGE]", ENDED in whole seconds since
# the epoch, with one of these reasons.
STATUS_REASONS = ("exited", "signal", *NOT_STARTED)


def signal_name(signum: int) -> str:
    """SIGTERM for 15; '' for 0 or a number this system does not name."""
    if signum:
        with contextlib.suppress(ValueError):
            return signal.Signals(signum).name
    return ""


@dataclass(frozen=True)
class Ending:
    code: int
    signal: int = 0
    reason: str = "exited"
    message: str = ""
    # When it ended (time.time()), where that was written down; 0 unknown.
    ended: float = 0.0

    @classmethod
    def of_wait(cls, si_code: int, si_status: int, message: str = "") -> Ending:
        """From waitid's si_code and si_status: an exit or a signal (128 + it)."""
        if si_code == os.CLD_EXITED:
            return cls(si_status, 0, "exited", message)
        return cls(128 + si_status, si_status, "signal", message)

    @property
    def signal_name(self) -> str:
        return signal_name(self.signal)

    def describe(self) -> str:
        """The few words the user reads: exited 3, killed by SIGTERM."""
        words = WORDS.get(self.reason, WORDS["exited"])
        return rules.fill(words, code=self.code, signal_name=self.signal_name or f"signal {self.signal}")

    def status_line(self) -> str:
        """This ending as a session's runtime writes it down (STATUS_REASONS)."""
        message = " ".join(self.message.split())
        return (
            f"{self.code} {self.signal} {self.reason} {int(self.ended)}"
            + (f" {message}" if message else "")
            + "\n"
        )

    @classmethod
    def from_status_line(cls, text: str) -> Ending | None:
        """The ending a session's status line tells; None for what is not one."""
        fields = text.rstrip("\n").split(" ", 4)
        if len(fields) < 4 or "\n" in text.rstrip("\n") or fields[2] not in STATUS_REASONS:
            return None
        code, signum, reason, ended = fields[:4]
        if not (code.isdigit() and signum.isdigit() and ended.isdigit()):
            return None
        message = fields[4] if len(fields) == 5 else ""
        return cls(int(code), int(signum), reason, message, float(ended))

    def as_dict(self) -> dict[str, object]:
        """The one shape an ending crosses the wire in (a run's result, a
        list's `ended`): what the editor's RunResult holds."""
        return {
            "code": self.code,
            "signal": self.signal,
            "signal_name": self.signal_name,
            "reason": self.reason,
            "message": self.message,
            "said": self.describe(),
        }
