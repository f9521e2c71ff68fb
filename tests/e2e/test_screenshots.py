"""The README's pictures stay reproducible: scripts/screenshots, run into a
temporary folder, still finds pinentry's dialog in the float (in the TUI
and in neovim-qt) and the status, and draws them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from PIL import Image

from harness import ROOT

pytestmark = pytest.mark.e2e


def test_the_pictures_are_made_from_a_real_run(tmp_path: Path) -> None:
    run = subprocess.run(
        [str(ROOT / "scripts" / "screenshots"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for name in ("prompt.png", "status.png", "prompt-gui.png"):
        with Image.open(tmp_path / name) as image:
            assert image.size == Image.open(ROOT / "doc" / "img" / name).size
