"""The screenshot renderer: pyte's cells come out in their colours, at their
places; and the README's pictures are there and whole."""

from __future__ import annotations

from pathlib import Path

import pyte
import pytest
from PIL import Image

from render_screen import DARK, RGB, Fonts, cell_box, image_size, load_fonts, render, resolve

ROOT = Path(__file__).resolve().parents[2]
PICTURES = [ROOT / "doc" / "img" / "prompt.png", ROOT / "doc" / "img" / "status.png"]
# The size scripts/screenshots.py runs the TUI at.
PICTURE_COLUMNS, PICTURE_ROWS = 100, 30


@pytest.fixture(scope="module")
def fonts() -> Fonts:
    return load_fonts()


def screen_of(text: str, columns: int = 6, rows: int = 2) -> pyte.Screen:
    screen = pyte.Screen(columns, rows)
    pyte.Stream(screen).feed(text)
    return screen


def centre_of(image: Image.Image, fonts: Fonts, column: int, row: int = 0) -> RGB:
    left, top, right, bottom = cell_box(fonts, column, row)
    return pixel(image, (left + right) // 2, (top + bottom) // 2)


def corner_of(image: Image.Image, fonts: Fonts, column: int, row: int = 0) -> RGB:
    left, top, _, _ = cell_box(fonts, column, row)
    return pixel(image, left + 1, top + 1)


def pixel(image: Image.Image, x: int, y: int) -> RGB:
    value = image.getpixel((x, y))
    assert isinstance(value, tuple), "an RGB image's pixel is a tuple"
    r, g, b = value[:3]
    return r, g, b


def inked(image: Image.Image, fonts: Fonts, column: int, background: RGB) -> int:
    """How many pixels of the cell differ from its background."""
    left, top, right, bottom = cell_box(fonts, column, 0)
    return sum(1 for x in range(left, right) for y in range(top, bottom) if pixel(image, x, y) != background)


def test_named_256_and_truecolour_foregrounds(fonts: Fonts) -> None:
    # U+2588 FULL BLOCK fills its cell: its centre is the foreground exactly.
    screen = screen_of("\x1b[31m█\x1b[38;5;21m█\x1b[38;2;1;2;3m█\x1b[91m█\x1b[0m█")
    image = render(screen, fonts=fonts, show_cursor=False)
    assert centre_of(image, fonts, 0) == DARK.palette["red"]
    assert centre_of(image, fonts, 1) == (0x00, 0x00, 0xFF)  # xterm's colour 21
    assert centre_of(image, fonts, 2) == (1, 2, 3)
    assert centre_of(image, fonts, 3) == DARK.palette["brightred"]
    assert centre_of(image, fonts, 4) == DARK.foreground


def test_backgrounds_default_named_and_256(fonts: Fonts) -> None:
    screen = screen_of("\x1b[44m \x1b[0m \x1b[48;5;196m ")
    image = render(screen, fonts=fonts, show_cursor=False)
    assert centre_of(image, fonts, 0) == DARK.palette["blue"]
    assert centre_of(image, fonts, 1) == DARK.background
    assert centre_of(image, fonts, 2) == (0xFF, 0x00, 0x00)
    assert pixel(image, 0, 0) == DARK.background  # the padding


def test_reverse_swaps_foreground_and_background(fonts: Fonts) -> None:
    screen = screen_of("\x1b[7m \x1b[31m \x1b[0m")
    image = render(screen, fonts=fonts, show_cursor=False)
    assert centre_of(image, fonts, 0) == DARK.foreground
    assert centre_of(image, fonts, 1) == DARK.palette["red"]


def test_a_wide_character_takes_two_cells(fonts: Fonts) -> None:
    # A blank after it: a glyph's antialiased edge may touch the cell next door.
    screen = screen_of("\x1b[42m界\x1b[0m \x1b[31m█")
    image = render(screen, fonts=fonts, show_cursor=False)
    assert corner_of(image, fonts, 1) == DARK.palette["green"]  # pyte's stub cell, painted as the character's
    # The glyph is drawn across both cells, not in the first one only.
    assert inked(image, fonts, 0, DARK.palette["green"]) > 0
    assert inked(image, fonts, 1, DARK.palette["green"]) > 0
    assert centre_of(image, fonts, 2) == DARK.background
    assert centre_of(image, fonts, 3) == DARK.palette["red"]  # where the terminal put it


def test_frame_lines_meet_across_cells(fonts: Fonts) -> None:
    screen = screen_of("╭──╮\r\n╰──╯", columns=4)
    image = render(screen, fonts=fonts, show_cursor=False)
    left, top, _, bottom = cell_box(fonts, 1, 0)
    _, _, right, _ = cell_box(fonts, 2, 0)
    middle = (top + bottom) // 2
    assert {pixel(image, x, middle) for x in range(left, right)} == {DARK.foreground}
    # The corner's vertical arm reaches the next row's top, where ╰ goes on.
    x = sum(cell_box(fonts, 0, 0)[0::2]) // 2
    assert pixel(image, x, bottom - 1) == DARK.foreground
    assert pixel(image, x, bottom) == DARK.foreground


def test_bold_is_drawn_heavier(fonts: Fonts) -> None:
    image = render(screen_of("H\x1b[1mH"), fonts=fonts, show_cursor=False)
    assert inked(image, fonts, 1, DARK.background) > inked(image, fonts, 0, DARK.background)


def test_the_cursor_is_a_block_unless_hidden(fonts: Fonts) -> None:
    screen = screen_of("ab\x1b[1D")  # on the b
    assert corner_of(render(screen, fonts=fonts), fonts, 0) == DARK.background
    assert corner_of(render(screen, fonts=fonts), fonts, 1) == DARK.cursor
    pyte.Stream(screen).feed("\x1b[?25l")
    assert corner_of(render(screen, fonts=fonts), fonts, 1) == DARK.background


def test_an_unknown_colour_is_an_error_not_a_guess() -> None:
    assert resolve("default", (1, 1, 1), DARK) == (1, 1, 1)
    with pytest.raises(ValueError, match="chartreuse"):
        resolve("chartreuse", (1, 1, 1), DARK)
    with pytest.raises(ValueError, match="zzzzzz"):
        resolve("zzzzzz", (1, 1, 1), DARK)


@pytest.mark.parametrize("path", PICTURES, ids=lambda path: path.name)
def test_the_readme_pictures_are_whole_screens(path: Path, fonts: Fonts) -> None:
    with Image.open(path) as image:
        image.verify()  # a truncated or corrupt file raises
    with Image.open(path) as image:
        assert image.format == "PNG"
        width, height = image.size
    expected_width, expected_height = image_size(fonts, PICTURE_COLUMNS, PICTURE_ROWS)
    # The ratio, not the pixels: another build of the font may round a cell differently.
    assert width / height == pytest.approx(expected_width / expected_height, rel=0.02)
    assert width >= 800, "too small to read in the README"
