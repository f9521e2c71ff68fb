"""Bad input: odd arguments and environment values pass through untouched,
and bytes a hostile child writes cannot break the editor or its titles."""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Editor, Sandbox, editor, wait_until

pytestmark = pytest.mark.nvim

# Whatever msgpack and an argv can carry: no NUL, no lone surrogates.
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=24)
PRINT_ARGV = "import sys, json; print(json.dumps(sys.argv[1:]))"
PRINT_ENV = "import os, json; print(json.dumps(os.environ.get('TTYOFFER_VALUE')))"


@pytest.fixture(scope="module")
def shared(registered_sandbox: Sandbox) -> Iterator[Editor]:
    with editor(registered_sandbox) as ed:
        yield ed


def run_json(ed: Editor, cmd: list[str] | str, opts: dict[str, Any] | None = None) -> object:
    out = ed.lua(
        """
        local cmd, opts = ...
        local stdout = ''
        if opts == vim.NIL or opts == nil then opts = {} end
        opts.on_stdout = function(_, d) stdout = stdout .. table.concat(d, '\\n') end
        local job = require('ttyoffer').jobstart(cmd, opts)
        local code = vim.fn.jobwait({job}, 10000)[1]
        return {code, stdout, require('ttyoffer').status().skipped}
        """,
        cmd,
        opts,
    )
    code, stdout, skipped = out
    assert code == 0, stdout
    assert not skipped, skipped  # every one of them went through the offer
    return json.loads(stdout)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(TEXT, max_size=6))
def test_the_child_receives_exactly_its_argv(shared: Editor, args: list[str]) -> None:
    assert run_json(shared, [sys.executable, "-c", PRINT_ARGV, *args]) == args


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=TEXT)
def test_environment_values_round_trip(shared: Editor, value: str) -> None:
    opts = {"env": {"TTYOFFER_VALUE": value}}
    assert run_json(shared, [sys.executable, "-c", PRINT_ENV], opts) == value


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arg=TEXT)
def test_string_commands_reach_the_shell_unchanged(shared: Editor, arg: str) -> None:
    cmd = shared.lua(
        "return ... .. ' ' .. vim.fn.shellescape(select(2, ...))", f"{sys.executable} -c '{PRINT_ARGV}'", arg
    )
    assert run_json(shared, cmd) == [arg]


def test_odd_arguments_by_name(shared: Editor) -> None:
    odd = [
        "with space",
        "'single'",
        '"double"',
        "new\nline",
        "-leading-dash",
        "--",
        "ünïcödé ✓",
        "",
        "$HOME",
        "`id`",
    ]
    assert run_json(shared, [sys.executable, "-c", PRINT_ARGV, *odd]) == odd


HOSTILE = (
    "import os, sys\n"
    "fd = os.open('/dev/tty', os.O_RDWR)\n"
    "os.write(fd, b'\\x1b]0;\\x1b[31mEVIL\\x07TITLE\\x07')\n"  # OSC title with control characters
    "os.write(fd, b'\\x1b]2;\\xe2\\x80\\xaeevil\\x1b\\\\')\n"  # bidi override in a title
    "os.write(fd, b'\\x1b[999;999H\\x1b[?1049h\\x1b[' + b'9' * 5000 + b'm')\n"  # malformed, huge parameter
    "os.write(fd, bytes(range(256)) * 4096)\n"  # a megabyte of every byte value
    "os.write(fd, b'\\x1b[2J\\x1b[HPass\\x1b[1mword\\x07\\x1b]0;\\x07: ')\n"
    "os.write(fd, b'\\x1b]2;\\xe2\\x80\\xaeEVIL title\\x07')\n"  # a last title, a bidi override
    "os.read(fd, 1)\n"
)


def test_a_hostile_child_cannot_break_the_editor_or_its_titles(ed: Editor) -> None:
    job = ed.lua("return require('ttyoffer').jobstart(...)", [sys.executable, "-c", HOSTILE])
    ed.wait_event("TtyOfferPresent")
    win = wait_until(lambda: ed.float_wins(), what="the window")[0]

    def title() -> str:
        return "".join(chunk[0] for chunk in ed.lua("return vim.api.nvim_win_get_config(...).title", win))

    wait_until(lambda: "Password" in title(), 20, "the prompt in the title")
    text = title()
    assert all(unicodedata.category(c)[0] != "C" for c in text), repr(text)
    assert "EVIL" not in text and "evil" not in text
    assert len(text) <= 120
    # The child's titles are dropped on the way (sequences.py): not on the
    # window's terminal buffer (b:term_title, which a statusline may show) ...
    buf = ed.lua("return vim.api.nvim_win_get_buf(...)", win)
    assert ed.lua("return vim.b[...].term_title", buf) is None
    # ... and not in the window's title, which stays the command and its prompt.
    assert "EVIL" not in title()
    assert title().endswith(" — Password "), title()
    # The editor is responsive.
    assert ed.nvim.eval("1 + 1") == 2
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("x<CR>")
    assert ed.lua("return vim.fn.jobwait({...}, 10000)[1]", job) == 0
    ed.wait_event("TtyOfferClose")
    assert ed.float_wins() == []
