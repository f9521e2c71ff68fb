"""A run's program on its own terminal: found as a shell would find it,
started as the leader of a new session whose controlling terminal is the
run's pty, and that terminal's line mode read back.

Standard library only.
"""

from __future__ import annotations

import os
import shutil
import signal
import termios
import threading

from ..term import jobsignals

# What the editor is told of a program that never ran.
NOT_STARTED_CODE = 127
# What a run closed (hung up) while it ran is told, whatever it died of.
CLOSED_CODE = 128 + signal.SIGHUP


def line_mode(master: int) -> tuple[bool, bool]:
    """(echo, canonical) of the terminal: its own mode, read through the
    master (Linux gives the pair's termios there). A program asking a
    password turns echo off and keeps lines (getpass, readpassphrase); one
    reading keys (an editor, ssh's session) turns both off."""
    try:
        lflag = termios.tcgetattr(master)[3]
    except (OSError, termios.error):
        return True, True
    return bool(lflag & termios.ECHO), bool(lflag & termios.ICANON)


def resolve(program: str, path: str, cwd: str) -> tuple[str | None, str, str]:
    """(the file to execute, or None; the reason; a message for the pane)."""
    if "/" in program:
        candidate = program if os.path.isabs(program) else os.path.join(cwd, program)
        if not os.path.exists(candidate):
            return None, "not_found", f"{program}: no such file"
        if os.path.isdir(candidate) or not os.access(candidate, os.X_OK):
            return None, "not_executable", f"{program}: not executable"
        return candidate, "", ""
    found = shutil.which(program, path=path)
    if found is None:
        # Something by that name that cannot be executed says more than
        # "not found".
        for entry in path.split(":"):
            candidate = os.path.join(entry, program)
            if entry and os.path.isfile(candidate):
                return None, "not_executable", f"{program}: not executable ({candidate})"
        return None, "not_found", f"{program}: not found in PATH"
    return found, "", ""


def spawn_on_terminal(
    executable: str, argv: list[str], env: dict[str, str], cwd: str, slave_path: str
) -> int:
    """Start `executable` as the leader of a new session whose controlling
    terminal is the pty at `slave_path`; its pid.

    posix_spawn (a vfork underneath) rather than a fork of the whole host:
    the difference is most of the time to the program's first output.
    glibc runs setsid() before the file actions, so opening the terminal
    (without O_NOCTTY) makes it the controlling one. Python 3.11's
    posix_spawn has no chdir action: the host, single-threaded on its loop,
    stands in `cwd` for the call and goes back."""
    back = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.chdir(cwd)
        return os.posix_spawn(
            executable,
            argv,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, slave_path, os.O_RDWR, 0),
                (os.POSIX_SPAWN_DUP2, 0, 1),
                (os.POSIX_SPAWN_DUP2, 0, 2),
            ],
            setsid=True,
            # The signals a job starts with (jobsignals), not the host's.
            setsigmask=(),
            setsigdef=jobsignals.RESET,
        )
    finally:
        os.fchdir(back)
        os.close(back)


def hold_off_sigterm() -> None:
    """The host keeps SIGTERM blocked once it has runs. Neovim ending closes
    the host's stdin and sends it SIGTERM at about the same time; the host's
    loop stops at either, and the runs are hung up on the way out
    (hang_up_all, at exit). A SIGTERM delivered then would end the host in
    the middle of it and leave a program that ignores SIGHUP running for
    good; blocked, it never is, and the closed stdin ends the host instead.
    (Neovim sends SIGKILL to a child that has not ended 2 s later: the runs'
    terminals then close with the host, and the kernel hangs them up.)"""
    if threading.current_thread() is threading.main_thread():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
