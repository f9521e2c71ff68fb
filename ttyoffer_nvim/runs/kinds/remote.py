"""A persistent run on another machine: a dtach session there, reached over
the user's own ssh (runs/remote.py); the pane's terminal runs ssh.

The remote side marks its output (remote.Stream): what comes before its
attach marker is the replay, and dtach's clear-screen after it is dropped
(dtach.ClearFilter); its end marker is the program's ending, told as the
run's. The session's list, kill and a run's signals are one ssh each over
the shared connection, run by the host off its loop (remote_calls.py).

Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from .. import remote
from ..ending import Ending
from ..remote_calls import RemoteCalls
from ..sessions import refusal as name_refusal
from .base import NotStarted, Program, RunHooks, RunKind, Start, words
from .dtach import ClearFilter

if TYPE_CHECKING:
    from ..runs import Run


def _calls(hooks: RunHooks) -> RemoteCalls:
    """The host's one RemoteCalls (what is known of each machine's sessions)."""
    return hooks.shared("remote calls", lambda: RemoteCalls(hooks.presenter.remote_answer))


def _runtime_dir() -> str | None:
    return os.environ.get("XDG_RUNTIME_DIR")


class RemoteKind(RunKind):
    name = "remote"
    argv_optional = True
    # The program on the pane's terminal is ssh alone (the session is far away).
    client_alone = True

    def __init__(self, dest: str, persist: str, ssh: list[str]) -> None:
        super().__init__()
        self.dest = dest
        self.persist = persist
        self.ssh = ssh
        self.stream: remote.Stream | None = None
        self.clear = ClearFilter()

    @classmethod
    def claims(cls, args: dict[str, Any]) -> bool:
        return bool(args.get("host"))

    @classmethod
    def from_args(cls, args: dict[str, Any]) -> RunKind | str:
        dest, persist = args.get("host"), args.get("persist") or ""
        ssh = args.get("ssh") or ["ssh"]
        if not isinstance(persist, str):
            return "persist must be a session name"
        if not isinstance(dest, str) or not persist:
            return "host must be an ssh destination, with persist naming the session"
        if not isinstance(ssh, list) or not all(isinstance(a, str) and a for a in ssh):
            return "ssh must be a non-empty list of strings"
        return cls(dest, persist, list(ssh))

    def program(self, hooks: RunHooks, run: Run, argv: list[str], env: dict[str, str], cwd: str) -> Program:
        """ssh, running the remote side of the session's attach (or make)."""
        built = remote.command(self.ssh, self.dest, "run", self.persist, run.spec.argv, _runtime_dir())
        if isinstance(built, str):
            return NotStarted("cannot_start", built)
        self.session, self.stream = built.name, remote.Stream(built.nonce)
        return Start(built.argv)

    def show(self, hooks: RunHooks, run: Run, data: bytes, eof: bool) -> None:
        if self.stream is None:
            self.clear.show(hooks, run, data)
            return
        for part in self.stream.feed(data) + ([self.stream.flush()] if eof else []):
            if isinstance(part, str):
                # What came before was the replay; dtach's clear follows.
                self.clear.begin()
            else:
                self.clear.show(hooks, run, part)

    def told_ending(self, run: Run) -> Ending | None:
        """The remote program's, as the far side told it (a closed pane
        keeps its own)."""
        if self.stream is None or (run.ending is not None and run.ending.reason == "closed"):
            return None
        code = None if run.ending is None else run.ending.code
        return remote.told_ending(self.stream, self.dest, self.session, code)

    def signal(self, hooks: RunHooks, run: Run, signum: int) -> None:
        """To the program on that machine, over the shared connection,
        never waited for."""
        if self.session:
            _calls(hooks).signal(self.ssh, self.dest, self.session, signum)

    def spare_holders(self) -> frozenset[int]:
        """The shared ssh connections, which may still hold the terminal a
        moment and are no leftover of its program (remote.shared_connections)."""
        with contextlib.suppress(OSError, ValueError, remote.ControlFolderError):
            return frozenset(remote.shared_connections(remote.control_folder(_runtime_dir())))
        return frozenset()

    # -- the sessions on a machine: `where` is its ssh destination -----------

    @classmethod
    async def sessions(cls, hooks: RunHooks, where: object, ssh: object, wait: float) -> dict[str, Any]:
        if not isinstance(where, str):
            return {"error": remote.refusal(where)}
        return await _calls(hooks).sessions(words(ssh), where, wait)

    @classmethod
    async def kill_session(
        cls, hooks: RunHooks, where: object, name: object, ssh: object, wait: float
    ) -> dict[str, Any]:
        if not isinstance(where, str) or not isinstance(name, str):
            return {"error": remote.refusal(where) or name_refusal(name)}
        return await _calls(hooks).kill(words(ssh), where, name, wait)

    @classmethod
    def check(cls, where: object, ssh: object) -> dict[str, Any]:
        """The argv of `:TtyRun check` (fast: nothing is asked of the
        network here; the editor runs it in a pane: ssh may ask)."""
        built = remote.command(words(ssh), where, "check", "", None, _runtime_dir())
        if isinstance(built, str):
            return {"error": built}
        return {"argv": built.argv, "name": built.name}
