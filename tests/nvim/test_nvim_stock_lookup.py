"""How a program is found and how 'shell' is split, stock against wrapped in
the same editor, on 0.12-dev and 0.11.4, with the compiled leader and the
/bin/sh prologue: a relative or empty $PATH entry with `cwd` (vim.system()'s
child looks its program up from its `cwd`, jobstart() from the editor's
folder), and a 'shell' with double-quoted words (Neovim's own tokenizer
honours the quotes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness import Editor, Sandbox, editor, nvim_011_binary, nvim_binary

# It runs itself on 0.12-dev and 0.11.4: the suite's 0.11.4 pass leaves it out.
pytestmark = [pytest.mark.nvim, pytest.mark.versions]


@pytest.fixture(params=["0.12", "0.11", "0.12, sh"])
def ed(request: pytest.FixtureRequest, sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    """The editor on each supported Neovim with the compiled leader, and on
    0.12 with the /bin/sh prologue (TTYOFFER_LEADER=sh)."""
    binary = nvim_011_binary() if request.param == "0.11" else nvim_binary()
    monkeypatch.setenv("TTYOFFER_NVIM", binary)
    sandbox.env["TTYOFFER_NVIM"] = binary
    if request.param.endswith("sh"):
        sandbox.env["TTYOFFER_LEADER"] = "sh"
    with editor(sandbox) as e:
        assert e.lua("return vim.version().minor") == (11 if request.param == "0.11" else 12)
        leader = e.lua("return require('ttyoffer.host.install').leader()")
        assert (leader is None) == request.param.endswith("sh"), leader
        yield e


# One call through stock (`which` = 'stock') or the wrappers: {ok, result},
# the result made comparable (a vim.system()'s completion, a job's exit code
# and output, system()'s output and v:shell_error), and whether the wrapped
# call had its offer.
CALL = r"""
local which, how, cmd, opts = ...
opts = opts ~= vim.NIL and opts or nil
local S = which == 'stock' and require('ttyoffer.shared.originals') or require('ttyoffer')
local function skips()
  local n = 0
  for _, count in pairs(require('ttyoffer').status().skipped) do n = n + count end
  return n
end
local before = skips()
local ok, result = pcall(function()
  if how == 'vim.system' then
    local out = S.system(cmd, opts or {}):wait(10000)
    return { code = out.code, signal = out.signal, stdout = out.stdout, stderr = out.stderr }
  elseif how == 'jobstart' then
    local code, out = nil, {}
    local o = vim.tbl_extend('force', opts or {}, {
      stdout_buffered = true, stderr_buffered = true,
      on_stdout = function(_, d) out.stdout = d end,
      on_stderr = function(_, d) out.stderr = d end,
      on_exit = function(_, c) code = c end,
    })
    local job = S.jobstart(cmd, o)
    if job <= 0 then return { job = job } end
    vim.wait(10000, function() return code ~= nil end)
    out.code = code
    return out
  elseif how == 'system' then
    local out = S.fn_system(cmd)
    return { out = out, shell_error = vim.v.shell_error }
  end
  local out = S.systemlist(cmd)
  return { out = out, shell_error = vim.v.shell_error }
end)
local offered = which ~= 'stock' and skips() == before
return { ok = ok, result = ok and result or tostring(result), offered = offered }
"""


def both(ed: Editor, how: str, cmd: Any, opts: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """The stock and the wrapped call's outcomes, the wrapped one's offer
    taken out (and returned)."""
    stock = ed.lua(CALL, "stock", how, cmd, opts)
    ours = ed.lua(CALL, "ours", how, cmd, opts)
    offered = ours.pop("offered")
    stock.pop("offered")
    assert ours == stock, f"{how} {cmd!r} {opts!r}"
    return stock, offered


@pytest.fixture
def folders(ed: Editor, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The editor in a folder holding relbin/relprog and hereprog, with
    PATH='relbin::'..PATH; and another, empty folder. Both put back after."""
    here, other = tmp_path / "here", tmp_path / "other"
    (here / "relbin").mkdir(parents=True)
    other.mkdir()
    for path in (here / "relbin" / "relprog", here / "hereprog"):
        path.write_text('#!/bin/sh\necho "$0 ran"\n')
        path.chmod(0o755)
    saved = ed.lua("return { vim.env.PATH, vim.fn.getcwd() }")
    # Only the entries this user may search: a program not found after an
    # EACCES on the way (root's PATH kept by `su`) is EACCES, not ENOENT.
    searchable = ":".join(entry for entry in saved[0].split(":") if entry and os.access(entry, os.X_OK))
    ed.lua("local dir, path = ... vim.fn.chdir(dir) vim.env.PATH = 'relbin::' .. path", str(here), searchable)
    try:
        yield here, other
    finally:
        ed.lua("local path, cwd = ... vim.env.PATH = path vim.fn.chdir(cwd)", *saved)


@pytest.mark.parametrize("program", ["relprog", "hereprog"])
def test_a_relative_or_empty_path_entry_with_cwd_as_in_stock(
    ed: Editor, folders: tuple[Path, Path], program: str
) -> None:
    here, other = folders
    # vim.system(): the child looks the program up from its `cwd`, where
    # there is none: stock raises ENOENT, and so do we.
    stock, _ = both(ed, "vim.system", [program], {"cwd": str(other)})
    assert stock["ok"] is False and "ENOENT" in stock["result"], stock
    # From the editor's folder it is found, and runs with its offer.
    stock, offered = both(ed, "vim.system", [program], {"cwd": str(here)})
    assert stock["ok"] and stock["result"]["code"] == 0, stock
    assert offered
    stock, offered = both(ed, "vim.system", [program])
    assert stock["ok"] and stock["result"]["code"] == 0, stock
    assert offered
    # jobstart() and system() find it from the editor's folder whatever
    # `cwd` says, and put its full path in argv[0].
    stock, offered = both(ed, "jobstart", [program], {"cwd": str(other)})
    assert stock["result"]["code"] == 0 and "ran" in stock["result"]["stdout"][0], stock
    assert offered
    stock, offered = both(ed, "system", [program])
    assert stock["result"]["shell_error"] == 0, stock
    assert offered


def test_a_shell_found_on_a_relative_path_entry_as_in_stock(ed: Editor, folders: tuple[Path, Path]) -> None:
    # A string command's 'shell' is found by the job's child, from its `cwd`.
    here, other = folders
    (here / "relbin" / "relsh").write_text('#!/bin/sh\nexec /bin/sh "$@"\n')
    (here / "relbin" / "relsh").chmod(0o755)
    saved = ed.lua("return vim.o.shell")
    ed.lua("vim.o.shell = 'relsh'")
    try:
        stock, _ = both(ed, "jobstart", "echo ran", {"cwd": str(other)})
        assert stock["ok"] is False and "E903" in stock["result"], stock
        stock, offered = both(ed, "jobstart", "echo ran", {"cwd": str(here)})
        assert stock["result"]["stdout"] == ["ran", ""], stock
        assert offered
        stock, offered = both(ed, "system", "echo ran")
        assert stock["result"] == {"out": "ran\n", "shell_error": 0}
        assert offered
    finally:
        ed.lua("vim.o.shell = ...", saved)


@pytest.fixture
def quoted_shell(ed: Editor, tmp_path: Path) -> Iterator[Path]:
    """A 'shell' in a folder with a space, which shows its arguments and runs
    the command; put back after."""
    folder = tmp_path / "x y"
    folder.mkdir()
    shell = folder / "my sh"
    shell.write_text('#!/bin/sh\nfor a in "$@"; do printf \'[%s]\' "$a"; done; echo\neval "$4"\n')
    shell.chmod(0o755)
    saved = ed.lua("return { vim.o.shell, vim.o.shellcmdflag }")
    try:
        yield shell
    finally:
        ed.lua("local s, f = ... vim.o.shell = s vim.o.shellcmdflag = f", *saved)


def first_line(how: str, result: dict[str, Any]) -> str:
    if how == "jobstart":
        return str(result["stdout"][0])
    if how == "system":
        return str(result["out"]).split("\n")[0]
    return str(result["out"][0])


@pytest.mark.parametrize("how", ["jobstart", "system", "systemlist"])
def test_a_shell_with_double_quoted_words_as_in_stock(ed: Editor, quoted_shell: Path, how: str) -> None:
    # The issue's own: bash given an rc file whose path has a space.
    set_shell = "vim.o.shell, vim.o.shellcmdflag = ..."
    ed.lua(set_shell, '/bin/bash --rcfile "$HOME/x y/my rc"', "-c")
    stock, offered = both(ed, how, "echo ran; exit 3")
    assert first_line(how, stock["result"]) == "ran", stock
    assert offered
    # Quotes around the program and a word, an escaped quote and backslash
    # inside them, and a flag of two words.
    ed.lua(set_shell, f'"{quoted_shell}" "two words"', '"-\\"c\\\\" -e')
    stock, offered = both(ed, how, "echo ran")
    assert first_line(how, stock["result"]) == '[two words][-"c\\][-e][echo ran]', stock
    assert offered


ENVIRONMENT = r"""
local which, opts = ...
local S = which == 'stock' and require('ttyoffer.shared.originals') or require('ttyoffer')
local out = S.system({ '/usr/bin/env' }, opts):wait(10000)
local lines = vim.tbl_filter(function(line)
  return not line:find('^GPG_TTY=') and not line:find('^TERM=')
end, vim.split(out.stdout, '\n'))
table.sort(lines)
return { out.code, lines }
"""


@pytest.mark.parametrize("clear_env", [False, True])
def test_an_env_name_holding_equals_reaches_the_child_as_in_stock(ed: Editor, clear_env: bool) -> None:
    # "HOME=X" in `env` is the entry "HOME=X=y": stock passes it beside
    # $HOME. Under the /bin/sh prologue, env(1) (which puts back the names
    # /bin/sh drops) would take it for HOME; that command runs without the
    # offer. And with clear_env but no env, vim.system() passes the editor's
    # environment whole, $PWD included.
    opts: dict[str, Any] = {"env": {"HOME=X": "y", "A-B": "1"}}
    if clear_env:
        opts = {"clear_env": True}
    stock = ed.lua(ENVIRONMENT, "stock", opts)
    assert ed.lua(ENVIRONMENT, "ours", opts) == stock
    assert stock[0] == 0
    if not clear_env:
        assert "HOME=X=y" in stock[1] and any(line.startswith("HOME=/") for line in stock[1])
