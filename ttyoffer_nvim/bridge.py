"""The only module that talks to Neovim: RPC entry points and the Presenter.

Everything here runs on the host's event loop. Calls towards Neovim are
notifications (``async_=True``): the host never waits on the editor, because
the editor may itself be blocked in a spawn that is waiting on us.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from . import procfs
from .keeper import KeeperLink
from .offer import Offer, OfferTable

log = logging.getLogger(__name__)

_LUA_EVENT = "require('ttyoffer.presenter').on_host_event(...)"
_LUA_STOCK = "require('ttyoffer.host').on_stock(...)"


def as_bytes(data: Any) -> bytes:
    """Lua strings arrive as msgpack str; surrogateescape restores the raw bytes."""
    if isinstance(data, bytes):
        return data
    return str(data).encode("utf-8", "surrogateescape")


def raise_fd_limit(ceiling: int = procfs.FD_CEILING) -> None:
    """Two descriptors per command in flight (procfs.raise_fd_limit, which
    the keeper calls too); a failure is only logged."""
    if not procfs.raise_fd_limit(ceiling):
        log.debug("ttyoffer: could not raise the descriptor limit")


_TERMINAL_TRAFFIC = ("ttyoffer_input", "on_host_event")


class RedactTerminalTraffic(logging.Filter):
    """Keys typed into a prompt and what a prompt shows are secrets. pynvim's
    own debug logging (NVIM_PYTHON_LOG_LEVEL=DEBUG) writes whole messages,
    arguments included; those that carry terminal bytes are redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:
            return True
        if any(marker in text for marker in _TERMINAL_TRAFFIC):
            record.msg, record.args = "ttyoffer: terminal traffic (redacted)", ()
        return True


def install_log_redaction() -> None:
    """On every handler of the root logger, where pynvim puts its log file."""
    for handler in logging.root.handlers:
        if not any(isinstance(f, RedactTerminalTraffic) for f in handler.filters):
            handler.addFilter(RedactTerminalTraffic())


class NvimPresenter:
    def __init__(self, nvim: Any) -> None:
        self._nvim = nvim

    def _send(self, *args: Any) -> None:
        try:
            self._nvim.exec_lua(_LUA_EVENT, *args, async_=True)
        except Exception:  # the editor is going away; nothing to show anything on
            log.debug("ttyoffer: could not notify the editor", exc_info=False)

    def present(self, offer: Offer, data: bytes, prompt: str) -> None:
        self._send("present", offer.id, data, prompt)

    def output(self, offer: Offer, data: bytes) -> None:
        self._send("output", offer.id, data)

    def prompt(self, offer: Offer, prompt: str) -> None:
        self._send("prompt", offer.id, prompt)

    def closed(self, offer: Offer, reason: str) -> None:
        self._send("closed", offer.id, reason)

    def released(self, offer_ids: list[int]) -> None:
        self._send("released", 0, offer_ids)

    def turned_away(self, offer: Offer, writers: list[str]) -> None:
        self._send("turned_away", offer.id, writers)


class TtyOfferHost:
    """Plain class behind the rplugin shell; one per host process."""

    def __init__(self, nvim: Any) -> None:
        self._nvim = nvim
        self._table: OfferTable | None = None
        self._keeper: KeeperLink | None = None
        raise_fd_limit()
        install_log_redaction()

    @property
    def table(self) -> OfferTable:
        if self._table is None:
            self._keeper = KeeperLink.start()
            self._table = OfferTable(self._nvim.loop, NvimPresenter(self._nvim), self._keeper)
        return self._table

    def _allocate(self, count: int, rows: int, cols: int) -> tuple[list[list[Any]], str]:
        ptys: list[list[Any]] = []
        for _ in range(max(0, min(int(count), 64))):
            try:
                offer = self.table.open(int(rows), int(cols))
            except OSError as err:
                return ptys, f"cannot open a pty: {err.strerror or err}"
            ptys.append([offer.id, offer.slave_path])
        return ptys, ""

    # -- requests (a value is returned) -------------------------------------

    def open(self, count: int, rows: int, cols: int) -> dict[str, Any]:
        ptys, error = self._allocate(count, rows, cols)
        return {"ptys": ptys, "error": error, "pid": os.getpid()}

    def status(self) -> dict[str, Any]:
        offers = [
            {
                "id": o.id,
                "pid": o.pid,
                "state": o.state.value,
                "prompt": o.last_prompt,
                "tty": o.slave_path,
            }
            for o in self.table
        ]
        return {
            "pid": os.getpid(),
            "keeper_pid": self._keeper.pid if self._keeper else 0,
            "offers": offers,
            "fds": len(os.listdir("/proc/self/fd")),
        }

    def screen(self, offer_id: int) -> str:
        offer = self.table.get(int(offer_id))
        return offer.screen.text() if offer else ""

    # -- notifications --------------------------------------------------------

    def refill(self, count: int, rows: int, cols: int) -> None:
        ptys, error = self._allocate(count, rows, cols)
        try:
            self._nvim.exec_lua(_LUA_STOCK, ptys, error, async_=True)
        except Exception:
            log.debug("ttyoffer: could not return ptys to the editor")

    def bind(self, offer_id: int, pid: int) -> None:
        self.table.bind(int(offer_id), int(pid))

    def dismiss(self, offer_id: int) -> None:
        self.table.dismiss(int(offer_id))

    def attach(self, offer_id: int, rows: int, cols: int) -> None:
        self.table.attach(int(offer_id), int(rows), int(cols))

    def input(self, offer_id: int, data: Any) -> None:
        self.table.write(int(offer_id), as_bytes(data))

    def resize(self, offer_id: int, rows: int, cols: int) -> None:
        self.table.resize(int(offer_id), int(rows), int(cols))

    def resize_armed(self, rows: int, cols: int) -> None:
        self.table.resize_armed(int(rows), int(cols))
