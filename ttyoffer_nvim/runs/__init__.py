"""Runs: one interactive program on a pty of its own, relayed to the editor's
pane, and how it ended (``runs``); persistent sessions under dtach and
script(1) (``sessions``, with ``sessionwrap``, run by path with ``-I -S``
inside the session); runs on tmux (``tmux``); on another machine over ssh
(``remote``); the login shell's PATH (``shellenv``).

May import: ``term`` and the standard library; never ``offer`` or the edge.
``sessionwrap`` imports nothing of ours: it runs alone, isolated.
"""
