"""One rule for text from a command that the editor shows: the Lua side
(window titles, notices) and the host (the screen's question) clean text
alike, from one table generated from the rule."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
import unprintable
from hypothesis import given, settings
from hypothesis import strategies as st

from ttyoffer_nvim.term.text import sanitize

pytestmark = pytest.mark.nvim


HOSTILE = [
    "git push",
    "evil\u202egnp.exe",  # bidi override: would reverse what follows
    "a\u2028b\u2029c",  # line and paragraph separators
    "tag\U000e0041\U000e0042s",  # tag characters (Cf) outside the BMP
    "esc\x1b]0;pwned\x07title",  # a terminal title sequence
    "bell\x07 null\x00 del\x7f c1\x85",
    "zero\u200bwidth\u2060joiner\ufeff",
    "private\ue000use\U000f0000",
    "  spaced \t out \n ",
    "nbsp\u00a0kept",  # printable spaces stay
    "x" * 100,
    "é" * 50,
    "",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_lua_and_python_clean_alike(lua: Any, text: str) -> None:
    assert lua("return require('ttyoffer.shared.title').sanitize(...)", text, 40) == sanitize(text, 40)


def test_nothing_unprintable_survives(lua: Any) -> None:
    for text in HOSTILE:
        cleaned = lua("return require('ttyoffer.shared.title').sanitize(...)", text, 200)
        assert not [ch for ch in cleaned if unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "Zl", "Zp")]
    of_command = "return require('ttyoffer.shared.title').of_command(...)"
    assert lua(of_command, ["evil\u202e", "x\u2028y"]) == "evil x y"


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=80))
def test_any_text_cleans_alike(lua: Any, text: str) -> None:
    assert lua("return require('ttyoffer.shared.title').sanitize(...)", text, 40) == sanitize(text, 40)


def test_invalid_utf8_from_a_command_is_unprintable(lua: Any) -> None:
    # Arguments are bytes: an invalid sequence must not pass as is.
    assert lua("return require('ttyoffer.shared.title').sanitize('caf\\xff\\xc3\\xa9 \\xc3')") == "caf é"


def test_the_lua_table_is_generated_from_the_rule() -> None:
    text = unprintable.TITLE_LUA.read_text()
    if f"Unicode {unicodedata.unidata_version}," not in text:
        pytest.skip(
            f"the table was generated for another Unicode than this Python's {unicodedata.unidata_version}"
        )
    assert unprintable.current_lua_table(text) == unprintable.lua_table()
