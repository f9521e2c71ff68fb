"""The signals a process the host starts begins with: those Neovim's
jobstart() gives a job, whatever the host's own are.

libuv, starting a job, puts every signal's disposition back to the default
and blocks none. The host differs from that: Python ignores SIGPIPE and
SIGXFSZ, and the host blocks SIGTERM once it has runs
(runs.hold_off_sigterm). Both survive fork and exec, and what the host
starts outlives it: a tmux server started with SIGTERM blocked could be
ended neither by kill nor by `tmux kill-server` (which sends its own server
SIGTERM), and passed the mask on to every shell in its panes."""

from __future__ import annotations

import contextlib
import signal

# As libuv's uv_spawn: 1 to 31, but for the two no process can catch.
RESET = tuple(n for n in range(1, 32) if n not in (signal.SIGKILL, signal.SIGSTOP))


def as_for_a_job() -> None:
    """subprocess's preexec_fn: run in the child between fork and exec."""
    for signum in RESET:
        # A handler would go at exec anyway; an ignored signal would stay.
        with contextlib.suppress(OSError, ValueError):
            signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
