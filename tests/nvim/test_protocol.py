"""The protocol between editor and host is declared once
(ttyoffer_nvim/protocol.py): the editor's lua/ttyoffer/host/protocol.lua is written from it
and current, the remote plugin exports every method from it, every handler
on either side is there with those arguments, and the host takes each
argument as declared."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

import protocol_lua
from harness import ROOT, Sandbox, editor
from ttyoffer_nvim import protocol
from ttyoffer_nvim.bridge import NvimPresenter, TtyOfferHost

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


def shell_plugin_class() -> Any:
    import sys

    sys.path.insert(0, str(ROOT / "rplugin" / "python3"))
    try:
        from ttyoffer import TtyOfferPlugin  # the rplugin package
    finally:
        sys.path.pop(0)
    return TtyOfferPlugin


def test_the_remote_plugin_exports_every_method_with_its_arguments() -> None:
    exported = {}
    for _, fn in inspect.getmembers(shell_plugin_class(), inspect.isfunction):
        name = getattr(fn, "_nvim_rpc_method_name", "")
        if name.startswith(protocol.METHOD_PREFIX):
            params = tuple(list(inspect.signature(fn).parameters)[1:])
            exported[name] = ("request" if getattr(fn, "_nvim_rpc_sync", False) else "notify", params)
            # Marked by @pynvim.plugin: the host binds no Neovim to them.
            assert getattr(fn, "_nvim_bind", None) is False, name
    ours = {protocol.method_name(n): ("request", a) for n, a in protocol.REQUESTS.items()}
    ours |= {protocol.method_name(n): ("notify", a) for n, a in protocol.NOTIFICATIONS.items()}
    assert exported == ours


def test_each_export_hands_its_arguments_to_the_host() -> None:
    calls = []

    class Host:
        def handle(self, name: str, args: tuple[Any, ...]) -> str:
            calls.append((name, args))
            return "value"

    plugin = object.__new__(shell_plugin_class())
    plugin._host = Host()
    assert plugin.screen(7) == "value"
    plugin.bind("3", 4)
    assert calls == [("screen", (7,)), ("bind", ("3", 4))]


def test_the_host_handles_every_method_with_its_arguments() -> None:
    handlers = {
        name: tuple(list(inspect.signature(getattr(TtyOfferHost, name)).parameters)[1:])
        for name in protocol.METHODS
    }
    assert handlers == {name: m.args for name, m in protocol.METHODS.items()}


def test_the_host_takes_each_argument_as_declared() -> None:
    assert protocol.arguments("bind", ["3", 4.0]) == [3, 4]
    assert protocol.arguments("retire", [["1", 2]]) == [[1, 2]]
    assert protocol.arguments("input", [1, "\udcff"]) == [1, b"\xff"]
    assert protocol.arguments("configure", ["250"]) == [250.0]
    assert protocol.arguments("knock", [b"/tmp/k".decode()]) == ["/tmp/k"]
    spec = {"argv": ["x"]}
    assert protocol.arguments("run_start", (1, spec))[1] is spec  # "any": as it came
    assert protocol.arguments("status", ()) == []
    with pytest.raises(TypeError, match="takes 2 arguments"):
        protocol.arguments("bind", [1])
    with pytest.raises(ValueError):
        protocol.arguments("dismiss", ["one"])
    with pytest.raises(ValueError, match="no argument type"):
        protocol.notify(offer_id="integer")


def test_terminal_traffic_is_what_the_declaration_marks() -> None:
    assert set(protocol.TERMINAL_TRAFFIC) == {
        "ttyoffer_input",
        "ttyoffer_screen",
        "ttyoffer.events').present",
        "ttyoffer.events').output",
        "ttyoffer.events').unserved",
        "ttyoffer.events').declined",
        "ttyoffer_run_input",
        "ttyoffer.events').run_output",
    }


def test_protocol_lua_is_written_from_the_declaration() -> None:
    assert protocol_lua.lua_path().read_text() == protocol_lua.text(), (
        "run python scripts/protocol_lua.py --write"
    )


def test_a_name_outside_the_protocol_fails_where_it_is_written(lua: Any) -> None:
    ok, err = lua("return {pcall(require('ttyoffer.host').notify, 'bnid', 1, 2)}")
    assert not ok and "bnid is not a notify of the host protocol" in err
    ok, err = lua("return {pcall(require('ttyoffer.host').request, 'dismiss', 1)}")
    assert not ok and "dismiss is not a request of the host protocol" in err
    with pytest.raises(KeyError):
        protocol.event_call("presnet")


def test_the_exports_answer_through_the_real_host(sandbox: Sandbox, tmp_path: Path) -> None:
    # The editor sends every request as `ask`; the exports themselves still
    # answer a caller of rpcrequest, a request made of a coroutine (tmux,
    # off the loop) waited for in its handler, and a notification's
    # arguments are taken as declared (a string id, as a caller may send).
    with editor(sandbox) as ed:
        chan = ed.lua("return require('ttyoffer.host').get_channel()")
        status = ed.lua("return vim.rpcrequest(...)", chan, "ttyoffer_status")
        assert status["pid"] > 0
        listed = ed.lua(
            "return vim.rpcrequest(...)",
            chan,
            "ttyoffer_run_sessions",
            "tmux",
            str(tmp_path / "no-server"),
            None,
            0,
        )
        # One rule for every request: a value, or {error} alone.
        assert set(listed) == {"sessions"} or set(listed) == {"error"}, listed
        ed.lua("vim.rpcnotify(...)", chan, "ttyoffer_resize_armed", "30", "100")
        assert ed.lua("return vim.rpcrequest(...)", chan, "ttyoffer_screen", "999999") == ""
        assert ed.host_status()["pid"] == status["pid"]
