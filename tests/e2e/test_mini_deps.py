"""mini.deps (pinned mini.nvim) installing and updating a plugin while
vim.uv.spawn carries the offer: its git runs through the wrapped spawn in
parallel jobs it waits for in its own vim.wait(), and the result is what
stock gives (the plugin checked out at the source's commit, then at the
new one), with no window and nothing said. Real git, a local repository
as the plugin's source."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from harness import Sandbox, editor
from third_party import plugin

pytestmark = pytest.mark.e2e

# Counts the git commands that got an offer, and runs mini.deps.
COUNT_OFFERS = """
_G.offered_gits = 0
local records = require('ttyoffer.offer.records')
local add = records.add
records.add = function(record)
  if type(record.cmd) == 'table' and tostring(record.cmd[1]):find('git$') then
    _G.offered_gits = _G.offered_gits + 1
  end
  return add(record)
end
"""


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def make_source(folder: Path) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    (folder / "plugin").mkdir()
    (folder / "plugin" / "demo.lua").write_text("vim.g.demo_loaded = 1\n")
    git(folder, "add", ".")
    git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return folder


@pytest.mark.parametrize("with_offer", [True, False])
def test_mini_deps_add_and_update_give_stocks_result(
    registered_sandbox: Sandbox, tmp_path: Path, with_offer: bool
) -> None:
    source = make_source(tmp_path / "source")
    site = tmp_path / "site"
    mini = plugin("echasnovski/mini.nvim")
    setup = "" if with_offer else "require('ttyoffer').setup({ routes = { lua = false } })\n"
    box = Sandbox(
        tmp_path / "nvim",
        extra_init=f"{setup}vim.opt.rtp:append({str(mini)!r})\n"
        f"require('mini.deps').setup({{ path = {{ package = {str(site)!r} }} }})\n",
    )
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    with editor(box) as ed:
        ed.lua(COUNT_OFFERS)
        ed.lua("MiniDeps.add({ source = 'file://' .. ..., name = 'demo' })", str(source))
        installed = site / "pack" / "deps" / "opt" / "demo"
        assert git(installed, "rev-parse", "HEAD") == git(source, "rev-parse", "HEAD")
        assert ed.lua("return vim.g.demo_loaded") == 1
        (source / "plugin" / "demo.lua").write_text("vim.g.demo_loaded = 2\n")
        git(source, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-am", "second")
        ed.lua("MiniDeps.update({ 'demo' }, { force = true })")
        assert git(installed, "rev-parse", "HEAD") == git(source, "rev-parse", "HEAD")
        assert git(installed, "log", "-1", "--format=%s") == "second"
        assert ed.float_wins() == []
        assert ed.lua("return require('ttyoffer').status().notices") == []
        offered = ed.lua("return _G.offered_gits")
        on_leader = ed.lua("return require('ttyoffer.host.install').leader() ~= nil")
        assert on_leader or not with_offer, "the suite builds the compiled leader"
        if with_offer:
            assert offered >= 3, offered  # clone, fetch, checkout…: each through the offer
        else:
            assert offered == 0
