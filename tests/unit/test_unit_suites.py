"""scripts/suites.py's reading of the suites' results and its verdicts
(the runs themselves are `make suites`: minutes of real editors), and its
way out: every process it starts ended, by pid, on every path."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import processes
import pytest
import suites

import harness
from third_party import manifest

ROOT = Path(__file__).resolve().parents[2]

# plenary's busted output, as its runner prints it: a block per spec file
# once its editor ends, ANSI colours on the kinds.
PLENARY_OUTPUT = """Starting...Scheduling: tests/plenary/job_spec.lua
Scheduling: tests/plenary/path_spec.lua
Scheduling: tests/plenary/hangs_spec.lua

========================================\t
Testing: \t/tmp/x/tree/tests/plenary/job_spec.lua\t
\x1b[32mSuccess\x1b[0m\t||\tJob can run\t
\x1b[32mSuccess\x1b[0m\t||\tJob can run\t
\x1b[31mFail\x1b[0m\t||\tJob can stop\t
            job_spec.lua:12: Expected objects to be the same.
Pending\t||\tJob .writer should allow using things like fzf\t
\t
Failed : \t1\t
Errors : \t0\t
========================================\t
Testing: \t/tmp/x/tree/tests/plenary/path_spec.lua\t
\x1b[31mErrors\x1b[0m\t||\tPath can read\t
Failed : \t0\t
Errors : \t1\t
"""


def test_plenary_cases_are_named_by_spec_file_and_a_silent_file_fails(tmp_path: Path) -> None:
    cases = suites.Plenary().read("tests/plenary/", PLENARY_OUTPUT, tmp_path)
    assert cases == {
        "tests/plenary/job_spec.lua | Job can run": True,
        "tests/plenary/job_spec.lua | Job can run #2": True,
        "tests/plenary/job_spec.lua | Job can stop": False,
        "tests/plenary/path_spec.lua | Path can read": False,
        "tests/plenary/job_spec.lua | (the file's run)": True,
        "tests/plenary/path_spec.lua | (the file's run)": True,
        "tests/plenary/hangs_spec.lua | (the file's run)": False,
    }
    assert (
        suites.Plenary().unit_of("tests/plenary/job_spec.lua | Job can stop") == "tests/plenary/job_spec.lua"
    )


def test_mini_cases_come_from_the_reporters_file_or_the_file_fails(tmp_path: Path) -> None:
    mini = suites.Mini(["git"])
    assert mini.read("tests/test_git.lua", "", tmp_path) == {
        "tests/test_git.lua | (the file's run: no results)": False
    }
    recorded = [
        {"name": "tests/test_git.lua | setup() | works", "state": "Pass"},
        {"name": "tests/test_git.lua | show_at_cursor() | works", "state": "Pass with notes"},
        {"name": "tests/test_git.lua | :Git | works", "state": "Fail"},
        {"name": "tests/test_git.lua | :Git | later", "state": "Not run"},
    ]
    (tmp_path / "results.json").write_text(json.dumps(recorded))
    assert mini.read("tests/test_git.lua", "", tmp_path) == {
        "tests/test_git.lua | setup() | works": True,
        "tests/test_git.lua | show_at_cursor() | works": True,
        "tests/test_git.lua | :Git | works": False,
        "tests/test_git.lua | :Git | later": False,
    }


@pytest.mark.parametrize(
    ("stock", "wrapped", "verdict"),
    [
        ("PPPP", "FFFF", suites.FAILS_WITH_PLUGIN),
        ("PPPP", "FPPP", suites.FLAKY_WITH_PLUGIN),
        ("PFPP", "FFFF", suites.FLAKY_IN_STOCK),
        ("FFFF", "PPPP", suites.PASSES_WITH_PLUGIN),
        ("FFFF", "FPFF", suites.PASSES_WITH_PLUGIN),
        ("PPPP", "PPPP", suites.SAME_ON_RERUN),
        ("FFFF", "FFFF", suites.SAME_ON_RERUN),
    ],
)
def test_only_a_case_stock_always_passes_is_the_plugins_defect(
    stock: str, wrapped: str, verdict: str
) -> None:
    found = suites.classify([c == "P" for c in stock], [c == "P" for c in wrapped])
    assert found == verdict
    assert (found in suites.DEFECTS) == (verdict in (suites.FAILS_WITH_PLUGIN, suites.FLAKY_WITH_PLUGIN))


def test_the_suites_are_the_plugins_the_tests_load_at_the_same_commits() -> None:
    loaded = manifest()
    for repo, pin in manifest("suites.txt").items():
        assert loaded[repo].commit == pin.commit, repo


# scripts/suites.py's way out, in small: three editors for a pool of two
# threads, started by its Runner.execute, ended by suites_editors. Each
# editor notes its start, then leaves one process in a session of its own
# and one with an environment of its own (no mark), and runs on.
DRIVER = r"""
import concurrent.futures, os, sys
from pathlib import Path

import harness, processes, suites
from suites_editors import Editors, run_to_the_end

how, mark, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])
harness.fix_signals()
runner = suites.Runner(folder, folder, "nvim", folder, folder, None)
runner.editors = Editors(grace=1.0)
env = {**os.environ, processes.MARK: mark}
LEAVE = "setsid sleep 600 >/dev/null 2>&1 & env -i sleep 600 >/dev/null 2>&1 &"


def editor(number):
    return ["sh", "-c", f"touch started.{number}; {LEAVE} exec sleep 600"]


def body():
    if how in ("ends", "times out"):
        # One that ended leaves what it started to the init process: found
        # by the mark alone (what has none is no longer found by its parent).
        ends = ["sh", "-c", "setsid sleep 600 >/dev/null 2>&1 & echo done"]
        command = ends if how == "ends" else editor(1)
        output, left = runner.execute(command, folder, env, 60 if how == "ends" else 5)
        print(repr(output), len(left), flush=True)
        return 0
    futures = [pool.submit(runner.execute, editor(n), folder, env, 600) for n in (1, 2, 3)]
    if how == "fails":
        harness.wait_until(lambda: (folder / "fail now").exists(), 60)  # the test saw them run
        raise RuntimeError("a failure of the script")
    concurrent.futures.wait(futures)
    return 0


pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
sys.exit(run_to_the_end(runner.editors, pool, body, print))
"""


def run_driver(how: str, folder: Path) -> tuple[subprocess.Popen[str], str]:
    mark = f"suites-test.{secrets.token_hex(6)}"
    path = folder / "driver.py"
    path.write_text(DRIVER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(ROOT / p) for p in ("tests", "scripts", "."))}
    # Begun with SIGINT ignored, as a shell without job control starts a
    # background job: the script still stops on it, as on Ctrl-C.
    ignoring = ["sh", "-c", 'trap "" INT; exec "$0" "$@"'] if how == "SIGINT, begun ignored" else []
    driver = subprocess.Popen(
        [*ignoring, sys.executable, str(path), how, mark, str(folder)],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return driver, mark


class Seen:
    """The driver's editors and what they started: by the mark, and by
    their parent the driver while it runs (what has no mark); every one
    seen is ended by pid at the end of the test, whatever it says."""

    def __init__(self, mark: str, driver: int) -> None:
        self.census = processes.Census(mark, root=driver)
        self.seen: dict[processes.Process, None] = {}

    def count(self) -> list[processes.Process]:
        now = self.census.count()
        self.seen.update((p, None) for p in now)
        return now

    def left(self) -> list[processes.Process]:
        self.count()
        return [p for p in self.seen if processes.still_there(p)]


@contextmanager
def processes_of(driver: subprocess.Popen[str], mark: str) -> Iterator[Seen]:
    seen = Seen(mark, driver.pid)
    try:
        yield seen
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        processes.end(seen.left(), grace=0)


@pytest.mark.parametrize("how", ["ends", "times out"])
def test_a_run_ends_what_its_editor_left_running(how: str, tmp_path: Path) -> None:
    driver, mark = run_driver(how, tmp_path)
    with processes_of(driver, mark) as seen:
        output, _ = driver.communicate(timeout=120)
        assert driver.returncode == 0, output
        said, left = output.strip().rsplit(" ", 1)
        assert ("done" in said) == (how == "ends"), said
        assert ("stopped after 5 s" in said) == (how == "times out"), said
        # The process in a session of its own; and, the editor still there
        # at its timeout, the one without the mark.
        assert left == ("1" if how == "ends" else "2"), output
        assert seen.left() == []


@pytest.mark.parametrize("how", ["SIGINT", "SIGINT, begun ignored", "SIGTERM", "SIGHUP", "fails"])
def test_a_stopped_or_failed_run_ends_every_editor_and_starts_none(how: str, tmp_path: Path) -> None:
    driver, mark = run_driver(how, tmp_path)
    with processes_of(driver, mark) as seen:
        # Two editors, each with its two: the third editor waits for a thread.
        harness.wait_until(lambda: len(seen.count()) == 6, timeout=60, what="two editors and theirs")
        assert (tmp_path / "started.1").exists() and (tmp_path / "started.2").exists()
        signum = signal.Signals[how.split(",")[0]] if how != "fails" else None
        if signum is None:
            (tmp_path / "fail now").touch()
        else:
            driver.send_signal(signum)
        output, _ = driver.communicate(timeout=120)
        if signum is None:
            assert driver.returncode == 1 and "a failure of the script" in output, output
        else:
            assert driver.returncode == 128 + signum, output
            assert f"suites: stopped by {signum.name}; every editor it started has ended" in output
        assert seen.left() == []
        assert not (tmp_path / "started.3").exists()
