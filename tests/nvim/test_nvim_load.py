"""Load held: many prompts at once, many commands in a row, the offer cap."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

import pytest

from harness import Editor, wait_until
from test_nvim_offer import exit_code, start

pytestmark = pytest.mark.nvim


def asking_in(ed: Editor, win: int) -> Callable[[], str | None]:
    def text() -> str | None:
        shown = ed.buf_text(win)
        return shown if "Token for" in shown else None

    return text


def test_fifty_prompts_at_once_each_answer_reaches_its_command(ed: Editor) -> None:
    ed.lua("require('ttyoffer').setup({float = {close_delay = 0, typing_pause = 0}})")
    script = 'printf \'Token for %s: \' "$0" > /dev/tty; read t < /dev/tty; echo "$0=$t"'
    ed.lua(
        """
        _G.got = {}
        for i = 1, 50 do
          -- An idle editor keeps 8 spare terminals, and a loop that never
          -- yields has offers for those only: this one lets the refills land.
          vim.wait(1000, function() return require('ttyoffer.host').stock_size() > 0 end, 1)
          require('ttyoffer').jobstart({'sh', '-c', ..., 'cmd' .. i},
            {on_stdout = function(_, d) if d[1] ~= '' then table.insert(_G.got, d[1]) end end})
        end
        """,
        script,
    )
    seen = []
    for shown in range(1, 51):
        ed.wait_event("TtyOfferPresent", shown, timeout=20)
        win = wait_until(lambda: ed.float_wins(), what="a prompt window")[0]
        assert len(ed.float_wins()) == 1  # one at a time
        text = wait_until(asking_in(ed, win), what="a prompt")
        name = text.split("Token for ", 1)[1].split(":", 1)[0]
        assert name not in seen
        seen.append(name)
        title = ed.lua("return vim.api.nvim_win_get_config(...).title[1][1]", win)
        # "(1/N)": this one and those already waiting (the rest may not have asked yet).
        count = re.search(r"\(1/(\d+)\)", title)
        assert (count is None and shown == 50) or (count and 1 < int(count.group(1)) <= 51 - shown), title
        wait_until(lambda: ed.mode() == "t", what="terminal mode")
        ed.nvim.input(f"secret-of-{name}<CR>")
        ed.wait_event("TtyOfferClose", shown, timeout=20)
    got = wait_until(
        lambda: (lambda g: g if len(g) == 50 else None)(ed.lua("return _G.got")), 20, "50 answers"
    )
    assert sorted(got) == sorted(f"cmd{i}=secret-of-cmd{i}" for i in range(1, 51))


def proc_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_ten_thousand_commands_leave_fds_and_memory_at_baseline(ed: Editor) -> None:
    host_pid = ed.lua("return require('ttyoffer.host').get_pid()")
    nvim_pid = ed.lua("return vim.fn.getpid()")
    churn = """
        for i = 1, ... do
          vim.fn.jobwait({require('ttyoffer').jobstart({'true'})}, 10000)
          if i % 8 == 0 then vim.wait(0) end
        end
        vim.wait(5000, function() return #require('ttyoffer').offers() == 0 end)
        collectgarbage('collect')
    """

    def host_fds() -> int:
        status = ed.host_status()
        fds: int = status["fds"]
        return fds - 2 * len(status["offers"])

    def steady(read: Callable[[], int]) -> int:
        """The count once it has not changed for a second: the spare ptys'
        stock refills and shrinks back a while after the churn ends."""
        seen: list[int] = []

        def unchanged() -> bool:
            seen.append(read())
            time.sleep(0.2)
            return len(seen) >= 5 and len(set(seen[-5:])) == 1

        wait_until(unchanged, timeout=30, what="the count to settle")
        return seen[-1]

    def settled() -> tuple[int, int, int, int]:
        nvim_fds = steady(lambda: len(os.listdir(f"/proc/{nvim_pid}/fd")))
        return steady(host_fds), nvim_fds, proc_rss_kb(host_pid), proc_rss_kb(nvim_pid)

    ed.lua(churn, 1000)  # warm-up: caches, allocator pools, the stock
    host_fds0, nvim_fds0, host_rss0, nvim_rss0 = settled()
    ed.lua(churn, 10000)
    host_fds1, nvim_fds1, host_rss1, nvim_rss1 = settled()
    # A leak grows with the commands (10,000 of them); a spare pty the stock
    # happened to hold at the first count and not at the second is no leak.
    assert host_fds1 <= host_fds0, (host_fds0, host_fds1)
    assert nvim_fds1 <= nvim_fds0, (nvim_fds0, nvim_fds1)
    assert ed.lua("return require('ttyoffer').offers()") == []
    # Memory is back at its plateau: not growing with the number of commands
    # (10,000 records or closures kept would be megabytes).
    assert host_rss1 - host_rss0 < 2048, (host_rss0, host_rss1)
    assert nvim_rss1 - nvim_rss0 < 4096, (nvim_rss0, nvim_rss1)


def test_offer_cap_commands_run_without_and_status_says_so(ed: Editor) -> None:
    ed.lua("require('ttyoffer').setup({max_offers = 3})")
    jobs = [start(ed, ["sh", "-c", "sleep 30; exec 3</dev/tty"]) for _ in range(5)]
    offered = ed.lua("return require('ttyoffer').offers()")
    assert len(offered) == 3
    status = ed.nvim.command_output("TtyOffer status")
    assert "3 of at most 3 offers in flight" in status
    assert "offer limit reached" in status
    assert "offer limit reached: 2" in status
    # The two past the cap run all the same, without a terminal (as stock).
    for job in jobs:
        ed.lua("vim.fn.jobstop(...)", job)
    for job in jobs:
        exit_code(ed, job)
    free = start(ed, ["sh", "-c", "exec 3</dev/tty"])
    assert exit_code(ed, free) == 0
