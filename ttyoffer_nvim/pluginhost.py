"""The host process: pynvim's remote-plugin host, which takes no notice of
notifications it has no handler for.

Anything in the editor may broadcast with ``rpcnotify(0, …)``: neovim-qt's
shim sends ``Dir`` on every WinEnter and ``Gui`` events, other GUIs and
plugins their own. Every channel gets them, this host's too. Stock pynvim
answers each one it does not know with an error written to the editor's
screen; entering the prompt window then raised a hit-enter prompt exactly
when the user was to answer in it. A notification has nobody to answer to:
one that is not ours is dropped (logged at debug level). A request this host
does not handle still gets its error, as pynvim returns it: to the caller.
"""

from __future__ import annotations

import logging
from typing import Any

import pynvim

log = logging.getLogger(__name__)


class QuietHost(pynvim.Host):  # type: ignore[misc]  # pynvim ships no types
    """pynvim's Host, but deaf to notifications that are not for it."""

    def _on_notification(self, name: Any, args: Any) -> None:
        method = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        if method not in self._notification_handlers:
            log.debug("ttyoffer: ignored a notification not for this host: %r", method)
            return
        super()._on_notification(name, args)


def main(plugin_path: str) -> None:
    """What ``pynvim.start_host()`` does for the one plugin at `plugin_path`
    (its logging set-up, a session on stdio), with a QuietHost."""
    pynvim.setup_logging("rplugin")
    nvim = pynvim.Nvim.from_session(pynvim.stdio_session())
    QuietHost(nvim).start([plugin_path])
