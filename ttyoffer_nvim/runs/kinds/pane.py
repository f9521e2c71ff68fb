"""A plain run: the program itself on the pane's terminal, ending with it.
Every answer is base.RunKind's."""

from __future__ import annotations

from .base import RunKind


class PaneKind(RunKind):
    name = "pane"
