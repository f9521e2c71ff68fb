"""Every route by which the editor starts a command gets the offer by
default: `:!` as typed, and the Lua spawners plugins call. Real gpg-agent
with pinentry-curses, real git, the embedded Neovim."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from fixtures import Keyring
from harness import MAIN_LEADERS, Editor, Sandbox, editor, on_leaders, wait_until

# Each route with the default compiled leader, and with the /bin/sh
# prologue that leads where none was built.
pytestmark = on_leaders(*MAIN_LEADERS)


def verified(keyring: Keyring, repo: Path) -> str:
    env = {**os.environ, **keyring.env}
    verify = subprocess.run(
        ["git", "verify-commit", "HEAD"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert verify.returncode == 0, verify.stderr
    return verify.stderr


def type_into_the_prompt(ed: Editor, expect: str, keys: str) -> None:
    """Keys typed the moment the prompt shows `expect`, as a user would."""
    win = wait_until(lambda: ed.float_wins(), what="the prompt window")[0]
    wait_until(lambda: expect in ed.buf_text(win), what=repr(expect))
    ed.nvim.input(keys)


@pytest.mark.e2e
def test_typed_bang_answers_pinentry_and_sets_shell_error(
    sandbox: Sandbox, signing: tuple[Keyring, Path]
) -> None:
    keyring, repo = signing
    sandbox.env.update(keyring.env)
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {repo}")
        ed.nvim.input(":!git commit -q --allow-empty -S -m 'from a typed bang'<CR>")
        ed.wait_event("TtyOfferPresent", timeout=30)
        wait_until(lambda: ed.mode() == "t", what="terminal mode")
        type_into_the_prompt(ed, "Passphrase", keyring.passphrase + "<CR>")
        done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
        assert done["code"] == 0, done
        assert ed.nvim.vvars["shell_error"] == 0
        # In the command-line history as typed, not as :Bang.
        assert ed.nvim.funcs.histget(":", -1) == "!git commit -q --allow-empty -S -m 'from a typed bang'"
        # The passphrase reached no register, no message, no history.
        assert keyring.passphrase not in ed.nvim.api.exec2("messages", {"output": True})["output"]
        assert keyring.passphrase not in ed.nvim.funcs.histget(":", -1)
    assert "Good signature" in verified(keyring, repo)


@pytest.mark.e2e
def test_typed_bang_bang_repeats_and_failures_set_shell_error(sandbox: Sandbox) -> None:
    with editor(sandbox) as ed:
        ed.nvim.input(":!echo first; exit 3<CR>")
        done = ed.wait_event("TtyOfferBangDone")[0]["data"]
        assert (done["code"], done["output"]) == (3, ["first"])
        assert ed.nvim.vvars["shell_error"] == 3
        assert "shell returned 3" in ed.nvim.api.exec2("messages", {"output": True})["output"]
        # :!! repeats the previous command; `!` inside a command is it too.
        ed.nvim.input(":!!<CR>")
        assert ed.wait_event("TtyOfferBangDone", 2)[1]["data"]["output"] == ["first"]
        ed.nvim.input(":!echo again \\! ; !<CR>")
        third = ed.wait_event("TtyOfferBangDone", 3)[2]["data"]
        assert third["cmd"] == "echo again ! ; echo first; exit 3"
        assert third["output"] == ["again !", "first"]
        # % is the current file, as for :!.
        ed.nvim.command("edit " + str(sandbox.base / "some file.txt"))
        ed.nvim.input(":!echo %:t<CR>")
        assert ed.wait_event("TtyOfferBangDone", 4)[3]["data"]["output"] == ["some file.txt"]
        assert ed.nvim.vvars["shell_error"] == 0


def test_filters_reads_writes_and_noremap_mappings_stay_stock(sandbox: Sandbox) -> None:
    with editor(sandbox) as ed:
        buf = ed.nvim.current.buffer
        buf[:] = ["pear", "apple", "fig"]
        ed.nvim.input(":%!sort<CR>")
        wait_until(lambda: buf[:] == ["apple", "fig", "pear"], what="the filtered buffer")
        ed.nvim.input(":$r !echo read-in<CR>")
        wait_until(lambda: buf[:] == ["apple", "fig", "pear", "read-in"], what=":r !")
        out = sandbox.base / "written"
        ed.nvim.input(f":w !cat > {out}<CR>")
        wait_until(lambda: out.exists() and out.read_text() == "apple\nfig\npear\nread-in\n", what=":w !")
        # A mapping's :! returns before its next key runs, as stock.
        ed.nvim.command(
            "nnoremap <F5> :!echo mapped > " + str(sandbox.base / "m") + "<CR>:let g:after = 1<CR>"
        )
        ed.nvim.input("<F5>")
        wait_until(lambda: ed.nvim.vars.get("after") == 1, what="the mapping's next command")
        assert (sandbox.base / "m").read_text() == "mapped\n"
        assert ed.events("TtyOfferBangDone") == []


def test_off_gives_back_stock_spawners_and_bang_exactly(sandbox: Sandbox) -> None:
    with editor(sandbox) as ed:
        same = (
            "local o = require('ttyoffer.shared.originals') "
            "return { rawequal(vim.fn.jobstart, o.jobstart), rawequal(vim.system, o.system), "
            "rawequal(vim.fn.system, o.fn_system), rawequal(vim.fn.systemlist, o.systemlist), "
            "vim.fn.maparg('<CR>', 'c') == '' }"
        )
        assert ed.lua(same) == [False, False, False, False, False]
        ed.nvim.command("TtyOffer off")
        assert ed.lua(same) == [True, True, True, True, True]
        ed.nvim.input(":!echo stock<CR>")
        wait_until(
            lambda: "stock" in ed.nvim.api.exec2("messages", {"output": True})["output"], what=":! output"
        )
        assert ed.events("TtyOfferBangDone") == []
        ed.nvim.command("TtyOffer on")
        assert ed.lua(same) == [False, False, False, False, False]
        # Each route has its own switch.
        ed.lua("require('ttyoffer').setup({ routes = { bang = false } })")
        assert ed.lua(same) == [False, False, False, False, True]
        ed.lua("require('ttyoffer').setup({ routes = { bang = true, lua = false } })")
        assert ed.lua(same) == [True, True, True, True, False]
        status = ed.nvim.api.exec2("TtyOffer status", {"output": True})["output"]
        assert "routes: :! typed offered, Lua spawners stock, git signing and ssh ours" in status


@pytest.mark.e2e
def test_a_lua_plugin_jobstart_gets_the_prompt(sandbox: Sandbox, signing: tuple[Keyring, Path]) -> None:
    keyring, repo = signing
    sandbox.env.update(keyring.env)
    with editor(sandbox) as ed:
        # A stand-in plugin: its own module, stock calls, a mapping to run it.
        ed.lua(
            """
            local repo = ...
            package.loaded['stand_in_git'] = {
              commit = function()
                local argv = { 'git', 'commit', '-q', '--allow-empty', '-S', '-m', 'from a plugin' }
                return vim.fn.jobstart(argv, {
                  cwd = repo,
                  on_exit = function(_, code) _G.plugin_exit = code end,
                })
              end,
            }
            vim.keymap.set('n', '<F6>', function() _G.plugin_job = require('stand_in_git').commit() end)
            """,
            str(repo),
        )
        ed.nvim.input("<F6>")
        ed.wait_event("TtyOfferPresent", timeout=30)
        type_into_the_prompt(ed, "Passphrase", keyring.passphrase + "<CR>")
        wait_until(lambda: ed.lua("return _G.plugin_exit ~= nil"), timeout=30, what="the plugin's on_exit")
        assert ed.lua("return _G.plugin_exit") == 0
        assert ed.lua("return _G.plugin_job") > 0
    assert "Good signature" in verified(keyring, repo)


@pytest.mark.e2e
def test_vim_system_wait_lets_the_user_answer(sandbox: Sandbox, signing: tuple[Keyring, Path]) -> None:
    keyring, repo = signing
    sandbox.env.update(keyring.env)
    with editor(sandbox) as ed:
        ed.lua(
            """
            local repo = ...
            vim.keymap.set('n', '<F7>', function()
              local result = vim.system({ 'git', 'commit', '-q', '--allow-empty', '-S', '-m', 'synchronous' },
                { cwd = repo, text = true }):wait()
              _G.sync_result = result
            end)
            """,
            str(repo),
        )
        ed.nvim.input("<F7>")
        type_into_the_prompt(ed, "Passphrase", keyring.passphrase + "<CR>")
        result = wait_until(lambda: ed.lua("return _G.sync_result"), timeout=30, what="the wait's result")
        assert result["code"] == 0, result
        assert result["signal"] == 0
    assert "Good signature" in verified(keyring, repo)


def test_vim_system_children_get_the_terminal_as_their_controlling_one(sandbox: Sandbox) -> None:
    with editor(sandbox) as ed:
        probe = "{ 'sh', '-c', 'exec 3</dev/tty && echo controlling' }"
        wrapped = ed.lua(f"return vim.system({probe}, {{ text = true }}):wait()")
        assert (wrapped["code"], wrapped["stdout"]) == (0, "controlling\n")
        stock_system = "require('ttyoffer.shared.originals').system"
        stock = ed.lua(f"return {stock_system}({probe}, {{ text = true }}):wait()")
        assert stock["code"] != 0
        # The object is the caller's: its pid is the command's, its cmd theirs.
        obj = ed.lua("local o = vim.system({ 'sleep', '5' }) _G.o = o return { o.pid, o.cmd }")
        assert obj[0] > 0 and obj[0] == ed.lua("return _G.o.pid")
        assert obj[1] == ["sleep", "5"]  # the caller's command, not ours
        ed.lua("_G.o:kill(15)")
        assert ed.lua("return _G.o:wait()")["signal"] == 15


def test_lua_spawners_keep_stock_errors_and_results(sandbox: Sandbox) -> None:
    with editor(sandbox) as ed:

        def both(call: str) -> list[object]:
            result: list[object] = ed.lua(
                "local o = require('ttyoffer.shared.originals') "
                "local function run(system, jobstart, fn_system) "
                f"return {{ pcall(function() return {call} end) }} end "
                "return { run(vim.system, vim.fn.jobstart, vim.fn.system), "
                "run(o.system, o.jobstart, o.fn_system) }"
            )
            return result

        for call in (
            "system({'no-such-program-here'}):wait()",
            "system({'true'}, { cwd = '/no/such/dir' }):wait()",
            "system('not a list')",
            "system({'sh', '-c', 'echo out; echo err >&2; exit 4'}, { text = true }):wait()",
            "system({'cat'}, { stdin = 'fed', text = true }):wait()",
            "jobstart({'no-such-program-here'})",
            "jobstart({})",
            "fn_system({'no-such-program-here'})",
            "fn_system('echo hi; exit 2')",
        ):
            wrapped, stock = both(call)
            assert wrapped == stock, call


def test_a_blocked_editor_hangs_the_asker_up_and_says_how_to_answer(sandbox: Sandbox) -> None:
    ask = "printf 'Secret word: ' >/dev/tty; read w </dev/tty; echo got $w"
    with editor(sandbox) as ed:
        # system() given an {input} of nil (stock feeds "v:null") runs under
        # Neovim's own blocking system(): no window can open. The command
        # fails promptly (not never) and the user is told.
        started = time.monotonic()
        out = ed.lua("return { vim.fn.system(..., nil), vim.v.shell_error }", ask)
        assert time.monotonic() - started < 10
        assert out[1] != 0 and "got" not in out[0]
        told = ed.wait_event("TtyOfferUnserved")[0]["data"]
        assert told["question"].startswith("Secret word")
        assert told["rerun"] == ask
        notice = ed.lua("return require('ttyoffer').status().notices")[-1]
        assert "Secret word" in notice and ":Bang " + ask in notice
        # The one line shown is cut to fit: the fix comes first, so it stays.
        shown = [line for line in ed.nvim.command_output("messages").splitlines() if "hung up" in line]
        assert shown[-1].startswith("(ttyoffer) editor busy, hung up: run :Bang "), shown
        assert ed.float_wins() == []
        # A Vimscript jobwait() on a job a Lua plugin started: the same.
        job = ed.lua("return vim.fn.jobstart({'sh', '-c', ...})", ask)
        assert ed.nvim.funcs.jobwait([job], 20000) != [-1]
        ed.wait_event("TtyOfferUnserved", 2)
        # A plugin's busy loop, with a shorter bound: the same.
        ed.lua("require('ttyoffer').setup({ blocked_timeout = 400 })")
        ed.lua(
            "_G.busy_job = vim.fn.jobstart({'sh', '-c', ...}) "
            "local t = vim.uv.hrtime() while vim.uv.hrtime() - t < 1.5e9 do end",
            ask,
        )
        assert ed.wait_event("TtyOfferUnserved", 3)[2]["data"]["question"].startswith("Secret word")
        assert ed.nvim.funcs.jobwait([ed.lua("return _G.busy_job")], 10000) != [-1]
        # A command that never asks is never touched.
        assert ed.lua("return { vim.fn.system('sleep 1.5; echo fine'), vim.v.shell_error }") == ["fine\n", 0]
        assert len(ed.events("TtyOfferUnserved")) == 3


def test_bang_at_startup_waits_for_the_host(sandbox: Sandbox) -> None:
    ask = "printf 'Name: ' >/dev/tty; read n </dev/tty; echo hello $n"
    with editor(sandbox, "+Bang " + ask, wait_host=False) as ed:
        ed.wait_event("TtyOfferPresent", timeout=30)
        type_into_the_prompt(ed, "Name:", "early<CR>")
        done = ed.wait_event("TtyOfferBangDone")[0]["data"]
        assert (done["code"], done["output"]) == (0, ["hello early"])


def test_checkhealth_says_which_routes_are_covered(sandbox: Sandbox) -> None:
    with editor(sandbox) as ed:
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
        assert ":!{cmd} typed on the command line: runs like :Bang" in report
        assert "vim.fn.systemlist(), vim.uv.spawn() from Lua: wrapped" in report
        assert "Not covered: Vimscript system()" in report
        # A <CR> mapping of the user's own is kept, and health says why :! is stock.
        ed.nvim.command("TtyOffer off")
        ed.nvim.command("cnoremap <CR> <CR>")
        ed.nvim.command("TtyOffer on")
        assert ed.nvim.funcs.maparg("<CR>", "c") == "<CR>"
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
        assert "because <CR> on the command line is mapped already" in report
