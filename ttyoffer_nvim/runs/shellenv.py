"""The PATH of the user's login shell, which runs get.

An editor started from a desktop launcher has only the system's PATH; the
one the user set up (~/.profile, ~/.zprofile, fish's config) is what their
login shell has. It is asked once, off the host's loop (an asyncio
subprocess), and kept.

What the shell prints is not trusted as anything but a PATH: only the line
after our marker counts, it must be printable text, and only absolute
entries are kept. A shell that fails, prints nothing usable or takes longer
than TIMEOUT leaves the editor's own PATH, and `source` says why.

Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from ..term.jobsignals import as_for_a_job

# Seconds a login shell may take to say its PATH (a slow ~/.profile, a
# network mount) before the editor's own PATH is used.
TIMEOUT = 3.0
# Marks the line that carries the PATH: a profile may print other lines
# (a greeting, `fortune`) before or after it.
MARKER = "ttyoffer-login-path:"
# A PATH longer than this is not one anybody set up.
MAX_LENGTH = 64 * 1024


@dataclass(frozen=True)
class LoginPath:
    path: str
    # Where it came from, for :checkhealth: "login shell /bin/zsh" or
    # "the editor's (<why the login shell's could not be had>)".
    source: str


def parse(output: bytes) -> str | None:
    """The PATH in a login shell's output, or None when there is no usable one."""
    text = output.decode("utf-8", "replace")
    for line in text.splitlines():
        if not line.startswith(MARKER):
            continue
        value = line[len(MARKER) :]
        if not value or len(value) > MAX_LENGTH or not value.isprintable():
            return None
        entries = [entry for entry in value.split(":") if entry.startswith("/")]
        return ":".join(entries) or None
    return None


def login_shell(env: dict[str, str]) -> str:
    shell = env.get("SHELL", "")
    if shell.startswith("/") and os.access(shell, os.X_OK):
        return shell
    return "/bin/sh"


async def ask(env: dict[str, str]) -> LoginPath:
    """Ask the login shell for its PATH; never raises."""
    fallback = env.get("PATH", os.defpath)
    shell = login_shell(env)
    try:
        proc = await asyncio.create_subprocess_exec(
            shell,
            "-l",
            "-c",
            f'printf "\\n{MARKER}%s\\n" "$PATH"',
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            # No controlling terminal: a profile that asks something fails
            # instead of waiting for an answer nobody can give.
            start_new_session=True,
            # The host may hold SIGTERM off (runs.hold_off_sigterm); the
            # shell and what it starts must not inherit that.
            preexec_fn=as_for_a_job,
        )
    except OSError as err:
        return LoginPath(fallback, f"the editor's (cannot start {shell}: {err.strerror or err})")
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return LoginPath(fallback, f"the editor's ({shell} -l took longer than {TIMEOUT:g} s)")
    path = parse(output)
    if path is None:
        return LoginPath(fallback, f"the editor's ({shell} -l printed no usable PATH)")
    return LoginPath(path, f"login shell {shell}")


class LoginPathCache:
    """Asks once, on first use; callers wait with a callback, never block."""

    def __init__(self, loop: asyncio.AbstractEventLoop, env: dict[str, str]) -> None:
        self._loop = loop
        self._env = env
        self.value: LoginPath | None = None
        self._waiters: list[Callable[[LoginPath], None]] = []

    def get(self, callback: Callable[[LoginPath], None]) -> None:
        if self.value is not None:
            callback(self.value)
            return
        self._waiters.append(callback)
        if len(self._waiters) == 1:
            task = self._loop.create_task(ask(dict(self._env)))
            task.add_done_callback(self._answered)

    async def wait(self, timeout: float) -> LoginPath | None:
        """The answer, asked now if need be, waited for on the loop (at most
        `timeout` seconds: then None, and the question goes on)."""
        if self.value is not None:
            return self.value
        answered: asyncio.Future[LoginPath] = self._loop.create_future()

        def answer(value: LoginPath) -> None:
            if not answered.done():
                answered.set_result(value)

        self.get(answer)
        try:
            return await asyncio.wait_for(asyncio.shield(answered), timeout)
        except asyncio.TimeoutError:
            return None

    def _answered(self, task: asyncio.Task[LoginPath]) -> None:
        try:
            self.value = task.result()
        except Exception as err:  # ask() raises nothing; this is the last guard
            self.value = LoginPath(self._env.get("PATH", os.defpath), f"the editor's ({err})")
        waiters, self._waiters = self._waiters, []
        for callback in waiters:
            callback(self.value)
