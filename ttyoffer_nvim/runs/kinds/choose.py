"""Which kind a run is, and the kinds by the names the editor uses.

Standard library only.
"""

from __future__ import annotations

from typing import Any

from .base import RunKind
from .dtach import DtachKind
from .pane import PaneKind
from .remote import RemoteKind
from .tmux import TmuxKind

# In the order they are asked whether a description is theirs: the first
# that claims it is its kind (a plain pane claims every one).
KINDS: tuple[type[RunKind], ...] = (RemoteKind, TmuxKind, DtachKind, PaneKind)
BY_NAME: dict[str, type[RunKind]] = {kind.name: kind for kind in KINDS}


def kind_of(args: dict[str, Any]) -> RunKind | str:
    """The kind of the run the editor describes, with its part of the
    description; a message when that part is not one."""
    for kind in KINDS:
        if kind.claims(args):
            return kind.from_args(args)
    return PaneKind()


def named(name: object) -> type[RunKind] | str:
    """The kind called `name` ("dtach", "tmux", "remote", "pane"), or why none is."""
    found = BY_NAME.get(name) if isinstance(name, str) else None
    if found is None:
        return f"{name!r} is not a kind of run ({', '.join(BY_NAME)})"
    return found
