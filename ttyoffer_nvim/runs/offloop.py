"""One external command run off the host's loop, bounded: what tmux and the
remote calls share.

Its output goes to files, not pipes: a tmux client hands its stdout and
stderr to the server, and an ssh that reuses a connection hands them to
its ControlMaster, so a stopped server or master keeps a pipe open after
the client is killed, and its end of file never comes (measured).

Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable


async def call(
    argv: list[str],
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> tuple[int, str, str] | None:
    """(exit status, stdout, stderr) of `argv`, in a session of its own;
    None when it does not end within `timeout` seconds (it is then killed
    and reaped). OSError when it cannot start."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errors:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out,
            stderr=errors,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=preexec_fn,
        )
        try:
            code = await asyncio.wait_for(proc.wait(), timeout)
        except asyncio.TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            return None
        out.seek(0)
        errors.seek(0)
        return code, out.read().decode("utf-8", "replace"), errors.read().decode("utf-8", "replace")
