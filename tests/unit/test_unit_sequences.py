"""Hermetic: what of a command's terminal output a prompt window lets through
(ttyoffer_nvim/term/sequences.py)."""

from __future__ import annotations

import codecs
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttyoffer_nvim.term.sequences import SequenceFilter

ESC = b"\x1b"
ST = b"\x1b\\"
BEL = b"\x07"


def passed(*reads: bytes) -> bytes:
    """What passes of these reads, in one filter."""
    sequences = SequenceFilter()
    return b"".join(sequences.feed(read) for read in reads)


# What reaches beyond the window: each is dropped whole, what is around it stays.
DROPPED = {
    "OSC 0 title, BEL": b"\x1b]0;a title\x07",
    "OSC 1 icon name, ST": b"\x1b]1;icon\x1b\\",
    "OSC 2 title, ST": b"\x1b]2;\xe2\x80\xaeevil title\x1b\\",
    "OSC 4 colour set": b"\x1b]4;1;rgb:ff/00/00\x07",
    "OSC 10 colour query": b"\x1b]10;?\x07",
    "OSC 11 colour query": b"\x1b]11;?\x1b\\",
    "OSC 12 cursor colour": b"\x1b]12;#ff0000\x07",
    "OSC 7 working directory": b"\x1b]7;file://host/home/alice\x1b\\",
    "OSC 9 notification": b"\x1b]9;Build done\x07",
    "OSC 777 notification": b"\x1b]777;notify;Title;Body\x1b\\",
    "OSC 99 notification": b"\x1b]99;i=1:d=0;Hello\x1b\\",
    "OSC 52 clipboard set": b"\x1b]52;c;cHduZWQ=\x07",
    "OSC 52 clipboard query": b"\x1b]52;c;?\x1b\\",
    "OSC 1337 iTerm2": b"\x1b]1337;File=name=eA==;inline=1:AAAA\x07",
    "OSC 133 prompt mark": b"\x1b]133;A\x07",
    "tmux passthrough, BEL inside": b"\x1bPtmux;\x1b\x1b]52;c;cHduZWQ=\x07\x1b\\",
    "tmux passthrough, ST inside": b"\x1bPtmux;\x1b\x1b]52;c;cHduZWQ=\x1b\x1b\\\x1b\\",
    "tmux passthrough of a CSI": b"\x1bPtmux;\x1b\x1b[2J\x1b\\",
    "DCS XTGETTCAP": b"\x1bP+q544e\x1b\\",
    "DCS DECRQSS": b"\x1bP$qm\x1b\\",
    "DCS sixel": b"\x1bPq#0;2;0;0;0#0~~@@vv@@~~$-\x1b\\",
    "APC kitty graphics": b"\x1b_Gf=100,a=T;AAAA\x1b\\",
    "PM": b"\x1b^privacy message\x1b\\",
    "SOS": b"\x1bXstart of string\x1b\\",
    "OSC 8-bit": b"\x9d0;a title\x07",
    "DCS 8-bit": b"\x90+q544e\x1b\\",
    "SOS 8-bit": b"\x98string\x1b\\",
    "PM 8-bit": b"\x9emessage\x1b\\",
    "APC 8-bit": b"\x9fGa=T;AAAA\x1b\\",
    "OSC as UTF-8 C1": b"\xc2\x9d0;a title\x07",
    "DCS as UTF-8 C1": b"\xc2\x90+q544e\xc2\x9c",
    "SOS as UTF-8 C1": b"\xc2\x98string\xc2\x9c",
    "PM as UTF-8 C1": b"\xc2\x9emessage\x1b\\",
    "APC as UTF-8 C1": b"\xc2\x9fGa=T\x07",
    "OSC ended by the UTF-8 ST": b"\x1b]0;title\xc2\x9c",
    "OSC ended by CAN": b"\x1b]0;title\x18",
    "OSC ended by SUB": b"\x1b]0;title\x1a",
    "DOCS leaving UTF-8": b"\x1b%@",
    "DOCS with an intermediate": b"\x1b%/G",
    "a terminator of nothing": b"\x1b\\",
    "a UTF-8 terminator of nothing": b"\xc2\x9c",
}


@pytest.mark.parametrize("sequence", DROPPED.values(), ids=DROPPED.keys())
def test_what_reaches_beyond_the_window_is_dropped(sequence: bytes) -> None:
    stream = b"Pass" + sequence + b"phrase: "
    assert passed(stream) == b"Passphrase: "
    # However the reads cut it.
    for cut in range(len(stream) + 1):
        assert passed(stream[:cut], stream[cut:]) == b"Passphrase: ", cut
    assert passed(*(bytes((byte,)) for byte in stream)) == b"Passphrase: "


# What a prompt needs to draw and ask: each passes unchanged.
KEPT = {
    "text": b"Enter passphrase for key '/home/alice/.ssh/id_ed25519': ",
    "C0 controls": b"a\x07b\x08c\td\ne\rf\x0eg\x0fh\x00",
    "cursor movement": b"\x1b[5;17H\x1b[2A\x1b[3C\x1b[B\x1b[D\x1b[10G\x1b[4d",
    "erase": b"\x1b[2J\x1b[H\x1b[K\x1b[1K\x1b[0J\x1b[3J",
    "SGR": b"\x1b[0;1;4;7m\x1b[38;5;208m\x1b[48;2;10;20;30m\x1b[38:2::1:2:3m\x1b[m",
    "DEC private modes": b"\x1b[?1049h\x1b[?25l\x1b[?7h\x1b[?1h\x1b[?12l\x1b[?1049l",
    "bracketed paste": b"\x1b[?2004h\x1b[?2004l",
    "mouse modes": b"\x1b[?1000h\x1b[?1002h\x1b[?1006h\x1b[?1015h\x1b[?1000l",
    "scroll region and insert": b"\x1b[1;24r\x1b[4l\x1b[2@\x1b[3P\x1b[L\x1b[M",
    "device attributes": b"\x1b[c\x1b[0c\x1b[>c\x1b[=c",
    "device status and cursor report": b"\x1b[5n\x1b[6n\x1b[?6n",
    "mode and version queries": b"\x1b[?2004$p\x1b[>q\x1b[?u",
    "cursor shape": b"\x1b[2 q\x1b[0 q",
    "charset designations": b"\x1b(0lqqk\x1b(B\x1b)0\x0eqq\x0f\x1b*B\x1b+B",
    "save and restore the cursor": b"\x1b7\x1b[10;10H\x1b8\x1b[s\x1b[u",
    "keypad modes": b"\x1b=\x1b>",
    "index, reverse index, reset": b"\x1bD\x1bM\x1bE\x1bc\x1b#8",
    "8-bit controls mode": b"\x1b F\x1b G",
    "é": "é".encode(),
    "€": "€".encode(),
    "emoji": "😀🔑👍🏽".encode(),
    "quotation marks": "“quoted” ‘single’".encode(),
    "Cyrillic": "Введите пароль для ключа: Пп Яя".encode(),
    "C1-looking continuations": "Ý Þ ß ❝❞ ☝ 🎞 𐀝 \U0010fffd".encode(),
    "Latin-1 supplement": "\u00a0¡£©®°±µ¶·¿".encode(),
    "CJK": "パスフレーズを入力してください 密码".encode(),
    "a lone 0x9c (part of “)": b"\xe2\x80\x9c",
}


@pytest.mark.parametrize("sequence", KEPT.values(), ids=KEPT.keys())
def test_what_a_prompt_needs_passes_unchanged(sequence: bytes) -> None:
    assert passed(sequence) == sequence
    for cut in range(len(sequence) + 1):
        assert passed(sequence[:cut], sequence[cut:]) == sequence, cut
    assert passed(*(bytes((byte,)) for byte in sequence)) == sequence


def test_a_hyperlink_keeps_its_text_and_loses_its_target() -> None:
    link = b"see \x1b]8;id=1;https://evil.example/\x1b\\the docs\x1b]8;;\x1b\\ now"
    assert passed(link) == b"see the docs now"
    link_bel = b"\x1b]8;;file:///etc/passwd\x07here\x1b]8;;\x07"
    assert passed(link_bel) == b"here"


# Streams as programs write them, each with what must come out of it.
SAMPLES = [
    (
        # pinentry-curses' shape, with a title and a colour query around it
        b"\x1b[?1049h\x1b]0;pinentry\x07\x1b]11;?\x1b\\\x1b[c\x1b[2J\x1b(0lqqk\x1b(B"
        b"\x1b[5;3H\x1b[1mPassphrase:\x1b[m ____\x1b[5;15H",
        b"\x1b[?1049h\x1b[c\x1b[2J\x1b(0lqqk\x1b(B\x1b[5;3H\x1b[1mPassphrase:\x1b[m ____\x1b[5;15H",
    ),
    (
        # tmux passthrough to the outer terminal's clipboard, then a question
        "\x1bPtmux;\x1b\x1b]52;c;cHduZWQ=\x07\x1b\\Пароль для “alice”: ".encode(),
        "Пароль для “alice”: ".encode(),
    ),
    (
        # every C1 form around characters made of the same bytes
        "é".encode()
        + b"\xc2\x9d0;x\x07"
        + "€".encode()
        + b"\x9d2;y\x07"
        + "😀".encode()
        + b"\x90q\x1b\\"
        + "❝".encode()
        + b"\xc2\x9fG\x1b\\"
        + "Ý".encode(),
        "é€😀❝Ý".encode(),
    ),
    (
        # a hyperlink, a notification and a DECRQSS between the words
        b"Password for \x1b]8;;https://x.example\x1b\\https://x.example\x1b]8;;\x1b\\"
        b"\x1b]777;notify;a;b\x07\x1bP$qm\x1b\\: ",
        b"Password for https://x.example: ",
    ),
]


@pytest.mark.parametrize("stream, expected", SAMPLES)
def test_split_anywhere_the_result_is_the_same(stream: bytes, expected: bytes) -> None:
    assert passed(stream) == expected
    for cut in range(len(stream) + 1):
        assert passed(stream[:cut], stream[cut:]) == expected, cut
    for first in range(0, len(stream) + 1, 3):
        for second in range(first, len(stream) + 1, 5):
            reads = (stream[:first], stream[first:second], stream[second:])
            assert passed(*reads) == expected, (first, second)
    assert passed(*(bytes((byte,)) for byte in stream)) == expected


def test_an_unterminated_string_holds_nothing_back_and_drops_only_itself() -> None:
    sequences = SequenceFilter()
    assert sequences.feed(b"before \x1b]52;c;") == b"before "
    # A megabyte more of it, read by read: nothing passes, nothing piles up.
    for _ in range(256):
        assert sequences.feed(b"QUFB" * 1024) == b""
        assert sequences.held == 0
    assert sequences.feed(b"QUFB\x07Passphrase: ") == b"Passphrase: "
    assert sequences.held == 0


def test_an_unterminated_string_is_cut_short_by_the_next_sequence() -> None:
    # As in the window's own terminal: ESC and anything but \ ends it, and a
    # redraw after it is drawn.
    assert passed(b"\x1b]0;never ended", b"\x1b[2J\x1b[HPassphrase: ") == b"\x1b[2J\x1b[HPassphrase: "


def test_at_most_one_byte_is_held_for_the_next_read() -> None:
    sequences = SequenceFilter()
    assert sequences.feed(b"text\x1b") == b"text"
    assert sequences.held == 1
    assert sequences.feed(b"[1m") == b"\x1b[1m"
    assert sequences.feed(b"\xc2") == b""
    assert sequences.held == 1
    assert sequences.feed(b"\xa0") == b"\xc2\xa0"  # a no-break space, not a C1 control
    assert sequences.feed(b"\x1b]0;t\x1b") == b""
    assert sequences.held == 1
    assert sequences.feed(b"\\ok") == b"ok"
    assert sequences.held == 0


def test_dropped_bytes_do_not_join_what_is_around_them_into_a_sequence() -> None:
    # An ESC and a "]" on either side of a dropped sequence must not meet.
    assert ESC + b"]" not in passed(b"\x1b\x1b]0;x\x07]52;c;cHduZWQ=\x07")
    assert ESC + b"]" not in passed(b"\x1b\x1b", b"]0;x\x07", b"]52;c;cHduZWQ=\x07")
    assert ESC + b"P" not in passed(b"\x1b\x9d0;x\x07Ptmux;")
    # Nor U+00C2's first byte and a C1 byte.
    assert b"\xc2\x9d" not in passed(b"\xc2\x1b]0;x\x07\x9d0;y\x07")
    assert b"\xc2\x9d" not in passed(b"\xc2\x1b_x\x1b\\", b"\x9d0;y\x07")


def test_reads_that_leave_nothing_pass_nothing() -> None:
    sequences = SequenceFilter()
    assert sequences.feed(b"") == b""
    assert sequences.feed(b"\x1b]0;title only\x07") == b""
    assert sequences.feed(b"") == b""


# An independent reading of the output: decoded as a UTF-8 terminal would,
# with every ill-formed byte of its own marked as such.
def _lone_bytes(error: UnicodeError) -> tuple[str, int]:
    assert isinstance(error, UnicodeDecodeError)
    bad = error.object[error.start : error.end]
    return ("\udc00" if len(bad) == 1 and bad[0] in b"\x90\x98\x9d\x9e\x9f" else "\ufffd", error.end)


codecs.register_error("ttyoffer-test-lone", _lone_bytes)
# A dropped sequence's introducer, the UTF-8 C1 controls, a lone C1 byte.
REACHES_BEYOND = re.compile("\x1b[\\]P_^X%\\\\]|[\x90\x98\x9c-\x9f]|\udc00")

TOKENS = st.sampled_from(
    [
        b"\x1b", b"]", b"P", b"_", b"^", b"X", b"%", b"\\", b"[", b"G", b"@", b"/", b"a", b"0", b";",
        b"\x07", b"\x18", b"\x1a", b"\xc2", b"\x90", b"\x98", b"\x9c", b"\x9d", b"\x9e", b"\x9f",
        b"\xe0", b"\xe2", b"\xed", b"\xf0", b"\xf4", b"\xc3", b"\x80", b"\xa0", b"\xbf",
        "€".encode(), "😀".encode(), "“".encode(), "П".encode(), b" ",
    ]
)  # fmt: skip


@settings(max_examples=3000, deadline=None)
@given(stream=st.lists(TOKENS, max_size=24).map(b"".join), cut=st.integers(min_value=0))
def test_nothing_that_reaches_beyond_ever_passes(stream: bytes, cut: int) -> None:
    sequences = SequenceFilter()
    whole = sequences.feed(stream)
    assert sequences.held <= 1
    assert not REACHES_BEYOND.search(whole.decode("utf-8", "ttyoffer-test-lone")), whole
    cut %= len(stream) + 1
    assert passed(stream[:cut], stream[cut:]) == whole
    assert passed(*(bytes((byte,)) for byte in stream)) == whole


@settings(max_examples=500, deadline=None)
@given(text=st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x1b")), cut=st.integers())
def test_text_without_controls_passes_unchanged(text: str, cut: int) -> None:
    data = "".join(ch for ch in text if not 0x80 <= ord(ch) <= 0x9F).encode()
    cut %= len(data) + 1
    assert passed(data) == data
    assert passed(data[:cut], data[cut:]) == data
