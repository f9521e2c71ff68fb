"""Accounts made for a test, and the editor run as one of them.

sudo asks for the password of the account that runs it, su and sshd for
another's: the prompt tests need accounts with known passwords, which only
root can make. They are made with useradd, exist for the test only and are
removed afterwards with their home and everything they still run.

An editor run as such an account needs what the tests run from to be
within its reach: the embedded Neovim, the plugin's checkout and a Python
with pynvim and pyte for the host. Where these sit below a folder only root
can enter (a checkout under /root, a pyenv Python under /root/.pyenv), a copy
is made in a world-readable temporary folder (`Reach`), removed at the end;
pytest's own temporary folders (mode 0700) are not used for anything the
account touches."""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pynvim

from harness import INIT_LUA, ROOT, Editor, nvim_binary, wait_until

# What the account's editor and its commands see of the system's PATH.
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
# The plugin's checkout as far as an editor needs it.
PLUGIN_PARTS = ("lua", "plugin", "rplugin", "ttyoffer_nvim", "libexec", "doc", "pyproject.toml")
# The host's requirements, with theirs (pynvim brings msgpack and greenlet).
HOST_DISTRIBUTIONS = ("pynvim", "pyte")


@dataclass(frozen=True)
class Account:
    name: str
    password: str
    uid: int
    gid: int
    home: Path

    def as_it(self) -> list[str]:
        """The argv prefix that runs a program as this account (its groups
        too), from root."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--init-groups", "--"]

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`argv` as this account, in its home, with a plain environment."""
        return subprocess.run(
            [*self.as_it(), "env", "-i", "-C", str(self.home), *self.environ(), *argv],
            capture_output=True,
            text=True,
            check=check,
            timeout=60,
        )

    def environ(self, **more: str) -> list[str]:
        """NAME=value words for env(1): what a login gives the account."""
        env = {
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "SHELL": "/bin/sh",
            "PATH": PATH,
            "LANG": "C.UTF-8",
            # Its temporary files (Neovim's nvim.NAME) in its home, which
            # goes with it: not in /tmp, where they outlived the account.
            "TMPDIR": str(self.home),
            **more,
        }
        return [f"{name}={value}" for name, value in env.items()]

    def can_run(self, *argv: str) -> bool:
        return self.run(*argv, check=False).returncode == 0

    def own(self, *paths: Path) -> None:
        """Give `paths` (folders with everything in them) to the account."""
        for path in paths:
            subprocess.run(["chown", "-R", f"{self.uid}:{self.gid}", str(path)], check=True)

    def processes(self, zombies: bool = False) -> list[int]:
        """Every process whose real user is this account (sudo's too, though
        it runs as root); the ended ones not reaped yet only if `zombies`."""
        found = []
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            except OSError:
                continue  # gone meanwhile
            ended = fields["State"].strip().startswith("Z")
            if int(fields["Uid"].split()[0]) == self.uid and (zombies or not ended):
                found.append(int(status.parent.name))
        return found

    def end_processes(self, zombies: bool = False) -> None:
        """SIGKILL, by pid, whatever the account still runs (a test that
        failed may leave an ssh or a sudo waiting), until none is left; with
        `zombies`, until their parents have reaped them too."""

        def none_left() -> bool:
            pids = self.processes(zombies)
            for pid in pids:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            return not pids

        wait_until(none_left, 30, f"the processes of {self.name} to end")


def make_account(role: str) -> Account:
    """A new account `ttyoffer-<role>-<random>` with a home, /bin/sh and a
    random password (letters, digits, - and _: nothing a key notation or a
    shell would read differently)."""
    name = f"ttyoffer-{role}-{secrets.token_hex(3)}"
    password = f"pw-{secrets.token_urlsafe(12)}"
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", name], check=True, capture_output=True)
    try:
        subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True, capture_output=True)
        entry = pwd.getpwnam(name)
    except BaseException:
        subprocess.run(["userdel", "-r", name], capture_output=True)
        raise
    return Account(name, password, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))


def remove_account(account: Account) -> None:
    """The account gone, with its home, its group, what it ran, and what
    sudo kept about it."""
    # userdel refuses an account that has processes, ended ones too.
    account.end_processes(zombies=True)
    # userdel says the mail spool was not found (there is none): not an error.
    done = subprocess.run(["userdel", "-r", account.name], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for kept in (Path("/run/sudo/ts") / account.name, Path("/var/lib/sudo/lectured") / account.name):
        with suppress(FileNotFoundError):
            kept.unlink()


@contextmanager
def accounts(*roles: str) -> Iterator[list[Account]]:
    made: list[Account] = []
    try:
        for role in roles:
            made.append(make_account(role))
        yield made
    finally:
        for account in made:
            remove_account(account)


@contextmanager
def sudoers_rule(account: Account, *lines: str) -> Iterator[Path]:
    """`lines` in /etc/sudoers.d/<account> (0440, checked by visudo before
    it is put there), removed at the end."""
    path = Path("/etc/sudoers.d") / account.name
    draft = Path(tempfile.mkdtemp()) / "rule"
    try:
        draft.write_text("\n".join(lines) + "\n")
        subprocess.run(["visudo", "-q", "-c", "-f", str(draft)], check=True, capture_output=True)
        draft.chmod(0o440)
        shutil.move(str(draft), path)
        yield path
    finally:
        shutil.rmtree(draft.parent, ignore_errors=True)
        with suppress(FileNotFoundError):
            path.unlink()


def world_readable_folder(prefix: str) -> Path:
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    return folder


def _link_or_copy(source: str, target: str) -> None:
    # A hard link where both are on one file system: the 50 MB of Neovim
    # cost nothing then. The files' own modes are world-readable already.
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _copy_tree(source: Path, target: Path) -> None:
    shutil.copytree(
        source,
        target,
        symlinks=True,
        copy_function=_link_or_copy,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )


@dataclass(frozen=True)
class Reach:
    """The Neovim, plugin checkout and host Python an account runs."""

    nvim: str
    root: Path
    python: str


def reach_for(account: Account, staging: Path) -> Reach:
    """What the tests run, usable by `account`: in place where it can reach
    it, else copied below `staging` (world-readable)."""
    nvim = nvim_binary()
    if not account.can_run(nvim, "--version"):
        install = Path(nvim).parent.parent  # …/install/bin/nvim: the runtime is beside
        _copy_tree(install, staging / "nvim")
        nvim = str(staging / "nvim" / Path(nvim).relative_to(install))
    root = ROOT
    if not account.can_run("test", "-r", str(ROOT / "rplugin" / "python3" / "ttyoffer" / "__init__.py")):
        root = staging / "plugin"
        root.mkdir()
        for part in PLUGIN_PARTS:
            if (ROOT / part).is_dir():
                _copy_tree(ROOT / part, root / part)
            elif (ROOT / part).exists():
                shutil.copy2(ROOT / part, root / part)
    python = sys.executable
    if not _python_runs_the_host(account, python):
        python = _python_for(account, staging / "python")
    return Reach(nvim, root, python)


def _python_runs_the_host(account: Account, python: str) -> bool:
    # As the host finds its Python: isolated, from /.
    return account.can_run(python, "-I", "-c", "import neovim, pyte")


def _python_for(account: Account, venv: Path) -> str:
    """A virtualenv at `venv` on a system Python of this interpreter's
    version that `account` can run, with the host's requirements copied from
    this one's site-packages (their compiled parts fit the same version)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    tried = []
    for base in (f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        tried.append(base)
        if not account.can_run(base, "-I", "-c", "import sys"):
            continue
        site = venv / "lib" / f"python{version}" / "site-packages"
        site.mkdir(parents=True)
        (venv / "bin").mkdir()
        (venv / "bin" / "python").symlink_to(base)
        (venv / "pyvenv.cfg").write_text(
            f"home = {Path(base).parent}\ninclude-system-site-packages = false\nversion = {version}\n"
        )
        for dist in _with_requirements(HOST_DISTRIBUTIONS):
            for file in dist.files or ():
                source = Path(str(dist.locate_file(file)))
                if "__pycache__" in file.parts or not source.is_file():
                    continue
                (site / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, site / file)
        python = str(venv / "bin" / "python")
        if _python_runs_the_host(account, python):
            return python
        raise AssertionError(f"{python} (on {base}) cannot import pynvim and pyte as {account.name}")
    raise AssertionError(
        f"no Python {version} that {account.name} can run for the host: {sys.executable} is out of its "
        f"reach and none of {', '.join(tried)} exists (Debian: apt-get install python3)"
    )


def _with_requirements(names: tuple[str, ...]) -> list[metadata.Distribution]:
    """The installed distributions `names` and, recursively, those they
    require (markers aside: one more small package does no harm)."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop().lower().replace("_", "-")
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a requirement for another Python only
        found[name] = dist
        for requirement in dist.requires or ():
            name_part = re.match(r"[A-Za-z0-9._-]+", requirement)
            if name_part and "extra ==" not in requirement:
                todo.append(name_part.group())
    return list(found.values())


@dataclass
class UserBox:
    """One editor's folders in the account's home: XDG folders, logs."""

    account: Account
    base: Path

    @property
    def init(self) -> Path:
        return self.base / "init.lua"

    @property
    def logs(self) -> Path:
        return self.base / "logs"

    def env(self) -> list[str]:
        return self.account.environ(
            XDG_CONFIG_HOME=str(self.base / "config"),
            XDG_DATA_HOME=str(self.base / "data"),
            XDG_STATE_HOME=str(self.base / "state"),
            XDG_CACHE_HOME=str(self.base / "cache"),
            XDG_RUNTIME_DIR=str(self.base / "runtime"),
            XDG_DATA_DIRS=str(self.base / "data"),
            TERM="xterm-256color",
            # The host's log at its most talkative, for the tests to search
            # for secrets.
            NVIM_PYTHON_LOG_FILE=str(self.logs / "python"),
            NVIM_PYTHON_LOG_LEVEL="DEBUG",
            NVIM_LOG_FILE=str(self.logs / "nvim.log"),
        )

    def files(self) -> list[Path]:
        """Everything the editor and its host wrote: logs, shada, state."""
        return [path for path in self.base.rglob("*") if path.is_file()]


def make_box(account: Account, reach: Reach, name: str) -> UserBox:
    box = UserBox(account, account.home / name)
    for sub in ("config", "data", "state", "cache", "runtime", "logs"):
        (box.base / sub).mkdir(parents=True)
    (box.base / "runtime").chmod(0o700)
    box.init.write_text(INIT_LUA.format(root=str(reach.root), python=reach.python))
    account.own(box.base)
    return box


def editor_argv(box: UserBox, reach: Reach, *nvim_args: str) -> list[str]:
    """Neovim as the account, in its home, with only the box's environment."""
    account = box.account
    return [
        *account.as_it(),
        "env", "-i", "-C", str(account.home), *box.env(),
        reach.nvim, "-u", str(box.init), *nvim_args,
    ]  # fmt: skip


@contextmanager
def user_editor(box: UserBox, reach: Reach) -> Iterator[Editor]:
    """A headless embedded Neovim run as the box's account, its host
    ready; quit and every process of the account ended at the end."""
    nvim = pynvim.attach("child", argv=editor_argv(box, reach, "--embed", "--headless"))
    ed = Editor(nvim)
    pid = nvim.funcs.getpid()
    try:
        ed.wait_host()
        yield ed
    finally:
        with suppress(Exception):
            nvim.command("qa!", async_=True)
        with suppress(Exception):
            nvim.close()
        # The editor's own end first (it writes its shada), then whatever of
        # the account's is left.
        with suppress(AssertionError):
            wait_until(lambda: not running(pid), 10, "the editor to quit")
        box.account.end_processes()


def running(pid: int) -> bool:
    """`pid` exists and has not ended (a zombie has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
