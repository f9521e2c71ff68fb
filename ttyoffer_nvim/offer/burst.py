"""A storm of questions, declined at once: the same questions, asked again
while the storm lasts, are declined with no window.

Updating twenty plugins over ssh with one passphrase key asks twenty times,
and a wave of new commands asks again as the first ones end. The user who
declines them all at once (the editor's `dismiss_all`) means those
questions: each is remembered by who asks what, never by anything typed
(no secret is kept to answer the next one; ssh-agent and gpg-agent's cache
are the user's own ways to be asked once).

The same question: the same asking program (the executable of the newest
process that holds the command's terminal open: ssh, ssh-keygen, the
pinentry gpg-agent started on it, git's credential prompt, python's
getpass) with the same question on its screen (the line the cursor waits
on, as the window's title shows it: ssh's names the key file, git's the
host). Nothing in the text is matched by a pattern: the question is
compared whole.

The burst: from the decline until BURST_QUIET seconds have passed without
such a question (each one declined restarts the count). While it lasts, a
command that writes to its terminal is shown only once its question is
known (PROMPT_QUIET later), so that the same question never flashes a
window.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..term import procfs
from ..term.hangup import holders_of

# Seconds without the same question again before the burst is over.
BURST_QUIET = 3.0

# Who asks (the asking program's executable) and what (the screen's question).
Question = tuple[str, str]


def askers(slave_paths: list[str]) -> dict[str, str]:
    """For each terminal, the program that asks on it: of the processes that
    hold it open, the one started last (a command's shell and git start
    before the ssh they run; gpg-agent's pinentry opens it from outside).
    "" where nothing holds it any more."""
    found = {}
    for path, pids in holders_of(slave_paths).items():
        started = [(procfs.start_time(pid), pid) for pid in pids]
        started = [(when, pid) for when, pid in started if when >= 0]
        found[path] = procfs.executable(max(started)[1]) if started else ""
    return found


class Burst:
    """The questions declined in the burst now on, if any."""

    def __init__(self, loop: asyncio.AbstractEventLoop, quiet: float = BURST_QUIET) -> None:
        self._loop = loop
        self._quiet = quiet
        self._declined: set[Question] = set()
        self._ends: asyncio.TimerHandle | None = None

    def active(self) -> bool:
        return self._ends is not None

    def decline(self, questions: Iterable[Question]) -> None:
        """The user declined these: the burst starts, or goes on."""
        self._declined.update(questions)
        self._go_on()

    def declines(self, question: Question) -> bool:
        """Whether the question is one declined in this burst (which then
        goes on)."""
        if self._ends is None or question not in self._declined:
            return False
        self._go_on()
        return True

    def _go_on(self) -> None:
        if self._ends is not None:
            self._ends.cancel()
        self._ends = self._loop.call_later(self._quiet, self._end)

    def _end(self) -> None:
        self._ends = None
        self._declined.clear()

    def cancel(self) -> None:
        if self._ends is not None:
            self._ends.cancel()
        self._end()
