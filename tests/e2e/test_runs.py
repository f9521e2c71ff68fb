"""Runs: one interactive program in a pane of its own, and how it ended.
Real programs, the embedded headless Neovim, the real host as their parent."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness import Editor, Sandbox, editor, wait_until

# Starts a run whose on_exit results (every call) land in _G.run_exits[id].
START = """
_G.run_exits = _G.run_exits or {}
local opts = ...
local run
opts.on_exit = function(result)
  _G.run_exits[run.id] = _G.run_exits[run.id] or {}
  table.insert(_G.run_exits[run.id], result)
end
run = require('ttyoffer').run(opts)
return run.id
"""


def start(ed: Editor, **opts: Any) -> int:
    run_id: int = ed.lua(START, opts)
    return run_id


def exits(ed: Editor, run_id: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ed.lua("return (_G.run_exits or {})[...] or {}", run_id)
    return found


def wait_exit(ed: Editor, run_id: int, timeout: float = 10.0) -> dict[str, Any]:
    return wait_until(lambda: next(iter(exits(ed, run_id)), None), timeout, f"run {run_id} to end")


def bar(ed: Editor, run_id: int) -> str:
    text: str = ed.lua(
        "local run = require('ttyoffer.runs').get(...) "
        "return vim.wo[vim.fn.win_findbuf(run.pane.buf)[1]].winbar",
        run_id,
    )
    return text


def run_pid(ed: Editor, run_id: int) -> int:
    pid: int = wait_until(
        lambda: ed.lua("local r = require('ttyoffer.runs').get(...) return r and r.pid or 0", run_id),
        what="the run's pid",
    )
    return pid


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False


def pids_with(marker: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


@pytest.mark.e2e
def test_argv_env_and_cwd_arrive_and_the_exit_code_is_told(ed: Editor, tmp_path: Path) -> None:
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    run_id = start(
        ed,
        title="greeting",
        argv=["sh", "-c", 'printf "%s|%s|%s\\n%s\\n" "$1" "$GREETING" "$TERM" "$PWD"; exit 3', "-", "an arg"],
        env={"GREETING": "hello there"},
        cwd=str(workdir),
    )
    result = wait_exit(ed, run_id)
    assert (result["code"], result["signal"], result["reason"]) == (3, 0, "exited")
    wait_until(lambda: "an arg|hello there|" in ed.run_pane(run_id), what="the program's output")
    lines = ed.run_pane(run_id).splitlines()
    assert "an arg|hello there|xterm-256color" in lines
    # The folder's name (wrapped at the pane's width).
    assert str(workdir) in "".join(lines)
    assert "exited 3" in bar(ed, run_id)
    assert "greeting" in bar(ed, run_id)
    # The pane stays after the exit, until the user closes it.
    assert ed.lua("return vim.api.nvim_buf_is_valid(require('ttyoffer.runs').get(...).pane.buf)", run_id)
    # One result: what on_exit got, wait() returns and TtyRunExit carries.
    exit_event = ed.wait_event("TtyRunExit")[0]["data"]
    assert exit_event == {**result, "id": run_id}
    assert result == {
        "code": 3,
        "signal": 0,
        "signal_name": "",
        "reason": "exited",
        "message": "",
        "said": "exited 3",
    }
    assert ed.lua("return require('ttyoffer.runs').get(...):wait(0)", run_id) == result
    # on_exit exactly once.
    assert len(exits(ed, run_id)) == 1


@pytest.mark.e2e
def test_write_types_into_the_programs_terminal(ed: Editor) -> None:
    """run:write() as vim.system()'s: a string, or lines each ended by a
    newline, reach the program's terminal as typed keys would."""
    script = 'read a; read b; read c; printf "got:%s|%s|%s\\n" "$a" "$b" "$c"; exit 5'
    run_id = start(ed, argv=["sh", "-c", script])
    run_pid(ed, run_id)
    run = "local run = require('ttyoffer.runs').get(...) "
    ed.lua(run + "run:write('one\\r') run:write({'two', 'three'})", run_id)
    result = wait_exit(ed, run_id)
    assert (result["code"], result["reason"]) == (5, "exited")
    wait_until(lambda: "got:one|two|three" in ed.run_pane(run_id), what="what was written")
    assert ed.lua(run + "return pcall(run.write, run, nil)", run_id)
    refused = ed.lua(run + "local _, err = pcall(run.write, run, 3) return err", run_id)
    assert "a string or a list of strings" in refused


@pytest.mark.e2e
def test_a_flood_the_filter_drops_whole_never_stalls_the_pane(ed: Editor, tmp_path: Path) -> None:
    """300 KB of window titles written at once (the filter drops every one)
    and then a line: the line is shown. Reading had paused on the raw bytes
    read, which no acknowledgement would ever give back."""
    titles = tmp_path / "titles"
    titles.write_bytes((b"\x1b]0;" + b"a" * 70 + b"\x07") * 4000)
    run_id = start(ed, argv=["sh", "-c", 'cat "$0"; echo after-the-titles; exec sleep 30', str(titles)])
    wait_until(lambda: "after-the-titles" in ed.run_pane(run_id), 30, "the line after the titles")
    ed.nvim.command(f"TtyRun close {run_id}")


@pytest.mark.e2e
def test_killed_by_a_signal_is_143_and_named(ed: Editor) -> None:
    run_id = start(ed, argv=["sh", "-c", "kill -TERM $$"])
    result = wait_exit(ed, run_id)
    assert (result["code"], result["signal"], result["reason"]) == (143, 15, "signal")
    assert "killed by SIGTERM" in bar(ed, run_id)
    # An exit status of 143 is not a signal.
    other = start(ed, argv=["sh", "-c", "exit 143"])
    assert wait_exit(ed, other)["signal"] == 0
    assert "exited 143" in bar(ed, other)


@pytest.mark.e2e
def test_a_program_that_cannot_start_is_127_and_the_pane_says_why(ed: Editor, tmp_path: Path) -> None:
    missing = start(ed, argv=["no-such-program-ttyoffer"])
    result = wait_exit(ed, missing)
    assert (result["code"], result["reason"]) == (127, "not_found")
    wait_until(lambda: "not found" in ed.run_pane(missing), what="why, in the pane")
    assert "no-such-program-ttyoffer" in ed.run_pane(missing)
    plain = tmp_path / "plain-file"
    plain.write_text("echo never\n")
    denied = start(ed, argv=[str(plain)])
    assert (wait_exit(ed, denied)["code"], exits(ed, denied)[0]["reason"]) == (127, "not_executable")
    assert "not executable" in bar(ed, denied)


@pytest.mark.e2e
def test_the_programs_own_exit_not_the_terminals(ed: Editor) -> None:
    """A background process holding the terminal cannot hide the exit."""
    started = time.monotonic()
    plain = start(ed, argv=["sh", "-c", "sleep 100 & exit 3"])
    assert wait_exit(ed, plain, timeout=5)["code"] == 3
    assert time.monotonic() - started < 5
    # One that is deaf to the hang-up the program's end sends its group.
    run_id = start(ed, argv=["sh", "-c", "trap '' HUP; sleep 100 & echo holder $!; exit 3"])
    result = wait_exit(ed, run_id, timeout=5)
    assert result["code"] == 3
    said = wait_until(lambda: re.search(r"holder (\d+)", ed.run_pane(run_id)), what="the holder's pid")
    holder = int(said.group(1))
    assert alive(holder), "the background sleep still holds the terminal"
    # Closing the pane hangs up what is left, and kills what does not listen.
    ed.lua("require('ttyoffer.runs').get(...):close()", run_id)
    wait_until(lambda: not alive(holder), what="the holder to be gone")
    assert len(exits(ed, run_id)) == 1


@pytest.mark.e2e
def test_closing_a_running_pane_hangs_up_then_kills_and_tells_129(ed: Editor, tmp_path: Path) -> None:
    ready = tmp_path / "trapping"
    run_id = start(
        ed,
        argv=["sh", "-c", f"trap '' HUP; touch {ready}; while :; do sleep 1; done"],
    )
    pid = run_pid(ed, run_id)
    wait_until(ready.exists, what="the trap to be set")
    ed.nvim.command(f"TtyRun close {run_id}")
    result = wait_exit(ed, run_id, timeout=5)
    assert (result["code"], result["reason"]) == (129, "closed")
    wait_until(lambda: not alive(pid), timeout=5, what="the HUP-trapping program to be killed")
    assert ed.lua("return require('ttyoffer.runs').get(...) == nil", run_id)


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["qa", "qa!", "SIGTERM"])
def test_no_run_outlives_the_editor(sandbox: Sandbox, tmp_path: Path, how: str) -> None:
    marker = f"ttyoffer-orphan-{os.getpid()}-{how.replace('!', 'bang')}"
    ready = tmp_path / "ready"
    with editor(sandbox) as ed:
        nvim_pid = ed.lua("return vim.fn.getpid()")
        # One that traps HUP, one that does not.
        forever = "while :; do sleep 1; done"
        start(ed, argv=["sh", "-c", f"trap '' HUP; touch {ready}; {forever}", marker])
        start(ed, argv=["sh", "-c", forever, marker])
        wait_until(lambda: len(pids_with(marker)) == 2, what="both programs")
        wait_until(ready.exists, what="the trap")
        if how == "SIGTERM":
            os.kill(nvim_pid, signal.SIGTERM)
        else:
            ed.nvim.command(how, async_=True)
        wait_until(lambda: not alive(nvim_pid), what="the editor to end")
    wait_until(lambda: not pids_with(marker), timeout=5, what="every run to be gone")


@pytest.mark.e2e
def test_bad_arguments_are_refused_before_anything_starts(ed: Editor, tmp_path: Path) -> None:
    cases = {
        "argv is missing": {},
        "argv is empty": {"argv": []},
        "argv[2] must be a string": {"argv": ["true", 3]},
        "placement must be one of split, float, tab": {"argv": ["true"], "placement": "left"},
        "is not a directory": {"argv": ["true"], "cwd": str(tmp_path / "nope")},
        "env must be a table": {"argv": ["true"], "env": "X=1"},
        "unknown key": {"argv": ["true"], "cmd": "true"},
    }
    windows = ed.lua("return #vim.api.nvim_list_wins()")
    for expected, opts in cases.items():
        err = ed.lua("local ok, err = pcall(require('ttyoffer').run, ...) return ok and '' or err", opts)
        assert err.startswith("(ttyoffer) run(): "), err
        assert expected in err, err
    assert ed.lua("return #require('ttyoffer.runs').list()") == 0
    assert ed.lua("return #vim.api.nvim_list_wins()") == windows


@pytest.mark.e2e
def test_ttyrun_command_list_and_close(ed: Editor) -> None:
    ed.nvim.command("TtyRun sh -c 'echo from the command line; sleep 100'")
    run_id = wait_until(lambda: ed.lua("local l = require('ttyoffer.runs').list() return l[1] and l[1].id"))
    wait_until(lambda: "from the command line" in ed.run_pane(run_id), what="the output")
    # Split as the shell would, no shell in between.
    assert ed.lua("return require('ttyoffer.runs').get(...).argv", run_id)[:2] == ["sh", "-c"]
    ed.nvim.command("TtyRun exit 4")  # a shell builtin: needs the shell
    listing = ed.nvim.api.exec2("TtyRun list", {"output": True})["output"]
    assert "running" in listing and "exited 4" in wait_until(
        lambda: (lambda out: out if "exited 4" in out else None)(
            ed.nvim.api.exec2("TtyRun list", {"output": True})["output"]
        ),
        what="the list to show the exit",
    )
    assert ed.nvim.funcs.getcompletion("TtyRun li", "cmdline")[:1] == ["list"]
    ed.nvim.command(f"TtyRun close {run_id}")
    closed = ed.wait_event("TtyRunExit", count=2)
    told = next(e["data"] for e in closed if e["data"]["id"] == run_id)
    assert (told["code"], told["signal"], told["reason"]) == (129, 1, "closed")
    bad = ed.nvim.api.exec2("TtyRun close 999", {"output": True})["output"]
    assert "no run with id 999" in bad


@pytest.mark.e2e
def test_runs_get_the_login_shells_path_and_health_says_so(sandbox: Sandbox, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # A profile that greets too: only the PATH is taken from what it prints.
    (home / ".profile").write_text('echo "welcome back"\nPATH="/opt/ttyoffer-login-bin:$PATH"; export PATH\n')
    sandbox.env["HOME"] = str(home)
    with editor(sandbox) as ed:
        run_id = start(ed, argv=["sh", "-c", 'echo "path=$PATH"'])
        assert wait_exit(ed, run_id)["code"] == 0
        wait_until(lambda: "path=" in ed.run_pane(run_id), what="the PATH")
        assert "path=/opt/ttyoffer-login-bin:" in ed.run_pane(run_id).replace("\n", "")
        # The caller's env wins over it.
        mine = start(ed, argv=["sh", "-c", 'echo "path=$PATH"'], env={"PATH": "/usr/bin:/bin"})
        wait_exit(ed, mine)
        wait_until(lambda: "path=" in ed.run_pane(mine), what="the PATH")
        assert "path=/usr/bin:/bin" in ed.run_pane(mine)
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
        assert "Runs get the PATH of your login shell /bin/sh: /opt/ttyoffer-login-bin:" in report


@pytest.mark.e2e
def test_without_a_host_a_run_still_runs(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "nvim", extra_init="vim.g.python3_host_prog = '/nonexistent/python3'\n")
    with editor(sandbox, wait_host=False) as ed:
        wait_until(lambda: ed.lua("return require('ttyoffer.host').get_state()") == "failed", what="no host")
        run_id = start(ed, argv=["sh", "-c", "echo plain job; exit 3"])
        assert wait_exit(ed, run_id)["code"] == 3
        wait_until(lambda: "plain job" in ed.run_pane(run_id), what="the output")
        assert "exited 3" in bar(ed, run_id)


@pytest.mark.e2e
def test_a_run_waiting_for_a_host_that_never_comes_runs_as_a_job(tmp_path: Path) -> None:
    # Asked while the host starts (a failure forgotten, as :TtyOffer install
    # does): the run's channel pane is swapped for a job's, once. Wiping the
    # first pane used to close the run from inside its own wipe (E937).
    sandbox = Sandbox(tmp_path / "nvim", extra_init="vim.g.python3_host_prog = '/nonexistent/python3'\n")
    with editor(sandbox, wait_host=False) as ed:
        wait_until(lambda: ed.lua("return require('ttyoffer.host').get_state()") == "failed", what="no host")
        ed.lua("require('ttyoffer.host').forget_failure()")
        windows = ed.lua("return #vim.api.nvim_list_wins()")
        run_id = start(ed, argv=["sh", "-c", "echo fell back; exec sleep 100"])
        wait_until(lambda: "fell back" in ed.run_pane(run_id), what="the output, in the job's pane")
        assert ed.lua("return require('ttyoffer.runs').get(...).backend", run_id) == "job"
        assert ed.lua("return #vim.api.nvim_list_wins()") == windows + 1
        assert "E937" not in ed.nvim.api.exec2("messages", {"output": True})["output"]
        assert exits(ed, run_id) == []
        ed.lua("require('ttyoffer.runs').get(...):kill('TERM')", run_id)
        assert wait_exit(ed, run_id)["code"] == 143


@pytest.mark.e2e
@pytest.mark.parametrize("placement", ["split", "float", "tab"])
def test_each_placement_opens_a_pane_with_its_bar(ed: Editor, placement: str) -> None:
    tabs = ed.lua("return #vim.api.nvim_list_tabpages()")
    run_id = start(ed, argv=["sh", "-c", "echo placed; sleep 100"], placement=placement, title="where")
    wait_until(lambda: "placed" in ed.run_pane(run_id), what="the output")
    win = ed.lua("return vim.fn.win_findbuf(require('ttyoffer.runs').get(...).pane.buf)[1]", run_id)
    relative = ed.lua("return vim.api.nvim_win_get_config(...).relative", win)
    assert (relative != "") == (placement == "float")
    assert ed.lua("return #vim.api.nvim_list_tabpages()") == tabs + (placement == "tab")
    if placement == "split":
        # Along the whole bottom, the configured height.
        assert ed.lua("return vim.api.nvim_win_get_height(...)", win) == 15
        assert ed.lua("return vim.api.nvim_win_get_width(...) == vim.o.columns", win)
    assert "where" in bar(ed, run_id) and "running" in bar(ed, run_id)
    assert ed.mode() == "t"  # ready for the user's keys


@pytest.mark.e2e
def test_the_bars_close_and_q_close_the_pane(ed: Editor) -> None:
    clicked = start(ed, argv=["sleep", "100"])
    run_pid(ed, clicked)
    assert f"%{clicked}@TtyOfferRunClose@ Close %X" in bar(ed, clicked)
    # What a click on Close calls: the function, with the run's id as minwid.
    ed.nvim.call("TtyOfferRunClose", clicked, 1, "l", "    ")
    assert wait_exit(ed, clicked)["reason"] == "closed"
    keyed = start(ed, argv=["sh", "-c", "exit 0"])
    wait_exit(ed, keyed)
    buf = ed.lua("return require('ttyoffer.runs').get(...).pane.buf", keyed)
    ed.nvim.input("<C-\\><C-n>q")
    wait_until(lambda: not ed.lua("return vim.api.nvim_buf_is_valid(...)", buf), what="q to close the pane")
    assert ed.lua("return require('ttyoffer.runs').get(...)", keyed) is None


@pytest.mark.e2e
def test_kill_and_wait_shaped_like_vim_system(ed: Editor) -> None:
    result = ed.lua(
        "local r = require('ttyoffer').run({argv = {'sleep', '100'}}) "
        "vim.wait(5000, function() return r.pid ~= nil end) "
        "r:kill('sigint') return r:wait(5000)"
    )
    assert (result["code"], result["signal"]) == (130, signal.SIGINT)
    timed_out = ed.lua("return require('ttyoffer').run({argv = {'sleep', '100'}}):wait(300)")
    assert (timed_out["code"], timed_out["signal"]) == (124, signal.SIGKILL)
    err = ed.lua(
        "local r = require('ttyoffer').run({argv = {'true'}}) "
        "local ok, e = pcall(r.kill, r, 'SIGNOPE') return e"
    )
    assert '(ttyoffer) kill(): "SIGNOPE" is not a signal' in err


@pytest.mark.e2e
def test_the_user_types_into_the_pane(ed: Editor) -> None:
    """A sign-in flow that asks: keys typed the moment it asks."""
    run_id = start(ed, argv=["sh", "-c", 'printf "code? "; read code; echo "got [$code]"; exit 0'])
    wait_until(lambda: "code?" in ed.run_pane(run_id), what="the question")
    ed.nvim.input("1234<CR>")
    assert wait_exit(ed, run_id)["code"] == 0
    wait_until(lambda: "got [1234]" in ed.run_pane(run_id), what="the answer to arrive")


@pytest.mark.e2e
def test_q_in_a_running_pane_asks_before_it_ends_the_program(ed: Editor) -> None:
    """One stray `q` in a running REPL's pane must not end it. (A UI is
    attached: without one, confirm() asks nobody.)"""
    ed.nvim.api.ui_attach(80, 24, {"ext_linegrid": True})
    run_id = start(ed, argv=["cat"])
    pid = run_pid(ed, run_id)
    ed.nvim.input("<C-\\><C-n>q")
    wait_until(lambda: ed.mode() == "r?", what="the question")
    ed.nvim.input("k")  # Keep
    wait_until(lambda: ed.mode() == "nt", what="the answer")
    assert alive(pid) and not exits(ed, run_id)
    ed.nvim.input("q")
    wait_until(lambda: ed.mode() == "r?", what="the question again")
    ed.nvim.input("c")  # Close
    assert wait_exit(ed, run_id)["reason"] == "closed"


@pytest.mark.e2e
def test_a_lone_double_dash_is_no_command(ed: Editor) -> None:
    out = ed.nvim.api.exec2("TtyRun --", {"output": True})["output"]
    assert ":TtyRun -- needs a command after it" in out, out
    assert ed.lua("return #require('ttyoffer.runs').list()") == 0
