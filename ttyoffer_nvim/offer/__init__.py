"""The offer: a spare pty for every spawned command, watched until the
command writes to it, then presented, attached to the editor's window and
relayed with flow control (``offer``, over ``model``, ``strays``,
``blocked`` and ``keepercopies``), and the pyte model of what it shows and
the question it asks (``screen``).

May import: ``term`` (and pyte, in ``screen`` alone, at the first screen fed);
never ``runs`` or the edge.
"""
