"""Hermetic: the pyte screen model, prompt text and title sanitising."""

from __future__ import annotations

from ttyoffer_nvim.screen import TAIL_LIMIT, ScreenModel, sanitize


def model(data: bytes, rows: int = 24, cols: int = 80) -> ScreenModel:
    screen = ScreenModel(rows, cols)
    screen.feed(data)
    return screen


def test_prompt_is_the_text_left_of_the_cursor() -> None:
    assert model(b"Enter passphrase for key '/k': ").prompt() == "Enter passphrase for key '/k'"
    assert model(b"Username for 'https://example.com': ").prompt() == "Username for 'https://example.com'"


def test_prompt_inside_a_curses_frame() -> None:
    # pinentry-curses style: a frame, a label, an entry field, the cursor in it.
    frame = (
        b"\x1b[2J\x1b[3;1H\xe2\x94\x8c" + b"\xe2\x94\x80" * 30 + b"\xe2\x94\x90"
        b"\x1b[4;1H\xe2\x94\x82 Please enter the passphrase"
        b"\x1b[6;1H\xe2\x94\x82 Passphrase: ________________ \xe2\x94\x82\x1b[6;16H"
    )
    assert model(frame).prompt() == "Passphrase"


def test_empty_cursor_line_falls_back_to_the_line_above() -> None:
    assert model(b"[sudo] password for alice:\r\n").prompt() == "[sudo] password for alice"


def test_no_text_no_prompt() -> None:
    assert model(b"\x1b[2J\x1b[H").prompt() == ""


def test_sanitize_drops_controls_and_bounds_length() -> None:
    assert sanitize("a\x1b]0;evil\x07b\tc\x00d") == "a ]0;evil b c d"
    assert sanitize("x" * 500).endswith("…")
    assert len(sanitize("x" * 500)) == 60
    assert sanitize("\u202eevil\u200b") == "evil"


def test_osc_title_and_malformed_escapes_do_not_reach_the_prompt() -> None:
    screen = model(b"\x1b]0;\x1b[31mHACK\x07\x1b[999;999HPassword: \x1b[")
    assert "\x1b" not in screen.prompt()
    assert "HACK" not in screen.prompt()


def test_flood_keeps_only_the_tail() -> None:
    screen = ScreenModel(24, 80)
    for i in range(20000):
        screen.feed(b"noise line %d\r\n" % i)
    screen.feed(b"Password: ")
    assert screen.prompt() == "Password"
    assert len(screen._pending) <= TAIL_LIMIT + 1
    assert "noise line 19999" in screen.text()


def test_resize_keeps_content() -> None:
    screen = model(b"hello")
    screen.resize(10, 40)
    assert screen.lines()[0] == "hello"
    assert len(screen.lines()) == 10
