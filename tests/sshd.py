"""A real OpenSSH server on 127.0.0.1 for the prompt tests, and clients that
talk to it without anything of the user's: their ~/.ssh, their agent, their
known hosts.

The server runs from a folder of its own: a host key made for it, an
authorized_keys file, a config, its pid file and its log (sshd -e). It serves
the account the tests run as: as root the usual way (privilege separation in
/run/sshd, made if missing; UsePAM no), as anyone else an unprivileged sshd
logs its own account in (UsePAM yes, see SshdOptions.pam). Public keys only,
unless a test asks for more: SshdOptions(password=True, user=...) serves an
account made for the test with a known password (tests/e2e/test_prompts.py, as
root: sshd checks the password against /etc/shadow itself)."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from harness import wait_until

SSHD = "/usr/sbin/sshd"
# Where sshd running as root chroots its unprivileged half; Debian's service
# makes it at boot (RuntimeDirectory), a container without systemd may lack it.
PRIVSEP_DIR = Path("/run/sshd")
# ssh, git and the editor of these tests must not take anything from the
# environment that would answer or reroute the passphrase question.
CLIENT_ENV_DROPPED = (
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_ASKPASS",
    "SSH_ASKPASS_REQUIRE",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_SSH_VARIANT",
    "GIT_ASKPASS",
)


class SshdError(RuntimeError):
    """sshd did not come up; the message holds its log."""


@dataclass(frozen=True)
class SshdOptions:
    """What the server accepts. The defaults: public keys of the current
    account, nothing else."""

    user: str = field(default_factory=lambda: pwd.getpwuid(os.getuid()).pw_name)
    password: bool = False  # PasswordAuthentication (and keyboard-interactive) on
    # UsePAM. None: off as root; on otherwise, because an sshd that is not
    # root cannot read /etc/shadow and, without PAM, refuses its own account
    # as locked (OpenSSH 9.2p1 of Debian 12: "User … not allowed because
    # account is locked"); with PAM, unix_chkpwd answers for it.
    pam: bool | None = None
    extra: Sequence[str] = ()  # more keyword lines (no Match), winning over the defaults
    # Sessions get $XDG_RUNTIME_DIR, a folder of the account's alone in the
    # server's folder (as pam_systemd gives a login /run/user/UID), removed
    # with it: what a session keeps there (a remote run's far side) is never
    # left behind. False: none, as from an sshd without pam_systemd; a remote
    # run's far side then falls back to /tmp/ttyoffer-remote-UID, which the
    # test must remove (test_remote_runs, which tests that fallback).
    runtime: bool = True


@dataclass
class SshServer:
    folder: Path
    port: int
    options: SshdOptions
    host_public: str  # "ssh-ed25519 AAAA..."
    proc: subprocess.Popen[bytes]

    @property
    def user(self) -> str:
        return self.options.user

    @property
    def log(self) -> Path:
        return self.folder / "sshd.log"

    @property
    def authorized_keys(self) -> Path:
        return self.folder / "authorized_keys"

    @property
    def runtime(self) -> Path | None:
        """The sessions' $XDG_RUNTIME_DIR, if they get one."""
        return self.folder / "runtime" if self.options.runtime else None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def authorize(self, public_key: Path) -> None:
        """Let the key whose public half is `public_key` log in."""
        with self.authorized_keys.open("a") as keys:
            keys.write(public_key.read_text().strip() + "\n")

    def url(self, path: Path | str) -> str:
        """ssh://user@127.0.0.1:port/path, for git."""
        return f"ssh://{self.user}@127.0.0.1:{self.port}{Path(path).absolute()}"

    def client_config(self, folder: Path, identity: Path | None) -> Path:
        """An ssh client config (ssh -F) that trusts this server's host key
        and nothing else, and offers `identity` alone: no agent, no key from
        the account's ~/.ssh (which ssh takes from the passwd entry, not
        $HOME). The passphrase, when there is one, is asked on the terminal."""
        folder.mkdir(parents=True, exist_ok=True)
        known = folder / "known_hosts"
        known.write_text(f"[127.0.0.1]:{self.port} {self.host_public}\n")
        lines = [
            "Host *",
            f"  UserKnownHostsFile {known}",
            "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes",
            "  UpdateHostKeys no",
            "  CheckHostIP no",
            "  BatchMode no",
            "  IdentityAgent none",
            "  IdentitiesOnly yes",
            "  ControlMaster no",
            "  ControlPath none",
            "  ConnectTimeout 20",
        ]
        if identity is not None:
            lines.append(f"  IdentityFile {identity}")
        else:
            lines.append("  IdentityFile none")
        if not self.options.password:
            lines.append("  PreferredAuthentications publickey")
        config = folder / "ssh_config"
        config.write_text("\n".join(lines) + "\n")
        return config

    def sessions(self) -> list[int]:
        """The processes sshd forked for connections, and theirs: empty once
        every client has gone."""
        return descendants(self.proc.pid)

    def stop(self) -> None:
        leftovers = self.sessions()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        # A connection's sshd runs in a session of its own: the listener's
        # end does not end it.
        for pid in leftovers:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def descendants(root: int) -> list[int]:
    """Every living process under `root` (from /proc, one pass)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _config(folder: Path, port: int, options: SshdOptions) -> Path:
    password = "yes" if options.password else "no"
    pam = options.pam if options.pam is not None else os.getuid() != 0
    lines = [
        "ListenAddress 127.0.0.1",
        f"Port {port}",
        f"HostKey {folder / 'host_ed25519'}",
        f"PidFile {folder / 'sshd.pid'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}",
        "StrictModes no",  # the temporary folders are not the account's home
        f"UsePAM {'yes' if pam else 'no'}",
        "PubkeyAuthentication yes",
        f"PasswordAuthentication {password}",
        f"KbdInteractiveAuthentication {password}",
        "PermitEmptyPasswords no",
        # As root the tests log in as root: with a key, and with a password
        # only when a test turns passwords on.
        f"PermitRootLogin {'yes' if options.password else 'prohibit-password'}",
        f"AllowUsers {options.user}",
        "UseDNS no",
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        "AllowAgentForwarding no",
        "AllowTcpForwarding no",
        "LogLevel INFO",
    ]
    # First, so that they win: sshd keeps the first value of a keyword.
    extra = list(options.extra)
    if options.runtime:
        # sshd keeps the first SetEnv line only: one line for every variable.
        setenv = [line for line in extra if line.lower().split()[:1] == ["setenv"]]
        extra = [line for line in extra if line not in setenv]
        variables = [value for line in setenv for value in line.split()[1:]]
        extra.insert(0, "SetEnv " + " ".join([f"XDG_RUNTIME_DIR={folder / 'runtime'}", *variables]))
    lines[:0] = extra
    config = folder / "sshd_config"
    config.write_text("\n".join(lines) + "\n")
    return config


@contextmanager
def sshd(folder: Path, options: SshdOptions | None = None, timeout: float = 20.0) -> Iterator[SshServer]:
    """A running sshd on a free port of 127.0.0.1, stopped (with whatever
    it forked) and its folder removed on exit."""
    options = options or SshdOptions()
    if os.getuid() != 0 and options.user != pwd.getpwuid(os.getuid()).pw_name:
        raise SshdError(f"an sshd not run as root serves its own account only, not {options.user!r}")
    folder.mkdir(parents=True)
    if os.getuid() == 0 and not PRIVSEP_DIR.is_dir():
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    host_key = folder / "host_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ttyoffer test sshd", "-f", str(host_key)],
        check=True, capture_output=True,
    )  # fmt: skip
    (folder / "authorized_keys").touch()
    if options.runtime:
        runtime = folder / "runtime"
        runtime.mkdir(mode=0o700)
        if os.getuid() == 0:
            account = pwd.getpwnam(options.user)
            os.chown(runtime, account.pw_uid, account.pw_gid)
    host_public = " ".join(Path(f"{host_key}.pub").read_text().split()[:2])
    server = None
    try:
        # A free port can be taken between the probe and sshd's bind: then
        # sshd says so and exits, and another port is tried.
        for _ in range(5):
            port = free_port()
            config = _config(folder, port, options)
            with (folder / "sshd.log").open("wb") as log:
                proc = subprocess.Popen(
                    [SSHD, "-D", "-e", "-f", str(config)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            server = SshServer(folder, port, options, host_public, proc)
            if _ready(server, timeout):
                break
            server.stop()
            if "Address already in use" not in server.log_text():
                raise SshdError(f"sshd did not start (exit {proc.returncode}):\n{server.log_text()}")
            server = None
        else:
            raise SshdError("sshd found no free port in five tries")
        yield server
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def _ready(server: SshServer, timeout: float) -> bool:
    """True once sshd listens (it logs so after listen(2)), False if it
    ended first; bounded by `timeout`."""
    listening = f"Server listening on 127.0.0.1 port {server.port}."

    def settled() -> str | None:
        if server.proc.poll() is not None:
            return "ended"
        return "ready" if listening in server.log_text() else None

    try:
        return wait_until(settled, timeout, f"sshd on port {server.port}") == "ready"
    except AssertionError:
        raise SshdError(f"sshd did not listen within {timeout}s:\n{server.log_text()}") from None


def clean_client_env(env: dict[str, str]) -> dict[str, str]:
    """`env` without what would let ssh or git answer for the user."""
    for name in CLIENT_ENV_DROPPED:
        env.pop(name, None)
    return env


def ssh_reading_its_terminal(config: Path) -> list[int]:
    """The ssh processes started with `config` (ssh -F) blocked in a read of
    a terminal: asking, and ready for the answer. (Keys sent before could be
    flushed when ssh turns echo off.)"""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
            if os.path.basename(argv[0]) != b"ssh" or os.fsencode(config) not in argv:
                continue
            if _in_a_terminal_read(cmdline.parent):
                found.append(int(cmdline.parent.name))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return found


def program_reading_its_terminal(name: str) -> list[int]:
    """The processes named `name` (their argv[0]'s base name) blocked in a
    read of a terminal: asking, and ready for the answer."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
            if os.path.basename(argv[0]) == os.fsencode(name) and _in_a_terminal_read(cmdline.parent):
                found.append(int(cmdline.parent.name))
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return found


def _in_a_terminal_read(proc: Path) -> bool:
    # Asleep in n_tty_read, and the blocked call's first argument (the fd
    # of read(2); its number differs between architectures) is a terminal:
    # readpassphrase() reads the /dev/tty it opened.
    if (proc / "wchan").read_text() != "wait_woken":
        return False
    fields = (proc / "syscall").read_text().split()
    if len(fields) < 2:  # "running"
        return False
    target = os.readlink(proc / "fd" / str(int(fields[1], 16)))
    return target == "/dev/tty" or target.startswith("/dev/pts/")


def read_calls(pid: int) -> int:
    """How many read(2) calls `pid` has made: ssh reads a passphrase one
    byte per call, so this counts the keys it took."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscr:"):
            return int(line.split()[1])
    raise AssertionError(f"no syscr in /proc/{pid}/io")


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout


@dataclass
class SshPush:
    """A repository with a commit to push to a bare one behind sshd, as
    ssh://user@127.0.0.1:port/…/bare.git, with a passphrase-protected key."""

    server: SshServer
    key: Path
    passphrase: str
    ssh_config: Path
    work: Path
    bare: Path
    message: str

    def pushed(self) -> bool:
        """The commit is in the bare repository's main."""
        log = subprocess.run(
            ["git", "--git-dir", str(self.bare), "log", "-1", "--format=%s", "main"],
            capture_output=True,
            text=True,
        )
        return log.returncode == 0 and log.stdout.strip() == self.message


def make_ssh_push(server: SshServer, folder: Path, key: Path, passphrase: str) -> SshPush:
    """`key` (its .pub beside it) authorized on `server`; a bare repository
    and a clone-like working repository with one commit not pushed yet, whose
    git runs ssh with a config of its own (core.sshCommand)."""
    server.authorize(Path(f"{key}.pub"))
    ssh_config = server.client_config(folder / "ssh", key)
    bare = folder / "remote" / "bare.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    work = folder / "work"
    git("init", "-q", "-b", "main", str(work))
    for name, value in (
        ("user.name", "ttyoffer demo"),
        ("user.email", "demo@ttyoffer.invalid"),
        ("commit.gpgSign", "false"),
        ("core.sshCommand", f"ssh -F {ssh_config}"),
        ("remote.origin.url", server.url(bare)),
        ("remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"),
        ("branch.main.remote", "origin"),
        ("branch.main.merge", "refs/heads/main"),
        ("push.default", "simple"),
    ):
        git("config", name, value, cwd=work)
    (work / "README").write_text("pushed over ssh\n")
    git("add", "README", cwd=work)
    message = "over ssh with a passphrase"
    git("commit", "-q", "-m", message, cwd=work)
    return SshPush(server, key, passphrase, ssh_config, work, bare, message)
