"""Faults survived: the host killed, no pty to be had, the child killed,
Neovim quitting, the offer switched off and on mid-flight."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys

import pytest

from harness import STRAY_PROMPT, Editor, Sandbox, editor, masters_held, pidfds_of, wait_until
from test_nvim_offer import ASK, exit_code, only_spares_left, prompt_and_wait_for_float, start
from ttyoffer_nvim.term import procfs
from ttyoffer_nvim.term.keepers import KEEPER_RESTARTS
from ttyoffer_nvim.term.procfs import process_gone

pytestmark = pytest.mark.nvim


def alive(pid: int) -> bool:
    return not process_gone(pid)  # a zombie is dead for our purpose


def test_host_killed_while_offers_are_armed_and_shown(ed: Editor) -> None:
    # A command that goes on, once told to, only if its terminal is still its own.
    sleeper = ed.lua(
        "_G.sleeper_out = {} return require('ttyoffer').jobstart("
        "{'sh', '-c', 'read go && exec 3</dev/tty && echo went-on'}, "
        "{on_stdout = function(_, d) vim.list_extend(_G.sleeper_out, d) end,"
        " on_exit = function(id, code) _G.exit_codes = _G.exit_codes or {} _G.exit_codes[id] = code end})"
    )
    job, _ = prompt_and_wait_for_float(ed)
    host_pid = ed.lua("return require('ttyoffer.host').get_pid()")
    keeper_pid = ed.host_status()["keeper_pid"]
    assert keeper_pid
    os.kill(host_pid, signal.SIGKILL)
    # The float closes; the prompt nobody can answer now ends instead of hanging.
    close = ed.wait_event("TtyOfferClose")[0]["data"]
    assert close["reason"] == "host exited"
    assert ed.float_wins() == []
    assert exit_code(ed, job) != 0
    # The command that never used its terminal goes on as without us: its
    # terminal is kept, the keeper watching for its end.
    wait_until(lambda: pidfds_of(keeper_pid) == 1, what="the keeper to keep the quiet command's terminal")
    ed.lua("vim.fn.chansend(..., 'go\\n')", sleeper)
    assert exit_code(ed, sleeper) == 0
    assert "went-on" in ed.lua("return _G.sleeper_out")
    wait_until(lambda: not alive(keeper_pid), what="the keeper to finish")
    messages = ed.nvim.command_output("messages")
    assert messages.count("(ttyoffer) host exited") == 1, messages
    # Plain until the host is back, offers again once it is.
    out = ed.lua(
        "local out = {} local j = require('ttyoffer').jobstart({'sh', '-c', 'echo plain-ok'}, "
        "{on_stdout = function(_, d) vim.list_extend(out, d) end}) vim.fn.jobwait({j}, 5000) return out"
    )
    assert "plain-ok" in out
    wait_until(lambda: ed.lua("return require('ttyoffer.host').ready()"), 20, "the host back")
    assert ed.lua("return require('ttyoffer.host').get_pid()") != host_pid
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.input("again<CR>")
    assert exit_code(ed, job) == 0
    assert ed.nvim.command_output("messages").count("(ttyoffer) host exited") == 1


def test_no_pty_to_be_had_runs_commands_plainly(ed: Editor) -> None:
    if not shutil.which("prlimit"):
        pytest.skip("prlimit (util-linux) is not installed")  # scripts/bootstrap.sh installs it
    host_pid = ed.lua("return require('ttyoffer.host').get_pid()")
    # The limit caps descriptor numbers: at 3 (past stdio) the host can open
    # nothing at all, however many it closes.
    subprocess.run(["prlimit", f"--pid={host_pid}", "--nofile=3"], check=True)
    results = ed.lua(
        """
        local results = {}
        -- Past the spares already in stock, which were had before the limit.
        _G.count = require('ttyoffer.host').stock_size() + 20
        for i = 1, _G.count do
          local out = {}
          local job = require('ttyoffer').jobstart({'sh', '-c', 'echo ' .. i},
            {on_stdout = function(_, d) vim.list_extend(out, d) end})
          local code = vim.fn.jobwait({job}, 5000)[1]
          table.insert(results, {code, out[1]})
        end
        return results
        """
    )
    count = ed.lua("return _G.count")
    assert [r[1] for r in results] == [str(i) for i in range(1, count + 1)]
    assert all(r[0] == 0 for r in results)
    skipped = ed.lua("return require('ttyoffer').status().skipped") or {}
    assert skipped["no pty"] > 0
    assert "cannot open a pty" in ed.nvim.command_output("messages")


def test_child_killed_while_its_prompt_is_shown(ed: Editor) -> None:
    job, _ = prompt_and_wait_for_float(ed)
    pid = ed.lua("return vim.fn.jobpid(...)", job)
    os.kill(pid, signal.SIGKILL)
    assert exit_code(ed, job) != 0
    assert ed.wait_event("TtyOfferClose")[0]["data"]["reason"] == "exited"
    wait_until(lambda: ed.float_wins() == [], what="no window")
    wait_until(lambda: only_spares_left(ed), what="its pty closed")
    assert ed.lua("return require('ttyoffer').offers()") == []


def test_a_spare_terminal_written_to_from_outside_is_hung_up_and_told(ed: Editor) -> None:
    # As gpg-agent's ssh support does: its pinentry goes to the terminal the
    # agent was started from, which may have been an offer's, long ended,
    # whose number a spare now has. Nobody would ever see that prompt.
    _, spare = ed.lua("return {require('ttyoffer.host').take()}")
    stray = subprocess.Popen([sys.executable, "-c", STRAY_PROMPT, spare], start_new_session=True)
    try:
        assert stray.wait(timeout=10) == -signal.SIGHUP
    finally:
        stray.kill()
        stray.wait()
    # Said without stopping the user: one line that fits, naming who was hung up ...
    wait_until(lambda: f"(pid {stray.pid}) hung up" in ed.nvim.command_output("messages"), what="the notice")
    said = [line for line in ed.nvim.command_output("messages").splitlines() if "hung up" in line]
    assert len(said) == 1 and ed.lua("return vim.fn.strdisplaywidth(...)", said[0]) <= ed.lua(
        "return vim.v.echospace"
    )
    # ... and the whole of it, with the fix, where the cut line points.
    assert said[0].endswith("(:TtyOffer status)")
    assert "gpg-connect-agent updatestartuptty /bye" in ed.nvim.command_output("TtyOffer status")
    assert f"(pid {stray.pid})" in ed.nvim.command_output("messages")
    assert ed.events("TtyOfferPresent") == []
    assert ed.float_wins() == []
    # Commands go on being offered their terminals.
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.input("fine<CR>")
    assert exit_code(ed, job) == 0


@pytest.mark.parametrize("quit", ["qa!", "qa"])
def test_quitting_with_offers_armed_and_shown_leaves_nothing(sandbox: Sandbox, quit: str) -> None:
    with editor(sandbox) as ed:
        sleepers = [start(ed, ["sleep", "600"]) for _ in range(3)]
        job, _ = prompt_and_wait_for_float(ed)
        pids = [ed.lua("return vim.fn.jobpid(...)", j) for j in [*sleepers, job]]
        host_pid = ed.lua("return require('ttyoffer.host').get_pid()")
        keeper_pid = ed.host_status()["keeper_pid"]
        nvim_pid = ed.lua("return vim.fn.getpid()")
        ed.nvim.input("<C-\\><C-n>")
        wait_until(lambda: ed.mode() == "nt", what="normal mode")
        with contextlib.suppress(Exception):  # the connection goes away with the editor
            ed.nvim.command(quit)
        # Promptly: within the bound, not after children time out.
        wait_until(lambda: not alive(nvim_pid), 10, "Neovim to quit")
    wait_until(
        lambda: not any(alive(p) for p in [*pids, host_pid, keeper_pid]), 10, "children, host, keeper gone"
    )


def test_switching_off_and_on_mid_flight(ed: Editor) -> None:
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.command("TtyOffer off")
    plain = start(ed, ["sh", "-c", "exec 3</dev/tty"])
    assert exit_code(ed, plain) != 0  # no terminal while off, as stock
    ed.nvim.command("TtyOffer on")
    # The prompt shown all along still takes its answer.
    ed.nvim.command("wincmd p")
    wins = ed.float_wins()
    assert len(wins) == 1
    ed.lua("vim.api.nvim_set_current_win(...) vim.cmd.startinsert()", wins[0])
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("still-here<CR>")
    assert exit_code(ed, job) == 0
    job2 = start(ed, ["sh", "-c", ASK])
    ed.wait_event("TtyOfferPresent", 2)
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("x<CR>")
    assert exit_code(ed, job2) == 0


def holds_its_terminal(pid: int) -> bool:
    """The spawn prologue has run: the command's terminal is its own."""
    info = procfs.stat(pid)
    return info is not None and info.tty_nr != 0


def test_a_command_that_asks_after_the_host_died_is_hung_up_not_left_waiting(ed: Editor) -> None:
    # In flight, quiet, when the host dies; asks on its terminal later, when
    # nobody can show the question any more.
    job = start(ed, ["sh", "-c", "sleep 2; " + ASK])
    pid = ed.lua("return vim.fn.jobpid(...)", job)
    wait_until(lambda: holds_its_terminal(pid), what="the command to take its terminal")
    keeper_pid = ed.host_status()["keeper_pid"]
    assert keeper_pid
    os.kill(ed.lua("return require('ttyoffer.host').get_pid()"), signal.SIGKILL)
    # Hung up at its first write, as a shown prompt is, rather than left
    # blocked in `read` on a terminal nobody sees: SIGHUP ends the shell
    # (129), unless its read fails on the dead terminal first (the script's
    # own 9): the kernel wakes readers before it signals the session.
    try:
        assert exit_code(ed, job, timeout=15) in (128 + signal.SIGHUP, 9)
    finally:  # a command left waiting must not outlive the test
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert ed.float_wins() == []
    wait_until(lambda: not alive(keeper_pid), what="the keeper to finish")
    # The user was told what happens to such commands, in a line short enough
    # to be read whole; the exit's details are kept for :TtyOffer status.
    said = [line for line in ed.nvim.command_output("messages").splitlines() if "host exited" in line]
    assert said == ["(ttyoffer) host exited: commands that ask for input now are hung up"], said
    notices = [n for n in ed.lua("return require('ttyoffer').status().notices") if "host exited" in n]
    assert len(notices) == 1 and said[0] in notices[0] and "(code " in notices[0], notices


def test_the_keeper_killed_alone_is_reaped_and_replaced_with_every_terminal(ed: Editor) -> None:
    # In flight when the keeper dies: one command that never uses its terminal
    # until told to, one whose prompt is shown.
    sleeper = ed.lua(
        "_G.sleeper_out = {} return require('ttyoffer').jobstart("
        "{'sh', '-c', 'read go && exec 3</dev/tty && echo went-on'}, "
        "{on_stdout = function(_, d) vim.list_extend(_G.sleeper_out, d) end,"
        " on_exit = function(id, code) _G.exit_codes = _G.exit_codes or {} _G.exit_codes[id] = code end})"
    )
    wait_until(lambda: holds_its_terminal(ed.lua("return vim.fn.jobpid(...)", sleeper)), what="its terminal")
    job, _ = prompt_and_wait_for_float(ed)
    first = ed.host_status()["keeper_pid"]
    assert first
    os.kill(first, signal.SIGKILL)
    # At once a new keeper, and the old one reaped: no zombie left behind.
    second = wait_until(
        lambda: (ed.host_status()["keeper_pid"] or 0) not in (0, first) and ed.host_status()["keeper_pid"],
        what="a new keeper",
    )
    wait_until(lambda: procfs.stat(first) is None, what="the killed keeper reaped")
    # Given a copy of every master the host holds (spare ptys included).
    wait_until(
        lambda: masters_held(second) == len(ed.host_status()["offers"]),
        what="the new keeper to hold every master",
    )
    # It holds every terminal the first one held, shown flags and all: when
    # the host dies now, the shown prompt ends and the quiet command goes on.
    os.kill(ed.lua("return require('ttyoffer.host').get_pid()"), signal.SIGKILL)
    assert ed.wait_event("TtyOfferClose")[0]["data"]["reason"] == "host exited"
    assert exit_code(ed, job) != 0
    wait_until(lambda: pidfds_of(second) == 1, what="the new keeper to keep the quiet command's terminal")
    ed.lua("vim.fn.chansend(..., 'go\\n')", sleeper)
    assert exit_code(ed, sleeper) == 0
    assert "went-on" in ed.lua("return _G.sleeper_out")
    wait_until(lambda: not alive(second), what="the keeper to finish")


def test_a_keeper_that_keeps_dying_is_given_up_and_told_once(ed: Editor) -> None:
    keepers = [ed.host_status()["keeper_pid"]]
    for _ in range(KEEPER_RESTARTS):
        os.kill(keepers[-1], signal.SIGKILL)
        keepers.append(
            wait_until(
                lambda: ed.host_status()["keeper_pid"] not in keepers and ed.host_status()["keeper_pid"],
                what="a new keeper",
            )
        )
        wait_until(lambda: masters_held(keepers[-1]) > 0, what="the new keeper to hold the masters")
    os.kill(keepers[-1], signal.SIGKILL)
    # The fourth death within a minute: no more keepers, and the user told
    # once, in a line read whole, with why in :TtyOffer status.
    wait_until(lambda: ed.host_status()["keeper_pid"] == 0, what="the keeper given up")
    wait_until(lambda: "no keeper" in ed.nvim.command_output("messages"), what="the notice")
    said = [line for line in ed.nvim.command_output("messages").splitlines() if "no keeper" in line]
    assert said == ["(ttyoffer) no keeper: running commands are hung up if the host dies"], said
    assert f"died {KEEPER_RESTARTS + 1} times within a minute" in ed.nvim.command_output("TtyOffer status")
    wait_until(lambda: all(procfs.stat(pid) is None for pid in keepers), what="every keeper reaped")
    # Prompts are still offered, without a keeper.
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.input("fine<CR>")
    assert exit_code(ed, job) == 0
