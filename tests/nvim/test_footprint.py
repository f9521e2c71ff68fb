"""What an idle editor costs the machine: no Python for an editor that lives
a moment and spawns nothing, the host at the first spawn, and a stock of
spare ptys (the machine's, shared with every terminal) that stays small and
shrinks back after a burst. Behaviour only: the figures are `make bench`'s."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness import Editor, Sandbox, editor, masters_held, nvim_011_binary, nvim_binary, wait_until

# It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
pytestmark = [pytest.mark.nvim, pytest.mark.versions]

BINARIES = {"0.12": nvim_binary, "0.11": nvim_011_binary}


def logging_python(sandbox: Sandbox) -> Path:
    """g:python3_host_prog as a script that notes each start, then runs the
    real Python: whether the editor ever started one, without strace."""
    log = sandbox.base / "python-starts.log"
    wrapper = sandbox.base / "python3"
    wrapper.write_text(f'#!/bin/sh\necho "$$ $*" >> {str(log)!r}\nexec {sys.executable!r} "$@"\n')
    wrapper.chmod(0o755)
    with sandbox.init.open("a") as init:
        init.write(f"vim.g.python3_host_prog = {str(wrapper)!r}\n")
    return log


@pytest.mark.parametrize("version", BINARIES)
def test_an_editor_that_quits_within_a_moment_starts_no_python(
    sandbox: Sandbox, tmp_path: Path, version: str
) -> None:
    # `nvim -d a b` as git's difftool runs it, quitting 300 ms after it
    # appeared (the host's start is 1500 ms after): a timer of the same
    # loop, so load cannot reorder the two.
    log = logging_python(sandbox)
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one\ntwo\n")
    b.write_text("one\nthree\n")
    quit_soon = "autocmd VimEnter * ++once lua vim.defer_fn(function() vim.cmd('qa!') end, 300)"
    argv = [BINARIES[version](), "--headless", "-i", "NONE", "-u", str(sandbox.init), "--cmd", quit_soon]
    done = subprocess.run([*argv, "-d", str(a), str(b)], env=sandbox.env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not log.exists(), log.read_text()
    # The same editor kept open past the delay does start it, unasked.
    with editor(sandbox, wait_host=False) as ed:
        wait_until(lambda: ed.lua("return require('ttyoffer.host').ready()"), 20, "the host after the delay")
    assert log.exists()


def test_the_host_starts_at_the_first_spawn(tmp_path: Path, registered_sandbox: Sandbox) -> None:
    sandbox = Sandbox(tmp_path / "nvim", "require('ttyoffer').setup({ host_start_delay = 600000 })\n")
    sandbox.manifest.write_text(registered_sandbox.manifest.read_text())
    log = logging_python(sandbox)
    with editor(sandbox, wait_host=False) as ed:
        wait_until(lambda: ed.lua("return package.loaded['ttyoffer.routes'] ~= nil"), 10, "the routes")
        ed.lua("vim.wait(200)")
        assert ed.lua("return require('ttyoffer.host').get_state()") == "stopped"
        assert not log.exists()
        # A plugin's spawn before the host is up runs plainly, and starts it.
        out = ed.lua("return vim.fn.system({'echo', 'plain'})")
        assert out == "plain\n"
        wait_until(lambda: ed.lua("return require('ttyoffer.host').ready()"), 20, "the host")
        assert log.exists()
        assert ed.lua("return require('ttyoffer').status().skipped['host not available']") == 1
        # And the next one has its offer.
        job = ed.lua("return vim.fn.jobstart({'sleep', '5'})")
        wait_until(lambda: len(ed.lua("return require('ttyoffer').offers()")) == 1, 10, "the offer")
        ed.lua("vim.fn.jobstop(...)", job)


def spare_ptys(ed: Editor) -> tuple[int, int]:
    """Spares in the editor's stock, and pty masters the host holds."""
    return ed.lua("return require('ttyoffer.host').stock_size()"), masters_held(ed.host_status()["pid"])


def test_the_stock_of_spare_ptys_stays_small_and_shrinks_back_after_a_burst(ed: Editor) -> None:
    assert ed.lua("return require('ttyoffer.host').get_shrink_delay()") <= 60000
    wait_until(lambda: spare_ptys(ed)[1] <= 8 and spare_ptys(ed)[0] > 0, 10, "an idle stock")
    assert spare_ptys(ed)[0] <= 8
    ed.lua("require('ttyoffer.host').set_shrink_delay(500)")
    # A plugin starting a job per item, in a loop that never yields: the
    # stock runs dry, and grows for the next burst.
    jobs = ed.lua("local jobs = {} for i = 1, 300 do jobs[i] = vim.fn.jobstart({'true'}) end return jobs")
    assert all(job > 0 for job in jobs)
    assert ed.lua("return require('ttyoffer.host').stock_dry()") > 0
    ed.lua("vim.fn.jobwait(...)", jobs)
    # It grew for the next burst, and once no spawn found it empty for the
    # delay, the spares above 8 went back to the host, which closed them.
    wait_until(
        lambda: ed.lua("return require('ttyoffer.host').stock_retired()") > 0, 30, "the stock to shrink"
    )
    wait_until(lambda: spare_ptys(ed)[0] <= 8 and spare_ptys(ed)[1] <= 8, 30, "the stock back to 8")
    # Offers keep working from the smaller stock.
    assert ed.lua("return vim.fn.system({'echo', 'after'})") == "after\n"
