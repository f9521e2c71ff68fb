"""List, kill and signal on another machine: from the host, off its loop.

Each is one ssh over the shared connection (remote.command: BatchMode, so
nothing is asked), run as an asyncio subprocess bounded by CALL_TIMEOUT. A
request waits for it only a moment (the editor is never held longer than
that, whatever stalls: a stopped connection, a host gone quiet); what is not
answered by then is answered from what is known (the last list of that
machine, marked stale), and the real answer is told to the editor when it
comes (`told`), so a list or a completion can be refreshed.

The output goes to files (offloop.call): an ssh that reuses a connection
hands its stdout and stderr to the ControlMaster, and a stopped master keeps
a pipe open after the client is killed.

Standard library only.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import offloop, remote
from .ending import Ending
from .sessions import refusal as name_refusal

# Seconds one ssh of a list, kill or signal may take before it is killed.
CALL_TIMEOUT = 15.0
_ENDED_REASONS = ("exited", "signal", "not_found", "not_executable", "cannot_start")


@dataclass
class Known:
    """What is known of one machine's sessions, and since when."""

    sessions: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    at: float = 0.0


def parse_list(output: str) -> tuple[list[dict[str, Any]], str]:
    """The sessions of a remote list's output, and the problem it told."""
    found: list[dict[str, Any]] = []
    problem = ""
    for line in output.splitlines():
        fields = line.split("\t")
        if fields[0] == "error" and len(fields) >= 2:
            problem = fields[1]
        if fields[0] != "session" or len(fields) != 7 or name_refusal(fields[1]) is not None:
            continue
        name, created, code, signum, reason, state = fields[1:]
        entry: dict[str, Any] = {"name": name, "created": int(created) if created.isdigit() else 0}
        entry["state"] = state if state in ("running", "unreachable") else "ended"
        if entry["state"] == "ended":
            if not (code.isdigit() and signum.isdigit()):
                continue
            why = reason if reason in _ENDED_REASONS else "exited"
            entry["ended"] = Ending(int(code), int(signum), why).as_dict()
        found.append(entry)
    return found, problem


async def call_ssh(argv: list[str], timeout: float = CALL_TIMEOUT) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `argv`; exit 255 and why when it
    cannot start or does not end in time (then it is killed)."""
    try:
        done = await offloop.call(argv, timeout)
    except OSError as err:
        return 255, "", f"{argv[0]}: {err.strerror or err}"
    if done is None:
        return 255, "", f"no answer within {timeout:g} s (is the connection stalled?)"
    return done


def _failure(dest: str, code: int, stderr: str) -> str:
    said = stderr.strip().splitlines()
    return f"ssh {dest}: {said[-1] if said else f'exit {code}'}"


class RemoteCalls:
    """The remote calls of one host. `told(dest, action, name, answer)`
    gets an answer that came after its request had stopped waiting."""

    def __init__(self, told: Callable[[str, str, str, dict[str, Any]], None]) -> None:
        self._told = told
        self._known: dict[str, Known] = {}
        # One call in flight per (dest, action, name); a second request
        # waits on the same one.
        self._calls: dict[tuple[str, str, str], asyncio.Task[dict[str, Any]]] = {}
        self._late: set[tuple[str, str, str]] = set()
        self._signals: set[asyncio.Task[dict[str, Any]]] = set()

    def _call(self, ssh: list[str], dest: str, action: str, name: str, argv: list[str]) -> asyncio.Task[Any]:
        key = (dest, action, name)
        task = self._calls.get(key)
        if task is None:
            task = asyncio.ensure_future(self._run(ssh, dest, action, name, argv))
            self._calls[key] = task
            task.add_done_callback(lambda done: self._done(key, done))
        return task

    def _done(self, key: tuple[str, str, str], task: asyncio.Task[dict[str, Any]]) -> None:
        if self._calls.get(key) is task:
            del self._calls[key]
        if task.cancelled():
            return
        failed = task.exception()
        answer: dict[str, Any] = {"error": f"{key[1]} failed: {failed}"} if failed else task.result()
        dest, action, name = key
        if action == "list":
            known = self._known.setdefault(dest, Known())
            known.at = time.time()
            known.error = str(answer.get("error") or "")
            if not known.error:
                known.sessions = list(answer["sessions"])
        if key in self._late:
            self._late.discard(key)
            self._told(dest, action, name, answer)

    async def _run(
        self, ssh: list[str], dest: str, action: str, name: str, argv: list[str]
    ) -> dict[str, Any]:
        built = remote.command(ssh, dest, action, name, argv, os.environ.get("XDG_RUNTIME_DIR"))
        if isinstance(built, str):
            return {"error": built}
        code, out, err = await call_ssh(built.argv)
        if code != 0:
            return {"error": _failure(dest, code, err)}
        if action == "list":
            found, problem = parse_list(out)
            return {"error": problem} if problem else {"sessions": found}
        if action == "kill":
            if out.startswith("error\t"):
                return {"error": out.partition("\t")[2].strip()}
            return {"name": built.name, "ended": out.startswith("killed\t")}
        return {"sent": out.startswith("sent")}

    async def _within(self, key: tuple[str, str, str], task: asyncio.Task[Any], wait: float) -> Any:
        """The task's answer if it comes within `wait` seconds, else None
        (it is then told when it comes)."""
        done, _ = await asyncio.wait({task}, timeout=max(0.0, wait))
        if task in done and not task.exception():
            return task.result()
        if task in done:
            return {"error": f"{key[1]} failed: {task.exception()}"}
        self._late.add(key)
        return None

    async def sessions(self, ssh: list[str], dest: str, wait: float) -> dict[str, Any]:
        """{sessions} now, or what is known of them with stale = true (and
        the refreshed answer told later)."""
        task = self._call(ssh, dest, "list", "", [])
        answer = await self._within((dest, "list", ""), task, wait)
        if answer is not None:
            return dict(answer)
        known = self._known.get(dest)
        if known is None:
            return {"sessions": [], "stale": True, "known_at": 0}
        return {"sessions": known.sessions, "stale": True, "known_at": known.at, "known_error": known.error}

    async def kill(self, ssh: list[str], dest: str, name: str, wait: float) -> dict[str, Any]:
        """{name, ended} now, or {pending = true} (told later)."""
        task = self._call(ssh, dest, "kill", name, [])
        answer = await self._within((dest, "kill", name), task, wait)
        return {"pending": True, "name": name} if answer is None else dict(answer)

    def signal(self, ssh: list[str], dest: str, name: str, signum: int) -> None:
        """Sent, never waited for: the run's ending tells what it did. Each
        signal is its own call (a TERM then a KILL are two)."""
        task = asyncio.ensure_future(self._run(ssh, dest, "signal", name, [str(signum)]))
        self._signals.add(task)  # the loop holds tasks weakly only
        task.add_done_callback(self._signals.discard)
