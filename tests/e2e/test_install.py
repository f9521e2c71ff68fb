"""Install as a user does, from the README, on a clean HOME: a plain-packages
clone, the one build step, one start. The first session already gives
offers, and :help ttyoffer resolves."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pynvim
import pytest

from harness import ROOT, Editor, nvim_binary, wait_until
from tui import PtyScreen

pytestmark = pytest.mark.e2e

ASK = "printf 'Question? ' > /dev/tty; read answer < /dev/tty; echo \"got $answer\""


def new_account(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A new account's HOME and environment, and the plugin cloned into its
    plain-packages folder as the README says: (home, env, plugin folder)."""
    home = tmp_path / "home"
    home.mkdir()
    env = clean_env(home)
    plugin = home / ".local/share/nvim/site/pack/ttyoffer/start/ttyoffer.nvim"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(plugin)], check=True, env=env)
    return home, env, plugin


def clean_env(home: Path) -> dict[str, str]:
    """A new account: its own HOME, no XDG folders set, no Neovim of ours around."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "NVIM", "VIRTUAL_ENV"))}
    env["HOME"] = str(home)
    # The machine's Python 3 first, not the test suite's virtualenv.
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    return env


def without_pynvim(env: dict[str, str], bin_dir: Path) -> None:
    """`env`'s PATH made one whose python3 has no pynvim (only a folder of
    its own and the system's), for a terminal: the host can start only
    once the plugin's own install is done."""
    bare_python = shutil.which("python3", path=env["PATH"])
    assert bare_python
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(bare_python)
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    env["TERM"] = "xterm-256color"


def test_plain_packages_install_offers_in_the_first_session(tmp_path: Path) -> None:
    # The README's two lines: the clone, the build step.
    home, env, plugin = new_account(tmp_path)
    build = subprocess.run(
        [nvim_binary(), "--headless", "+TtyOffer install", "+qa"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stderr
    assert "(ttyoffer) installed; the host uses" in build.stderr + build.stdout
    venv_python = home / ".local/share/nvim/ttyoffer/venv/bin/python"
    assert venv_python.exists()
    # The compiled leader, in a folder of the user's alone, named by its
    # source's hash; the install says so.
    leaders = list((home / ".local/share/nvim/ttyoffer/bin").iterdir())
    assert [p.name[:14] for p in leaders] == ["ttyoffer-lead-"], leaders
    assert (leaders[0].parent.stat().st_mode & 0o777) == 0o700
    assert f"commands start through {leaders[0]}" in build.stderr + build.stdout
    # An update with lazy.nvim's build step: the plugin's build.lua, run as
    # lazy runs it (headless here, so to the end).
    update = subprocess.run(
        [nvim_binary(), "--headless", "-c", f"luafile {plugin / 'build.lua'}", "+qa"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert update.returncode == 0 and "(ttyoffer) installed" in update.stderr + update.stdout, update.stderr

    # One start, as the user's editor would be (no -u: their own, empty, config).
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        nvim.exec_lua(
            "_G.presented = false vim.api.nvim_create_autocmd('User', {pattern = 'TtyOfferPresent',"
            " callback = function() _G.presented = true end})"
        )
        wait_until(lambda: nvim.exec_lua("return require('ttyoffer.host').ready()"), 30, "the host")
        assert nvim.exec_lua("return require('ttyoffer.host').get_python()") == str(venv_python)
        assert nvim.exec_lua("return require('ttyoffer.host.install').leader()") == str(leaders[0])
        nvim.exec_lua(
            "_G.out = {} require('ttyoffer').jobstart({'sh', '-c', ...},"
            " {on_stdout = function(_, d) vim.list_extend(_G.out, d) end})",
            ASK,
        )
        wait_until(lambda: nvim.exec_lua("return _G.presented"), 15, "the prompt window")
        wait_until(lambda: nvim.api.get_mode()["mode"] == "t", 10, "terminal mode in the window")
        nvim.input("yes<CR>")
        wait_until(lambda: "got yes" in nvim.exec_lua("return _G.out"), 10, "the answer to reach the command")
        nvim.command("help ttyoffer")
        assert nvim.exec_lua("return vim.fn.expand('%:t')") == "ttyoffer.txt"
        # What the README says the plugin leaves on disk, and nothing else.
        assert sorted(p.name for p in (home / ".local/share/nvim").iterdir()) == ["site", "ttyoffer"]
    finally:
        nvim.close()
    shutil.rmtree(home / ".local/share/nvim/ttyoffer")


def test_installing_from_inside_the_editor_gives_offers_in_the_same_session(tmp_path: Path) -> None:
    # vim-plug's `do` and packer's `run`: `:TtyOffer install` typed in the
    # session that has just loaded the plugin, in its real TUI. There is no
    # Python with pynvim yet (PATH has none): the host cannot start; the
    # install runs in the background, and then the host starts, no restart.
    _, env, _ = new_account(tmp_path)
    without_pynvim(env, tmp_path / "bin")
    socket_path = str(tmp_path / "tui.sock")
    # A newcomer's 80 columns, the ruler on the last line (one window,
    # 'laststatus' 1): the install's notice is read whole there, not cut by
    # the ruler, and :messages keeps it whole.
    argv = [nvim_binary(), "--listen", socket_path, "--cmd", "set laststatus=1"]
    screen = PtyScreen(argv, env, rows=30, cols=80)
    try:
        screen.wait_text("~")
        nvim = pynvim.attach("socket", path=socket_path)
        try:
            ed = Editor(nvim)
            wait_until(
                lambda: ed.lua("return require('ttyoffer.host').get_state()") == "failed", 30, "no host yet"
            )
            screen.type(":TtyOffer install\r")
            lines = screen.wait_text("(ttyoffer) installed", timeout=300)
            notice = "(ttyoffer) installed (:TtyOffer status says where)"
            assert any(line.startswith(notice) for line in lines), "\n".join(lines)
            said = nvim.api.exec2("messages", {"output": True})["output"]
            assert notice in said.splitlines() and "… (:TtyOffer status)" not in said, said
            # The rest, whole, where the notice says.
            status = nvim.api.exec2("TtyOffer status", {"output": True})["output"]
            venv_python = Path(env["HOME"]) / ".local/share/nvim/ttyoffer/venv/bin/python"
            assert f"the host uses {venv_python}; commands start through /" in status, status
            wait_until(lambda: ed.lua("return require('ttyoffer.host').ready()"), 30, "the host")
            ed.lua(
                "_G.presented = false vim.api.nvim_create_autocmd('User', {pattern = 'TtyOfferPresent',"
                " callback = function() _G.presented = true end})"
            )
            screen.type(f":Bang {ASK}\r")
            screen.wait_text("│Question?")
            screen.type("yes\r")
            screen.wait_text("got yes")
        finally:
            nvim.close()
    finally:
        screen.close()


BUILD_THE_LEADER = """
local flags, dir = ...
local install = require('ttyoffer.host.install')
local kept = { install.leader_flags, install.leader_dir }
install.leader_flags = flags
install.leader_dir = function() return dir end
local said
install.build_leader(true, function(message) said = message end)
install.leader_flags, install.leader_dir = kept[1], kept[2]
return said
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the broken build names x86-64's trampoline")
def test_a_leader_build_that_compiles_but_cannot_run_is_passed_over(lua: Any, tmp_path: Path) -> None:
    # The first build compiles, and crashes at its start (its entry point is
    # the signal trampoline): every wrapped command would fail behind it.
    flags = tmp_path / "ttyoffer-lead.flags"
    flags.write_text(
        "# compiles, cannot run\n"
        "-O2 -DLEAD_FREESTANDING -static -nostdlib -ffreestanding -fno-stack-protector"
        " -Wl,--entry=lead_restore\n"
        "-O2 -Wall -Wextra -static\n"
    )
    said = lua(BUILD_THE_LEADER, str(flags), str(tmp_path / "bin"))
    built = list((tmp_path / "bin").iterdir())
    assert len(built) == 1 and f"commands start through {built[0]}" in said, said
    ran = subprocess.run([str(built[0]), "/dev/null", "-", "/bin/sh", "-c", "exit 7"], capture_output=True)
    assert ran.returncode == 7  # the second build's
