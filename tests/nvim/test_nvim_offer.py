"""Headless Neovim, real remote-plugin host: the offer end to end."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import Editor, wait_until

pytestmark = pytest.mark.nvim

# Like gpg or ssh, it fails when its terminal goes away (EOF) instead of going on.
ASK = "printf 'Secret please: ' > /dev/tty; read answer < /dev/tty || exit 9; echo \"got $answer\""


def test_child_writing_to_tty_is_presented_once_with_its_bytes(ed: Editor) -> None:
    job = ed.lua("return require('ttyoffer').jobstart({'sh', '-c', ...})", ASK)
    assert job > 0
    present = ed.wait_event("TtyOfferPresent")
    assert len(present) == 1
    win = wait_until(lambda: ed.float_wins(), what="a float")[0]
    wait_until(lambda: "Secret please:" in ed.buf_text(win), what="the prompt in the float")
    assert present[0]["data"]["pid"] == ed.lua("return vim.fn.jobpid(...)", job)
    wait_until(lambda: ed.mode() == "t", what="terminal mode in the float")
    ed.nvim.input("hunter2\r")
    ed.wait_event("TtyOfferClose")
    assert ed.float_wins() == []
    assert len(ed.events("TtyOfferPresent")) == 1


def only_spares_left(ed: Editor) -> bool:
    """The host holds no pty but the spare ones the editor keeps in stock."""
    stock: int = ed.lua("return require('ttyoffer.host').stock_size()")
    return len(ed.host_status()["offers"]) == stock


def bang(ed: Editor, cmd: str, timeout: float = 20.0) -> dict[str, Any]:
    before = len(ed.events("TtyOfferBangDone"))
    ed.nvim.command("Bang " + cmd)
    done: dict[str, Any] = ed.wait_event("TtyOfferBangDone", before + 1, timeout)[-1]["data"]
    return done


def test_bang_ls_shows_output_and_never_a_window(ed: Editor, tmp_path: Path) -> None:
    (tmp_path / "visible.txt").write_text("x")
    ed.nvim.command(f"cd {tmp_path}")
    done = bang(ed, "ls")
    assert done["code"] == 0
    assert "visible.txt" in done["output"]
    assert ed.events("TtyOfferPresent") == []
    assert ed.float_wins() == []
    messages = ed.nvim.command_output("messages")
    assert ":!ls" in messages and "visible.txt" in messages
    # The pty it held is gone from the host (only spare ones remain).
    wait_until(lambda: only_spares_left(ed), what="offer released")


def test_bang_reports_exit_status_like_bang(ed: Editor) -> None:
    done = bang(ed, "echo out; echo err >&2; exit 3")
    assert done["code"] == 3
    # One stream as :! shows it; stdout and stderr may interleave either way.
    assert sorted(done["output"]) == ["err", "out"]
    assert "shell returned 3" in ed.nvim.command_output("messages")


def test_bang_expands_specials_and_leaves_shell_variables(ed: Editor, tmp_path: Path) -> None:
    target = tmp_path / "file one.txt"
    target.write_text("x")
    ed.nvim.command(f"edit {str(target).replace(' ', chr(92) + ' ')}")
    # As with :!, a bare % is the file name; \% is a literal percent sign.
    done = bang(ed, "printf '\\%s|\\%s' '%:t' \"$HOME\"")
    assert done["output"] == [f"file one.txt|{os.environ['HOME']}"]


def test_bang_without_command_is_a_clear_error(ed: Editor) -> None:
    ed.nvim.command("Bang")
    assert "usage: :Bang {cmd}" in ed.nvim.command_output("messages")


def test_bang_with_a_missing_shell_says_so(ed: Editor) -> None:
    ed.nvim.command("set shell=/nonexistent/shell")
    ed.nvim.command("Bang true")
    assert "cannot start 'shell' (/nonexistent/shell)" in ed.nvim.command_output("messages")


def prompt_and_wait_for_float(ed: Editor, script: str = ASK) -> tuple[int, int]:
    job = start(ed, ["sh", "-c", script])
    ed.wait_event("TtyOfferPresent")
    win = wait_until(lambda: ed.float_wins(), what="a float")[0]
    wait_until(lambda: ed.mode() == "t", what="terminal mode in the float")
    return job, win


def start(ed: Editor, argv: list[str]) -> int:
    """Spawn through the offer, recording the exit code for exit_code()."""
    job: int = ed.lua(
        "_G.exit_codes = _G.exit_codes or {} "
        "return require('ttyoffer').jobstart(..., "
        "{on_exit = function(id, code) _G.exit_codes[id] = code end})",
        argv,
    )
    return job


def exit_code(ed: Editor, job: int, timeout: float = 10.0) -> int:
    def code() -> list[int] | None:  # in a list: 0 is an exit code too
        found: int | None = ed.lua("return (_G.exit_codes or {})[...]", job)
        return [found] if found is not None else None

    return wait_until(code, timeout, f"job {job} to exit")[0]


def test_dismiss_mapping_ends_the_child_promptly_with_a_failure(ed: Editor) -> None:
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.input("<C-q>")
    close = ed.wait_event("TtyOfferClose")[0]["data"]
    assert close["reason"] == "dismissed"
    assert exit_code(ed, job) != 0  # ended promptly, and failed
    assert ed.float_wins() == []


def test_dismiss_command_declines_the_prompt(ed: Editor) -> None:
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.command("TtyOffer dismiss")
    ed.wait_event("TtyOfferClose")
    assert exit_code(ed, job) != 0


def test_closing_the_window_declines_too(ed: Editor) -> None:
    job, win = prompt_and_wait_for_float(ed)
    ed.lua("vim.api.nvim_win_close(..., true)", win)
    ed.wait_event("TtyOfferClose")
    assert exit_code(ed, job) != 0


STOCK_PROBE = "echo x > /dev/tty"


def run_collect(ed: Editor, fn: str, cmd: str) -> list[str]:
    lines: list[str] = ed.lua(
        f"""
        local streams = {{stdout = '', stderr = ''}}
        local function collect(_, d, name) streams[name] = streams[name] .. table.concat(d, '\\n') end
        local job = {fn}(..., {{on_stderr = collect, on_stdout = collect}})
        vim.fn.jobwait({{job}}, 10000)
        local lines = vim.split(streams.stdout .. '\\n' .. streams.stderr, '\\n')
        return vim.tbl_filter(function(l) return l ~= '' end, lines)
        """,
        cmd,
    )
    return lines


def test_off_behaves_exactly_as_stock(ed: Editor) -> None:
    ed.nvim.command("TtyOffer off")
    ours = run_collect(ed, "require('ttyoffer').jobstart", STOCK_PROBE)
    stock = run_collect(ed, "require('ttyoffer.shared.originals').jobstart", STOCK_PROBE)
    assert ours == stock
    assert "No such device or address" in ours[0]
    env = run_collect(ed, "require('ttyoffer').jobstart", "echo GPG_TTY=${GPG_TTY-unset}")
    assert env == ["GPG_TTY=unset"]
    assert ed.events("TtyOfferPresent") == []
    # Without options too (an empty table would not pass for a dictionary).
    assert ed.lua("return vim.fn.jobwait({require('ttyoffer').jobstart({'true'})}, 5000)[1]") == 0
    assert ed.lua("return vim.fn.jobwait({require('ttyoffer').jobstart('true')}, 5000)[1]") == 0
    ed.nvim.command("TtyOffer on")
    assert run_collect(ed, "require('ttyoffer').jobstart", "exec 3</dev/tty && echo has-a-tty") == [
        "has-a-tty"
    ]


def test_child_gets_its_pty_as_ctty_and_gpg_tty(ed: Editor) -> None:
    out = run_collect(
        ed,
        "require('ttyoffer').jobstart",
        'exec 3</dev/tty; echo "$GPG_TTY"; ps -o tty= -p $$; readlink /proc/$$/fd/0',
    )
    gpg_tty, ps_tty, stdin = out
    assert gpg_tty.startswith("/dev/pts/")
    assert gpg_tty == "/dev/" + ps_tty.strip()
    assert not stdin.startswith("/dev/pts")  # stdio stays what the caller asked for
    assert ed.events("TtyOfferPresent") == []


def test_list_command_argv_and_exit_code_pass_through(ed: Editor) -> None:
    out = ed.lua(
        """
        local lines = {}
        local argv = {'sh', '-c', 'printf "%s|" "$@"; exit 7', 'zero', 'a b', '', '$HOME', "'q'"}
        local job = require('ttyoffer').jobstart(argv,
          {on_stdout = function(_, d) vim.list_extend(lines, d) end})
        local code = vim.fn.jobwait({job}, 10000)[1]
        return {code, table.concat(lines)}
        """
    )
    assert out == [7, "a b||$HOME|'q'|"]


def test_jobstart_contract(ed: Editor) -> None:
    # Refusals are stock: the same error (or value) as vim.fn.jobstart() gives.
    for bad in [
        "{'/nonexistent/program'}",
        "{}",
        "{'true'}, 'not a table'",
        "{'true'}, {pty = true, rpc = true}",
    ]:
        ours = ed.lua(f"return {{pcall(require('ttyoffer').jobstart, {bad})}}")
        stock = ed.lua(f"return {{pcall(require('ttyoffer.shared.originals').jobstart, {bad})}}")
        assert ours == stock, bad
    assert "E475" in str(ed.lua("return {pcall(require('ttyoffer').jobstart, {'/nonexistent/program'})}")[1])
    # chansend to stdin, callbacks, jobwait, the exit event, job id passed back.
    result = ed.lua(
        """
        local got, exit = {}, nil
        local job = require('ttyoffer').jobstart({'cat'}, {
          on_stdout = function(id, d) table.insert(got, {id, d}) end,
          on_exit = function(id, code, event) exit = {id, code, event} end,
        })
        vim.fn.chansend(job, 'ping\\n')
        vim.fn.chanclose(job, 'stdin')
        local code = vim.fn.jobwait({job}, 10000)[1]
        vim.wait(5000, function() return exit ~= nil end)
        return {job = job, code = code, got = got, exit = exit}
        """
    )
    job = result["job"]
    assert result["code"] == 0
    assert result["got"][0] == [job, ["ping", ""]]
    assert result["exit"] == [job, 0, "exit"]
    # jobstop on the id stops the real command.
    stop = """
        local code
        local job = {}({{'sleep', '30'}}, {{on_exit = function(_, c) code = c end}})
        vim.fn.jobstop(job)
        local waited = vim.fn.jobwait({{job}}, 10000)[1]
        vim.wait(5000, function() return code ~= nil end)
        return {{waited, code}}
    """
    assert ed.lua(stop.format("require('ttyoffer').jobstart")) == ed.lua(
        stop.format("require('ttyoffer.shared.originals').jobstart")
    )
    assert ed.lua(stop.format("require('ttyoffer').jobstart"))[1] == 143


def test_caller_stopping_the_job_closes_the_window_and_the_master(ed: Editor) -> None:
    job, _ = prompt_and_wait_for_float(ed)
    ed.lua("vim.fn.jobstop(...)", job)
    close = ed.wait_event("TtyOfferClose")[0]["data"]
    assert close["reason"] == "exited"
    assert ed.float_wins() == []
    wait_until(lambda: only_spares_left(ed), what="master closed")


def test_child_exiting_with_the_window_open_shows_the_exit_then_closes(ed: Editor) -> None:
    ed.lua("require('ttyoffer').jobstart({'sh', '-c', 'echo working > /dev/tty; read x < /dev/tty; exit 5'})")
    ed.wait_event("TtyOfferPresent")
    win = wait_until(lambda: ed.float_wins(), what="a float")[0]
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("go<CR>")
    wait_until(lambda: "[Process exited" in ed.buf_text(win), what="the exit in the window")
    ed.wait_event("TtyOfferClose")
    assert ed.float_wins() == []


def test_no_fd_left_in_the_host(ed: Editor) -> None:
    def settled_fds() -> int:
        # Spare ptys come and go with the stock (two descriptors each); what
        # must not grow is everything else.
        status = ed.host_status()
        fds: int = status["fds"]
        return fds - 2 * len(status["offers"])

    bang(ed, "true")
    wait_until(lambda: only_spares_left(ed), what="release")
    baseline = settled_fds()
    for _ in range(3):
        bang(ed, "true")
    job, _ = prompt_and_wait_for_float(ed)
    ed.nvim.input("<C-q>")
    exit_code(ed, job)
    ed.wait_event("TtyOfferClose")
    wait_until(lambda: settled_fds() == baseline, what=f"host fds back to {baseline}")


def test_focus_and_mode_return_to_where_the_user_was(ed: Editor) -> None:
    ed.nvim.command("vsplit | enew")
    origin = ed.nvim.api.get_current_win().handle
    ed.nvim.input("i")
    wait_until(lambda: ed.mode() == "i", what="insert mode")
    job = start(ed, ["sh", "-c", ASK])
    ed.wait_event("TtyOfferPresent")
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("answer<CR>")
    assert exit_code(ed, job) == 0
    # Focus comes back as soon as the command has ended, while the window
    # still shows the exit: what the user types next is the editor's.
    wait_until(lambda: ed.nvim.api.get_current_win().handle == origin and ed.mode() == "i", what="focus back")
    assert ed.float_wins() != [] and ed.events("TtyOfferClose") == []
    assert ed.nvim.current.buffer[:] == [""]  # nothing typed into the prompt landed here
    ed.nvim.input("typed after")
    ed.wait_event("TtyOfferClose")
    assert ed.nvim.current.buffer[:] == ["typed after"]
    assert ed.mode() == "i"


def test_several_prompts_are_shown_one_at_a_time_in_order(ed: Editor) -> None:
    script = 'printf \'Who is %s? \' "$0" > /dev/tty; read a < /dev/tty; echo "$0=$a"'
    ed.lua("_G.answers = {}")
    for count, name in enumerate(["first", "second", "third"], start=1):
        ed.lua(
            "local script, name = ... require('ttyoffer').jobstart({'sh', '-c', script, name}, {"
            " on_stdout = function(_, d) if d[1] ~= '' then table.insert(_G.answers, d[1]) end end})",
            script,
            name,
        )
        # Arrival order is spawn order: each has asked before the next starts.
        asking = (
            "return #vim.tbl_filter(function(o) return o.state ~= 'armed' end, require('ttyoffer').offers())"
        )
        wait_until(lambda: ed.lua(asking) == count, what=f"{name} asking")  # noqa: B023
    for index, name in enumerate(["first", "second", "third"], start=1):
        ed.wait_event("TtyOfferPresent", index)
        win = wait_until(lambda: ed.float_wins(), what="a float")[0]
        question = f"Who is {name}?"
        wait_until(lambda: question in ed.buf_text(win), what=question)  # noqa: B023
        title = ed.lua("return vim.api.nvim_win_get_config(...).title[1][1]", win)
        if index == 1:
            assert "(1/3)" in title
        assert len(ed.float_wins()) == 1
        wait_until(lambda: ed.mode() == "t", what="terminal mode")
        ed.nvim.input(f"answer-{name}<CR>")
        ed.wait_event("TtyOfferClose", index)
    wait_until(lambda: len(ed.lua("return _G.answers")) == 3, what="three answers")
    assert sorted(ed.lua("return _G.answers")) == sorted(
        f"{n}=answer-{n}" for n in ["first", "second", "third"]
    )


def test_dismiss_all_declines_the_prompt_and_those_waiting_with_one_message(ed: Editor) -> None:
    """:TtyOffer dismiss all: the prompt on screen and the two waiting
    behind it (the foot counts them) end hung up, and one message says so."""
    script = "printf 'Who is %s? ' \"$0\" > /dev/tty; read a < /dev/tty"
    ed.lua("_G.codes = {}")
    for name in ["first", "second", "third"]:
        ed.lua(
            "require('ttyoffer').jobstart({'sh', '-c', ..., ...},"
            " {on_exit = function(_, code) table.insert(_G.codes, code) end})",
            script,
            name,
        )
    asking = "return #vim.tbl_filter(function(o) return o.state ~= 'armed' end, require('ttyoffer').offers())"
    wait_until(lambda: ed.lua(asking) == 3, what="three asking")
    win = wait_until(lambda: ed.float_wins(), what="a float")[0]
    footer = "return vim.api.nvim_win_get_config(...).footer[1][1]"
    wait_until(
        lambda: "2 more waiting · <M-q> declines all" in ed.lua(footer, win), what="the count in the foot"
    )
    ed.nvim.command("TtyOffer dismiss all")
    wait_until(lambda: ed.lua("return _G.codes") == [129, 129, 129], what="all three hung up")
    ed.wait_event("TtyOfferClose", 3)
    wait_until(lambda: ed.float_wins() == [], what="the window gone")
    messages = wait_until(
        lambda: (m := ed.nvim.api.exec2("messages", {"output": True})["output"]) and "declined" in m and m,
        what="the message",
    )
    assert messages.count("declined 3 questions") == 1, messages
    ed.nvim.command("TtyOffer dismiss all")
    assert "no prompt is shown" in ed.nvim.api.exec2("messages", {"output": True})["output"]


def test_the_declined_storm_names_each_command_and_question_once(ed: Editor) -> None:
    """The one message of a decline-all: how many, then each different
    command and question once, the question made printable."""
    message = ed.lua(
        "return require('ttyoffer.offer.labels').declined({"
        " {id = 900001, question = 'Enter passphrase:'}, {id = 900001, question = 'Enter passphrase:'},"
        " {id = 900002, question = 'bad\\27]0;x\\7 question'}, {id = 900003, question = ''}})"
    )
    assert message == (
        "declined 4 questions, and the same again in this burst: "
        'offer 900001 "Enter passphrase:", offer 900002 "bad ]0;x question", offer 900003'
    )


def test_editor_resize_recenters_and_resizes_the_pty(ed: Editor) -> None:
    script = "printf 'size? ' > /dev/tty; read x < /dev/tty; stty size < /dev/tty"
    job = ed.lua(
        "_G.size_out = {} _G.exit_codes = {} return require('ttyoffer').jobstart({'sh', '-c', ...}, "
        "{on_stdout = function(_, d) vim.list_extend(_G.size_out, d) end,"
        " on_exit = function(id, c) _G.exit_codes[id] = c end})",
        script,
    )
    ed.wait_event("TtyOfferPresent")
    win = wait_until(lambda: ed.float_wins(), what="a float")[0]
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.command("set columns=60 lines=30")
    config = ed.lua("return vim.api.nvim_win_get_config(...)", win)
    assert config["width"] == 56 and config["height"] <= 25
    assert config["col"] == (60 - 56 - 2) // 2
    ed.nvim.input("<CR>")
    assert exit_code(ed, job) == 0
    rows, cols = ed.lua("return _G.size_out")[0].split()
    assert (int(rows), int(cols)) == (config["height"], config["width"])


def test_status_lists_offers_and_the_host(ed: Editor) -> None:
    job, _ = prompt_and_wait_for_float(ed)
    status = ed.nvim.command_output("TtyOffer status")
    pid = ed.lua("return vim.fn.jobpid(...)", job)
    assert "host ready" in status
    assert f"pid {pid}" in status and "attached" in status
    offer = ed.lua("return require('ttyoffer').offers()")[0]
    assert offer["pid"] == pid and offer["state"] == "attached"
    # One vocabulary: the host calls the same offer's state by the same word.
    host_view = [o for o in ed.host_status()["offers"] if o["id"] == offer["id"]]
    assert [o["state"] for o in host_view] == ["attached"]
    ed.nvim.input("x<CR>")
    ed.wait_event("TtyOfferClose")


def test_ttyoffer_command_completion_and_errors(ed: Editor) -> None:
    assert ed.lua("return vim.fn.getcompletion('TtyOffer ', 'cmdline')") == [
        "dismiss",
        "install",
        "off",
        "on",
        "status",
        "toggle",
    ]
    assert ed.lua("return vim.fn.getcompletion('TtyOffer to', 'cmdline')") == ["toggle"]
    ed.nvim.command("TtyOffer frobnicate")
    assert 'unknown subcommand "frobnicate"' in ed.nvim.command_output("messages")
    ed.nvim.command("TtyOffer toggle")
    assert ed.lua("return require('ttyoffer').enabled()") is False
    ed.nvim.command("TtyOffer toggle")
    assert ed.lua("return require('ttyoffer').enabled()") is True


def test_setup_rejects_bad_options_and_changes_nothing(ed: Editor) -> None:
    with pytest.raises(Exception, match=r"\(ttyoffer\) unknown option \"flaot\""):
        ed.lua("require('ttyoffer').setup({flaot = {}})")
    ed.lua("require('ttyoffer').setup({float = {width = 50}})")
    with pytest.raises(Exception, match="must be a number"):
        ed.lua("require('ttyoffer').setup({float = {height = 'tall'}})")
    assert ed.lua("return require('ttyoffer.config').current.float") == {
        "width": 50,
        "height": 24,
        "border": "rounded",
        "close_delay": 700,
        "typing_pause": 300,
    }


def test_highlight_groups_link_by_default(ed: Editor) -> None:
    for group, target in [
        ("TtyOfferNormal", "NormalFloat"),
        ("TtyOfferBorder", "FloatBorder"),
        ("TtyOfferTitle", "FloatTitle"),
    ]:
        assert ed.lua("return vim.api.nvim_get_hl(0, {name = ...}).link", group) == target
    ed.nvim.command("highlight TtyOfferBorder guifg=#ff0000")
    ed.lua("require('ttyoffer').setup({})")
    assert ed.lua("return vim.api.nvim_get_hl(0, {name = 'TtyOfferBorder'}).fg") == 0xFF0000


def test_non_posix_shell_string_commands_still_get_the_tty(ed: Editor) -> None:
    ed.nvim.command("set shell=/usr/bin/env\\ sh")
    ed.nvim.command("Bang printf 'Name: ' > /dev/tty; read n < /dev/tty; echo hi $n")
    ed.wait_event("TtyOfferPresent")
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("bob<CR>")
    assert ed.wait_event("TtyOfferBangDone")[0]["data"]["output"] == ["hi bob"]


def test_terminal_query_replies_reach_the_child(ed: Editor) -> None:
    # A program asking the terminal where its cursor is (as curses does) gets
    # the emulator's own answer through the float.
    script = (
        "import os, sys, termios, tty\n"
        "fd = os.open('/dev/tty', os.O_RDWR)\n"
        "tty.setraw(fd)\n"
        "os.write(fd, b'hello\\x1b[6n')\n"
        "reply = b''\n"
        "while not reply.endswith(b'R'): reply += os.read(fd, 1)\n"
        "print(reply[1:].decode())\n"
    )
    ed.lua(
        "_G.reply = {} require('ttyoffer').jobstart(..., "
        "{on_stdout = function(_, d) vim.list_extend(_G.reply, d) end})",
        [sys.executable, "-c", script],
    )
    ed.wait_event("TtyOfferPresent")
    reply = wait_until(lambda: ed.lua("return _G.reply[1]"), what="the cursor position report")
    assert reply == "[1;6R"
