"""The benchmark suite, once at a small size, so it cannot rot. Benchmarks are
not tests: nothing here asserts a time, only that every figure is produced."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ROOT

pytestmark = [pytest.mark.nvim, pytest.mark.timeout(600)]

FIGURES = {
    "spawn_list": ["ratio_p50"],
    "spawn_string": ["ratio_p50"],
    "time_to_prompt": ["ms"],
    "keystroke": ["ms"],
    "throughput": ["ratio", "native_mb_s", "offer_mb_s"],
    "idle_cost": ["host_kb_per_offer", "host_fds_per_offer", "host_fds_left_after"],
    "churn": ["host_fds_delta", "nvim_fds_delta", "host_rss_kb_delta", "nvim_rss_kb_delta"],
    "startup": ["added_ms_p50"],
    "first_command": ["offer_ms", "plain_ms", "host_then"],
    "git_version_system": ["ratio_p50", "sh_floor_ratio_p50"],
    "git_version_jobstart": ["ratio_p50", "sh_floor_ratio_p50"],
    "git_version_fn_system": ["ratio_p50", "sh_floor_ratio_p50"],
    "git_version_uv_spawn": ["ratio_p50", "sh_floor_ratio_p50"],
    "burst_ptys": ["after_burst", "back_to_8_s"],
    "idle_editor": ["host_ptys", "spare_ptys", "helpers_pss_mb", "helpers_rss_mb"],
    "short_editor": ["ratio_p50", "python_starts"],
    "blocked_signing": ["added_ms_p50", "wrapped_ms", "stock_ms"],
}


def test_bench_small_run_produces_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--small", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    figures = json.loads(out.read_text())
    for name, keys in FIGURES.items():
        for key in keys:
            assert key in figures[name], (name, key)
    # Over a real sshd of the bench's own; one not run as root may give no
    # terminal session (a pty it cannot chown): then the figure says so.
    if "skipped" in figures["remote_attach"]:
        assert os.getuid() != 0, figures["remote_attach"]
    else:
        for key in ("fresh_ratio_p50", "reused_ratio_p50", "ssh_true_ms"):
            assert key in figures["remote_attach"], key
    # The leader's floor in C, wherever a C compiler can build it.
    if shutil.which("cc"):
        for key in ("spread_terminal_ratio", "spread_bare_ratio", "one_cpu_terminal_ratio"):
            assert key in figures["spawn_floor"], key
    else:
        assert figures["spawn_floor"] is None
    assert "figure" in run.stdout and "spawn_list" in run.stdout
    # Leaks are counts, not times: an offer that leaves a descriptor behind
    # is a defect at any speed.
    # (Fewer after than before is a descriptor the baseline caught in
    # passing, not a leak.)
    assert figures["idle_cost"]["host_fds_left_after"] <= 0
    assert figures["churn"]["host_fds_delta"] <= 0
    assert figures["churn"]["nvim_fds_delta"] == 0
    # Counts too: an editor that spawned nothing started no Python, and an
    # idle one holds no more ptys than its stock.
    assert figures["short_editor"]["python_starts"] == 0
    assert figures["idle_editor"]["host_ptys"] <= 8
