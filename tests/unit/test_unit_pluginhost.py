"""The host process's dispatch, hermetic: a notification nobody registered
for (a GUI's or a plugin's rpcnotify(0, …)) is dropped without a word to the
editor; one of the plugin's own is delivered; a request nobody handles is
answered with an error, to the caller."""

from __future__ import annotations

from typing import Any

import pynvim
import pytest

from ttyoffer_nvim.pluginhost import QuietHost


class EditorStandIn:
    """What the Host writes to the editor's screen, kept."""

    def __init__(self) -> None:
        self.written: list[str] = []

    def err_write(self, msg: str, async_: bool = False) -> None:
        self.written.append(msg)


def test_a_notification_not_for_the_host_is_dropped_silently() -> None:
    editor = EditorStandIn()
    host = QuietHost(editor)
    host._on_notification("Dir", ["/home/someone"])
    host._on_notification(b"Gui", ["Foreground"])
    host._on_notification("SomePlugin:event", [{"a": 1}])
    assert editor.written == []


def test_a_notification_for_the_host_is_delivered() -> None:
    host = QuietHost(EditorStandIn())
    got: list[tuple[Any, ...]] = []
    host._notification_handlers["ttyoffer_seen"] = lambda *args: got.append(args)
    host._on_notification(b"ttyoffer_seen", [7])
    assert got == [(7,)]


def test_an_unknown_request_is_an_error_for_the_caller() -> None:
    editor = EditorStandIn()
    host = QuietHost(editor)
    with pytest.raises(pynvim.ErrorResponse, match='no request handler registered for "nope"'):
        host._on_request("nope", [])
    assert editor.written == []
