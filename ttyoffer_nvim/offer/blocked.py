"""Whether the editor still serves a prompt on its way to the user.

An editor that is blocked (Vimscript's system() or jobwait(), a plugin's
busy loop) serves no notification: the offer's window cannot open, and the
command would wait for an answer forever, the editor perhaps waiting on it.
The same holds for a window that opened just before the editor blocked: it
is not even drawn, and no key reaches it. So while a prompt is on its way
to the user, and its command runs, the editor is asked its mode every half
`blocked_after` (`seen`, the editor's receipt of the `present`, restarts the
count). Neovim answers at once while it waits for the user (a hit-enter
prompt: they will come back to it) and whenever it serves its events; when
it does not answer within the other half, it is blocked: the command is hung
up, as a declined prompt is, and the user told later (`unserved`).

Once the editor says the window is drawn (`drawn`: on screen, the command's
first bytes in its terminal), the user can see the question and is typing
the answer: a busy spell of the editor (a plugin's timer holding it a
second) only delays their keys, which Neovim keeps and hands the window when
it is free. Hanging up then would close the window under the user's fingers,
the rest of a passphrase typed into the document. A drawn prompt is hung up
only when the editor has answered nothing for DRAWN_PATIENCE: no busy spell
lasts that long, and an editor blocked on the very command (a plugin's
jobwait() without a timeout) must not wait for good. Keys typed meanwhile
are dropped when its window goes, as for any prompt that goes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .model import Offer, Presenter

# How long a command may wait on a question while the editor serves nothing
# before it is hung up (`configure` sets it): half of it between the checks
# of the editor, half for its answer. Long enough for an editor that is
# merely busy for a moment, short enough that a command waiting on a
# question nobody can see is not left waiting long.
BLOCKED_AFTER = 1.0
# How long an editor may answer nothing while a prompt it has drawn is up:
# far beyond any busy spell (a plugin's timer, a slow redraw), so the user
# typing into it is never cut off; an editor blocked on the very command
# still lets it go, and the user is told.
DRAWN_PATIENCE = 30.0


class EditorCheck:
    """The checks of the editor for every offer whose prompt waits for an
    answer; `on_blocked(offer)` when the editor does not answer in time."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, presenter: Presenter, on_blocked: Callable[[Offer], None]
    ) -> None:
        self._loop = loop
        self._presenter = presenter
        self._on_blocked = on_blocked
        # Seconds; 0 or less: an offer the editor has not seen is never hung up.
        self.blocked_after = BLOCKED_AFTER

    def later(self, offer: Offer) -> None:
        """The next check of the editor for this offer, from now."""
        # Half between checks, half for the mode's answer: blocked_after is
        # the whole wait.
        if self.blocked_after > 0:
            check = self._loop.call_later(self.blocked_after / 2, self.serves, offer)
            offer.editor_check = check

    def restart(self, offer: Offer) -> None:
        """The editor was heard from: the count starts again."""
        self.cancel(offer)
        self.later(offer)

    def cancel(self, offer: Offer) -> None:
        if offer.editor_check is not None:
            offer.editor_check.cancel()
            offer.editor_check = None

    def serves(self, offer: Offer) -> None:
        """Whether the editor can still show the prompt and pass it keys.
        Asked its mode, Neovim answers at once while it waits for the user
        (a hit-enter prompt, which serves nothing else meanwhile), and
        otherwise once it serves its events again: never while it is blocked
        in system(), jobwait() or a busy loop. So no answer in time is the
        sign of a blocked editor."""
        offer.editor_check = None
        if not offer.waits_for_an_answer:
            return
        # A drawn prompt is the user's: a busy spell only delays their keys.
        patience = max(DRAWN_PATIENCE, self.blocked_after) if offer.drawn else self.blocked_after / 2
        deadline = self._loop.call_later(patience, self._blocked, offer)
        offer.editor_check = deadline

        def answered(waits_for_user: bool | None) -> None:
            if offer.editor_check is not deadline:
                return  # too late: seen, hung up or ended meanwhile
            deadline.cancel()
            offer.editor_check = None
            if waits_for_user is None:
                return  # the editor is going away; so is this host
            # Not blocked. Waiting for the user, who will come back to it;
            # or serving its events again, the offer's `present` among them
            # (sent before the question), and its `seen` on the way. Looked
            # at again later all the same.
            if offer.waits_for_an_answer:
                self.later(offer)

        self._presenter.editor_waits_for_user(answered)

    def _blocked(self, offer: Offer) -> None:
        """The editor did not even answer for its mode: it serves nothing."""
        offer.editor_check = None
        if offer.waits_for_an_answer:
            self._on_blocked(offer)
