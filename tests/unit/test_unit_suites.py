"""scripts/suites.py's reading of the suites' results and its verdicts
(the runs themselves are `make suites`: minutes of real editors)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import suites

from third_party import manifest

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
