"""The README's route matrix, cell by cell, in the real TUI: every route by
which the editor starts a command, against five real questions (Python's
getpass, `git commit -S` with pinentry-curses, `ssh-keygen -y` on a
passphrase key, `git fetch` over ssh from a real sshd on 127.0.0.1, git over
HTTP from a real `git http-backend` behind Basic auth), keys typed as a
person types them once the question shows. The expected outcome of each
cell is scripts/route_matrix.py's, the one source of the README's table.

Stock in the same run: an editor without the plugin runs every Lua and
Vimscript route against the same questions, and none of them is answered
(each ends failing, or is still waiting on its stdin when `timeout` ends it).

One editor of each kind, one of each server, for the whole module: a test
per route, its five cells in turn, its failures listed by cell."""

from __future__ import annotations

import shlex
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pynvim
import pytest
import route_matrix
from httpgit import HttpGit, http_git
from route_matrix import QUESTIONS, ROUTES, Outcome, Route

from fixtures import Keyring, make_keyring, make_signing_repo, make_ssh_key
from harness import Editor, Sandbox, wait_until
from sshd import SshPush, clean_client_env, make_ssh_push, sshd
from third_party import plugin
from tui import Tui

pytestmark = [pytest.mark.e2e, pytest.mark.tui]

ROWS, COLS = 40, 120
GPG_PASSPHRASE = "matrix gpg passphrase"
SSH_PASSPHRASE = "matrix ssh passphrase"
GETPASS_ANSWER = "matrix answer"
# How long a command that waits on its stdin is watched to keep waiting,
# with no window, before it is stopped; and the stock runs' bound.
WAITS_FOR = 3.0
STOCK_TIMEOUT = 6

# The editor's side: one way to start a command per route, each recording
# {code, out} in _G.matrix[key] when it ends.
HELPERS_LUA = r"""
_G.matrix = {}
function _G.matrix_record(key, code, out)
  _G.matrix[key] = { code = code, out = out }
end
local record = _G.matrix_record

-- Killed by a signal: as a shell says it (a killed command reads as code 0).
local function status(code, signal)
  return (signal or 0) ~= 0 and 128 + signal or code
end

local function collect(into)
  return function(_, data)
    if data then
      table.insert(into, type(data) == 'table' and table.concat(data, '\n') or data)
    end
  end
end

local start = {}
function start.lua_jobstart(key, argv)
  local out = {}
  vim.fn.jobstart(argv, {
    on_stdout = collect(out),
    on_stderr = collect(out),
    on_exit = function(_, code)
      record(key, code, table.concat(out, '\n'))
    end,
  })
end
function start.system_wait(key, argv)
  local r = vim.system(argv, { text = true }):wait()
  record(key, status(r.code, r.signal), (r.stdout or '') .. (r.stderr or ''))
end
function start.system_on_exit(key, argv)
  vim.system(argv, { text = true }, function(r)
    record(key, status(r.code, r.signal), (r.stdout or '') .. (r.stderr or ''))
  end)
end
function start.fn_system(key, argv)
  local out = vim.fn.system(argv)
  record(key, vim.v.shell_error, out)
end
function start.fn_systemlist(key, argv)
  local out = vim.fn.systemlist(argv)
  record(key, vim.v.shell_error, table.concat(out, '\n'))
end
function start.uv_spawn(key, argv)
  local stdout, stderr = vim.uv.new_pipe(), vim.uv.new_pipe()
  local out = {}
  local handle
  handle = vim.uv.spawn(argv[1], { args = vim.list_slice(argv, 2), stdio = { nil, stdout, stderr } },
    function(code, signal)
      handle:close()
      vim.defer_fn(function()
        record(key, status(code, signal), table.concat(out))
      end, 50)
    end)
  for _, pipe in ipairs({ stdout, stderr }) do
    pipe:read_start(function(_, data)
      if data then
        table.insert(out, data)
      else
        pipe:close()
      end
    end)
  end
end
function start.plenary(key, argv)
  local Job = require('plenary.job')
  Job:new({
    command = argv[1],
    args = vim.list_slice(argv, 2),
    on_exit = function(job, code, signal)
      local out = vim.list_extend(job:result(), job:stderr_result())
      record(key, status(code, signal), table.concat(out, '\n'))
    end,
  }):start()
end
function start.vim_jobstart(key, argv)
  vim.fn.MatrixJobstart(key, argv)
end
function start.vim_system(key, argv)
  vim.fn.MatrixSystem(key, argv)
end

--- Started on the editor's loop, not in the RPC call: a route that waits
--- (system(), wait()) holds the editor, and the test types meanwhile.
function _G.matrix_start(route, key, argv)
  vim.schedule(function()
    start[route](key, argv)
  end)
end
"""

# Vimscript's own jobstart() and system(): built-ins called from Vimscript,
# as fugitive and Vimscript plugins call them.
HELPERS_VIM = r"""
let g:matrix_out = {}
let g:matrix_jobs = {}
function! MatrixOut(key, job, data, event) abort
  let g:matrix_out[a:key] = get(g:matrix_out, a:key, '') . join(a:data, "\n")
endfunction
function! MatrixExit(key, job, code, event) abort
  call v:lua.matrix_record(a:key, a:code, get(g:matrix_out, a:key, ''))
endfunction
function! MatrixJobstart(key, argv) abort
  let g:matrix_jobs[a:key] = jobstart(a:argv, {
        \ 'on_stdout': function('MatrixOut', [a:key]),
        \ 'on_stderr': function('MatrixOut', [a:key]),
        \ 'on_exit': function('MatrixExit', [a:key])})
endfunction
function! MatrixSystem(key, argv) abort
  let out = system(a:argv)
  call v:lua.matrix_record(a:key, v:shell_error, out)
endfunction
"""


@dataclass
class World:
    """The servers, keys and repositories of the five questions, and the
    two editors."""

    keyring: Keyring
    signing_repo: Path
    ssh_key: Path
    push: SshPush
    http: HttpGit
    wrapped: tuple[Tui, Editor]
    stock: tuple[Tui, Editor]

    def argv(self, question: str) -> list[str]:
        if question == "getpass":
            return ["python3", "-c", "import getpass; print('got', getpass.getpass('Secret: '))"]
        if question == "commit":
            return [
                "git",
                "-C",
                str(self.signing_repo),
                "commit",
                "-q",
                "--allow-empty",
                "-S",
                "-m",
                "matrix",
            ]
        if question == "keygen":
            return ["ssh-keygen", "-y", "-f", str(self.ssh_key)]
        if question == "ssh":
            return ["git", "-C", str(self.push.work), "fetch", "-q", "origin"]
        if question == "http":
            return ["git", "ls-remote", self.http.url("served.git")]
        raise ValueError(question)

    def answers(self, question: str) -> list[tuple[str, str]]:
        """What the screen shows when the question is up, and the keys typed
        then: one pair per question the command asks."""
        if question == "getpass":
            # In the window (its left border): the typed line holds the word too.
            return [("│Secret:", GETPASS_ANSWER + "\r")]
        if question == "commit":
            return [("Passphrase", GPG_PASSPHRASE + "\r")]
        if question == "keygen":
            return [("Enter passphrase", SSH_PASSPHRASE + "\r")]
        if question == "ssh":
            return [("Enter passphrase for key", SSH_PASSPHRASE + "\r")]
        if question == "http":
            return [("Username for", self.http.user + "\r"), ("Password for", self.http.password + "\r")]
        raise ValueError(question)

    def answered(self, question: str, code: int, out: str) -> bool:
        """Whether the command's end shows the answer reached it."""
        if code != 0:
            return False
        if question == "getpass":
            return f"got {GETPASS_ANSWER}" in out
        if question == "keygen":
            return out.lstrip().startswith("ssh-ed25519")
        if question == "http":
            return "refs/heads/main" in out
        return True


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def served_repository(root: Path) -> None:
    """A bare repository with one commit on main, for `git ls-remote`."""
    bare = root / "served.git"
    git("init", "-q", "--bare", "-b", "main", str(bare))
    work = root / "work"
    git("init", "-q", "-b", "main", str(work))
    git("-c", "user.name=m", "-c", "user.email=m@m.invalid", "commit", "-q", "--allow-empty", "-m", "served",
        cwd=work)  # fmt: skip
    git("push", "-q", str(bare), "main", cwd=work)


def start_editor(sandbox: Sandbox, *args: str) -> tuple[Tui, Editor]:
    term = Tui(sandbox, list(args), ROWS, COLS)
    ed = Editor(pynvim.attach("socket", path=term.socket))
    ed.nvim.exec_lua(HELPERS_LUA)
    ed.nvim.api.exec2(HELPERS_VIM, {})
    return term, ed


@pytest.fixture(scope="module")
def world(registered_sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("matrix")
    with ExitStack() as stack:
        keyring = make_keyring(base / "gnupg", GPG_PASSPHRASE)
        stack.callback(keyring.kill_agent)
        signing_repo = make_signing_repo(base / "signing", keyring)
        ssh_key = make_ssh_key(base / "ssh-key" / "id_ed25519", SSH_PASSPHRASE)
        server = stack.enter_context(sshd(base / "sshd"))
        push = make_ssh_push(server, base / "push", ssh_key, SSH_PASSPHRASE)
        (base / "http").mkdir()
        served_repository(base / "http")
        http = stack.enter_context(http_git(base / "http"))
        plenary = plugin("nvim-lua/plenary.nvim")
        sandbox = Sandbox(base / "nvim", f"vim.opt.rtp:append({str(plenary)!r})\n")
        sandbox.manifest.write_text(registered_sandbox.manifest.read_text())
        sandbox.env.update(keyring.env)
        clean_client_env(sandbox.env)
        # Nothing of the account's own git setup (a credential helper would
        # answer the HTTP question); git's terminal prompts left on.
        sandbox.env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
        sandbox.env.pop("GIT_TERMINAL_PROMPT", None)
        wrapped = start_editor(sandbox)
        stack.callback(wrapped[0].close)
        stack.callback(wrapped[1].nvim.close)
        wrapped[1].wait_host()
        # Stock: the same environment, an init without the plugin.
        stock_sandbox = Sandbox(base / "stock")
        stock_sandbox.env = dict(sandbox.env)
        stock_sandbox.init.write_text(f"vim.o.shell = '/bin/sh'\nvim.opt.rtp:append({str(plenary)!r})\n")
        stock = start_editor(stock_sandbox)
        stack.callback(stock[0].close)
        stack.callback(stock[1].nvim.close)
        yield World(keyring, signing_repo, ssh_key, push, http, wrapped, stock)


def test_the_readme_table_is_written_from_the_matrix() -> None:
    assert route_matrix.main([]) == 0, "run python scripts/route_matrix.py --write"


def result(ed: Editor, key: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = ed.lua("return _G.matrix[...]", key)
    return found


# A typed command's line ends saying its exit code: the output then always
# has a line, so :!'s "Press ENTER" always follows, and the test knows when
# to press it (the editor answers no RPC call while it waits there).
TYPED_END = "matrix-end"


def start(world: World, route: Route, key: str, argv: list[str]) -> None:
    term, ed = world.wrapped
    if route.start == "typed":
        line = f'{shlex.join(argv)}; echo "{TYPED_END} $?"'
        term.type((":!" if route.key == "typed_bang" else ":Bang ") + line + "\r")
    else:
        ed.lua("_G.matrix_start(...)", route.key, key, argv)


def ended(world: World, route: Route, key: str, bangs: int, timeout: float) -> dict[str, Any]:
    """The cell's {code, out}, once its command has ended."""
    term, ed = world.wrapped
    if route.start == "typed":
        term.wait_text("Press ENTER", timeout=timeout)
        term.type("\r")
        done = ed.wait_event("TtyOfferBangDone", bangs + 1, timeout=timeout)[bangs]["data"]
        lines = [line for line in done["output"] if not line.startswith(TYPED_END)]
        code = next(int(line.split()[1]) for line in done["output"] if line.startswith(TYPED_END))
        return {"code": code, "out": "\n".join(lines)}
    return wait_until(lambda: result(ed, key), timeout, f"{key} to end")


def settle(world: World) -> None:
    """The screen is the editor's again: a :! output's hit-enter prompt
    answered, the prompt window gone."""
    term, ed = world.wrapped
    deadline = time.monotonic() + 15
    declined = False
    while time.monotonic() < deadline:
        if term.showing("Press ENTER"):
            term.type("\r")
        if not term.showing("╭") and not term.showing("Press ENTER"):
            return
        if not declined and time.monotonic() > deadline - 10:
            term.type("\x11")  # <C-q>: a window a failed cell left up is declined
            declined = True
        time.sleep(0.1)
    raise AssertionError("the screen did not come back:\n" + term.text())


def check_cell(world: World, route: Route, question: str, outcome: Outcome) -> str | None:
    """Run one cell as a person would; what differs from the table, or None."""
    term, ed = world.wrapped
    key = f"{route.key}/{question}"
    presents = len(ed.events("TtyOfferPresent"))
    bangs = len(ed.events("TtyOfferBangDone"))
    messages_before = ed.nvim.api.exec2("messages", {"output": True})["output"]
    start(world, route, key, world.argv(question))
    try:
        if outcome.kind == "asked":
            for shown, keys in world.answers(question):
                term.wait_text(shown, timeout=20)
                term.type(keys)
            done = ended(world, route, key, bangs, 30)
            if not world.answered(question, done["code"], done["out"]):
                return f"asked, but not answered: {done}"
            return None
        if outcome.kind == "waits":
            time.sleep(WAITS_FOR)
            if result(ed, key) is not None or len(ed.events("TtyOfferPresent")) != presents:
                return f"expected to wait on its stdin with no window; got {result(ed, key)}"
            ed.nvim.command(f"call jobstop(g:matrix_jobs[{key!r}])")
            ended(world, route, key, bangs, 10)
            return None
        done = ended(world, route, key, bangs, 20)
        if len(ed.events("TtyOfferPresent")) != presents:
            return f"a window opened; expected {outcome.text()}"
        if done["code"] == 0:
            return f"succeeded; expected {outcome.text()}: {done}"
        if outcome.kind == "fails" and outcome.says not in done["out"]:
            return f"expected {outcome.says!r} in what it printed: {done}"
        if outcome.kind == "hint":
            # Told once the editor is free again (the command is over by then).
            def told() -> bool:
                messages = ed.nvim.api.exec2("messages", {"output": True})["output"]
                return "run :Bang" in messages[len(messages_before) :]

            wait_until(told, 10, "the :Bang hint in the messages")
        return None
    except AssertionError as error:
        return f"{error}"
    finally:
        settle(world)


# Five questions answered in turn, the first test starting the servers and editors.
@pytest.mark.timeout(600)
@pytest.mark.parametrize("route", ROUTES, ids=[route.key for route in ROUTES])
def test_each_question_on_the_route_does_what_the_readme_says(world: World, route: Route) -> None:
    failures = {}
    for question in QUESTIONS:
        failure = check_cell(world, route, question.key, route.outcomes[question.key])
        if failure:
            failures[question.key] = failure
    assert failures == {}, "\n".join(f"{route.key} × {q}: {why}" for q, why in failures.items())


@pytest.mark.timeout(600)
def test_without_the_plugin_no_question_is_answered(world: World) -> None:
    """Stock, in the same run: every Lua and Vimscript route against every
    question ends unanswered (failing, or ended by `timeout` while it waits
    on its stdin), with nothing typed."""
    term, ed = world.stock
    routes = [route for route in ROUTES if route.start != "typed"]
    keys = []
    for route in routes:
        for question in QUESTIONS:
            key = f"stock/{route.key}/{question.key}"
            # timeout(1)'s TERM, not KILL: KILL would reach timeout itself (it
            # signals its process group), and a killed caller reads as code 0.
            argv = ["timeout", "-k", "2", str(STOCK_TIMEOUT), *world.argv(question.key)]
            ed.lua("_G.matrix_start(...)", route.key, key, argv)
            keys.append((key, question.key))
    answered = []
    for key, asked in keys:
        done = wait_until(lambda: result(ed, key), STOCK_TIMEOUT + 30, f"{key} to end")  # noqa: B023
        if world.answered(asked, done["code"], done["out"]):
            answered.append(f"{key}: {done}")
    # Stock gpg's pinentry-curses, started by gpg-agent with no terminal to
    # ask on, outlives the signature: it goes with the agent.
    world.keyring.kill_agent()
    assert answered == []
    # Stock indeed: no spawner of the plugin's in place.
    assert ed.lua("return package.loaded['ttyoffer'] == nil and vim.fn.exists(':Bang') == 0") is True
