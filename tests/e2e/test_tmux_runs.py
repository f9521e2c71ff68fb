"""Runs on tmux: a real tmux server of the test's own (TMUX_TMPDIR, so the
"default" server is private; -L for the option that names another), never
the user's."""

from __future__ import annotations

import asyncio
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import Editor, Sandbox, editor, end_tmux_servers, wait_until
from ttyoffer_nvim.runs import tmux
from ttyoffer_nvim.runs.sessions import sanitize_name
from ttyoffer_nvim.runs.tmux import PREFIX, Tmux

pytestmark = pytest.mark.e2e


@pytest.fixture
def tmux_editor(sandbox: Sandbox, tmux_dir: Path) -> Iterator[tuple[Editor, Any]]:
    sandbox.env["TMUX_TMPDIR"] = str(tmux_dir)
    sandbox.env.pop("TMUX", None)
    env = {**sandbox.env}

    def outside(*args: str) -> subprocess.CompletedProcess[str]:
        """tmux as a real terminal of the user's would run it."""
        return subprocess.run(["tmux", *args], env=env, capture_output=True, text=True, timeout=10)

    with editor(sandbox) as ed:
        yield ed, outside


def names(ed: Editor) -> list[str]:
    return [s["name"] for s in ed.lua("return (require('ttyoffer.runs.kinds.tmux').sessions())")]


def test_a_run_is_a_tmux_session_real_terminals_see(tmux_editor: tuple[Editor, Any], tmp_path: Path) -> None:
    ed, outside = tmux_editor
    run_id = ed.lua(
        "return require('ttyoffer').run({tmux = 'build', cwd = ..., env = {GREETING = 'hi'}, "
        "argv = {'sh', '-c', 'echo \"made in tmux $GREETING $(pwd)\"; exec sleep 300'}}).id",
        str(tmp_path),
    )
    wait_until(lambda: "made in tmux hi" in ed.run_pane(run_id), what="the session in the pane")
    assert names(ed) == ["ttyoffer-build"]
    # The same session, from outside.
    seen = wait_until(
        lambda: (lambda out: out if "made in tmux" in out else None)(
            outside("capture-pane", "-p", "-t", "=ttyoffer-build:").stdout
        ),
        what="the session from outside",
    )
    assert f"made in tmux hi {tmp_path}" in seen
    session = ed.lua("return (require('ttyoffer.runs.kinds.tmux').sessions())")[0]
    assert (session["command"], session["attached"]) == ("sleep", 1)
    listing = ed.nvim.api.exec2("TtyRun list", {"output": True})["output"]
    assert "ttyoffer-build" in listing and "sleep" in listing
    # Closing the pane detaches the client; the session goes on.
    ed.lua("require('ttyoffer.runs').get(...):close()", run_id)
    wait_until(lambda: ed.lua("return (require('ttyoffer.runs.kinds.tmux').sessions())")[0]["attached"] == 0)
    assert names(ed) == ["ttyoffer-build"]


def test_a_session_that_exists_gets_a_window_with_the_argv(tmux_editor: tuple[Editor, Any]) -> None:
    ed, outside = tmux_editor
    assert outside("new-session", "-d", "-s", "ttyoffer-idle", "-x", "100", "-y", "20", "sh").returncode == 0
    # In copy mode, with arguments tmux would read as key names or options.
    outside("copy-mode", "-t", "=ttyoffer-idle:")
    ed.nvim.command("TtyRun tmux idle sh -c 'printf \"%s|%s|%s\\n\" \"$@\"; sleep 1' sh -n Enter 'C-c;'")
    run_id = ed.lua("return require('ttyoffer.runs').list()[1].id")
    wait_until(lambda: "-n|Enter|C-c;" in ed.run_pane(run_id), what="the program's arguments, as given")
    assert "sleep" not in outside("capture-pane", "-p", "-t", "=ttyoffer-idle:0").stdout  # nothing typed
    assert names(ed) == ["ttyoffer-idle"]


def test_a_busy_pane_is_adopted_for_a_pane_and_given_a_window_for_a_command(
    tmux_editor: tuple[Editor, Any],
) -> None:
    ed, outside = tmux_editor
    assert outside("new-session", "-d", "-s", "ttyoffer-busy", "sleep", "300").returncode == 0
    run_id = ed.lua(
        "return require('ttyoffer').run({tmux = 'busy', argv = {'sh', '-c', 'echo beside it; sleep 1'}}).id"
    )
    wait_until(lambda: "beside it" in ed.run_pane(run_id), what="the command in a window of its own")
    code = "local r = require('ttyoffer.runs').get(...) return r.result and r.result.code or vim.NIL"
    assert wait_until(lambda: ed.lua(code, run_id) is not None, what="its end") and ed.lua(code, run_id) == 0
    assert "beside it" not in outside("capture-pane", "-p", "-t", "=ttyoffer-busy:0").stdout
    # Asked for the pane only: adopted.
    run_id = ed.lua("return require('ttyoffer').run({tmux = 'busy'}).id")
    wait_until(lambda: ed.lua("return require('ttyoffer.runs').get(...).pid", run_id), what="the client")
    wait_until(lambda: ed.lua("return (require('ttyoffer.runs.kinds.tmux').sessions())")[0]["attached"] == 1)


def test_state_is_read_from_tmux_and_only_ours_is_killed(tmux_editor: tuple[Editor, Any]) -> None:
    ed, outside = tmux_editor
    for name in ("a", "b"):
        ed.lua("require('ttyoffer').run({tmux = ..., argv = {'sleep', '300'}})", name)
    assert outside("new-session", "-d", "-s", "main", "sleep", "300").returncode == 0
    wait_until(lambda: names(ed) == ["ttyoffer-a", "ttyoffer-b"], what="both sessions (and not the user's)")
    outside("kill-session", "-t", "=ttyoffer-a")
    assert names(ed) == ["ttyoffer-b"]  # the next read
    for foreign in ("main", "ttyoffer-b;main", "../main", "ttyoffer-"):
        err = ed.lua(
            "local ended, err = require('ttyoffer.runs.kinds.tmux').kill_session(...) return err", foreign
        )
        assert "not a session of ttyoffer's" in err, (foreign, err)
    assert outside("has-session", "-t", "=main").returncode == 0
    out = ed.nvim.api.exec2("TtyRun tmux-kill ttyoffer-b", {"output": True})["output"]
    assert "tmux session ttyoffer-b ended" in out
    assert names(ed) == []
    assert outside("has-session", "-t", "=main").returncode == 0
    # A server that went away self-corrects: nothing listed, no error.
    outside("kill-server")
    assert names(ed) == []


def test_the_option_names_another_server(tmux_editor: tuple[Editor, Any]) -> None:
    ed, outside = tmux_editor
    ed.lua("require('ttyoffer').setup({runs = {tmux_server = 'ttyoffer-test-other'}})")
    ed.lua("require('ttyoffer').run({tmux = 'elsewhere', argv = {'sleep', '300'}})")
    wait_until(lambda: names(ed) == ["ttyoffer-elsewhere"])
    assert outside("-L", "ttyoffer-test-other", "has-session", "-t", "=ttyoffer-elsewhere").returncode == 0
    assert outside("has-session", "-t", "=ttyoffer-elsewhere").returncode != 0  # not on the default one
    outside("-L", "ttyoffer-test-other", "kill-server")


def test_without_tmux_the_error_names_the_package(tmux_editor: tuple[Editor, Any]) -> None:
    ed, _ = tmux_editor
    err = ed.lua(
        "local path = vim.env.PATH vim.env.PATH = '/nonexistent' "
        "local ok, e = pcall(require('ttyoffer').run, {tmux = 'x', argv = {'true'}}) "
        "vim.env.PATH = path return e"
    )
    assert err == "(ttyoffer) run(): tmux is not installed: sudo apt-get install tmux (or leave tmux out)"
    assert ed.lua("return #require('ttyoffer.runs').list()") == 0


# -- argument builders --------------------------------------------------------------


def as_tmux_reads(arg: str) -> str:
    """What tmux makes of one argument of its command line (cmd-parse.c):
    a final ';' is dropped, and a backslash before it becomes the ';'."""
    assert arg.endswith("\\;") or not arg.endswith(";"), f"{arg!r} would end a tmux command"
    return arg[:-2] + ";" if arg.endswith("\\;") else arg


TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=30)


@settings(max_examples=300, deadline=None)
@given(
    st.text(),
    st.lists(TEXT, min_size=1, max_size=5),
    st.dictionaries(st.from_regex(r"[A-Z_]{1,8}", fullmatch=True), TEXT),
)
def test_caller_text_always_follows_the_end_of_options(
    name: str, argv: list[str], env: dict[str, str]
) -> None:
    server = Tmux("tmux", ["-L", "x"])
    session = tmux.session_name(name)
    assert session.startswith(PREFIX) and session == PREFIX + sanitize_name(name)
    raw = server.start_program(session, "%3", env, argv)
    # Our commands, separated by ";" alone (a caller's ";" is "\\;"), then
    # respawn-pane: its end of options, then one program run by exec,
    # whatever its arguments.
    respawn = len(raw) - raw[::-1].index(";")
    assert raw[respawn] == "respawn-pane"
    made = [arg if arg == ";" else as_tmux_reads(arg) for arg in raw]
    end = made.index("--", respawn)
    assert made[end + 1 :] == [*tmux.EXEC, *argv]
    flags = made[respawn:end]
    assert [flags[i + 1] for i, f in enumerate(flags) if f == "-e"] == [f"{k}={v}" for k, v in env.items()]
    # No -c: tmux expands it as a format.
    assert "-c" not in made[:end]


@settings(max_examples=20, deadline=None)
@given(
    st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=20),
    st.sampled_from(["", ";", "\\;", " ; kill-server;"]),
)
def test_an_argument_starting_with_a_dash_reaches_the_program_as_given(body: str, end: str) -> None:
    """Options and command separators for tmux, as a program's argument."""
    text = "-" + body + end
    with tempfile.TemporaryDirectory(prefix="ttm-") as folder:
        env = {**os.environ, "TMUX_TMPDIR": folder}
        env.pop("TMUX", None)
        server = Tmux("tmux", [])

        async def check() -> None:
            made = await tmux.call(server.new_session("ttyoffer-arg", 10, 200), env)
            assert made.returncode == 0, made.stderr
            pane = tmux.pane_id(made.stdout)
            argv = ["sh", "-c", 'printf "<%s>\\n" "$1"; exec sleep 30', "sh", text]
            started = await tmux.call(server.start_program("ttyoffer-arg", pane, {}, argv), env)
            assert started.returncode == 0, started.stderr
            for _ in range(200):
                shown = await tmux.call(server.argv("capture-pane", "-p", "-t", pane), env)
                if f"<{text}>" in shown.stdout:
                    return
                await asyncio.sleep(0.02)
            raise AssertionError(f"{text!r} not shown")

        try:
            asyncio.run(check())
        finally:
            end_tmux_servers(Path(folder))


ASK = (
    "local answer, err = require('ttyoffer.host').request_within(5000, ...) "
    "return {answer = answer or vim.NIL, err = err or vim.NIL}"
)


def test_the_generic_requests_list_prepare_and_kill_tmux_sessions(tmux_editor: tuple[Editor, Any]) -> None:
    """run_sessions and run_session_kill with kind "tmux" and the server as
    `where` list and end our tmux sessions; run_prepare finds the pane."""
    ed, _ = tmux_editor
    server = ed.lua("return require('ttyoffer.config').current.runs.tmux_server")
    run_id = ed.lua("return require('ttyoffer').run({tmux = 'generic', argv = {'sleep', '308'}}).id")
    wait_until(lambda: names(ed) == ["ttyoffer-generic"], what="the session")
    new = ed.lua(ASK, "run_sessions", "tmux", server, None, 0)["answer"]["sessions"]
    assert [s["name"] for s in new] == ["ttyoffer-generic"]
    # The pane to re-attach to.
    spec = {"name": "generic", "argv": [], "cwd": "", "env": {}, "rows": 10, "cols": 80, "server": server}
    prepared = ed.lua(ASK, "run_prepare", "tmux", spec)["answer"]
    assert prepared["session"] == "ttyoffer-generic" and prepared["pane"].startswith("%"), prepared
    refused = ed.lua(ASK, "run_session_kill", "tmux", server, "someone-elses", None, 0)["err"]
    assert "is not a session of ttyoffer's" in refused
    killed = ed.lua(ASK, "run_session_kill", "tmux", server, "ttyoffer-generic", None, 0)["answer"]
    assert killed == {"name": "ttyoffer-generic", "ended": True}
    ended = "return require('ttyoffer.runs').get(...).result"
    wait_until(lambda: ed.lua(ended, run_id), 20, "the run's end")
    assert names(ed) == []
