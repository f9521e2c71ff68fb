"""Hermetic: the Lua side's pure parts (skip table, env, command wrapping,
configuration, :! expansion), in a bare Neovim with no host and no plugins."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pynvim
import pytest

from harness import ROOT, nvim_binary


@pytest.fixture(scope="module")
def lua() -> Iterator[Any]:
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "--clean", "-n"])
    nvim.exec_lua("vim.opt.rtp:prepend(...)", str(ROOT))

    def call(code: str, *args: Any) -> Any:
        return nvim.exec_lua(code, *args)

    yield call
    nvim.close()


SKIP_TABLE = [
    # (caller's opts, enabled, host ready, at capacity, expected reason)
    ({}, True, True, False, None),
    ({}, False, True, False, "disabled"),
    ({}, True, False, False, "host not available"),
    ({"pty": True}, True, True, False, "owns a terminal"),
    ({"term": True}, True, True, False, "owns a terminal"),
    ({"detach": True}, True, True, False, "detached"),
    ({"rpc": True}, True, True, False, "rpc channel"),
    ({"pty": True}, False, False, False, "disabled"),
    ({"cwd": "/tmp", "env": {"A": "1"}}, True, True, False, None),
    ({}, True, True, True, "offer limit reached"),
]


@pytest.mark.parametrize(("opts", "enabled", "ready", "full", "expected"), SKIP_TABLE)
def test_skip_table(
    lua: Any, opts: dict[str, Any], enabled: bool, ready: bool, full: bool, expected: str | None
) -> None:
    reason = lua(
        "local o, e, r, f = ... return require('ttyoffer.spawn').skip_reason(o, "
        "{enabled = e, host_ready = r, at_capacity = f})",
        opts,
        enabled,
        ready,
        full,
    )
    assert reason == expected


CMD = (
    "local c, s, sh, f, o = ... "
    "return require('ttyoffer.spawn').command(c, s, {shell = sh, shellcmdflag = f}, o)"
)


def child_env(
    lua: Any, inherited: dict[str, str], opts: dict[str, Any] | None = None, string: bool = False
) -> dict[str, str]:
    """Run the real wrapped command (with /dev/null standing in for the pty)
    and return the environment the child ends up with."""
    if string:
        cmd = lua(CMD, "env", "/dev/null", "/bin/sh", "-c", opts or {})
        argv = ["/bin/sh", "-c", cmd]
    else:
        argv = lua(CMD, ["env"], "/dev/null", "/bin/sh", "-c", opts or {})
    env = {"PATH": os.environ["PATH"], **inherited, **((opts or {}).get("env") or {})}
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


@pytest.mark.parametrize("string", [False, True], ids=["list", "string"])
def test_env_gpg_tty_beats_an_inherited_one(lua: Any, string: bool) -> None:
    env = child_env(lua, {"GPG_TTY": "/dev/pts/999", "TERM": "xterm"}, string=string)
    assert env["GPG_TTY"] == "/dev/null"
    assert env["TERM"] == "xterm"


@pytest.mark.parametrize("string", [False, True], ids=["list", "string"])
def test_env_caller_gpg_tty_stays(lua: Any, string: bool) -> None:
    env = child_env(lua, {"GPG_TTY": "/dev/pts/999"}, {"env": {"GPG_TTY": "/dev/pts/1", "X": "y"}}, string)
    assert env["GPG_TTY"] == "/dev/pts/1"
    assert env["X"] == "y"


@pytest.mark.parametrize("string", [False, True], ids=["list", "string"])
def test_env_term_only_when_absent(lua: Any, string: bool) -> None:
    assert child_env(lua, {}, string=string)["TERM"] == "xterm-256color"
    assert child_env(lua, {"TERM": ""}, string=string)["TERM"] == "xterm-256color"
    assert child_env(lua, {"TERM": "screen"}, string=string)["TERM"] == "screen"
    assert child_env(lua, {}, {"env": {"TERM": "dumb"}}, string)["TERM"] == "dumb"


def test_prologue_does_not_mutate_the_callers_table(lua: Any) -> None:
    opts = "local o = {env = {A = '1'}, cwd = '/'} "
    code = (
        opts
        + "require('ttyoffer.spawn').command({'true'}, '/dev/pts/3', "
        + "{shell = 'sh', shellcmdflag = '-c'}, o) return o"
    )
    assert lua(code) == {"env": {"A": "1"}, "cwd": "/"}


def test_list_command_runs_under_the_sh_prologue(lua: Any) -> None:
    argv = lua(CMD, ["git", "commit", "-S"], "/dev/pts/4", "/bin/bash", "-c")
    assert argv[:2] == ["/bin/sh", "-c"]
    assert argv[2].startswith('exec 3<>"$0" 3>&-; ') and argv[2].endswith('exec "$@"')
    assert argv[3:] == ["/dev/pts/4", "git", "commit", "-S"]


@pytest.mark.parametrize("shell", ["/bin/sh", "bash", "/usr/bin/zsh", "dash", "/bin/ksh -l"])
def test_posix_shell_string_joins_the_prologue(lua: Any, shell: str) -> None:
    cmd = lua(CMD, "ls -l", "/dev/pts/4", shell, "-c")
    assert cmd.startswith("exec 3<>'/dev/pts/4' 3>&-; export GPG_TTY='/dev/pts/4'; ")
    assert cmd.endswith("; ls -l")


@pytest.mark.parametrize(
    ("shell", "flag"), [("/usr/bin/fish", "-c"), ("nu", "-c"), ("/usr/bin/env bash", "-c")]
)
def test_other_shells_run_under_the_list_prologue(lua: Any, shell: str, flag: str) -> None:
    argv = lua(CMD, "ls -l", "/dev/pts/4", shell, flag)
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == "/dev/pts/4"
    assert argv[4:] == [*shell.split(), flag, "ls -l"]


def test_title(lua: Any) -> None:
    assert lua("return require('ttyoffer.spawn').title(...)", ["git", "push"]) == "git push"
    assert lua("return require('ttyoffer.spawn').title(...)", "a\nb\x1bc") == "a b c"
    assert lua("return vim.fn.strchars(require('ttyoffer.spawn').title(...))", "x" * 100) == 40


MERGE = "return require('ttyoffer.config').merge(...)"


def test_config_defaults_and_deep_merge(lua: Any) -> None:
    merged = lua(MERGE, {"float": {"width": 100}})
    assert merged["float"]["width"] == 100
    assert merged["float"]["height"] == 24
    assert merged["keys"]["dismiss"] == "<C-q>"


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"nope": 1}, 'unknown option "nope"'),
        ({"float": {"widht": 1}}, 'unknown option "float.widht"'),
        ({"enabled": "yes"}, 'option "enabled" must be a boolean'),
        ({"float": {"width": -3}}, 'option "float.width" must be positive'),
        ({"float": 3}, 'option "float" must be a table'),
        ({"keys": {"dismiss": True}}, 'option "keys.dismiss" must be a key'),
        ({"max_offers": "many"}, 'option "max_offers" must be a number'),
    ],
)
def test_config_errors_name_the_fix(lua: Any, opts: dict[str, Any], message: str) -> None:
    with pytest.raises(pynvim.NvimError) as err:
        lua(MERGE, opts)
    assert "(ttyoffer)" in str(err.value)
    assert message in str(err.value)


def test_expand_like_bang(lua: Any) -> None:
    lua("vim.cmd.edit('/tmp/some file.txt')")
    expand = "return require('ttyoffer.expand').expand(...)"
    assert lua(expand, "echo %") == "echo /tmp/some file.txt"
    assert lua(expand, "echo %:t:r") == "echo some file"
    assert lua(expand, "echo \\% $HOME ~") == "echo % $HOME ~"
    assert lua(expand, "printf '<b>'") == "printf '<b>'"
    lua("vim.cmd.enew()")
    with pytest.raises(pynvim.NvimError, match="E499"):
        lua(expand, "echo %")
