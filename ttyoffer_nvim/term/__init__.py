"""The terminal holds: what both the offer and the runs stand on.

A pty and its window size (``ptys``), hanging up what still holds a
terminal that goes away (``hangup``), the keeper, a second holder of every
pty master (``keeper``), a process's exit (``exitwatch``), the kernel's
word on processes (``procfs``), what of a command's output a window lets
through (``sequences``) and the one rule for text the editor shows
(``text``).

May import: the standard library only, and nothing of the package outside
this folder (the keeper runs these modules isolated, ``-I -S``).
"""
