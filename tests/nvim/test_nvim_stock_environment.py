"""What the editor reads from its environment after a plugin changes it
with vim.uv.os_setenv, with ttyoffer.nvim loaded (its host ready) as in
stock Neovim, on 0.12-dev and 0.11.4. Neovim 0.11 keeps each variable it
reads until its own setenv: the plugin reading stdpath('data') at start
made stdpath() keep the old folder (mini.nvim's test_visits, which points
its child editors' XDG_DATA_HOME at a test folder, failed 25 of 114).
The plugin's own folders stay where they were at its start."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Editor, Sandbox, editor, nvim_011_binary, nvim_binary

pytestmark = [pytest.mark.nvim, pytest.mark.versions]

# A plugin's own code, after start: points XDG_DATA_HOME elsewhere as
# mini.test's children do, then asks where the data folder is.
MOVED = "vim.uv.os_setenv('XDG_DATA_HOME', %r) return vim.fn.stdpath('data')"


@pytest.fixture(params=["0.12", "0.11"])
def binary(request: pytest.FixtureRequest, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> str:
    found = nvim_011_binary() if request.param == "0.11" else nvim_binary()
    monkeypatch.setenv("TTYOFFER_NVIM", found)
    sandbox.env["TTYOFFER_NVIM"] = found  # what the harness starts
    return found


@pytest.fixture
def wrapped(sandbox: Sandbox, binary: str) -> Iterator[Editor]:
    with editor(sandbox) as e:
        yield e


def stock(binary: str, sandbox: Sandbox, code: str) -> str:
    said = subprocess.run(
        [
            binary,
            "--headless",
            "--clean",
            "-n",
            "-c",
            f"lua io.stdout:write((function() {code} end)())",
            "-c",
            "qa!",
        ],
        env=sandbox.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return said.stdout


def test_stdpath_follows_an_os_setenv_as_in_stock(
    wrapped: Editor, binary: str, sandbox: Sandbox, tmp_path: Path
) -> None:
    venv = "return require('ttyoffer.host.install').venv()"
    ours = wrapped.lua(venv)
    code = MOVED % str(tmp_path / "elsewhere")
    expected = stock(binary, sandbox, code)
    assert expected == str(tmp_path / "elsewhere" / "nvim")
    assert wrapped.lua(code) == expected
    # The plugin's own venv (and leader) stay where they were.
    assert wrapped.lua(venv) == ours
