"""What a prompt window lets through of a command's terminal output.

A prompt needs to draw and to ask, and nothing else. Passed unchanged: text,
C0 controls, every CSI sequence (cursor, erase, SGR, modes including DECSET,
bracketed paste, mouse modes and the alternate screen, and the device
queries whose replies go back to the command: DA, DSR, DECRQM, XTVERSION),
and the short ESC sequences (charset designations, DECSC/DECRC, keypad
modes). Dropped, from their introducer to their terminator:

* OSC (``ESC ]``): titles (the window's title is ours), colours set or
  queried, the working directory, hyperlinks, notifications, the clipboard
  (OSC 52), and whatever else a terminal or a terminal behind it acts on;
* DCS (``ESC P``): tmux's passthrough (``ESC P tmux; ... ESC \\``) to the
  terminal outside, XTGETTCAP, DECRQSS;
* APC (``ESC _``), PM (``ESC ^``), SOS (``ESC X``);
* their C1 forms: the UTF-8 of U+0090, U+0098, U+009D, U+009E, U+009F
  (``\\xc2\\x90`` ...), which a terminal in UTF-8 mode takes for the same
  controls, and the single bytes 0x90 0x98 0x9d 0x9e 0x9f, which a terminal
  in an 8-bit mode does, where they are not part of a well-formed UTF-8
  character (``”``, Cyrillic ``П`` and emoji hold such bytes: they are
  never touched);
* DOCS (``ESC %``): leaving UTF-8 would make later bytes mean C1 controls
  that were let through as parts of characters;
* a String Terminator that ends nothing (``ESC \\``, ``\\xc2\\x9c``).

A hyperlink's text is not inside its OSC 8 sequence and so stays: the link
is dropped, the words are shown (a link's target need not be its text, and
a prompt asks for an answer, not for a click). A colour query goes
unanswered, as on a terminal that has no colours to tell; careful programs
send DA after it and take DA's reply, coming first, for that answer.

A string ends at BEL, ST (``ESC \\`` or U+009C; never the lone byte 0x9c,
which ``“`` holds), CAN or SUB; an ESC followed by anything else cuts it
short, as in the window's own terminal, and starts a sequence of its own.
Inside a string ``ESC ESC`` is tmux's escaped ESC and goes with it.

A stream filter: a sequence may be split between two reads. What is dropped
is dropped as it arrives, never buffered, so a string that is never ended
costs nothing and holds nothing back; the filter keeps at most one byte of a
read for the next (an ESC or the first byte of a UTF-8 C1 control). Where
something was dropped, the bytes on either side cannot join into a sequence
that was not there.

Standard library only.
"""

from __future__ import annotations

import codecs
import re

_ESC = 0x1B
_C2 = 0xC2

# Where a read is cut, the filter is in one of these.
_GROUND = 0  # text and the sequences that pass
_STRING = 1  # inside a dropped OSC, DCS, APC, PM or SOS
_ESCAPE = 2  # inside a dropped DOCS: its intermediate bytes, then its final byte

# Bytes that, right after an ESC (or U+00C2's first byte), would start or end
# a dropped sequence: what two passed pieces must not join into.
_JOINS = {_ESC: frozenset(b"]P_^X%\\"), _C2: frozenset(b"\x90\x98\x9c\x9d\x9e\x9f")}

# The bytes of the C1 controls that matter here (a lone byte or U+0090 ...'s
# second byte). `in` finds a byte at memchr's speed: a read without any of
# these and without ESC is passed as it is.
_C1_BYTES = (b"\x90", b"\x98", b"\x9c", b"\x9d", b"\x9e", b"\x9f")

# In text, up to three searches, each at the speed of the regular expression
# engine's scan for its first byte (curses output has an ESC every few bytes;
# only these few ESC sequences stop the scan):
# an ESC that starts a dropped sequence, or ends the read;
_ESC_STOP = re.compile(rb"\x1b(?:[\]P_^X%\\]|\Z)")
# U+0090 ... in UTF-8, or a 0xc2 that ends the read;
_C2_STOP = re.compile(rb"\xc2(?:[\x90\x98\x9c-\x9f]|\Z)")
# only where the text is not well-formed UTF-8 (a lone C1 byte is not), a
# lone C1 byte: one that is not a valid continuation of a UTF-8 character,
# that is first after a lead byte that takes it (not 0xc2, whose U+0080 ...
# hold the C1 controls; not 0xe0 or 0xf4, whose second byte is above or below
# it), second after a lead and a valid second byte, third after a 4-byte lead
# and two. A character begun before this run of text is judged again by
# _continues.
_LONE_STOP = re.compile(
    rb"[\x90\x98\x9d-\x9f]"
    rb"(?<![\xc3-\xdf\xe1-\xf3].)"
    rb"(?<!\xe0[\xa0-\xbf].)(?<![\xe1-\xec\xee\xef\xf1-\xf3][\x80-\xbf].)(?<!\xed[\x80-\x9f].)"
    rb"(?<!\xf0[\x90-\xbf].)(?<!\xf4[\x80-\x8f].)"
    rb"(?<!\xf0[\x90-\xbf][\x80-\xbf].)(?<![\xf1-\xf3][\x80-\xbf]{2}.)(?<!\xf4[\x80-\x8f][\x80-\xbf].)",
    re.DOTALL,
)

# In a dropped string: the bytes that may end it (BEL, CAN, SUB; ESC, and
# 0xc2 for U+009C: see the module's text).
_STRING_ENDS = (b"\x07", b"\x18", b"\x1a", b"\x1b", b"\xc2")

# A UTF-8 lead byte: its character's length, and the range of its second
# byte (Unicode's table of well-formed sequences). 0xc2 is left out on
# purpose: what it starts, U+0080 ... U+00BF, holds the C1 controls.
_LEADS = {
    **{lead: (2, 0x80, 0xBF) for lead in range(0xC3, 0xE0)},
    0xE0: (3, 0xA0, 0xBF),
    **{lead: (3, 0x80, 0xBF) for lead in (*range(0xE1, 0xED), 0xEE, 0xEF)},
    0xED: (3, 0x80, 0x9F),
    0xF0: (4, 0x90, 0xBF),
    **{lead: (4, 0x80, 0xBF) for lead in range(0xF1, 0xF4)},
    0xF4: (4, 0x80, 0x8F),
}


def _continues(before: bytes, byte: int) -> bool:
    """Whether `byte` (0x80-0xbf), after `before` (the text just before it),
    is a valid continuation of a UTF-8 character: _LONE_STOP's look back, for
    text that began in an earlier read."""
    tail = before[-3:] + bytes((byte,))
    for back in range(1, len(tail)):
        lead = tail[-1 - back]
        if 0x80 <= lead <= 0xBF:
            continue
        spec = _LEADS.get(lead)
        if spec is None:
            return False
        length, low, high = spec
        follows = tail[-back:]
        return back < length and low <= follows[0] <= high and all(0x80 <= b <= 0xBF for b in follows[1:])
    return False


class SequenceFilter:
    """One per terminal: what its command writes, less what a prompt window
    does not let through (see the module's text)."""

    __slots__ = ("_state", "_held", "_before", "_last", "_dangling")

    def __init__(self) -> None:
        self._state = _GROUND
        self._held = b""  # the end of a read that the next one decides
        self._before = b""  # the last bytes of text passed, for a character begun
        self._last = -1  # the last byte passed
        self._dangling = -1  # an ESC or 0xc2 passed just before a drop

    @property
    def held(self) -> int:
        """Bytes kept back for the next read (never more than one)."""
        return len(self._held)

    def feed(self, data: bytes) -> bytes:
        """What of `data` passes. Bytes held back from the last feed come first."""
        if self._held:
            data, self._held = self._held + data, b""
        if not data:
            return data
        c1 = data[-1] == _C2 or any(byte in data for byte in _C1_BYTES)
        c2 = c1 and b"\xc2" in data
        lone = c1 and not self._well_formed(data)
        if (
            self._state == _GROUND
            and self._dangling < 0
            and not (c2 or lone)
            and (b"\x1b" not in data or _ESC_STOP.search(data) is None)
        ):
            # The common case: text, C0 controls, CSI and the short ESC
            # sequences, passed as they are.
            self._before = (self._before + data[-3:])[-3:]
            self._last = data[-1]
            return data
        return self._slow(data, c2, lone)

    def _well_formed(self, data: bytes) -> bool:
        """Whether `data`, after the character the text passed so far may
        have begun, is well-formed UTF-8 (a character it begins may go on)."""
        begun = self._before
        if begun and self._state == _GROUND:
            begun = begun[codecs.utf_8_decode(begun, "surrogateescape", False)[1] :]
        else:
            begun = b""
        try:
            codecs.utf_8_decode(begun + data, "strict", False)
        except UnicodeDecodeError:
            return False
        return True

    def _slow(self, data: bytes, c2: bool, lone: bool) -> bytes:
        out: list[bytes] = []
        pos, end = 0, len(data)
        # The searches in text, each with its next stop, kept while ahead.
        searches: list[tuple[re.Pattern[bytes], re.Match[bytes] | None]] = [(_ESC_STOP, None)]
        if c2:
            searches.append((_C2_STOP, None))
        if lone:
            searches.append((_LONE_STOP, None))
        while pos < end:
            if self._state == _STRING:
                pos = self._skip_string(data, pos)
                continue
            if self._state == _ESCAPE:
                pos = self._skip_escape(data, pos)
                continue
            if self._dangling >= 0:
                # Bytes were dropped between the last byte passed and this
                # one: the two must not make the start of a sequence.
                joins = _JOINS[self._dangling]
                while pos < end and data[pos] in joins:
                    pos += 1
                if pos == end:
                    break
                self._dangling = -1
            start = search = pos
            while True:
                stop: re.Match[bytes] | None = None
                for index, (pattern, found) in enumerate(searches):
                    if found is None or found.start() < search:
                        found = pattern.search(data, search)
                        searches[index] = (pattern, found)
                    if found is not None and (stop is None or found.start() < stop.start()):
                        stop = found
                if stop is None:
                    self._emit(data, start, end, out)
                    pos = end
                    break
                at, after = stop.span()
                if after == end and after - at == 1 and data[at] in (_ESC, _C2):
                    # An ESC or a 0xc2 ends the read: the next one decides.
                    self._emit(data, start, at, out)
                    self._held = data[at:]
                    pos = end
                    break
                if data[at] not in (_ESC, _C2):
                    # A lone C1 byte: a character's, if one was begun before
                    # this read (or before this run of text).
                    earlier = self._before if start == 0 else b""
                    if _continues(earlier + data[max(start, at - 3) : at], data[at]):
                        search = after
                        continue
                self._emit(data, start, at, out)
                self._enter(data, at)
                pos = after
                break
        return out[0] if len(out) == 1 else b"".join(out)

    def _emit(self, data: bytes, start: int, stop: int, out: list[bytes]) -> None:
        if stop <= start:
            return
        piece = data if start == 0 and stop == len(data) else data[start:stop]
        out.append(piece)
        self._before = (self._before + piece[-3:])[-3:] if start == 0 else piece[-3:]
        self._last = piece[-1]

    def _enter(self, data: bytes, at: int) -> None:
        """A dropped sequence starts at `at`."""
        if self._last in _JOINS:
            self._dangling = self._last
        self._before = b""
        introducer = data[at + 1] if data[at] in (_ESC, _C2) else -1
        if introducer in (ord("\\"), 0x9C):  # a terminator of nothing
            self._state = _GROUND
        elif introducer == ord("%"):
            self._state = _ESCAPE
        else:
            self._state = _STRING

    def _skip_string(self, data: bytes, pos: int) -> int:
        """Drop a string's bytes; returns where it ended (or the read did)."""
        end = len(data)
        # The next of each byte that may end it, kept while ahead (memchr
        # each: a long string is skipped at memory speed).
        ahead = [data.find(byte, pos) for byte in _STRING_ENDS]
        while True:
            at = end
            for index, found in enumerate(ahead):
                if 0 <= found < pos:
                    found = ahead[index] = data.find(_STRING_ENDS[index], pos)
                if 0 <= found < at:
                    at = found
            if at == end:
                return end
            byte = data[at]
            if byte in (_ESC, _C2):
                if at + 1 == end:
                    self._held = data[at:]  # ESC \ or U+009C may follow
                    return end
                following = data[at + 1]
                if byte == _C2 and following != 0x9C:
                    pos = at + 1  # a character, inside the string
                    continue
                if byte == _ESC and following == _ESC:
                    pos = at + 2  # tmux's escaped ESC: still the string
                    continue
                self._state = _GROUND
                if byte == _ESC and following != ord("\\"):
                    return at  # ESC and something else: cut short
                return at + 2
            self._state = _GROUND  # BEL, CAN, SUB
            return at + 1

    def _skip_escape(self, data: bytes, pos: int) -> int:
        """Drop DOCS' intermediate bytes and its final byte."""
        end = len(data)
        while pos < end and 0x20 <= data[pos] <= 0x2F:
            pos += 1
        if pos < end:
            self._state = _GROUND
            if 0x30 <= data[pos] <= 0x7E:
                pos += 1
        return pos
