"""The runs' rules are written once (ttyoffer_nvim/runs/rules.py, ending.py):
the editor's lua/ttyoffer/runs/rules.lua is generated from them and current,
no Lua file of the runs writes one of their constants by hand, and what the
editor checks up front (session names, destinations, an ending's words) is
what the host says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import rules_lua
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import ROOT
from ttyoffer_nvim.runs import ending, remote, remote_sh, rules, sessions

pytestmark = pytest.mark.nvim

RUNS_LUA = ROOT / "lua" / "ttyoffer" / "runs"


def test_rules_lua_is_written_from_the_rules() -> None:
    assert rules_lua.LUA_PATH.read_text() == rules_lua.text(), "run python scripts/rules_lua.py --write"


def _code(path: Path) -> str:
    """A Lua file without its comments (a rule may be named in words)."""
    return "\n".join(line.split("--", 1)[0] for line in path.read_text().splitlines())


# What a rule's constant looks like when it is written by hand in Lua.
HAND_WRITTEN = {
    "a signal's number": re.compile(
        rf"\b(SIG)?({'|'.join(rules.SIGNAL_NAMES)})\s*=\s*\d+|\bsignal\s*=\s*[1-9]"
    ),
    "the session-name characters": re.compile(re.escape(rules.NAME_CHARACTERS)),
    "the session-name length": re.compile(rf"sub\(1,\s*{rules.NAME_LENGTH}\)|<=\s*{rules.NAME_LENGTH}\b"),
    "the destination characters": re.compile(r"%\[%\]|\\\[\\\]"),
    "the destination length": re.compile(rf"<=\s*{rules.DESTINATION_LENGTH}\b"),
    "an ending's words": re.compile(
        # 'exited ' .. code, 'killed by ' .., 'not executable'
        "|".join(
            "'" + re.escape(re.sub(r"\{\w+\}", "", words)) for words in ending.WORDS.values() if " " in words
        )
    ),
}


@pytest.mark.parametrize("what", HAND_WRITTEN)
def test_no_rule_is_written_by_hand_on_the_lua_side(what: str) -> None:
    found = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in sorted(RUNS_LUA.rglob("*.lua"))
        if path != rules_lua.LUA_PATH
        for line in _code(path).splitlines()
        if HAND_WRITTEN[what].search(line)
    ]
    assert not found, f"{what} written by hand (read it from ttyoffer.runs.rules): {found}"


def test_the_host_writes_the_session_name_rule_once() -> None:
    # sessions.py and the remote sh read it from rules.py.
    for module in (sessions, remote_sh, remote):
        assert rules.NAME_CHARACTERS not in Path(str(module.__file__)).read_text(), module.__name__
    script = remote_sh.script_for("list", "x", [], "n", "i")
    assert f"*[!{rules.NAME_CHARACTERS}]*" in script and f"-le {rules.NAME_LENGTH} ]" in script


NAMES = ["build", "my.build", "-x-", "é-name", "a" * 60, "", "  ", "ok_name-2", "x/../y", "a" * 39 + "-b"]
DESTINATIONS = [
    "host",
    "user@host",
    "ssh://u@h:22",
    "[::1]:22",
    "-oProxyCommand=x",
    "a b",
    "h;x",
    "x" * 256,
    "",
]


@pytest.mark.parametrize("name", NAMES)
def test_a_session_name_is_checked_alike(lua: Any, name: str) -> None:
    names = "require('ttyoffer.runs.names')"
    assert lua(f"return {names}.sanitized_session(...)", name) == sessions.sanitize_name(name)
    problem = lua(f"return {names}.session_name_problem(...) or vim.NIL", name)
    assert problem == sessions.refusal(name)


@settings(max_examples=100, deadline=None)
@given(name=st.text(max_size=50))
def test_any_session_name_sanitises_alike(lua: Any, name: str) -> None:
    assert lua(
        "return require('ttyoffer.runs.names').sanitized_session(...)", name
    ) == sessions.sanitize_name(name)


@pytest.mark.parametrize("dest", DESTINATIONS)
def test_a_destination_is_checked_alike(lua: Any, dest: str) -> None:
    problem = lua("return require('ttyoffer.runs.names').destination_problem(...) or vim.NIL", dest)
    assert (problem is None) == (remote.refusal(dest) is None), dest


@pytest.mark.parametrize(
    "made",
    [
        ending.Ending(3),
        ending.Ending(143, 15, "signal"),
        ending.Ending(127, 0, "not_executable"),
        ending.Ending(129, 1, "closed"),
        ending.Ending(255, 0, "disconnected"),
    ],
)
def test_the_editor_describes_an_ending_it_makes_as_the_host(lua: Any, made: ending.Ending) -> None:
    shown = made.as_dict()
    said = shown.pop("said")
    describe = "return require('ttyoffer.runs').describe(...)"
    assert lua(describe, shown) == said  # made in the editor: the same words
    assert lua(describe, shown | {"said": "the host's words"}) == "the host's words"


def test_the_recording_bound_is_written_once() -> None:
    # Local (sessions.py, and sessionwrap.py, which runs alone and keeps a
    # copy) and remote (the far side's watcher rotates at half of it).
    from ttyoffer_nvim.runs import sessionwrap

    assert sessions.RECORDING_BYTES == sessionwrap.RECORDING_BYTES == rules.RECORDING_BYTES
    script = remote_sh.script_for("run", "build", ["true"], "0000", "")
    assert f"-gt {rules.RECORDING_BYTES // 2} ]" in script
    assert str(rules.RECORDING_BYTES // 2) not in Path(remote_sh.__file__).read_text()
