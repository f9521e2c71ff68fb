"""What the host process sets up for itself, once, when its plugin loads:
room for a descriptor per pty, and pynvim's log kept free of terminal
traffic (the keys typed into a prompt, what a prompt shows)."""

from __future__ import annotations

import logging

from .protocol import TERMINAL_TRAFFIC
from .term import procfs

log = logging.getLogger(__name__)


def raise_fd_limit(ceiling: int = procfs.FD_CEILING) -> None:
    """Two descriptors per command in flight (procfs.raise_fd_limit, which
    the keeper calls too); a failure is only logged."""
    if not procfs.raise_fd_limit(ceiling):
        log.debug("ttyoffer: could not raise the descriptor limit")


class RedactTerminalTraffic(logging.Filter):
    """Keys typed into a prompt and what a prompt shows are secrets. pynvim's
    own debug logging (NVIM_PYTHON_LOG_LEVEL=DEBUG) writes whole messages,
    arguments included; those that carry terminal bytes are redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:
            return True
        if any(marker in text for marker in TERMINAL_TRAFFIC):
            record.msg, record.args = "ttyoffer: terminal traffic (redacted)", ()
        return True


def install_log_redaction() -> None:
    """On every handler of the root logger, where pynvim puts its log file."""
    for handler in logging.root.handlers:
        if not any(isinstance(f, RedactTerminalTraffic) for f in handler.filters):
            handler.addFilter(RedactTerminalTraffic())
