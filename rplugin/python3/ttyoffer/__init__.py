"""Remote-plugin shell: decorated entry points only, delegating to ttyoffer_nvim.

Handlers are ``rpc_export``s, so the rplugin manifest holds a single spec
(``TtyOfferVersion()``, without which pynvim would not register the plugin at
all) and does not change between versions; Lua talks to the host with
rpcrequest and rpcnotify. ``sync=True`` only where a value is returned.
"""

import os
import sys
from typing import Any

import pynvim

# The Python core lives at the root of the checkout, three levels up.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from ttyoffer_nvim import __version__  # noqa: E402
from ttyoffer_nvim.bridge import TtyOfferHost  # noqa: E402


@pynvim.plugin
class TtyOfferPlugin:
    def __init__(self, nvim: pynvim.Nvim) -> None:
        self._host = TtyOfferHost(nvim)

    @pynvim.function("TtyOfferVersion", sync=True)
    def version(self, args: list[Any]) -> str:
        return __version__

    @pynvim.rpc_export("ttyoffer_status", sync=True)
    def status(self) -> dict[str, Any]:
        return self._host.status()

    @pynvim.rpc_export("ttyoffer_screen", sync=True)
    def screen(self, offer_id: int) -> str:
        return self._host.screen(offer_id)

    @pynvim.rpc_export("ttyoffer_refill")
    def refill(self, count: int, rows: int, cols: int) -> None:
        self._host.refill(count, rows, cols)

    @pynvim.rpc_export("ttyoffer_bind")
    def bind(self, offer_id: int, pid: int) -> None:
        self._host.bind(offer_id, pid)

    @pynvim.rpc_export("ttyoffer_dismiss")
    def dismiss(self, offer_id: int) -> None:
        self._host.dismiss(offer_id)

    @pynvim.rpc_export("ttyoffer_retire")
    def retire(self, offer_ids: list[int]) -> None:
        self._host.retire(offer_ids)

    @pynvim.rpc_export("ttyoffer_attach")
    def attach(self, offer_id: int, rows: int, cols: int) -> None:
        self._host.attach(offer_id, rows, cols)

    @pynvim.rpc_export("ttyoffer_input")
    def input(self, offer_id: int, data: Any) -> None:
        self._host.input(offer_id, data)

    @pynvim.rpc_export("ttyoffer_ack")
    def ack(self, offer_id: int, count: int) -> None:
        self._host.ack(offer_id, count)

    @pynvim.rpc_export("ttyoffer_resize")
    def resize(self, offer_id: int, rows: int, cols: int) -> None:
        self._host.resize(offer_id, rows, cols)

    @pynvim.rpc_export("ttyoffer_resize_armed")
    def resize_armed(self, rows: int, cols: int) -> None:
        self._host.resize_armed(rows, cols)

    @pynvim.rpc_export("ttyoffer_seen")
    def seen(self, offer_id: int) -> None:
        self._host.seen(offer_id)

    @pynvim.rpc_export("ttyoffer_release")
    def release(self, offer_id: int) -> None:
        self._host.release(offer_id)

    @pynvim.rpc_export("ttyoffer_drawn")
    def drawn(self, offer_id: int) -> None:
        self._host.drawn(offer_id)

    @pynvim.rpc_export("ttyoffer_knock")
    def knock(self, path: Any) -> None:
        self._host.knock(path)

    @pynvim.rpc_export("ttyoffer_configure")
    def configure(self, blocked_ms: float) -> None:
        self._host.configure(blocked_ms)

    @pynvim.rpc_export("ttyoffer_run_path", sync=True)
    def run_path(self) -> dict[str, Any]:
        return self._host.run_path()

    @pynvim.rpc_export("ttyoffer_sessions", sync=True)
    def sessions(self) -> dict[str, Any]:
        return self._host.sessions()

    @pynvim.rpc_export("ttyoffer_session_kill", sync=True)
    def session_kill(self, name: Any) -> dict[str, Any]:
        return self._host.session_kill(name)

    @pynvim.rpc_export("ttyoffer_tmux_prepare", sync=True)
    def tmux_prepare(self, spec: Any) -> dict[str, Any]:
        return self._host.answer_now(self._host.tmux_prepare(spec))

    @pynvim.rpc_export("ttyoffer_tmux_list", sync=True)
    def tmux_list(self, server: Any) -> dict[str, Any]:
        return self._host.answer_now(self._host.tmux_list(server))

    @pynvim.rpc_export("ttyoffer_tmux_kill", sync=True)
    def tmux_kill(self, session: Any, server: Any) -> dict[str, Any]:
        return self._host.answer_now(self._host.tmux_kill(session, server))

    @pynvim.rpc_export("ttyoffer_ask")
    def ask(self, token: int, name: Any, args: Any) -> None:
        self._host.ask(token, name, args)

    @pynvim.rpc_export("ttyoffer_remote_command", sync=True)
    def remote_command(self, dest: Any, action: Any, name: Any, ssh: Any, signum: Any) -> dict[str, Any]:
        return self._host.remote_command(dest, action, name, ssh, signum)

    @pynvim.rpc_export("ttyoffer_run_start")
    def run_start(self, run_id: int, spec: Any) -> None:
        self._host.run_start(run_id, spec)

    @pynvim.rpc_export("ttyoffer_run_input")
    def run_input(self, run_id: int, data: Any) -> None:
        self._host.run_input(run_id, data)

    @pynvim.rpc_export("ttyoffer_run_ack")
    def run_ack(self, run_id: int, count: int) -> None:
        self._host.run_ack(run_id, count)

    @pynvim.rpc_export("ttyoffer_run_resize")
    def run_resize(self, run_id: int, rows: int, cols: int) -> None:
        self._host.run_resize(run_id, rows, cols)

    @pynvim.rpc_export("ttyoffer_run_close")
    def run_close(self, run_id: int) -> None:
        self._host.run_close(run_id)

    @pynvim.rpc_export("ttyoffer_run_signal")
    def run_signal(self, run_id: int, signal: int) -> None:
        self._host.run_signal(run_id, signal)
