"""An editor the plugin cannot run on (Debian's own Neovim 0.7.2, in its
real TUI): startup says nothing and raises no hit-enter prompt, the
commands say once what is needed, :checkhealth reports it with the fix."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import ROOT
from tui import PtyScreen

pytestmark = pytest.mark.tui

DEBIAN_NVIM = "/usr/bin/nvim"  # scripts/test installs Debian's neovim package


def version_of(nvim: str) -> tuple[int, int]:
    out = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.match(r"NVIM v(\d+)\.(\d+)", out)
    assert match, out
    return int(match.group(1)), int(match.group(2))


@pytest.fixture
def old_tui(tmp_path: Path) -> Iterator[PtyScreen]:
    assert version_of(DEBIAN_NVIM) < (0, 10), "this test needs a Neovim older than the plugin supports"
    init = tmp_path / "init.lua"
    # As a user's config would: the plugin on 'runtimepath' and its setup().
    init.write_text(f"vim.opt.rtp:prepend({str(ROOT)!r})\nrequire('ttyoffer').setup({{}})\n")
    env = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    screen = PtyScreen([DEBIAN_NVIM, "-u", str(init), "-i", "NONE"], env, rows=30, cols=100)
    try:
        screen.wait_text("~")
        yield screen
    finally:
        screen.close()


def test_an_unsupported_editor_is_told_once_and_nothing_else_runs(old_tui: PtyScreen) -> None:
    # setup() in the user's config ran at startup: it said nothing then.
    screen = old_tui.text()
    assert "Press ENTER" not in screen and "Error" not in screen and "ttyoffer" not in screen, screen
    old_tui.type(":Bang git commit -S\r")
    old_tui.wait_text("(ttyoffer) ttyoffer.nvim needs Neovim 0.10 or newer (this is 0.7.2); it is inactive")
    assert old_tui.showing("Press ENTER") is None
    # Once: the next use says nothing more.
    old_tui.type(":echo 'next'\r")
    old_tui.wait_text("next")
    old_tui.type(":TtyOffer status\r")
    old_tui.type(":echo 'after'\r")
    old_tui.wait_text("after")
    assert old_tui.showing("needs Neovim") is None
    old_tui.type(":checkhealth ttyoffer\r")
    old_tui.wait_text(
        "ERROR: ttyoffer.nvim needs Neovim 0.10 or newer (this is 0.7.2); the plugin is inactive"
    )
    old_tui.wait_text("Install Neovim 0.10 or newer on Linux")
    assert old_tui.showing("E5108") is None and old_tui.showing("stack traceback") is None


def test_install_on_an_unsupported_editor_writes_the_help_and_says_nothing_else_was(tmp_path: Path) -> None:
    # A plugin manager's build step on Debian's 0.7.2: the tags are written,
    # so :help ttyoffer works (it said E149), and the user is told plainly
    # that nothing else was installed and why.
    plugin = tmp_path / "ttyoffer.nvim"
    for part in ("plugin", "lua", "doc"):
        shutil.copytree(ROOT / part, plugin / part, ignore=shutil.ignore_patterns("tags"))
    init = tmp_path / "init.lua"
    init.write_text(f"vim.opt.rtp:prepend({str(plugin)!r})\n")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "TERM": "xterm-256color"}
    build = subprocess.run(
        [DEBIAN_NVIM, "--headless", "-u", str(init), "-i", "NONE", "+TtyOffer install", "+qa"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = build.stdout + build.stderr
    assert "wrote the help tags (:help ttyoffer); nothing else was installed" in said, said
    assert "needs Neovim 0.10 or newer (this is 0.7.2)" in said, said
    assert (plugin / "doc" / "tags").is_file()
    screen = PtyScreen([DEBIAN_NVIM, "-u", str(init), "-i", "NONE"], env, rows=30, cols=100)
    try:
        screen.wait_text("~")
        screen.type(":help ttyoffer\r")
        screen.wait_text("ttyoffer.txt")
        assert screen.showing("E149") is None
    finally:
        screen.close()
