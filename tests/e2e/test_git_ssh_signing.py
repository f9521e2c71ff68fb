"""git's SSH signing (gpg.format = ssh): ssh-keygen -Y sign asks for the key's
passphrase on /dev/tty, like ssh. Through :Bang it asks in the prompt window;
in vim-fugitive, on the terminal fugitive gave git, which shows the question
and passes the keys. Real ssh-keygen, real git, vim-fugitive at its pinned commit."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harness import Sandbox, editor, wait_until
from sshd import clean_client_env, program_reading_its_terminal
from test_e2e_prompts import answer_float
from test_git_push import fugitive_result
from test_git_tools import fugitive_sandbox

pytestmark = pytest.mark.e2e

PASSPHRASE = "an ssh signing passphrase"


@pytest.fixture
def ssh_signing(tmp_path: Path) -> Path:
    """A repository that signs with a passphrase-protected ed25519 key, and
    knows that key as an allowed signer (so verify-commit can say good)."""
    key = tmp_path / "signing_key"
    keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-C", "t", "-f", str(key)]
    subprocess.run(keygen, check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"signer@example.invalid {key.with_suffix('.pub').read_text()}")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for name, value in {
        "user.name": "Signer",
        "user.email": "signer@example.invalid",
        "gpg.format": "ssh",
        "user.signingkey": str(key.with_suffix(".pub")),
        "gpg.ssh.allowedSignersFile": str(allowed),
        "commit.gpgSign": "false",
    }.items():
        subprocess.run(["git", "-C", str(repo), "config", name, value], check=True)
    return repo


def signed_by_the_key(repo: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG")}
    shown = subprocess.run(
        ["git", "-C", str(repo), "log", "-1", "--format=%G?|%s"], capture_output=True, text=True, env=env
    )
    verified = subprocess.run(["git", "-C", str(repo), "verify-commit", "HEAD"], capture_output=True, env=env)
    assert verified.returncode == 0, verified.stderr
    return shown.stdout.strip()


def test_bang_commit_asks_for_the_ssh_key_passphrase_in_the_window(
    sandbox: Sandbox, ssh_signing: Path
) -> None:
    clean_client_env(sandbox.env)  # no agent: ssh-keygen has to ask
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {ssh_signing}")
        ed.nvim.command("Bang git commit -q --allow-empty -S -m 'signed with ssh'")
        answer_float(ed, "Enter passphrase", PASSPHRASE)
        done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
        assert done["code"] == 0, done
        assert PASSPHRASE not in ed.nvim.api.exec2("messages", {"output": True})["output"]
    assert signed_by_the_key(ssh_signing) == "G|signed with ssh"


def test_fugitive_commit_asks_for_the_ssh_key_passphrase(
    registered_sandbox: Sandbox, ssh_signing: Path, tmp_path: Path
) -> None:
    box = fugitive_sandbox(tmp_path / "fugitive", registered_sandbox)
    clean_client_env(box.env)
    with editor(box) as ed:
        ed.nvim.command(f"cd {ssh_signing}")
        ed.nvim.input(":Git commit --allow-empty -S -m 'signed from fugitive'<CR>")
        # Fugitive's loop serves nothing now; ssh-keygen asks on its terminal.
        wait_until(lambda: program_reading_its_terminal("ssh-keygen"), timeout=30, what="ssh-keygen to ask")
        ed.nvim.input(PASSPHRASE + "<CR>")
        result, output = fugitive_result(ed)
    assert result["exit_status"] == 0, output
    assert "Enter passphrase" in output and PASSPHRASE not in output
    assert signed_by_the_key(ssh_signing) == "G|signed from fugitive"
