"""git push over ssh with a passphrase-protected key, to a real sshd on
127.0.0.1 (tests/sshd.py). ssh asks on its controlling terminal (/dev/tty):
in vim-fugitive's :Git that is the pty fugitive gave git, whose output
fugitive echoes and whose keys its wait loop passes on; in :Bang it is the
offer's, shown in the prompt window. Either way the question is seen, the
answer typed in the editor gets there, and the push arrives."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ptyprocess
import pynvim
import pytest

from harness import Editor, Sandbox, editor, wait_until
from sshd import SshPush, clean_client_env, read_calls, ssh_reading_its_terminal
from test_e2e_prompts import answer_float
from test_git_tools import fugitive_sandbox
from tui import Tui

pytestmark = pytest.mark.e2e

ASKS = "Enter passphrase for key"  # ssh's question, before the key's path
WRONG = "not the passphrase"


def unwrapped(text: str) -> str:
    """Text on a screen without line breaks or spaces: a prompt longer
    than the screen's width is wrapped by the terminal."""
    return "".join(text.split())


def prompt_of(push: SshPush) -> str:
    return f"{ASKS} '{push.key}':"


def ssh_asking(push: SshPush) -> int:
    """Bounded wait until the push's ssh reads the passphrase on its
    terminal (keys sent before that could be flushed as ssh turns echo off);
    its pid."""
    return wait_until(lambda: ssh_reading_its_terminal(push.ssh_config), timeout=30, what="ssh asking")[0]


def type_wrong_then_see_it_ask_again(push: SshPush, type_keys: Callable[[str], object]) -> None:
    """Types a wrong passphrase (and Enter) and waits until ssh, having read
    all of it, reads its terminal again: the second question."""
    pid = ssh_asking(push)
    before = read_calls(pid)
    type_keys(WRONG)
    wait_until(
        lambda: read_calls(pid) > before + len(WRONG) and pid in ssh_reading_its_terminal(push.ssh_config),
        timeout=30,
        what="ssh asking again",
    )


def ended_cleanly(push: SshPush) -> None:
    wait_until(push.pushed, timeout=30, what="the commit in the bare repository")
    wait_until(lambda: not push.server.sessions(), timeout=30, what="sshd's session to end")
    assert f"Accepted publickey for {push.server.user}" in push.server.log_text()


def test_the_server_asks_through_ssh_on_a_plain_terminal(ssh_push: SshPush) -> None:
    """The fixture, without an editor: git push from a terminal asks for the
    key's passphrase, and the push arrives."""
    proc = ptyprocess.PtyProcess.spawn(
        ["git", "push", "-q"], cwd=str(ssh_push.work), env=clean_client_env(dict(os.environ))
    )
    try:
        ssh_asking(ssh_push)
        seen = b""
        while prompt_of(ssh_push).encode() not in seen:
            seen += proc.read(4096)
        proc.write((ssh_push.passphrase + "\r").encode())
        wait_until(lambda: not proc.isalive(), timeout=30, what="git push to end")
        assert proc.exitstatus == 0
    finally:
        proc.close(force=True)
    ended_cleanly(ssh_push)


def fugitive_result(ed: Editor) -> tuple[dict[str, Any], str]:
    """The last :Git's state (exit_status, args, ...) and its output as
    fugitive recorded it. Fugitive records them in the job's exit callback,
    which may come after git has ended and after this asks."""

    def recorded() -> dict[str, Any] | None:
        result: dict[str, Any] = ed.nvim.eval("fugitive#Result()")
        return result if "exit_status" in result else None

    result = wait_until(recorded, timeout=30, what="fugitive's result")
    return result, Path(result["file"]).read_text()


@pytest.mark.parametrize("first_try", ["right", "wrong"])
def test_fugitive_push_asks_for_the_key_passphrase(
    first_try: str, registered_sandbox: Sandbox, ssh_push: SshPush, tmp_path: Path
) -> None:
    box = fugitive_sandbox(tmp_path / "fugitive", registered_sandbox)
    clean_client_env(box.env)  # no agent to answer instead: ssh has to ask
    with editor(box) as ed:
        ed.nvim.command(f"cd {ssh_push.work}")
        assert ed.nvim.funcs.exists(":Git") == 2
        # Typed as a user types it. Fugitive then waits in its loop, serving
        # no requests: ssh asks on the terminal fugitive gave git, whose keys
        # the loop passes on.
        ed.nvim.input(":Git push<CR>")
        if first_try == "wrong":
            type_wrong_then_see_it_ask_again(ssh_push, lambda keys: ed.nvim.input(keys + "<CR>"))
        ssh_asking(ssh_push)
        ed.nvim.input(ssh_push.passphrase + "<CR>")
        ended_cleanly(ssh_push)
        result, output = fugitive_result(ed)
    assert result["args"] == ["push"]
    assert result["exit_status"] == 0, output
    # ssh's question is in fugitive's output, once per try; the answers not.
    asked = 2 if first_try == "wrong" else 1
    assert output.count(prompt_of(ssh_push)) == asked, output
    assert "main -> main" in output
    assert ssh_push.passphrase not in output and WRONG not in output


@pytest.mark.tui
def test_fugitive_shows_the_question_before_anything_is_typed(
    registered_sandbox: Sandbox, ssh_push: SshPush, tmp_path: Path
) -> None:
    """In the real TUI: fugitive echoes ssh's prompt at the bottom of the
    screen as it arrives, so the user knows what to type; what they type is
    not echoed. A wrong passphrase shows the question again."""
    box = fugitive_sandbox(tmp_path / "fugitive", registered_sandbox)
    clean_client_env(box.env)
    term = Tui(box, [], 20, 120)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        nvim.command(f"cd {ssh_push.work}")
        term.type(":Git push\r")
        question = unwrapped(prompt_of(ssh_push))
        wait_until(lambda: question in unwrapped(term.text()), timeout=30, what="the question on the screen")
        # At the bottom, in the message area, before anything is typed.
        assert ASKS in "".join(term.lines()[-4:])
        type_wrong_then_see_it_ask_again(ssh_push, lambda keys: term.type(keys + "\r"))
        wait_until(lambda: unwrapped(term.text()).count(question) == 2, what="the question shown again")
        ssh_asking(ssh_push)
        term.type(ssh_push.passphrase + "\r")
        ended_cleanly(ssh_push)
        term.wait_text("main -> main", timeout=30)
        # The output is longer than the message area: Neovim's hit-enter
        # prompt, during which the editor answers no requests.
        term.wait_text("Press ENTER")
        term.type("\r")
        term.wait_gone("Press ENTER")
        result, _ = fugitive_result(ed)
        assert result["exit_status"] == 0
        with term.lock:
            raw = bytes(term.raw)
        assert ssh_push.passphrase.encode() not in raw and WRONG.encode() not in raw
    finally:
        nvim.close()
        term.close()


def test_bang_git_push_asks_in_the_prompt_window(sandbox: Sandbox, ssh_push: SshPush) -> None:
    clean_client_env(sandbox.env)  # no agent to answer instead: ssh has to ask
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {ssh_push.work}")
        ed.nvim.command("Bang git push")
        shown = answer_float(ed, ASKS, ssh_push.passphrase)
        assert unwrapped(prompt_of(ssh_push)) in unwrapped(shown)
        done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
        assert done["code"] == 0, done
        assert ed.events("TtyOfferPresent")[0]["data"]["title"].startswith("git push")
        ended_cleanly(ssh_push)
        ed.wait_event("TtyOfferClose")
        wait_until(lambda: ed.float_wins() == [], what="the window gone")
        assert not any(ssh_push.passphrase in line for line in done["output"])


def test_bang_git_push_asks_again_in_the_same_window(sandbox: Sandbox, ssh_push: SshPush) -> None:
    clean_client_env(sandbox.env)
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {ssh_push.work}")
        ed.nvim.command("Bang git push")
        answer_float(ed, ASKS, WRONG)
        win = ed.float_wins()[0]
        wait_until(lambda: ed.buf_text(win).count(ASKS) == 2, timeout=30, what="the question again")
        assert WRONG not in ed.buf_text(win)  # ssh turned echo off
        ssh_asking(ssh_push)
        ed.nvim.input(ssh_push.passphrase + "<CR>")
        done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
        assert done["code"] == 0, done
        ended_cleanly(ssh_push)
        assert len(ed.events("TtyOfferPresent")) == 1  # one window for both questions
