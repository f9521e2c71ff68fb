"""The protocol between editor and host is named once on each side
(lua/ttyoffer/host/protocol.lua, ttyoffer_nvim/protocol.py): both sides list the
same events and methods with the same arguments, and every handler on
either side is there, with those arguments."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from harness import ROOT
from ttyoffer_nvim import protocol
from ttyoffer_nvim.bridge import NvimPresenter

pytestmark = pytest.mark.nvim


def lua_handler_params(lua: Any) -> dict[str, list[str]]:
    """Each function of ttyoffer.events and its parameter names."""
    params: dict[str, list[str]] = lua(
        """
        local out = {}
        for name, fn in pairs(require('ttyoffer.events')) do
          local params, i = {}, 1
          while true do
            local param = debug.getlocal(fn, i)
            if not param then break end
            params[i], i = param, i + 1
          end
          out[name] = params
        end
        return out
        """
    )
    return params


def test_both_sides_list_the_same_events(lua: Any) -> None:
    events = lua("return require('ttyoffer.host.protocol').events")
    assert {name: tuple(args) for name, args in events.items()} == protocol.EVENTS


def test_both_sides_list_the_same_methods(lua: Any) -> None:
    methods = lua("return require('ttyoffer.host.protocol').methods")
    ours = {name: ("request", args) for name, args in protocol.REQUESTS.items()}
    ours |= {name: ("notify", args) for name, args in protocol.NOTIFICATIONS.items()}
    assert {name: (m["kind"], tuple(m["args"])) for name, m in methods.items()} == ours


def test_the_editor_handles_every_event_with_its_arguments(lua: Any) -> None:
    handlers = lua_handler_params(lua)
    assert {name: tuple(params) for name, params in handlers.items()} == protocol.EVENTS


def test_the_host_sends_every_event_but_stock_through_the_presenter() -> None:
    # stock answers a refill, answer a request; the rest are what offers
    # have to say. editor_waits_for_user sends no event: it asks Neovim's
    # own API; knock_at and knock connect and write to the editor's knock
    # socket.
    sent = {
        name: tuple(p if p != "offer" else "offer_id" for p in list(inspect.signature(fn).parameters)[1:])
        for name, fn in inspect.getmembers(NvimPresenter, inspect.isfunction)
        if not name.startswith("_") and name not in ("editor_waits_for_user", "knock_at", "knock")
    }
    expected = {name: args for name, args in protocol.EVENTS.items() if name not in ("stock", "answer")}
    # A run's events are sent from the Run itself: its id, and what it
    # carries (the pid, the result) after the data the presenter is given.
    for name in [n for n in expected if n.startswith("run_")]:
        assert sent[name][0] == "run" and expected[name][0] == "run_id", name
        assert sent[name][1:] == expected[name][1 : len(sent[name])], name
        del sent[name], expected[name]
    assert sent == expected


def test_the_remote_plugin_exports_every_method_with_its_arguments() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "rplugin" / "python3"))
    try:
        from ttyoffer import TtyOfferPlugin  # the rplugin package
    finally:
        sys.path.pop(0)
    exported = {}
    for _, fn in inspect.getmembers(TtyOfferPlugin, inspect.isfunction):
        name = getattr(fn, "_nvim_rpc_method_name", "")
        if name.startswith(protocol.METHOD_PREFIX):
            params = tuple(list(inspect.signature(fn).parameters)[1:])
            exported[name] = ("request" if getattr(fn, "_nvim_rpc_sync", False) else "notify", params)
    ours = {protocol.method_name(n): ("request", a) for n, a in protocol.REQUESTS.items()}
    ours |= {protocol.method_name(n): ("notify", a) for n, a in protocol.NOTIFICATIONS.items()}
    assert exported == ours


def test_a_name_outside_the_protocol_fails_where_it_is_written(lua: Any) -> None:
    ok, err = lua("return {pcall(require('ttyoffer.host').notify, 'bnid', 1, 2)}")
    assert not ok and "bnid is not a notify of the host protocol" in err
    ok, err = lua("return {pcall(require('ttyoffer.host').request, 'dismiss', 1)}")
    assert not ok and "dismiss is not a request of the host protocol" in err
    with pytest.raises(KeyError):
        protocol.event_call("presnet")
