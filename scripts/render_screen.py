"""A pyte screen as a picture: every cell's character in its colours, bold,
italics, reverse and underline as pyte's buffer records them, drawn with
DejaVu Sans Mono (Debian's fonts-dejavu-core) on a dark theme."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyte
from PIL import Image, ImageDraw, ImageFont
from wcwidth import wcwidth

RGB = tuple[int, int, int]

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
# (bold, italics) -> face
FONT_FILES = {
    (False, False): FONT_DIR / "DejaVuSansMono.ttf",
    (True, False): FONT_DIR / "DejaVuSansMono-Bold.ttf",
    (False, True): FONT_DIR / "DejaVuSansMono-Oblique.ttf",
    (True, True): FONT_DIR / "DejaVuSansMono-BoldOblique.ttf",
}
FONT_SIZE = 16
PADDING = 12  # the theme's background around the cells, as a terminal window has
# Light box-drawing characters by the arms they reach out with from the cell's
# centre: up, down, left, right. They are drawn as lines, not glyphs: a glyph is
# a fraction of a pixel narrower than the cell, and frames came out dotted.
BOX_ARMS = {
    "─": "lr", "│": "ud", "┌": "dr", "┐": "dl", "└": "ur", "┘": "ul",
    "├": "udr", "┤": "udl", "┬": "dlr", "┴": "ulr", "┼": "udlr",
}  # fmt: skip
# Rounded corners (Neovim's 'rounded' float border): the direction of their
# arms, right/left and down/up.
ROUNDED_CORNERS = {"╭": (1, 1), "╮": (-1, 1), "╰": (1, -1), "╯": (-1, -1)}
# Where the quarter circle of each rounded corner starts, in PIL's degrees
# (clockwise from three o'clock).
ROUNDED_ARC_START = {(1, 1): 180, (-1, 1): 270, (1, -1): 90, (-1, -1): 0}


def hex_colour(text: str) -> RGB:
    return (int(text[0:2], 16), int(text[2:4], 16), int(text[4:6], 16))


@dataclass(frozen=True)
class Theme:
    foreground: RGB
    background: RGB
    cursor: RGB
    # pyte's names for the 16 ANSI colours (it calls yellow "brown"); 256-colour
    # and truecolour cells come as six hex digits and need no table.
    palette: dict[str, RGB] = field(default_factory=dict)


# The default fore- and background are Neovim's own (its TUI leaves cells
# "default" where Normal has no colour); the 16 ANSI colours are Tango's.
DARK = Theme(
    foreground=hex_colour("e0e2ea"),
    background=hex_colour("14161b"),
    cursor=hex_colour("e0e2ea"),
    palette={
        "black": hex_colour("2e3436"),
        "red": hex_colour("cc0000"),
        "green": hex_colour("4e9a06"),
        "brown": hex_colour("c4a000"),
        "blue": hex_colour("3465a4"),
        "magenta": hex_colour("75507b"),
        "cyan": hex_colour("06989a"),
        "white": hex_colour("d3d7cf"),
        "brightblack": hex_colour("555753"),
        "brightred": hex_colour("ef2929"),
        "brightgreen": hex_colour("8ae234"),
        "brightbrown": hex_colour("fce94f"),
        "brightblue": hex_colour("729fcf"),
        "brightmagenta": hex_colour("ad7fa8"),
        "brightcyan": hex_colour("34e2e2"),
        "brightwhite": hex_colour("eeeeec"),
    },
)


def resolve(name: str, default: RGB, theme: Theme) -> RGB:
    """A pyte colour name as RGB. Anything else is a bug to hear about, not a
    cell to paint in some guessed colour."""
    if name == "default":
        return default
    if name in theme.palette:
        return theme.palette[name]
    if len(name) == 6:
        try:
            return hex_colour(name)
        except ValueError:
            pass
    raise ValueError(f"not a pyte colour: {name!r}")


@dataclass(frozen=True)
class Fonts:
    faces: dict[tuple[bool, bool], ImageFont.FreeTypeFont]
    cell_width: int
    cell_height: int
    ascent: int

    def face(self, bold: bool, italics: bool) -> ImageFont.FreeTypeFont:
        return self.faces[(bold, italics)]


def load_fonts(size: int = FONT_SIZE) -> Fonts:
    faces = {style: ImageFont.truetype(str(path), size) for style, path in FONT_FILES.items()}
    regular = faces[(False, False)]
    ascent, descent = regular.getmetrics()
    # A whole number of pixels per cell: box-drawing lines then meet from one
    # row to the next instead of leaving hairline gaps.
    return Fonts(faces, round(regular.getlength("M")), ascent + descent, ascent)


def cell_box(fonts: Fonts, column: int, row: int, width: int = 1) -> tuple[int, int, int, int]:
    """The pixels of the cell(s) at `column`, `row`: left, top, right, bottom (exclusive)."""
    left = PADDING + column * fonts.cell_width
    top = PADDING + row * fonts.cell_height
    return left, top, left + width * fonts.cell_width, top + fonts.cell_height


def image_size(fonts: Fonts, columns: int, rows: int) -> tuple[int, int]:
    return columns * fonts.cell_width + 2 * PADDING, rows * fonts.cell_height + 2 * PADDING


def cell_colours(char: pyte.screens.Char, theme: Theme, under_cursor: bool) -> tuple[RGB, RGB]:
    foreground = resolve(char.fg, theme.foreground, theme)
    background = resolve(char.bg, theme.background, theme)
    if char.reverse:
        foreground, background = background, foreground
    if under_cursor:  # a block cursor, as most terminals draw it
        return background, theme.cursor
    return foreground, background


def render(
    screen: pyte.Screen, theme: Theme = DARK, fonts: Fonts | None = None, show_cursor: bool = True
) -> Image.Image:
    fonts = fonts or load_fonts()
    image = Image.new("RGB", image_size(fonts, screen.columns, screen.lines), theme.background)
    draw = ImageDraw.Draw(image)
    cursor = (screen.cursor.x, screen.cursor.y) if show_cursor and not screen.cursor.hidden else None
    for row in range(screen.lines):
        line = screen.buffer[row]
        column = 0
        while column < screen.columns:
            char = line[column]
            # A wide character owns the stub cell pyte leaves after it.
            width = 2 if char.data and wcwidth(char.data[0]) == 2 else 1
            width = min(width, screen.columns - column)
            draw_cell(draw, fonts, theme, char, column, row, width, cursor == (column, row))
            column += width
    return image


def draw_cell(
    draw: ImageDraw.ImageDraw,
    fonts: Fonts,
    theme: Theme,
    char: pyte.screens.Char,
    column: int,
    row: int,
    width: int,
    under_cursor: bool,
) -> None:
    foreground, background = cell_colours(char, theme, under_cursor)
    left, top, right, bottom = cell_box(fonts, column, row, width)
    draw.rectangle((left, top, right - 1, bottom - 1), fill=background)
    if char.data in BOX_ARMS:
        draw_box_arms(draw, (left, top, right, bottom), BOX_ARMS[char.data], foreground)
    elif char.data in ROUNDED_CORNERS:
        draw_rounded_corner(draw, (left, top, right, bottom), ROUNDED_CORNERS[char.data], foreground)
    elif char.data.strip():
        # Centred on its cells: a wide character's glyph spans both, as in a
        # terminal, even when the font only has a one-cell placeholder for it.
        draw.text(((left + right) / 2, top + fonts.ascent), char.data,
                  font=fonts.face(char.bold, char.italics), fill=foreground, anchor="ms")  # fmt: skip
    if char.underscore:
        draw.line((left, bottom - 2, right - 1, bottom - 2), fill=foreground)
    if char.strikethrough:
        middle = (top + bottom) // 2
        draw.line((left, middle, right - 1, middle), fill=foreground)


def centre(box: tuple[int, int, int, int]) -> tuple[int, int]:
    left, top, right, bottom = box
    return (left + right) // 2, (top + bottom) // 2


def draw_box_arms(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], arms: str, colour: RGB) -> None:
    left, top, right, bottom = box
    x, y = centre(box)
    ends = {"u": (x, top), "d": (x, bottom - 1), "l": (left, y), "r": (right - 1, y)}
    for arm in arms:
        draw.line(((x, y), ends[arm]), fill=colour)


def draw_rounded_corner(
    draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], arms: tuple[int, int], colour: RGB
) -> None:
    left, top, right, bottom = box
    x, y = centre(box)
    across, down = arms
    radius = min(right - left, bottom - top) // 2
    # The circle's centre sits inside the corner, one radius along each arm.
    cx, cy = x + across * radius, y + down * radius
    start = ROUNDED_ARC_START[arms]
    draw.arc((cx - radius, cy - radius, cx + radius, cy + radius), start, start + 90, fill=colour)
    draw.line(((x, cy), (x, bottom - 1 if down > 0 else top)), fill=colour)
    draw.line(((cx, y), (right - 1 if across > 0 else left, y)), fill=colour)


def save_png(screen: pyte.Screen, path: Path, theme: Theme = DARK) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    render(screen, theme).save(path, optimize=True)
    return path
