"""Real third-party plugins at pinned commits, for tests that run ours
against them.

The pins are in ``plugins.txt`` beside this file (repository, commit). Each
plugin is got once per checkout into ``.cache/plugins/OWNER+NAME`` (ignored
by git): from the ``OWNER+NAME.tgz`` archive (``git archive`` of that commit)
in the folder ``TTYOFFER_TEST_PLUGINS`` names, when it is set, or else from
GitHub at its commit. Either way the tree is a git checkout with one commit,
since some plugin managers (lazy.nvim, vim-plug) want one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CACHE = ROOT / ".cache" / "plugins"
ARCHIVES_VARIABLE = "TTYOFFER_TEST_PLUGINS"
# Why GitHub could not give a plugin, once it could not: the tests after
# the first that failed so are skipped at once, not failed each with
# git's traceback (offline, 24 of them).
_unreachable: list[str] = []


@dataclass(frozen=True)
class Pin:
    repo: str  # OWNER/NAME, as GitHub spells it
    commit: str

    @property
    def key(self) -> str:
        return self.repo.replace("/", "+")

    @property
    def name(self) -> str:
        return self.repo.split("/", 1)[1]


def manifest(listing: str = "plugins.txt") -> dict[str, Pin]:
    """The pins of `listing`, a file beside this one: plugins.txt (the
    plugins the tests load) or suites.txt (the plugins whose own test
    suites scripts/suites runs)."""
    pins: dict[str, Pin] = {}
    for line in (HERE / listing).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        repo, commit = line.split()
        pins[repo] = Pin(repo, commit)
    return pins


def plugin(repo: str) -> Path:
    """The folder holding `repo` (OWNER/NAME) at its pinned commit, as a git
    checkout of one commit. Raises KeyError for a plugin not pinned. When
    GitHub cannot be reached, the test fails saying where the archives can
    come from instead, and the tests after it that need a plugin skip."""
    pin = manifest()[repo]
    target = CACHE / pin.key
    stamp = target / ".git" / "ttyoffer-pin"
    if stamp.is_file() and stamp.read_text().strip() == pin.commit:
        return target
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text().strip() == pin.commit:
            return target
        staging = Path(tempfile.mkdtemp(prefix=pin.key + ".", dir=CACHE))
        try:
            archives = os.environ.get(ARCHIVES_VARIABLE)
            if archives:
                unpack(pin, Path(archives), staging)
            else:
                _from_github(pin, staging)
            (staging / ".git" / "ttyoffer-pin").write_text(pin.commit + "\n")
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
    return target


def _from_github(pin: Pin, into: Path) -> None:
    """The plugin cloned at its pin; once GitHub could not be reached, the
    test fails with one line that says how to do without it, and every
    later one skips at once."""
    if _unreachable:
        pytest.skip(f"no pinned plugin from GitHub: {_unreachable[0]} (said in full where it first failed)")
    try:
        clone(pin, into)
        return
    except subprocess.CalledProcessError as err:
        said = (err.stderr or b"").decode(errors="replace").strip().splitlines()
        _unreachable.append(said[-1] if said else f"git exited {err.returncode}")
    pytest.fail(
        f"{pin.repo} could not be fetched from GitHub ({_unreachable[0]}). Offline, set "
        f"{ARCHIVES_VARIABLE} to a folder of the pinned plugins' archives, OWNER+NAME.tgz, each a "
        "git archive of the commit tests/third_party/plugins.txt names: see README.md, Development.",
        pytrace=False,
    )


def _git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "ttyoffer tests",
        "GIT_AUTHOR_EMAIL": "tests@ttyoffer.invalid",
        "GIT_COMMITTER_NAME": "ttyoffer tests",
        "GIT_COMMITTER_EMAIL": "tests@ttyoffer.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    for name in [
        k
        for k in env
        if k.startswith("GIT_CONFIG_") and k not in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM")
    ]:
        del env[name]
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _extract(tar: tarfile.TarFile, into: Path) -> None:
    """The archive into `into`, refusing what tarfile's "data" filter
    refuses. Pythons before 3.11.4 (Debian 12's is 3.11.2) have no filters:
    there the members are checked here: regular files, folders and links
    that stay inside `into`, nothing else."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(into, filter="data")
        return
    root = into.resolve()

    def inside(path: Path) -> bool:
        resolved = path.resolve()
        return resolved == root or root in resolved.parents

    members = tar.getmembers()
    for member in members:
        target = into / member.name
        allowed = member.isfile() or member.isdir() or member.issym()
        if not allowed or member.name.startswith("/") or not inside(target):
            raise ValueError(f"{member.name!r}: not extracted from a pinned plugin's archive")
        if member.issym() and (
            member.linkname.startswith("/") or not inside(target.parent / member.linkname)
        ):
            raise ValueError(f"{member.name!r} links out of the archive to {member.linkname!r}")
    tar.extractall(into, members=members)


def unpack(pin: Pin, archives: Path, into: Path) -> None:
    """`pin`'s archive in the folder `archives` (checked against the
    VERSIONS file there) unpacked into `into`, a git checkout of one commit."""
    archive = archives / f"{pin.key}.tgz"
    if not archive.is_file():
        raise FileNotFoundError(f"{archive}: no archive of {pin.repo} in ${ARCHIVES_VARIABLE}")
    versions = archives / "VERSIONS"
    if versions.is_file():
        for line in versions.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == pin.repo and words[1] != pin.commit:
                raise ValueError(f"{archive} is {pin.repo} at {words[1]}, the pin is {pin.commit}")
    with tarfile.open(archive) as tar:
        _extract(tar, into)
    _git("init", "-q", "-b", "main", cwd=into)
    _git("add", "-A", cwd=into)
    _git("commit", "-q", "--no-gpg-sign", "-m", f"{pin.repo} at {pin.commit}", cwd=into)


def clone(pin: Pin, into: Path) -> None:
    """`pin`'s commit fetched from GitHub into `into` and checked out."""
    _git("init", "-q", cwd=into)
    _git("fetch", "-q", "--depth", "1", f"https://github.com/{pin.repo}", pin.commit, cwd=into)
    _git("checkout", "-q", "FETCH_HEAD", cwd=into)
