"""Hermetic: the pyte screen model, prompt text and title sanitising."""

from __future__ import annotations

import pyte
import pytest

from ttyoffer_nvim.offer.screen import PROMPT_MAX, TAIL_LIMIT, ScreenModel
from ttyoffer_nvim.term.sequences import SequenceFilter
from ttyoffer_nvim.term.text import sanitize


def model(data: bytes, rows: int = 24, cols: int = 80) -> ScreenModel:
    screen = ScreenModel(rows, cols)
    screen.feed(data)
    return screen


def test_prompt_is_the_text_left_of_the_cursor() -> None:
    assert model(b"Enter passphrase for key '/k': ").prompt() == "Enter passphrase for key '/k'"
    assert model(b"Username for 'https://example.com': ").prompt() == "Username for 'https://example.com'"


def test_a_question_wrapped_by_the_terminal_is_read_from_its_beginning() -> None:
    question = "Enter passphrase for key '/tmp/pytest-of-root/pytest-12/a_long_test_name0/id_ed25519': "
    screen = model(b"earlier output\r\n" + question.encode(), rows=10, cols=30)
    shown = screen.prompt()
    assert len(shown) <= PROMPT_MAX
    # What asks, and what it asks for, with the middle of the path left out.
    assert shown.startswith("Enter passphrase for") and shown.endswith("a_long_test_name0/id_ed25519'")
    # A full line of output above a short question is not part of it...
    above = model(b"x" * 29 + b"\r\nPassword: ", rows=10, cols=30)
    assert above.prompt() == "Password"


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


def test_without_looking_above_only_the_cursor_line_counts() -> None:
    assert model(b"[sudo] password for alice:\r\n").prompt(look_above=False) == ""
    assert model(b"Password: ").prompt(look_above=False) == "Password"


def test_no_text_no_prompt() -> None:
    assert model(b"\x1b[2J\x1b[H").prompt() == ""


def test_sanitize_drops_controls_and_bounds_length() -> None:
    assert sanitize("a\x1b]0;evil\x07b\tc\x00d", PROMPT_MAX) == "a ]0;evil b c d"
    assert sanitize("x" * 500, PROMPT_MAX).endswith("…")
    assert len(sanitize("x" * 500, PROMPT_MAX)) == PROMPT_MAX
    assert sanitize("\u202eevil\u200b", PROMPT_MAX) == "evil"


def test_osc_title_and_malformed_escapes_do_not_reach_the_prompt() -> None:
    screen = model(b"\x1b]0;\x1b[31mHACK\x07\x1b[999;999HPassword: \x1b[")
    # The title is a title, not text; the cursor moved out of bounds stops
    # at the last cell, where "P" goes, and the rest wraps onto a new bottom
    # line, as on any terminal; the cut escape at the end shows nothing.
    assert screen.lines()[-2:] == [" " * 79 + "P", "assword:"]
    assert not any("HACK" in line or "\x1b" in line for line in screen.lines())
    # "P" filled the row above to its last column: the question wrapped.
    assert screen.prompt() == "Password"
    # The cut escape was only cut: its end, arriving later, completes it.
    screen.feed(b"1mX")
    assert screen.lines()[-1] == "assword: X"


def test_a_title_between_the_words_of_a_prompt_is_left_out() -> None:
    screen = model(b"Pass\x1b]0;HACK\x07word\x1b]2;\xe2\x80\xaeevil\x1b\\: ")
    assert screen.lines()[0] == "Password:"
    assert screen.prompt() == "Password"


def test_flood_keeps_only_the_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[int] = []
    parse = pyte.ByteStream.feed

    def counted(stream: pyte.ByteStream, data: bytes) -> None:
        parsed.append(len(data))
        parse(stream, data)

    monkeypatch.setattr(pyte.ByteStream, "feed", counted)
    screen = ScreenModel(24, 80)
    flood = b"".join(b"noise line %d\r\n" % i for i in range(20000))
    for start in range(0, len(flood), 4096):  # as a pty hands it out
        screen.feed(flood[start : start + 4096])
    screen.feed(b"Password: ")
    # Kept, unparsed, is the tail only; parsed, once asked, is that tail.
    assert len(screen._pending) <= TAIL_LIMIT
    assert parsed == []
    assert screen.prompt() == "Password"
    assert 0 < sum(parsed) <= TAIL_LIMIT
    # And the screen is what the tail drew: the last lines of the flood.
    assert screen.lines() == [f"noise line {i}" for i in range(19977, 20000)] + ["Password:"]


def test_resize_keeps_content() -> None:
    screen = model(b"hello")
    screen.resize(10, 40)
    assert screen.lines()[0] == "hello"
    assert len(screen.lines()) == 10


def test_curses_line_drawing_frames_are_not_letters() -> None:
    # ncurses on xterm draws frames with the DEC line-drawing set: ESC ( 0,
    # then l q k x m j, then ESC ( B. Split across feeds, as a pty delivers it.
    frame = (
        b"\x1b[2J\x1b[1;1H\x1b(0lqqqqqqqqqqqqqqqqqqqqqqqqqk\x1b(B"
        b"\x1b[2;1H\x1b(0x\x1b(B Passphrase: ________ \x1b(0x\x1b(B"
        b"\x1b[3;1H\x1b(0mqqqqqqqqqqqqqqqqqqqqqqqqqj\x1b(B\x1b[2;15H"
    )
    screen = ScreenModel(24, 80)
    for start in range(0, len(frame), 7):
        screen.feed(frame[start : start + 7])
    assert screen.prompt() == "Passphrase"
    lines = screen.lines()
    assert lines[0].startswith("┌──") and lines[1].startswith("│ Passphrase:") and lines[2].startswith("└──")


def test_shift_out_to_a_line_drawing_g1_and_back() -> None:
    screen = model(b"\x1b)0\x0eqqq\x0f text")
    assert screen.lines()[0] == "─── text"


def test_letters_inside_escape_sequences_are_left_alone() -> None:
    screen = model(b"\x1b(0\x1b[31mq\x1b]0;title x\x07q\x1b(B")
    assert screen.lines()[0] == "──"


def test_a_long_title_before_the_prompt_leaves_only_the_prompt() -> None:
    # As the host feeds it: through the window's filter first. Longer than
    # the kept tail, a title cut anywhere would show its payload as text.
    screen = ScreenModel(24, 80)
    sequences = SequenceFilter()
    stream = b"\x1b]0;" + b"T" * 10240 + b"\x07" + b"Password: "
    for start in range(0, len(stream), 4096):
        screen.feed(sequences.feed(stream[start : start + 4096]))
    assert screen.prompt() == "Password"
    assert screen.lines()[0] == "Password:"


def test_the_kept_tail_never_starts_inside_an_escape_sequence() -> None:
    # A bar of coloured cells with no newline, longer than the tail, then the
    # question: the tail's first bytes are cut out of a colour's sequence.
    bar = b"".join(b"\x1b[48;5;%dm " % (i % 256) for i in range(1000))
    stream = b"\x1b[H" + bar + b"\x1b[24;1HPassword: "
    cut = len(stream) - TAIL_LIMIT
    assert stream.rfind(b"\x1b", 0, cut + 1) > cut - len(b"\x1b[48;5;255m")  # inside one
    assert stream[cut : cut + 1] not in (b"\x1b", b" ")
    screen = model(stream)
    assert screen.prompt() == "Password"
    # Cells, blank; no parameter of a cut sequence read as text.
    assert not any(ch.isdigit() or ch in ";m" for line in screen.lines() for ch in line)


def test_the_kept_tail_never_starts_inside_a_character() -> None:
    # Two bytes a character, no newline, no escape sequence: the cut falls
    # inside a character for one of the two shifts. The screen is tall
    # enough to keep all of the tail in sight.
    for shift in range(2):
        screen = model(b"x" * shift + "é".encode() * 5000 + b" Password: ", rows=60)
        assert screen.prompt().endswith("é Password")
        assert "\ufffd" not in screen.text()
