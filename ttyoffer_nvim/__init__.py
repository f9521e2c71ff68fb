"""ttyoffer.nvim's host: the Python side of the plugin, in four parts.

The modules here, at the package's root, are the edge, with the remote-plugin
shell (``rplugin/python3/ttyoffer``) over them: ``bridge`` (the only module
that talks to Neovim), ``pluginhost`` (the host process) and ``protocol`` (the
names of every message between editor and host). The edge alone imports
pynvim. Below it, one folder per part:

    offer/   the offer: a spare pty per spawned command, watched until it asks
    runs/    runs: a program on a pty of its own, persistent (dtach), on tmux, remote
    term/    the terminal holds: ptys, hang-ups, the keeper, /proc, output filters

Imports run one way: edge → offer, runs → term; offer and runs never import
each other, and no part imports the edge (tests/unit/test_import_graph.py). Every
``__init__`` imports nothing, so a module loads only what it asks for: an idle
host does without runs, tmux and pyte.
"""

__version__ = "0.1.0"
