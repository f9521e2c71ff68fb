"""Throwaway credentials for the demo and the end-to-end tests: a GNUPGHOME with
a passphrase-protected signing key answered by pinentry-curses, a git
repository that signs with it, and an ssh key with a passphrase."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

PINENTRY = "/usr/bin/pinentry-curses"


@dataclass
class Keyring:
    home: Path
    fingerprint: str
    passphrase: str

    @property
    def env(self) -> dict[str, str]:
        return {"GNUPGHOME": str(self.home)}

    def kill_agent(self) -> None:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env={**os.environ, **self.env}, check=False)


def make_keyring(home: Path, passphrase: str) -> Keyring:
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    # Nothing cached: every signature asks, as a fresh login would.
    (home / "gpg-agent.conf").write_text(
        f"pinentry-program {PINENTRY}\ndefault-cache-ttl 0\nmax-cache-ttl 0\nallow-loopback-pinentry\n"
    )
    env = {**os.environ, "GNUPGHOME": str(home)}
    subprocess.run(
        [
            "gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", passphrase,
            "--quick-gen-key", "ttyoffer demo <demo@ttyoffer.invalid>", "ed25519", "sign", "never",
        ],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    listing = subprocess.run(
        ["gpg", "--batch", "--with-colons", "--list-secret-keys"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    fingerprint = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))
    # Forget what key generation may have left in the agent.
    subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, check=False)
    return Keyring(home, fingerprint, passphrase)


def make_signing_repo(path: Path, keyring: Keyring) -> Path:
    path.mkdir(parents=True, exist_ok=True)

    def git(*args: str) -> None:
        subprocess.run(
            ["git", *args], cwd=path, check=True, capture_output=True, env={**os.environ, **keyring.env}
        )

    git("init", "-q", "-b", "main")
    git("config", "user.name", "ttyoffer demo")
    git("config", "user.email", "demo@ttyoffer.invalid")
    git("config", "user.signingkey", keyring.fingerprint)
    git("config", "gpg.program", shutil.which("gpg") or "gpg")
    (path / "README").write_text("A repository for trying ttyoffer.nvim.\n")
    git("add", "README")
    return path


def make_ssh_key(path: Path, passphrase: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "ttyoffer demo", "-f", str(path)],
        check=True, capture_output=True,
    )  # fmt: skip
    return path
