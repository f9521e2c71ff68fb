"""git's core.sshCommand while the plugin is on (libexec/ttyoffer-ssh) runs
the ssh stock git would have run, with the argv and environment stock git
would have given it: the user's GIT_SSH_COMMAND (then git never runs ours),
core.sshCommand from a config file, GIT_SSH, plain ssh, ssh.variant and
GIT_SSH_VARIANT, a program git cannot name (probed with -G), a port in the
URL, -4/-6, protocol versions. The user's program is a recording fake: each
case runs real git twice, stock and with the editor's entries, and compares
every call the program got, and git's own exit and message.

No editor here (no TTYOFFER_NVIM_SERVER): the wrapper runs the program as it
finds it, which is what it does under a terminal too; where it asks is
tests/e2e/test_git_ssh_routes.py's."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness import ROOT

pytestmark = pytest.mark.e2e

WRAPPER = ROOT / "libexec" / "ttyoffer-ssh"

# Records its argv and environment as one JSON line, then answers as the
# case wants: a `-G` probe succeeds unless FAKE_PROBE_FAILS is set; a real
# connection fails with a message (git then fails: nothing to fetch).
FAKE = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({{"argv": sys.argv, "env": dict(os.environ)}}) + "\\n")
if "-G" in sys.argv[1:2]:
    sys.exit(1 if os.environ.get("FAKE_PROBE_FAILS") else 0)
sys.stderr.write("fake ssh: no remote here\\n")
sys.exit(255)
"""

# Names the wrapper adds to what reaches the program: the editor's own
# (every process of the editor has them; the git entries too).
OURS = ("TTYOFFER_",)
# git's local_repo_env (environment.c): what it clears from ssh's environment.
LOCAL_REPO_ENV = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY", "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_PREFIX", "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)  # fmt: skip


@dataclass
class Case:
    url: str = "ssh://git@example.invalid/repo.git"
    repo_config: dict[str, str] = field(default_factory=dict)
    global_config: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # The user's own GIT_CONFIG_COUNT entries, before the editor's.
    env_entries: list[tuple[str, str]] = field(default_factory=list)
    args: list[str] = field(default_factory=lambda: ["fetch", "origin"])
    # Ours installed under a folder whose name holds a blank: its entry is
    # quoted (routes/gitenv.lua), and git runs it through the shell.
    spaced_install: bool = False


def fake_called(folder: Path, name: str, write: bool) -> str:
    program = folder / name
    if write:
        folder.mkdir(parents=True, exist_ok=True)
        program.write_text(FAKE)
        program.chmod(0o755)
    return str(program)


def build_cases(bin_dir: Path, write: bool = True) -> dict[str, Case]:
    """The cases, their fake programs written into `bin_dir` (not when only
    their names are wanted)."""
    ssh = fake_called(bin_dir, "ssh", write)
    plink = fake_called(bin_dir / "putty", "plink", write)
    tortoise = fake_called(bin_dir / "tortoise", "TortoisePlink.exe", write)
    unnamed = fake_called(bin_dir / "own", "my-ssh", write)
    spaced = fake_called(bin_dir / "with space", "ssh", write)
    cfg = "-F /dev/null -o BatchMode=yes"
    port_url = "ssh://git@example.invalid:2222/repo.git"
    return {
        "plain ssh": Case(),
        "plain ssh, scp-like url": Case(url="git@example.invalid:repo.git"),
        "plain ssh, port": Case(url=port_url),
        "plain ssh, -4": Case(args=["fetch", "-4", "origin"]),
        "plain ssh, -6 and port": Case(url=port_url, args=["fetch", "-6", "origin"]),
        "plain ssh, protocol v0": Case(repo_config={"protocol.version": "0"}),
        "plain ssh, push": Case(args=["push", "origin", "HEAD:main"]),
        "plain ssh, ls-remote": Case(args=["ls-remote", "origin"]),
        "GIT_SSH_COMMAND": Case(
            env={"GIT_SSH_COMMAND": f"{ssh} {cfg}"}, repo_config={"core.sshCommand": "false"}
        ),
        "core.sshCommand in the repository": Case(
            repo_config={"core.sshCommand": f"{ssh} {cfg}"}, url=port_url
        ),
        "core.sshCommand in the global config": Case(global_config={"core.sshCommand": f"{ssh} {cfg}"}),
        "core.sshCommand, repository over global": Case(
            global_config={"core.sshCommand": "false"}, repo_config={"core.sshCommand": f"{ssh} -4"}
        ),
        "core.sshCommand, quoted path": Case(repo_config={"core.sshCommand": f"{shlex.quote(spaced)} {cfg}"}),
        "core.sshCommand, shell text": Case(
            repo_config={"core.sshCommand": f'SSH_FOO="a b" {ssh} "$@" -o X=1 # a comment'}, url=port_url
        ),
        "core.sshCommand, shell text, probe fails": Case(
            repo_config={"core.sshCommand": f"FOO=1 {ssh}"}, env={"FAKE_PROBE_FAILS": "1"}
        ),
        "core.sshCommand in the user's GIT_CONFIG_COUNT": Case(
            env_entries=[("user.name", "x"), ("core.sshCommand", f"{ssh} {cfg}")]
        ),
        "core.sshCommand, plink": Case(repo_config={"core.sshCommand": f"{plink} -v"}, url=port_url),
        "GIT_SSH": Case(env={"GIT_SSH": ssh}, url=port_url),
        "GIT_SSH under core.sshCommand": Case(env={"GIT_SSH": plink}, repo_config={"core.sshCommand": ssh}),
        "GIT_SSH plink, port, -4": Case(env={"GIT_SSH": plink}, url=port_url, args=["fetch", "-4", "origin"]),
        "GIT_SSH tortoiseplink, port": Case(env={"GIT_SSH": tortoise}, url=port_url),
        "GIT_SSH unnamed, probe passes": Case(env={"GIT_SSH": unnamed}, url=port_url),
        "GIT_SSH unnamed, probe fails": Case(env={"GIT_SSH": unnamed, "FAKE_PROBE_FAILS": "1"}),
        "GIT_SSH unnamed, probe fails, port": Case(
            env={"GIT_SSH": unnamed, "FAKE_PROBE_FAILS": "1"}, url=port_url
        ),
        "ssh.variant plink": Case(repo_config={"ssh.variant": "plink"}, url=port_url),
        "ssh.variant simple": Case(repo_config={"ssh.variant": "simple"}),
        "ssh.variant ssh on plink": Case(
            env={"GIT_SSH": plink}, repo_config={"ssh.variant": "ssh"}, url=port_url
        ),
        "ssh.variant auto on plink": Case(
            env={"GIT_SSH": plink}, repo_config={"ssh.variant": "auto"}, url=port_url
        ),
        "ours installed under a blank": Case(url=port_url, spaced_install=True),
        "ours installed under a blank, plink": Case(
            env={"GIT_SSH": plink}, url=port_url, spaced_install=True
        ),
        "GIT_SSH_VARIANT tortoiseplink": Case(
            env={"GIT_SSH_VARIANT": "tortoiseplink"}, url=port_url, args=["fetch", "-6", "origin"]
        ),
    }


def ours_installed(folder: Path) -> str:
    """A copy of the wrapper under a folder with a blank in its name, and
    its entry as routes/gitenv.lua writes it: in single quotes."""
    copy = folder / "install with space" / "libexec" / "ttyoffer-ssh"
    copy.parent.mkdir(parents=True)
    shutil.copy2(WRAPPER, copy)
    return shlex.quote(str(copy))


def run_git(tmp: Path, case: Case, bin_dir: Path, wrapped: bool) -> tuple[int, str, list[dict[str, Any]]]:
    """git with the case's set-up, stock or with the editor's entries after
    the user's; what it returned and said, and every call of the fake."""
    side = tmp / ("wrapped" if wrapped else "stock")
    home = side / "home"
    home.mkdir(parents=True)
    repo = side / "repo"
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "LANG": "C",
        "FAKE_LOG": str(side / "calls.jsonl"),
    }
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "x"], check=True, env={
        **env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t"})  # fmt: skip
    config = {"remote.origin.url": case.url, **case.repo_config}
    for name, value in config.items():
        subprocess.run(["git", "-C", str(repo), "config", name, value], check=True, env=env)
    for name, value in case.global_config.items():
        subprocess.run(["git", "config", "--global", name, value], check=True, env=env)
    env.update(case.env)
    entries = list(case.env_entries)
    if wrapped:
        # As routes/gitenv.lua sets them: ours after the user's, and where
        # ours begin; no editor to ask (TTYOFFER_NVIM_SERVER unset).
        env["TTYOFFER_GIT_CONFIG_INDEX"] = str(len(entries))
        entries += [
            ("gpg.program", str(ROOT / "libexec" / "ttyoffer-gpg")),
            ("core.sshCommand", ours_installed(side) if case.spaced_install else str(WRAPPER)),
        ]
    if entries:
        env["GIT_CONFIG_COUNT"] = str(len(entries))
        for index, (key, value) in enumerate(entries):
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
    done = subprocess.run(["git", *case.args], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    log = side / "calls.jsonl"
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    ours = {
        f"GIT_CONFIG_{part}_{index}"
        for part in ("KEY", "VALUE")
        for index in (len(case.env_entries), len(case.env_entries) + 1)
    }
    for call in calls:
        call["env"] = {
            name: value.replace(str(side), "SIDE")
            for name, value in call["env"].items()
            if not name.startswith(OURS) and not (wrapped and name in ours)
        }
    return done.returncode, done.stderr.replace(str(side), "SIDE"), calls


CASES = build_cases(Path("/nonexistent"), write=False)  # for the ids only: nothing written


@pytest.mark.parametrize("name", list(CASES))
def test_the_program_gets_what_stock_git_gives_it(name: str, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    case = build_cases(bin_dir)[name]
    stock = run_git(tmp_path, case, bin_dir, wrapped=False)
    wrapped = run_git(tmp_path, case, bin_dir, wrapped=True)
    stock_code, stock_said, stock_calls = stock
    code, said, calls = wrapped
    assert [c["argv"] for c in calls] == [c["argv"] for c in stock_calls]
    for call, stock_call in zip(calls, stock_calls):
        if "-G" in call["argv"][1:2]:
            # The probe of a program git cannot name: git runs it with its
            # own repository variables, which git clears from ssh's (and
            # ours) before we could see them.
            for env in (call["env"], stock_call["env"]):
                for name in LOCAL_REPO_ENV:
                    env.pop(name, None)
        assert call["env"] == stock_call["env"]
    if "fatal: ssh variant 'simple'" in stock_said:
        # git dies before running anything; with ours, ours says it and
        # ends as git does (128), and git adds that the remote was not read.
        assert stock_calls == [] or all("-G" in c["argv"] for c in stock_calls)
        assert code == stock_code == 128
        assert stock_said.strip() in said
    else:
        assert (code, said) == (stock_code, stock_said)
    assert stock_calls, "the case never reached the program"
