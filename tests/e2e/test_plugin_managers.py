"""The first install with a real plugin manager, as a new user meets it:
lazy.nvim and vim-plug (pinned, tests/third_party) install the plugin from
a git URL into a clean HOME, run its build step in the real TUI, and the
user is told how the install went, never that the host is missing while
that very install runs. Then the first prompt opens in the same session."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pynvim
import pytest

from harness import ROOT, Editor, nvim_binary, wait_until
from test_install import ASK, clean_env, without_pynvim
from third_party import plugin
from tui import PtyScreen, wait_listening

pytestmark = pytest.mark.e2e


def plugin_repository(tmp_path: Path) -> Path:
    """The plugin as a user's manager finds it: a git repository of the
    checkout's files as they are now (uncommitted changes included)."""
    repo = tmp_path / "ttyoffer.nvim"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "ttyoffer.nvim"], cwd=repo, check=True)
    return repo


def new_user(tmp_path: Path) -> dict[str, str]:
    """A clean HOME whose PATH has a python3 without pynvim: the host can
    start only once the plugin's own install is done."""
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(home)
    without_pynvim(env, tmp_path / "bin")
    return env


def first_start(tmp_path: Path, env: dict[str, str], init: str) -> None:
    """The user's first start with `init`: the manager installs, the build
    step runs, the host starts; what the user was told; the first prompt."""
    config = Path(env["HOME"]) / ".config" / "nvim"
    config.mkdir(parents=True)
    (config / "init.lua").write_text(init)
    socket_path = str(tmp_path / "tui.sock")
    screen = PtyScreen([nvim_binary(), "--listen", socket_path], env, rows=30, cols=140)
    try:
        wait_listening(socket_path, 60)
        nvim = pynvim.attach("socket", path=socket_path)
        try:
            ed = Editor(nvim)
            wait_until(
                lambda: ed.lua("return package.loaded['ttyoffer.host'] and require('ttyoffer.host').ready()"),
                300,
                "the host, after the manager's install",
            )
            said = nvim.api.exec2("messages", {"output": True})["output"]
            assert "(ttyoffer) installed (:TtyOffer status says where)" in said.splitlines(), said
            status = nvim.api.exec2("TtyOffer status", {"output": True})["output"]
            assert "installed (:TtyOffer status says where) (the host uses" in status, status
            assert "no host" not in said and "run :TtyOffer install" not in said, said
            assert "no host" not in screen.text()
            # The first prompt, in the same session.
            screen.type("\x1b:only\r")
            screen.type(f":Bang {ASK}\r")
            screen.wait_text("│Question?", timeout=30)
            screen.type("yes\r")
            screen.wait_text("got yes", timeout=30)
        finally:
            nvim.close()
    finally:
        screen.close()


def test_lazy_nvim_first_install_says_nothing_of_a_missing_host(tmp_path: Path) -> None:
    env = new_user(tmp_path)
    repo = plugin_repository(tmp_path)
    lazy = plugin("folke/lazy.nvim")
    init = f"""
vim.opt.rtp:prepend({str(lazy)!r})
require('lazy').setup({{
  {{ url = {("file://" + str(repo))!r}, name = 'ttyoffer.nvim', opts = {{}} }},
}}, {{
  rocks = {{ enabled = false }},
  checker = {{ enabled = false }},
  change_detection = {{ enabled = false }},
  install = {{ colorscheme = {{}} }},
}})
"""
    first_start(tmp_path, env, init)


def test_vim_plug_first_install_says_nothing_of_a_missing_host(tmp_path: Path) -> None:
    env = new_user(tmp_path)
    repo = plugin_repository(tmp_path)
    plug = plugin("junegunn/vim-plug")
    init = f"""
vim.opt.rtp:prepend({str(plug)!r})
vim.cmd([[source {plug}/plug.vim]])
vim.fn['plug#begin']()
vim.fn['plug#']({("file://" + str(repo))!r}, {{ ['as'] = 'ttyoffer.nvim', ['do'] = ':TtyOffer install' }})
vim.fn['plug#end']()
vim.api.nvim_create_autocmd('VimEnter', {{ command = 'PlugInstall --sync | close' }})
"""
    first_start(tmp_path, env, init)
