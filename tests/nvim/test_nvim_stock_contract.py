"""The stock contract, differentially: the same command and options through
stock jobstart() and through the offer give the same argv, environment,
directory, output, error output and exit status. The differences the offer
makes on purpose ($GPG_TTY names the command's terminal; $TERM is supplied
when the command would have none) are taken out of the comparison and
nothing else. Under every leader a user can have (harness.LEADERS: the
compiled one without libc, on a static libc, on the shared one, and the
/bin/sh prologue), on the Neovim of the tier (0.12-dev, and 0.11.4 in
scripts/test's second pass)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from harness import Editor, on_leaders, on_leaders_for

pytestmark = pytest.mark.nvim
# Each case under every leader a user can have (harness.LEADERS).
every_leader = on_leaders()


# Runs `cmd` with `opts` through `spawner` and waits: {code, stdout, stderr,
# whether it went through the offer}.
RUN = """
local spawner, cmd, opts = ...
local originals = require('ttyoffer.shared.originals')
local spawn = spawner == 'stock' and originals.jobstart or require('ttyoffer').jobstart
local function skips()
  local n = 0
  for _, count in pairs(require('ttyoffer').status().skipped) do n = n + count end
  return n
end
local skipped_before = skips()
local out, err, code = '', '', nil
opts = opts == vim.NIL and {} or opts
-- Each callback's list joined by newlines, appended: the stream as written.
opts.on_stdout = function(_, d) out = out .. table.concat(d, '\\n') end
opts.on_stderr = function(_, d) err = err .. table.concat(d, '\\n') end
opts.on_exit = function(_, c) code = c end
local ok, job = pcall(spawn, cmd, opts)
if not ok then return {error = job} end
if job <= 0 then return {job = job} end
vim.wait(10000, function() return code ~= nil end)
return {code = code, stdout = out, stderr = err, offered = spawner ~= 'stock' and skips() == skipped_before}
"""

# On purpose, and documented in :help ttyoffer-contract.
OFFER_ONLY = ("GPG_TTY=", "TERM=")


def comparable(result: dict[str, Any], environment: bool) -> dict[str, Any]:
    result = dict(result)
    result.pop("offered", None)
    if environment and "stdout" in result:
        # A shell may hand the environment on in another order.
        lines = result["stdout"].split("\n")
        result["stdout"] = sorted(line for line in lines if not line.startswith(OFFER_ONLY))
    return result


def differential(ed: Editor, cmd: list[str] | str, opts: dict[str, Any] | None = None) -> dict[str, Any]:
    stock: dict[str, Any] = ed.lua(RUN, "stock", cmd, opts)
    ours: dict[str, Any] = ed.lua(RUN, "ours", cmd, opts)
    environment = cmd in (["env"], "env")
    assert comparable(ours, environment) == comparable(stock, environment)
    return ours


@pytest.fixture
def in_tmp(ed: Editor, tmp_path: Path) -> Path:
    """The editor's current directory is a fresh folder, with a `rel` script."""
    script = tmp_path / "rel"
    script.write_text('#!/bin/sh\nprintf "%s|%s\\n" "$0" "$(pwd)"\n')
    script.chmod(0o755)
    ed.lua("vim.fn.chdir(...)", str(tmp_path))
    return tmp_path


ENV_NAMES = {"A-B": "1", "1X": "2", "a.b": "3", "ÄÖ": "4", "A B": "5", "PLAIN": "6"}


@every_leader
def test_environment_names_a_shell_cannot_hold(ed: Editor) -> None:
    # /bin/sh would drop them on the way; env(1) puts them back. Names the
    # caller gives, and names in the editor's own environment (Fedora's
    # BASH_FUNC_which%% is one), and the caller's value wins.
    ed.lua("vim.env['BASH_FUNC_which%%'] = '() {  echo hi\\n}'; vim.env['1X'] = 'editors'")
    ours = differential(ed, ["env"], {"env": ENV_NAMES})
    for name, value in ENV_NAMES.items():
        assert f"{name}={value}" in ours["stdout"].split("\n")
    assert "BASH_FUNC_which%%=() {  echo hi" in ours["stdout"]
    assert ours["offered"]
    assert differential(ed, ["env"], {"clear_env": True, "env": {"A-B": "1"}})["offered"]
    # A string command's own shell treats them the same in stock and here.
    for shell in ("/bin/sh", "bash"):
        ed.lua("vim.o.shell = ...", shell)
        assert differential(ed, "env", {"env": ENV_NAMES})["offered"]


@every_leader
def test_clear_env_adds_nothing(ed: Editor) -> None:
    ours = differential(ed, ["env"], {"clear_env": True, "env": {"ONLY": "me"}})
    assert ours["offered"]


@every_leader
def test_pwd_is_what_stock_passes(ed: Editor, in_tmp: Path) -> None:
    assert differential(ed, ["env"], {"cwd": "/"})["offered"]
    assert differential(ed, ["env"], {"env": {"PWD": "/nowhere"}})["offered"]
    assert differential(ed, ["env"])["offered"]


@every_leader
def test_a_relative_program_is_found_from_the_editors_directory(ed: Editor, in_tmp: Path) -> None:
    ours = differential(ed, ["./rel", "x"], {"cwd": "/"})
    assert ours["offered"] and ours["code"] == 0 and ours["stdout"] == f"{in_tmp}/rel|/\n"


# bash's $_ and its syntax error quote the command as stock has them: the
# prologue is not joined to the command's line.
STRING_SCRIPTS = [
    'echo "$_"',
    "echo (",
    "exit 42",
    "kill -TERM $$",
    "echo out; echo err >&2; echo out2",
    'printf "%s|" "$0" "$#"',
    "cat",  # stdin as the caller left it: a pipe nobody writes, closed
    "trap 'echo trapped' EXIT; false",
    "ulimit -n; umask",
]


# Under every leader in /bin/sh; in bash too under the main ones (the
# leader's part is the same in both).
@on_leaders_for(
    "shell, script",
    [(sh, s) for sh in ("/bin/sh", "bash") for s in STRING_SCRIPTS],
    core=lambda case: case[0] == "/bin/sh",
)
def test_string_commands(ed: Editor, shell: str, script: str) -> None:
    ed.lua("vim.o.shell = ...", shell)
    assert differential(ed, script, {"stdin": "null"})["offered"]


@every_leader
@pytest.mark.parametrize(
    "argv",
    [
        ["sh", "-c", 'printf "%s|" "$0" "$@"', "zero", "a b", "", "$HOME", "'q'"],
        ["sh", "-c", "exit 7"],
        ["sh", "-c", "kill -KILL $$"],
        ["sh", "-c", "kill -ABRT $$"],  # a core it would dump (the leader dumps none of its own)
        ["sh", "-c", "kill -USR1 $$"],  # one the compiled leader passes on, had it been sent it
        ["printenv", "SHLVL", "OLDPWD", "_"],
        ["cat", "/proc/self/cmdline"],  # argv[0] as stock puts it: the full path
        ["sh", "-c", 'echo "$-"; echo "$_"'],
        # What a program inherits besides: signals blocked and ignored, the
        # umask, capabilities; the limits; the open descriptors (a pipe's
        # inode, a directory's pid taken out).
        [
            "grep",
            "-E",
            "^(Umask|SigBlk|SigIgn|NoNewPrivs|Seccomp|Cap(Inh|Prm|Eff|Bnd|Amb)):",
            "/proc/self/status",
        ],
        ["cat", "/proc/self/limits"],
        [
            "sh",
            "-c",
            "find /proc/self/fd -mindepth 1 -printf '%f %l\\n'"
            " | sed 's/:\\[[0-9]*\\]//; s|/proc/[0-9]*/|/proc/PID/|'",
        ],
    ],
)
def test_list_commands(ed: Editor, argv: list[str]) -> None:
    assert differential(ed, argv)["offered"]


@every_leader
def test_a_missing_program_and_bad_arguments(ed: Editor) -> None:
    differential(ed, ["/nonexistent/program"])
    differential(ed, [])
    differential(ed, "")


@every_leader
def test_the_editors_own_environment_as_it_is_now(ed: Editor) -> None:
    ed.lua("vim.env.TTYOFFER_SET_LATER = 'yes'; vim.env.HOME = '/somewhere/else'")
    ours = differential(ed, ["env"])
    assert "TTYOFFER_SET_LATER=yes" in ours["stdout"]
    assert os.environ.get("TTYOFFER_SET_LATER") is None
