"""The protocol's old per-kind methods, each a thin alias onto the kinds'
generic ones (bridge.TtyOfferHost's run_sessions, run_session_kill,
run_prepare, run_check, run_signal): kept while the editor's side still
calls them, to go once it calls the generic ones.

The one place outside runs/kinds/ that names a kind (the test of kind
branches allows this module, and only it, for that).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .runs.runs import RunTable


class OldMethods:
    if TYPE_CHECKING:

        @property
        def runs(self) -> RunTable: ...

        async def run_sessions(self, kind: Any, where: Any, ssh: Any, wait_ms: int) -> dict[str, Any]: ...

        async def run_session_kill(
            self, kind: Any, where: Any, name: Any, ssh: Any, wait_ms: int
        ) -> dict[str, Any]: ...

        async def run_prepare(self, kind: Any, spec: Any) -> dict[str, Any]: ...

        def run_check(self, kind: Any, where: Any, ssh: Any) -> dict[str, Any]: ...

    async def sessions(self) -> dict[str, Any]:
        return await self.run_sessions("dtach", None, None, 0)

    async def session_kill(self, name: Any) -> dict[str, Any]:
        return await self.run_session_kill("dtach", None, name, None, 0)

    async def tmux_prepare(self, spec: Any) -> dict[str, Any]:
        return await self.run_prepare("tmux", spec)

    async def tmux_list(self, server: Any) -> dict[str, Any]:
        return await self.run_sessions("tmux", server, None, 0)

    async def tmux_kill(self, session: Any, server: Any) -> dict[str, Any]:
        return await self.run_session_kill("tmux", server, session, None, 0)

    async def remote_sessions(self, dest: Any, ssh: Any, wait_ms: int) -> dict[str, Any]:
        return await self.run_sessions("remote", dest, ssh, wait_ms)

    async def remote_kill(self, dest: Any, name: Any, ssh: Any, wait_ms: int) -> dict[str, Any]:
        return await self.run_session_kill("remote", dest, name, ssh, wait_ms)

    def remote_command(self, dest: Any, action: Any, name: Any, ssh: Any, signum: Any) -> dict[str, Any]:
        if action != "check":
            return {"error": f"no remote action {action!r} here"}
        return self.run_check("remote", dest, ssh)

    def remote_signal(self, dest: Any, name: Any, ssh: Any, signum: int) -> None:
        """By the session's name (run_signal finds it by the run's id)."""
        from .runs.kinds.remote import RemoteKind

        RemoteKind.signal_named(self.runs, dest, name, ssh, signum)
