"""Runs on tmux, adversarially (issue 22): the ending told is the program's
own, kill() reaches the program, one argument is one program, nothing is
ever typed into a pane (bash in `read`, a half-typed line, fish, tcsh), no
text is read by tmux as a format, the server we start has the user's
environment, and a stopped host or tmux server never freezes the editor.
A real tmux server of the test's own (TMUX_TMPDIR), never the user's."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Editor, Sandbox, editor, wait_until

pytestmark = pytest.mark.e2e

RESULT = "local r = require('ttyoffer.runs').get(...) return r and r.result or vim.NIL"


class Outside:
    """tmux as a real terminal of the user's would run it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", *args], env=self.env, capture_output=True, text=True, timeout=10)

    def show(self, target: str) -> str:
        return self("capture-pane", "-p", "-t", target).stdout

    def pane_pid(self, session: str) -> int:
        fmt = "#{pane_pid} #{pane_current_command} #{@ttyoffer_run}"
        lines = self("list-panes", "-s", "-t", f"={session}", "-F", fmt).stdout.splitlines()
        for line in lines:
            pid, _command, mark = (line.split() + ["", ""])[:3]
            if mark == "1":
                return int(pid)
        return int(lines[0].split()[0])  # a session without a run's mark: its first pane


def make_env(sandbox: Sandbox, tmux_dir: Path) -> dict[str, str]:
    sandbox.env["TMUX_TMPDIR"] = str(tmux_dir)
    sandbox.env.pop("TMUX", None)
    return {**sandbox.env}


@pytest.fixture
def tmux_editor(sandbox: Sandbox, tmux_dir: Path) -> Iterator[tuple[Editor, Outside]]:
    outside = Outside(make_env(sandbox, tmux_dir))
    with editor(sandbox) as ed:
        yield ed, outside


def start(ed: Editor, name: str, argv: list[str] | None = None, **extra: Any) -> int:
    opts = {"tmux": name, "title": name, **extra}
    if argv is not None:
        opts["argv"] = argv
    run_id: int = ed.lua("return require('ttyoffer').run(...).id", opts)
    return run_id


def gone(outside: Outside, session: str) -> bool:
    return outside("has-session", "-t", f"={session}").returncode != 0


def result(ed: Editor, run_id: int, timeout: float = 15.0) -> dict[str, Any]:
    found: dict[str, Any] = wait_until(lambda: ed.lua(RESULT, run_id), timeout, f"the end of run {run_id}")
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def sessions(ed: Editor) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ed.lua("return (require('ttyoffer.runs.kinds.tmux').sessions())")
    return found


# -- the ending -----------------------------------------------------------------


def test_the_ending_told_is_the_programs_own(tmux_editor: tuple[Editor, Outside]) -> None:
    ed, outside = tmux_editor
    exited = start(ed, "three", ["sh", "-c", "sleep 0.3; exit 3"])
    assert (result(ed, exited)["code"], result(ed, exited)["reason"]) == (3, "exited")
    wait_until(lambda: "[exited 3]" in ed.run_pane(exited), what="the end in the pane")
    # Told: the pane went, and the session with it.
    wait_until(
        lambda: outside("has-session", "-t", "=ttyoffer-three").returncode != 0, what="the session gone"
    )

    missing = start(ed, "missing", ["no-such-program-ttyoffer"])
    assert (result(ed, missing)["code"], result(ed, missing)["reason"]) == (127, "not_found")
    wait_until(lambda: "not found" in ed.run_pane(missing), what="why, in the pane")
    assert gone(outside, "ttyoffer-missing")  # nothing was made

    killed = start(ed, "killed", ["sleep", "300"])
    wait_until(lambda: ed.lua("return require('ttyoffer.runs').get(...).pid", killed), what="the client")
    os.kill(outside.pane_pid("ttyoffer-killed"), signal.SIGKILL)
    assert result(ed, killed) | {"message": ""} == {
        "code": 137,
        "signal": 9,
        "signal_name": "SIGKILL",
        "reason": "signal",
        "message": "",
        "said": "killed by SIGKILL",
    }


def test_kill_and_wait_reach_the_program_not_the_client(tmux_editor: tuple[Editor, Outside]) -> None:
    ed, outside = tmux_editor
    termed = start(ed, "termed", ["sleep", "300"])
    wait_until(lambda: ed.lua("return require('ttyoffer.runs').get(...).pid", termed), what="the client")
    program = outside.pane_pid("ttyoffer-termed")
    ed.lua("require('ttyoffer.runs').get(...):kill('TERM')", termed)
    assert (result(ed, termed)["code"], result(ed, termed)["signal_name"]) == (143, "SIGTERM")
    wait_until(lambda: not alive(program), what="the program gone")

    waited = start(ed, "waited", ["sleep", "300"])
    wait_until(lambda: ed.lua("return require('ttyoffer.runs').get(...).pid", waited), what="the client")
    program = outside.pane_pid("ttyoffer-waited")
    code = ed.lua("return require('ttyoffer.runs').get(...):wait(1500).code", waited)
    assert code == 124
    wait_until(lambda: not alive(program), what="the program killed at the timeout")


def test_closing_the_pane_is_129_and_a_reattach_tells_the_ending_it_had(
    tmux_editor: tuple[Editor, Outside], tmp_path: Path
) -> None:
    ed, outside = tmux_editor
    go = tmp_path / "go"
    run_id = start(ed, "later", ["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done; exit 5"])
    wait_until(lambda: ed.lua("return require('ttyoffer.runs').get(...).pid", run_id), what="the client")
    ed.lua("require('ttyoffer.runs').get(...):close()", run_id)
    events = ed.wait_event("TtyRunExit")
    assert (events[-1]["data"]["id"], events[-1]["data"]["code"]) == (run_id, 129)
    go.touch()  # the program ends while nobody is attached
    wait_until(lambda: sessions(ed) and sessions(ed)[0].get("ended"), what="the ending in the list")
    listing = ed.nvim.api.exec2("TtyRun list", {"output": True})["output"]
    assert "ttyoffer-later" in listing and "exited 5" in listing
    again = start(ed, "later")
    assert (result(ed, again)["code"], result(ed, again)["reason"]) == (5, "exited")
    # Told once: the pane has gone.
    wait_until(
        lambda: outside("has-session", "-t", "=ttyoffer-later").returncode != 0, what="the session gone"
    )


def test_without_a_command_the_shell_tmux_starts_and_its_exit(tmux_editor: tuple[Editor, Outside]) -> None:
    ed, outside = tmux_editor
    run_id = start(ed, "shell")
    wait_until(lambda: outside.show("=ttyoffer-shell:").strip(), what="the shell's prompt")
    outside("send-keys", "-t", "=ttyoffer-shell:", "-l", "exit 4")
    outside("send-keys", "-t", "=ttyoffer-shell:", "Enter")
    assert (result(ed, run_id)["code"], result(ed, run_id)["reason"]) == (4, "exited")


# -- argv, formats ----------------------------------------------------------------


def test_one_argument_is_one_program(tmux_editor: tuple[Editor, Outside], tmp_path: Path) -> None:
    ed, _ = tmux_editor
    pwned = tmp_path / "PWNED"
    run_id = start(ed, "text", [f"true;touch {pwned};sleep 300"])
    assert result(ed, run_id)["code"] == 127
    assert not pwned.exists()
    folder = tmp_path / "path with space"
    folder.mkdir()
    program = folder / "prog"
    program.write_text('#!/bin/sh\necho "spaced $#: $1"\nexec sleep 300\n')
    program.chmod(0o755)
    # One item: tmux would hand it to sh -c, which splits it at the space.
    spaced = start(ed, "spaced", [str(program)])
    wait_until(lambda: "spaced 0: " in ed.run_pane(spaced), what="a program with a space in its path")


def test_no_text_is_read_by_tmux_as_a_format(tmux_editor: tuple[Editor, Outside], tmp_path: Path) -> None:
    ed, outside = tmux_editor
    # tmux would run the command in #(…) (and expand #{…}) where it reads
    # a format: the folder's name as the program sees it would not be it.
    folder = tmp_path / "#(echo ran)#{session_name}"
    folder.mkdir()
    argv = ["sh", "-c", 'echo "in:$(pwd)|$V"; exec sleep 300']
    run_id = start(ed, "fmt", argv, cwd=str(folder), env={"V": "#(id)#{pid}"})
    wait_until(lambda: "in:" in ed.run_pane(run_id), what="the program's line")
    seen = "".join(outside.show("=ttyoffer-fmt:").split("\n"))
    assert f"in:{folder}|#(id)#{{pid}}" in seen


# -- nothing is typed -------------------------------------------------------------


SHELLS = [
    ("bash", ["bash", "--norc", "--noprofile"]),
    ("fish", ["fish", "--no-config"]),
    ("tcsh", ["tcsh", "-f"]),
]


@pytest.mark.parametrize(("name", "shell"), SHELLS, ids=[s[0] for s in SHELLS])
def test_an_existing_session_gets_a_window_and_no_keys(
    tmux_editor: tuple[Editor, Outside], tmp_path: Path, name: str, shell: list[str]
) -> None:
    """A shell at its prompt with half a line typed, and bash waiting in
    `read`: the command runs in a window of its own, as argv, with text
    each of those shells would have run or expanded."""
    ed, outside = tmux_editor
    if shutil.which(shell[0]) is None:
        pytest.skip(f"{shell[0]} is not installed")
    pwned = tmp_path / "PWNED"
    half = tmp_path / "half-"
    assert (
        outside("new-session", "-d", "-s", f"ttyoffer-{name}", "-x", "120", "-y", "20", *shell).returncode
        == 0
    )
    wait_until(lambda: outside.show(f"=ttyoffer-{name}:").strip(), what=f"{name}'s prompt")
    if name == "bash":
        outside("send-keys", "-t", f"=ttyoffer-{name}:", "-l", "read -r line; echo got:$line")
        outside("send-keys", "-t", f"=ttyoffer-{name}:", "Enter")
    outside("send-keys", "-t", f"=ttyoffer-{name}:", "-l", f"touch {half}")
    tricky = f"'\" ; touch {pwned} ; # wow!! $HOME `id`"
    # The argument printed while the program runs (a second more): one
    # argument, whatever each of those shells would have made of it.
    run_id = start(ed, name, ["sh", "-c", 'printf "[%s]\\n" "$1"; sleep 1', "printf", tricky])

    def printed() -> str:
        return "".join(ed.run_pane(run_id).split("\n"))

    wait_until(lambda: f"[{tricky}]" in printed(), what="the argument printed as given")
    assert result(ed, run_id)["code"] == 0
    first = outside.show(f"=ttyoffer-{name}:0")
    assert "sleep" not in first and tricky not in first  # nothing typed there
    time.sleep(0.3)
    assert not pwned.exists() and not half.exists() and not Path(f"{half}sh").exists()
    if name == "bash":
        lines = outside.show(f"=ttyoffer-{name}:0").splitlines()
        assert not [line for line in lines if line.startswith("got:")]  # its read got nothing


# -- the server's environment -----------------------------------------------------


def test_a_server_we_start_has_the_users_environment(
    sandbox: Sandbox, tmux_dir: Path, tmp_path: Path
) -> None:
    env = make_env(sandbox, tmux_dir)
    sandbox.env.update(
        {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "Me", "MINE": "kept"}
    )
    outside = Outside({**env, **sandbox.env})
    with editor(sandbox) as ed:
        # The plugin's own entry is in the editor's environment.
        assert ed.lua("return vim.env.GIT_CONFIG_COUNT") == "3"
        assert ed.lua("return vim.env.GIT_CONFIG_KEY_1") == "gpg.program"
        assert ed.lua("return vim.env.GIT_CONFIG_KEY_2") == "core.sshCommand"
        run_id = start(ed, "env", ["sleep", "300"])
        wait_until(lambda: ed.lua("return require('ttyoffer.runs').get(...).pid", run_id), what="the client")
    listing = outside("show-environment", "-g").stdout.splitlines()
    server = dict(line.split("=", 1) for line in listing if "=" in line)
    assert server["MINE"] == "kept"
    assert (server["GIT_CONFIG_COUNT"], server["GIT_CONFIG_KEY_0"], server["GIT_CONFIG_VALUE_0"]) == (
        "1",
        "user.name",
        "Me",
    )
    leaked = [k for k in server if k.startswith(("NVIM", "TTYOFFER_", "VIMRUNTIME", "MYVIMRC"))]
    assert leaked == [] and "GIT_CONFIG_KEY_1" not in server and "GIT_CONFIG_KEY_2" not in server
    # The user's own later session on that server, after the editor quit.
    out = tmp_path / "env.txt"
    assert outside("new-session", "-d", "-s", "later", "sh", "-c", f"env > {out}").returncode == 0
    wait_until(lambda: out.exists() and out.read_text(), what="the later session's environment")
    later = out.read_text()
    assert (
        "MINE=kept" in later
        and "ttyoffer-gpg" not in later
        and "ttyoffer-ssh" not in later
        and "NVIM=" not in later
    )


# -- a stopped host, a stopped tmux server ------------------------------------------


def timed(ed: Editor, command: str) -> tuple[float, str]:
    began = time.monotonic()
    out: str = ed.nvim.api.exec2(command, {"output": True})["output"]
    return time.monotonic() - began, out


def test_a_stopped_host_does_not_freeze_run_commands(tmux_editor: tuple[Editor, Outside]) -> None:
    ed, _ = tmux_editor
    host_pid = ed.lua("return require('ttyoffer.host').get_pid()")
    ed.nvim.command("messages clear")
    os.kill(host_pid, signal.SIGSTOP)
    try:
        took, out = timed(ed, "TtyRun list")
        assert took < 4.0, took
        assert "did not answer" in out, out
        began = time.monotonic()
        ed.lua("return vim.fn.getcompletion('TtyRun! ', 'cmdline')")
        took, out = timed(ed, "TtyRun kill x")
        assert time.monotonic() - began < 3.0
        assert "did not answer" in out, out
        err = ed.lua("local ok, e = pcall(require('ttyoffer').run, {tmux = 'x', argv = {'true'}}) return e")
        assert "did not answer" in str(err)
        began = time.monotonic()
        ed.nvim.command("checkhealth ttyoffer")
        assert time.monotonic() - began < 10.0
        assert "did not answer" in "\n".join(ed.nvim.current.buffer[:])
    finally:
        os.kill(host_pid, signal.SIGCONT)
    # Once it answers again, so do the commands.
    wait_until(lambda: "did not answer" not in timed(ed, "TtyRun list")[1], what="answers again")


def test_a_stopped_tmux_server_is_told_not_waited_for(tmux_editor: tuple[Editor, Outside]) -> None:
    ed, outside = tmux_editor
    start(ed, "up", ["sleep", "300"])
    wait_until(lambda: sessions(ed), what="the session")
    server_pid = int(outside("display-message", "-p", "#{pid}").stdout.strip())
    os.kill(server_pid, signal.SIGSTOP)
    try:
        took, out = timed(ed, "TtyRun list")
        assert took < 3.0, took
        assert "tmux sessions: tmux did not answer" in out, out
    finally:
        os.kill(server_pid, signal.SIGCONT)
    wait_until(lambda: "ttyoffer-up" in timed(ed, "TtyRun list")[1], what="the session listed again")


def test_in_the_tui_a_stopped_host_leaves_the_editor_answering(sandbox: Sandbox, tmp_path: Path) -> None:
    """As a user meets it: `:TtyRun list` typed, the host stopped; the
    editor says so within a bound and takes the next command."""
    import pynvim

    from tui import Tui

    term = Tui(sandbox, [], 30, 100)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        host_pid = ed.lua("return require('ttyoffer.host').get_pid()")
        os.kill(host_pid, signal.SIGSTOP)
        try:
            # A long wait ends on CTRL-C.
            term.type(":lua print(select(2, require('ttyoffer.host').request_within(60000, 'status')))\r")
            time.sleep(0.5)
            began = time.monotonic()
            term.type("\x03")
            term.wait_text("interrupted", timeout=10)
            assert time.monotonic() - began < 5
            term.type(":TtyRun list\r")
            term.wait_text("did not answer", timeout=10)
            term.type("\r:echo 'still' .. 'here'\r")
            term.wait_text("stillhere", timeout=10)
        finally:
            os.kill(host_pid, signal.SIGCONT)
    finally:
        nvim.close()
        term.close()
