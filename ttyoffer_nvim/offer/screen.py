"""A pyte model of what an offer's terminal shows.

It serves titles and notifications (the prompt text) and tests. Feeding is
lazy and bounded: bytes are queued and only parsed when somebody asks, and a
flood keeps just its tail, so a child that streams megabytes through its tty
costs the relay nothing here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..term.text import ELLIPSIS, sanitize

if TYPE_CHECKING:
    import pyte  # imported by the first screen built: an idle host does without

# Past this many unparsed bytes only the tail is kept: what is on screen after
# a flood is what the tail drew, and parsing all of it would cap throughput
# (pyte parses some hundreds of KB a second). A full curses screen is a few KB.
TAIL_LIMIT = 8 * 1024
PROMPT_MAX = 60
# Rows above the cursor's that a wrapped question may fill.
WRAPPED_ROWS = 3

# What a text UI draws around an input field: frame lines, and after the
# label the field itself (underscores, brackets of an empty entry).
_FRAME = set("│┃|║┆┊─━═┌┐└┘╭╮╰╯├┤")
_TRAILING = _FRAME | set("_<>[]")


def _strip_decoration(text: str) -> str:
    # Keep what follows the last frame character: "│ Passphrase: ___ │" -> "Passphrase:".
    text = text.rstrip()
    while text and (text[-1] in _TRAILING or text[-1].isspace()):
        text = text[:-1]
    for bar in "│┃|║":
        if bar in text:
            text = text.rsplit(bar, 1)[1]
    text = text.strip()
    while text and (text[0] in _FRAME or text[0].isspace()):
        text = text[1:]
    return text.strip().rstrip(":").strip()


_ESC, _SO, _SI = 0x1B, 0x0E, 0x0F


class LineDrawing:
    """Applies the DEC line-drawing character set, as xterm and Neovim's own
    terminal do. pyte ignores charset designations in UTF-8 mode, so curses
    frames (``ESC ( 0`` then ``lqqk`` / ``x``) would read as letters: a
    pinentry box would put an "x" in front of "Passphrase".

    A byte filter with state across feeds: outside escape sequences, printable
    ASCII in the line-drawing set becomes the UTF-8 of its symbol.
    """

    _GRAPHICS: dict[int, bytes] = {}

    def __init__(self) -> None:
        if not LineDrawing._GRAPHICS:
            from pyte.charsets import VT100_MAP

            LineDrawing._GRAPHICS.update(
                {code: VT100_MAP[code].encode() for code in range(0x20, 0x7F) if VT100_MAP[code] != chr(code)}
            )
        self._g0 = self._g1 = False  # is G0 / G1 the line-drawing set
        self._shifted = False  # SO selected G1
        self._escape = b""  # an escape sequence cut by a feed boundary

    def filter(self, data: bytes) -> bytes:
        data = self._escape + data
        self._escape = b""
        if not (self._g0 or self._g1 or b"\x1b(0" in data or b"\x1b)0" in data):
            return data  # the common case: nothing to translate
        out = bytearray()
        i, n = 0, len(data)
        while i < n:
            byte = data[i]
            if byte == _ESC:
                end = self._sequence_end(data, i)
                if end is None:
                    self._escape = data[i:]
                    break
                sequence = data[i:end]
                if len(sequence) == 3 and sequence[1:2] in (b"(", b")"):
                    graphics = sequence[2:3] == b"0"
                    if sequence[1:2] == b"(":
                        self._g0 = graphics
                    else:
                        self._g1 = graphics
                out += sequence
                i = end
                continue
            if byte == _SO:
                self._shifted = True
            elif byte == _SI:
                self._shifted = False
            elif (self._g1 if self._shifted else self._g0) and byte in self._GRAPHICS:
                out += self._GRAPHICS[byte]
                i += 1
                continue
            out.append(byte)
            i += 1
        return bytes(out)

    @staticmethod
    def _sequence_end(data: bytes, start: int) -> int | None:
        """Index after the escape sequence at `start`, None if it is cut."""
        if start + 1 >= len(data):
            return None
        kind = data[start + 1]
        if kind == ord("["):  # CSI: parameters, then a final byte 0x40-0x7e
            for j in range(start + 2, len(data)):
                if 0x40 <= data[j] <= 0x7E:
                    return j + 1
            return None
        if kind == ord("]"):  # OSC: up to BEL or ESC \
            for j in range(start + 2, len(data)):
                if data[j] == 0x07:
                    return j + 1
                if data[j] == _ESC and j + 1 < len(data) and data[j + 1] == ord("\\"):
                    return j + 2
            return None
        if kind in b"()*+#%":  # designations and the like: one more byte
            return start + 3 if start + 2 < len(data) else None
        return start + 2


def _safe_start(data: bytearray, cut: int) -> int:
    """Where a tail kept from `cut` on may start: at the first ESC, or after
    the first newline, at or past the cut, so that the tail does not begin
    inside an escape sequence (whose rest would show as text) or inside a
    character; failing both, past the bytes that continue a character."""
    limit = len(data)
    escape = data.find(b"\x1b", cut)
    newline = data.find(b"\n", cut, escape if escape >= 0 else limit)
    if newline >= 0:
        return newline + 1
    if escape >= 0:
        return escape
    while cut < limit and 0x80 <= data[cut] <= 0xBF:
        cut += 1
    return cut


class ScreenModel:
    """Built on first use: an armed offer that never speaks costs no screen."""

    def __init__(self, rows: int, cols: int) -> None:
        self._size = (rows, cols)
        self._model: tuple[pyte.Screen, pyte.ByteStream] | None = None
        self._pending = bytearray()
        self._overflowed = False
        self._line_drawing: LineDrawing | None = None

    @property
    def _screen(self) -> pyte.Screen:
        return self._pyte()[0]

    def _pyte(self) -> tuple[pyte.Screen, pyte.ByteStream]:
        if self._model is None:
            import pyte

            rows, cols = self._size
            screen = pyte.Screen(cols, rows)
            self._model = (screen, pyte.ByteStream(screen))
        return self._model

    def feed(self, data: bytes) -> None:
        self._pending += data
        if len(self._pending) > TAIL_LIMIT:
            del self._pending[: _safe_start(self._pending, len(self._pending) - TAIL_LIMIT)]
            self._overflowed = True

    def resize(self, rows: int, cols: int) -> None:
        if self._model is None:
            self._size = (rows, cols)
            return
        self._flush()
        self._screen.resize(rows, cols)

    def _flush(self) -> None:
        screen, stream = self._pyte()
        if self._line_drawing is None:
            self._line_drawing = LineDrawing()
        if self._overflowed:
            import pyte

            screen.reset()
            stream = pyte.ByteStream(screen)
            self._model = (screen, stream)
            self._line_drawing = LineDrawing()
            self._overflowed = False
        if self._pending:
            # Filtered here, not as bytes arrive: only the kept tail costs.
            data = self._line_drawing.filter(bytes(self._pending))
            self._pending.clear()
            stream.feed(data)

    def _wrapped_onto_next(self, row: int) -> bool:
        """Whether row `row` is filled to its last column with text (no frame
        of a text UI): a line the terminal wrapped."""
        last = self._screen.display[row][-1:]
        return bool(last) and not last.isspace() and last not in _FRAME

    def lines(self) -> list[str]:
        self._flush()
        return [line.rstrip() for line in self._screen.display]

    def text(self) -> str:
        return "\n".join(self.lines()).rstrip("\n")

    def prompt(self, look_above: bool = True) -> str:
        """The question the screen asks, if it shows one, else "".

        The cursor sits where the answer goes, so the text left of it on its
        line is the prompt ("Passphrase: ", "Password for 'https://x': ").
        With nothing there and `look_above`, the nearest non-empty line above
        is used (a question printed on a line of its own). A question longer
        than the terminal is wide wrapped onto the cursor's line: the rows
        above that it filled to the last column are its beginning ("Enter
        passphrase for key '/a/long/path/id_ed25519': ").
        """
        lines = self.lines()
        cursor = self._screen.cursor
        row = min(max(cursor.y, 0), len(lines) - 1)
        text = lines[row][: cursor.x]
        top = row
        while text and top > 0 and row - top < WRAPPED_ROWS and self._wrapped_onto_next(top - 1):
            top -= 1
            text = self._screen.display[top] + text
        candidate = _strip_decoration(text)
        while look_above and not candidate and row > 0:
            row -= 1
            candidate = _strip_decoration(lines[row])
        return _both_ends(sanitize(candidate, len(candidate) + 1))


def _both_ends(text: str) -> str:
    """At most PROMPT_MAX characters: a long question keeps its beginning
    (what asks) and its end (what it asks for), "…" between."""
    if len(text) <= PROMPT_MAX:
        return text
    head = PROMPT_MAX // 3
    return text[:head].rstrip() + ELLIPSIS + text[-(PROMPT_MAX - head - 1) :].lstrip()
