"""One object per kind of run (a pane, a dtach session, a tmux session, a
session on another machine) behind one interface (base.RunKind): the run,
its table and the bridge ask the kind instead of branching on it."""
