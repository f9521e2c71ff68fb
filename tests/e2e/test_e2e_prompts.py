"""Real programs asking for real secrets, answered in the float as a user would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fixtures import add_ssh_auth_key, make_keyring, make_signing_repo, make_ssh_key, ssh_agent_socket
from harness import Editor, Sandbox, editor, wait_until

pytestmark = pytest.mark.e2e


def answer_float(ed: Editor, expect: str, answer: str) -> str:
    """Wait for the float to show `expect`, type `answer` + Enter into it."""
    ed.wait_event("TtyOfferPresent")
    win = wait_until(lambda: ed.float_wins(), what="the prompt window")[0]
    screen = wait_until(lambda: (lambda t: t if expect in t else None)(ed.buf_text(win)), what=repr(expect))
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input(answer + "<CR>")
    return screen


def test_signed_commit_through_pinentry_curses(
    sandbox: Sandbox, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    keyring = make_keyring(tmp_path / "gnupg", "correct horse 42")
    repo = make_signing_repo(tmp_path / "repo", keyring)
    sandbox.env.update(keyring.env)
    try:
        with editor(sandbox) as ed:
            ed.nvim.command(f"cd {repo}")
            ed.nvim.command("Bang git commit -q -S -m 'signed from the float'")
            # The host's own screen model reads the same dialog (it names the
            # prompt in the title) before the user answers.
            shown = wait_until(
                lambda: [o for o in ed.host_status()["offers"] if o["prompt"] == "Passphrase"],
                what="the prompt in the host's screen model",
            )
            model = ed.lua("return require('ttyoffer.host').request('screen', ...)", shown[0]["id"])
            assert "Please enter the passphrase" in model
            screen = answer_float(ed, "Passphrase", keyring.passphrase)
            assert "passphrase" in screen.lower()
            done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
            assert done["code"] == 0, done
            title = ed.events("TtyOfferPresent")[0]["data"]["title"]
            assert title.startswith("git commit")
            ed.wait_event("TtyOfferClose")
            assert ed.float_wins() == []
        env = {**os.environ, **keyring.env}
        verify = subprocess.run(
            ["git", "verify-commit", "HEAD"], cwd=repo, env=env, capture_output=True, text=True
        )
        assert verify.returncode == 0, verify.stderr
        assert "Good signature" in verify.stderr
    finally:
        keyring.kill_agent()
    out, err = capfd.readouterr()
    # pinentry drew into the private pty only: nothing reached our own stdio.
    assert keyring.passphrase not in out + err
    assert "\x1b[" not in out + err


def test_a_declined_passphrase_leaves_nothing_behind(sandbox: Sandbox, tmp_path: Path) -> None:
    keyring = make_keyring(tmp_path / "gnupg", "second time lucky")
    repo = make_signing_repo(tmp_path / "repo", keyring)
    sandbox.env.update(keyring.env)
    try:
        with editor(sandbox) as ed:
            ed.nvim.command(f"cd {repo}")
            ed.nvim.command("Bang git commit -q -S -m 'declined'")
            ed.wait_event("TtyOfferPresent")
            win = wait_until(lambda: ed.float_wins(), what="the prompt window")[0]
            wait_until(lambda: "Passphrase" in ed.buf_text(win), what="pinentry's dialog")
            ed.nvim.command("TtyOffer dismiss")
            done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
            assert done["code"] != 0
            ed.wait_event("TtyOfferClose")
            wait_until(lambda: ed.float_wins() == [], what="the window gone")
            # pinentry, started by gpg-agent outside git's session, is hung up
            # with the window instead of spinning on the dead terminal while
            # gpg-agent waits for it ...
            wait_until(lambda: not pinentries_of(keyring.home), what="no pinentry left running")
            # ... so the next signature asks again and goes through.
            ed.nvim.command("Bang git commit -q -S -m 'signed the second time'")
            answer_float(ed, "Passphrase", keyring.passphrase)
            done = ed.wait_event("TtyOfferBangDone", count=2, timeout=30)[1]["data"]
            assert done["code"] == 0, done
        verify = subprocess.run(
            ["git", "verify-commit", "HEAD"], cwd=repo, env={**os.environ, **keyring.env}, capture_output=True
        )
        assert verify.returncode == 0, verify.stderr
    finally:
        keyring.kill_agent()


def test_an_ssh_pinentry_sent_to_a_spare_terminal_does_not_hang(sandbox: Sandbox, tmp_path: Path) -> None:
    """gpg-agent's ssh support asks on the terminal it was last told to use
    (`gpg-connect-agent updatestartuptty`, often in a shell's rc file). When
    that was run under an offer, the terminal's number can come back as a
    spare: an ssh signature must fail at once, not wait on a prompt no one
    will ever see."""
    keyring = make_keyring(tmp_path / "gnupg", "ssh through gpg")
    public = add_ssh_auth_key(keyring, tmp_path / "auth.pub")
    (tmp_path / "data").write_text("to be signed\n")
    sandbox.env.update(keyring.env)
    sandbox.env.pop("GPG_TTY", None)
    sandbox.env["SSH_AUTH_SOCK"] = ssh_agent_socket(keyring)
    try:
        with editor(sandbox) as ed:
            _, spare = ed.lua("return {require('ttyoffer.host').take()}")
            told = {**os.environ, **keyring.env, "GPG_TTY": spare, "TERM": "xterm-256color"}
            subprocess.run(
                ["gpg-connect-agent", "updatestartuptty", "/bye"], env=told, check=True, capture_output=True
            )
            # A plain synchronous spawn, as a plugin's system(): no window
            # could help while the editor waits. (`timeout` only bounds the
            # hang this test exists to catch.)
            output, code = ed.lua(
                "local out = vim.fn.system({'timeout', '-s', 'KILL', '60', 'ssh-keygen', '-Y', 'sign', "
                "'-f', ..., '-n', 'file', ...}) return {out, vim.v.shell_error}",
                str(public),
                str(tmp_path / "data"),
            )
            assert code not in (0, 137), output
            assert "agent refused operation" in output
            assert not pinentries_of(keyring.home)
            # One line that names the pinentry, and the whole notice with
            # the fix in :TtyOffer status, where that line points.
            notice = wait_until(
                lambda: (lambda m: m if ") hung up" in m else None)(ed.nvim.command_output("messages")),
                what="the notice",
            )
            assert "pinentry" in notice and "(:TtyOffer status)" in notice
            assert "updatestartuptty" in ed.nvim.command_output("TtyOffer status")
            assert ed.float_wins() == []
    finally:
        keyring.kill_agent()


def pinentries_of(gnupg_home: Path) -> list[int]:
    """pinentry processes serving the agent of this GNUPGHOME."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if "pinentry" not in (proc / "comm").read_text():
                continue
            agent = (Path("/proc") / (proc / "stat").read_text().rsplit(") ", 1)[1].split()[1]) / "cmdline"
            if str(gnupg_home) in agent.read_bytes().decode(errors="replace"):
                found.append(int(proc.name))
        except (OSError, IndexError):
            continue
    return found


def test_ssh_keygen_passphrase(ed: Editor, tmp_path: Path) -> None:
    key = make_ssh_key(tmp_path / "ssh" / "id_ed25519", "open sesame")
    ed.nvim.command(f"Bang ssh-keygen -y -f {key}")
    answer_float(ed, "passphrase", "open sesame")
    done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
    assert done["code"] == 0, done
    public = Path(f"{key}.pub").read_text().split()[:2]
    assert done["output"][0].split()[:2] == public


def test_git_https_credential_prompts(ed: Editor, tmp_path: Path) -> None:
    # git's own terminal prompts, as for an HTTPS push: no helper, no askpass.
    ed.nvim.command(f"cd {tmp_path}")
    ed.lua("vim.env.GIT_ASKPASS = nil vim.env.SSH_ASKPASS = nil vim.env.GIT_TERMINAL_PROMPT = nil")
    request = "printf 'protocol=https\\nhost=git.example.com\\n\\n'"
    ed.nvim.command(f"Bang {request} | git -c credential.helper= credential fill")
    screen = answer_float(ed, "Username for 'https://git.example.com':", "alice")
    assert "Username" in screen
    win = ed.float_wins()[0]
    password_prompt = "Password for 'https://alice@git.example.com':"
    wait_until(lambda: password_prompt in ed.buf_text(win), what=password_prompt)
    ed.nvim.input("s3cr3t<CR>")
    done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
    assert done["code"] == 0, done
    assert "username=alice" in done["output"] and "password=s3cr3t" in done["output"]
    # The title followed the screen from one question to the next.
    assert ed.events("TtyOfferPresent")[0]["data"]["title"].startswith("printf")
