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
# gpg-agent puts its sockets in GNUPGHOME when there is no /run/user/UID, and a
# unix socket's path holds at most 107 bytes; its longest is S.gpg-agent.browser.
LONGEST_AGENT_SOCKET = "S.gpg-agent.browser"
SOCKET_PATH_MAX = 107


class FixtureError(RuntimeError):
    """A throwaway credential could not be made; the message names the fix."""


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
    socket = home.absolute() / LONGEST_AGENT_SOCKET
    if len(os.fsencode(socket)) > SOCKET_PATH_MAX and not Path(f"/run/user/{os.getuid()}").is_dir():
        raise FixtureError(
            f"{home} is too deep for gpg-agent's sockets ({len(os.fsencode(socket))} bytes, "
            f"at most {SOCKET_PATH_MAX}): set TMPDIR to a shorter folder, e.g. TMPDIR=/tmp"
        )
    home.mkdir(parents=True, exist_ok=True)
    home.chmod(0o700)
    # Nothing cached: every signature asks, as a fresh login would.
    (home / "gpg-agent.conf").write_text(
        f"pinentry-program {PINENTRY}\ndefault-cache-ttl 0\nmax-cache-ttl 0\nallow-loopback-pinentry\n"
    )
    env = {**os.environ, "GNUPGHOME": str(home)}
    for attempt in range(2):
        made = subprocess.run(
            [
                "gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", passphrase,
                "--quick-gen-key", "ttyoffer demo <demo@ttyoffer.invalid>", "ed25519", "sign", "never",
            ],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        if made.returncode == 0 or attempt:
            break
        # gpg-agent, started for the key, can fail it once under load
        # ("Corrupted protection", seen with many agents starting at once):
        # a fresh agent makes it.
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, check=False)
    if made.returncode != 0:
        raise FixtureError(f"gpg could not make the signing key in {home}:\n{made.stderr.strip()}")
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


def add_ssh_auth_key(keyring: Keyring, public: Path) -> Path:
    """gpg-agent as an ssh agent: an authentication subkey under the same
    passphrase, listed in sshcontrol; its public half written to `public`.
    Use with SSH_AUTH_SOCK = ssh_agent_socket(keyring)."""
    env = {**os.environ, **keyring.env}
    subprocess.run(
        [
            "gpg", "--batch", "--pinentry-mode", "loopback", "--passphrase", keyring.passphrase,
            "--quick-add-key", keyring.fingerprint, "ed25519", "auth", "never",
        ],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    listing = subprocess.run(
        ["gpg", "--batch", "--with-colons", "--with-keygrip", "--list-secret-keys"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    keygrip = [line.split(":")[9] for line in listing.splitlines() if line.startswith("grp:")][-1]
    with open(keyring.home / "gpg-agent.conf", "a") as conf:
        conf.write("enable-ssh-support\n")
    (keyring.home / "sshcontrol").write_text(keygrip + "\n")
    keyring.kill_agent()  # a new one reads the new configuration; ssh-add starts none
    subprocess.run(["gpg-connect-agent", "/bye"], env=env, check=True, capture_output=True)
    listed = subprocess.run(
        ["ssh-add", "-L"],
        env={**env, "SSH_AUTH_SOCK": ssh_agent_socket(keyring)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    public.write_text(listed)
    return public


def ssh_agent_socket(keyring: Keyring) -> str:
    return subprocess.run(
        ["gpgconf", "--list-dirs", "agent-ssh-socket"],
        env={**os.environ, **keyring.env},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


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
