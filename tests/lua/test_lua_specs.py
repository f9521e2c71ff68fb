"""Hermetic: the Lua side's pure parts, as Lua specs (tests/lua/*_spec.lua) run
by tests/lua/runner.lua in the embedded Neovim with no host and no plugins.
One test per spec file, so a failure names the file and shows the runner's
output."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness import ROOT, nvim_binary

SPECS = sorted((ROOT / "tests" / "lua").glob("*_spec.lua"))


@pytest.mark.parametrize("spec", SPECS, ids=[spec.name for spec in SPECS])
def test_lua_spec(spec: Path) -> None:
    proc = subprocess.run(
        [nvim_binary(), "--headless", "--clean", "-l", "tests/lua/runner.lua", str(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, f"{spec.name} failed (exit {proc.returncode}):\n{output}"
    # A spec that loaded nothing is a broken spec, not a passing one.
    assert lines and re.fullmatch(r"[1-9]\d* passed, 0 failed", lines[-1]), output
