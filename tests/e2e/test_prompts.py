"""Every prompt family the README and :help name, proven end to end: the real
program asks on its terminal, the question shows in the prompt window, keys
typed there as a user types them answer it, and the command ends as it would
in a terminal. Each through every route a command takes into the editor:
`:Bang`, `:!` as typed, a Lua plugin's `vim.fn.jobstart()` and its
`vim.system():wait()` (and sudo once more in the real TUI).

ssh, sudo and su need accounts with passwords, so those tests run as root
(CI does) and skip otherwise: two accounts are made for the module, one
the editor runs as ("me": sudo asks for its password, a sudoers rule lets it
run true), one to log in to and to su to ("other"), served by a real sshd on
127.0.0.1 (tests/sshd.py) that checks passwords itself. Both accounts, the
rule and the server are removed afterwards. Python's getpass and a program
that opens /dev/tty itself need nothing of the kind and run as anyone.

No secret typed in a window is found afterwards in the editor's messages,
history or registers, in what it and its host wrote (logs at DEBUG, shada),
or in the server's log."""

from __future__ import annotations

import hashlib
import importlib
import itertools
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pynvim
import pytest

from fixtures import make_ssh_key
from harness import ROOT, Editor, Sandbox, editor, wait_until
from sshd import SshdOptions, SshServer, git, sshd
from tui import PtyScreen, Tui, wait_listening
from users import (
    PATH,
    Account,
    Reach,
    UserBox,
    accounts,
    editor_argv,
    make_box,
    reach_for,
    sudoers_rule,
    user_editor,
    world_readable_folder,
)

pytestmark = pytest.mark.e2e

ROUTES = ("bang", "typed", "jobstart", "system")

# A stand-in for a Lua plugin: stock calls of vim.fn.jobstart() and of
# vim.system():wait() (in a mapping, as a plugin's command runs), each
# result ({code, output}: stdout then stderr, by lines) appended to
# _G.stand_in_results; _G.stand_in_waiting while the wait lasts.
STAND_IN = r"""
_G.stand_in_results = {}
local function lines(text)
  local out = {}
  for _, line in ipairs(vim.split(text, '\n')) do
    line = line:gsub('\r$', '')
    if line ~= '' then
      table.insert(out, line)
    end
  end
  return out
end
package.loaded['stand_in'] = {
  jobstart = function(argv)
    local streams, code = {}, nil
    local function finish()
      if code ~= nil and streams.stdout and streams.stderr then
        local output = vim.list_extend(lines(streams.stdout), lines(streams.stderr))
        table.insert(_G.stand_in_results, { code = code, output = output })
      end
    end
    local function collect(_, data, name)
      streams[name] = table.concat(data, '\n')
      finish()
    end
    return vim.fn.jobstart(argv, {
      stdout_buffered = true,
      stderr_buffered = true,
      on_stdout = collect,
      on_stderr = collect,
      on_exit = function(_, exit_code)
        code = exit_code
        finish()
      end,
    })
  end,
  system = function(argv)
    _G.stand_in_waiting = true
    local result = vim.system(argv, { text = true }):wait()
    _G.stand_in_waiting = false
    local output = vim.list_extend(lines(result.stdout or ''), lines(result.stderr or ''))
    table.insert(_G.stand_in_results, { code = result.code, output = output })
  end,
}
vim.keymap.set('n', '<F7>', function()
  require('stand_in').system(_G.stand_in_argv)
end)
"""


def install_stand_in(ed: Editor) -> None:
    ed.lua(STAND_IN)


def start(ed: Editor, route: str, argv: list[str]) -> None:
    """Start `argv` from the editor's folder as the route does: a command
    line for :Bang and a typed :!, a list for the Lua spawners."""
    line = shlex.join(argv)
    if route == "bang":
        ed.nvim.command("Bang " + line)
    elif route == "typed":
        ed.nvim.input(":!" + line.replace("<", "<lt>") + "<CR>")
    elif route == "jobstart":
        assert ed.lua("return require('stand_in').jobstart(...)", argv) > 0
    elif route == "system":
        ed.lua("_G.stand_in_argv = ...", argv)
        ed.nvim.input("<F7>")
    else:
        raise AssertionError(route)


def result(ed: Editor, route: str, nth: int = 1, timeout: float = 60.0) -> tuple[int, list[str]]:
    """The exit code and output lines of the route's `nth` command of the test."""
    if route in ("bang", "typed"):
        done = ed.wait_event("TtyOfferBangDone", nth, timeout)[nth - 1]["data"]
        if route == "typed":
            assert ed.nvim.vvars["shell_error"] == done["code"]
        return done["code"], done["output"]

    def ended() -> dict[str, Any] | None:
        results: list[dict[str, Any]] = ed.lua("return _G.stand_in_results")
        return results[nth - 1] if len(results) >= nth else None

    found = wait_until(ended, timeout, f"the plugin's command #{nth} to end")
    return found["code"], found["output"]


def unwrapped(text: str) -> str:
    """Text without line breaks and spaces: the terminal wraps a question
    wider than the window."""
    return "".join(text.split())


def asked(ed: Editor, question: str, times: int = 1, timeout: float = 30.0) -> str:
    """Waits until the prompt window shows `question` (for the `times`th
    time) with the editor in terminal mode, ready for keys; the window's
    text."""
    win = wait_until(lambda: ed.float_wins(), timeout, "the prompt window")[0]

    def showing() -> str | None:
        text = ed.buf_text(win)
        return text if unwrapped(text).count(unwrapped(question)) >= times else None

    text = wait_until(showing, timeout, f"{question!r} in the window ({times})")
    # Keys reach the window in terminal mode; during vim.system():wait()
    # the editor stays in the plugin's mapping and the wait passes them on.
    wait_until(lambda: ed.mode() == "t" or ed.lua("return _G.stand_in_waiting == true"), what="terminal mode")
    return text


def answer(ed: Editor, keys: str) -> None:
    """`keys` and Enter, typed into the window (nothing in them is a key
    notation: the secrets here are letters, digits, - and _)."""
    ed.nvim.input(keys.replace("<", "<lt>") + "<CR>")


def window_gone(ed: Editor) -> None:
    wait_until(lambda: ed.float_wins() == [], 15, "the prompt window to close")


def found_in_the_editor(ed: Editor, secrets: list[str]) -> list[str]:
    """Where in the running editor one of `secrets` is: its messages,
    command-line and other histories, registers, any buffer."""
    places = {
        "messages": ed.nvim.command_output("messages"),
        "history": ed.nvim.command_output("history all"),
    }
    places["registers"] = "\n".join(
        ed.lua(
            "local out = {} for _, r in ipairs(vim.split(..., '')) do "
            "local ok, v = pcall(vim.fn.getreg, r) if ok then table.insert(out, v) end end return out",
            '"0123456789abcdefghijklmnopqrstuvwxyz-.:/#=',
        )
    )
    places["buffers"] = "\n".join(
        ed.lua(
            "local out = {} for _, b in ipairs(vim.api.nvim_list_bufs()) do "
            "vim.list_extend(out, vim.api.nvim_buf_get_lines(b, 0, -1, false)) end return out"
        )
    )
    return [f"{where}: {secret!r}" for where, text in places.items() for secret in secrets if secret in text]


def found_in_files(paths: list[Path], secrets: list[str]) -> list[str]:
    return [
        f"{path}: {secret!r}"
        for path in paths
        if path.is_file()
        for secret in secrets
        if secret.encode() in path.read_bytes()
    ]


# --------------------------------------------------------------------------
# The accounts, the sudoers rule, the server


WRONG = ["wrong-one-1x", "wrong-two-2y", "wrong-three-3z"]  # typed as wrong passwords
REPO_TEXT = "cloned over ssh with a passphrase\n"


@dataclass
class World:
    me: Account  # the editor runs as this account
    other: Account  # logged in to over ssh, su'd to
    reach: Reach
    server: SshServer
    fingerprint: str  # the server's host key, as ssh shows it: SHA256:…
    passphrase: str  # of me's ~/.ssh/id_ed25519
    repo: Path  # a bare repository of other's, served over ssh

    @property
    def secrets(self) -> list[str]:
        return [self.me.password, self.other.password, self.passphrase, *WRONG]

    @property
    def known_hosts(self) -> Path:
        return self.me.home / ".ssh" / "known_hosts"

    def forget_the_host(self) -> None:
        self.known_hosts.unlink(missing_ok=True)

    def know_the_host(self) -> None:
        self.known_hosts.write_text(f"[127.0.0.1]:{self.server.port} {self.server.host_public}\n")
        self.me.own(self.known_hosts)

    def host_is_known(self) -> bool:
        """ssh-keygen -F finds the server in me's known_hosts (which ssh
        writes hashed on Debian)."""
        found = subprocess.run(
            ["ssh-keygen", "-F", f"[127.0.0.1]:{self.server.port}", "-f", str(self.known_hosts)],
            capture_output=True,
            text=True,
        )
        return found.returncode == 0 and self.server.host_public.split()[1] in found.stdout

    def accepted(self, how: str) -> int:
        """How many logins of other's the server has accepted `how`
        ("password", "publickey")."""
        return self.server.log_text().count(f"Accepted {how} for {self.other.name} from 127.0.0.1")


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    if os.getuid() != 0:
        pytest.skip(
            "needs root: makes accounts with passwords (useradd, chpasswd) for sudo, su and an sshd "
            "that logs one in, and a rule in /etc/sudoers.d (CI runs as root)"
        )
    with ExitStack() as stack:
        # World-readable, unlike pytest's folders: the accounts read it.
        staging = world_readable_folder("ttyoffer-prompts-")
        stack.callback(shutil.rmtree, staging, ignore_errors=True)
        me, other = stack.enter_context(accounts("me", "other"))
        stack.enter_context(
            sudoers_rule(
                me,
                # No lecture: it comes once per account, whichever test is first.
                f"Defaults:{me.name} lecture=never",
                f"{me.name} ALL=(root) /usr/bin/true",
            )
        )
        reach = reach_for(me, staging)
        # Password and public-key logins of other's; no keyboard-interactive,
        # as in Debian's sshd_config. As root without PAM, sshd checks the
        # password against /etc/shadow itself.
        options = SshdOptions(user=other.name, password=True, extra=("KbdInteractiveAuthentication no",))
        server = stack.enter_context(sshd(staging / "sshd", options))
        listed = subprocess.run(
            ["ssh-keygen", "-l", "-E", "sha256", "-f", str(server.folder / "host_ed25519.pub")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        # me's own key, in the place ssh looks by default, with a passphrase;
        # authorized on the server only while a test clones with it.
        passphrase = "clone-me-softly-42"
        make_ssh_key(me.home / ".ssh" / "id_ed25519", passphrase)
        (me.home / ".ssh").chmod(0o700)
        me.own(me.home / ".ssh")
        repo = make_served_repo(staging / "srv", other)
        yield World(me, other, reach, server, listed.stdout.split()[1], passphrase, repo)


def make_served_repo(folder: Path, owner: Account) -> Path:
    """A bare repository with one commit, owned by `owner` (git refuses a
    repository of someone else's)."""
    work = folder / "work"
    git("init", "-q", "-b", "main", str(work))
    (work / "README").write_text(REPO_TEXT)
    git("add", "README", cwd=work)
    git(
        "-c", "user.name=t", "-c", "user.email=t@ttyoffer.invalid", "-c", "commit.gpgSign=false",
        "commit", "-q", "-m", "first", cwd=work,
    )  # fmt: skip
    bare = folder / "repo.git"
    git("clone", "-q", "--bare", str(work), str(bare))
    owner.own(folder)
    return bare


_boxes = itertools.count(1)


@pytest.fixture
def me_ed(world: World) -> Iterator[Editor]:
    """An editor run as me, in its home, the stand-in plugin loaded; checked
    for the secrets typed at the end, and so are its files and the server's
    log."""
    box = make_box(world.me, world.reach, f"box{next(_boxes)}")
    with user_editor(box, world.reach) as ed:
        install_stand_in(ed)
        yield ed
        # Not when the test left the editor blocked (it has failed then).
        if not ed.nvim.api.get_mode()["blocking"]:
            assert found_in_the_editor(ed, world.secrets) == []
    assert found_in_files([*box.files(), world.server.log], world.secrets) == []


# --------------------------------------------------------------------------
# ssh to a host


@pytest.mark.parametrize("route", ROUTES)
def test_ssh_to_a_new_host_asks_its_key_then_the_password(world: World, me_ed: Editor, route: str) -> None:
    ed = me_ed
    world.forget_the_host()
    argv = ["ssh", "-p", str(world.server.port), f"{world.other.name}@127.0.0.1", "true"]
    password_prompt = f"{world.other.name}@127.0.0.1's password:"
    logins = world.accepted("password")
    start(ed, route, argv)
    # A host never seen: ssh shows its key's fingerprint and asks.
    shown = asked(ed, "Are you sure you want to continue connecting (yes/no/[fingerprint])?")
    assert unwrapped(f"ED25519 key fingerprint is {world.fingerprint}.") in unwrapped(shown)
    answer(ed, "yes")
    shown = asked(ed, password_prompt)
    assert "(yes/no/[fingerprint])? yes" in shown  # echoed, as ssh asks it
    answer(ed, world.other.password)
    code, output = result(ed, route)
    assert code == 0, output
    assert f"Warning: Permanently added '[127.0.0.1]:{world.server.port}' (ED25519)" in "\n".join(output)
    assert world.host_is_known()
    assert world.accepted("password") == logins + 1
    window_gone(ed)
    # Known now: the password alone, in a window of its own.
    start(ed, route, argv)
    shown = asked(ed, password_prompt)
    assert "continue connecting" not in shown
    answer(ed, world.other.password)
    code, output = result(ed, route, 2)
    assert (code, output) == (0, [])
    assert world.accepted("password") == logins + 2
    assert len(ed.events("TtyOfferPresent")) == 2
    wait_until(lambda: not world.server.sessions(), 30, "the server's sessions to end")


@pytest.mark.parametrize("route", ROUTES)
def test_three_wrong_ssh_passwords_end_with_sshs_own_error(world: World, me_ed: Editor, route: str) -> None:
    ed = me_ed
    world.know_the_host()
    start(ed, route, ["ssh", "-p", str(world.server.port), f"{world.other.name}@127.0.0.1", "true"])
    for times, wrong in enumerate(WRONG, 1):
        shown = asked(ed, f"{world.other.name}@127.0.0.1's password:", times)
        assert not [typed for typed in WRONG[: times - 1] if typed in shown]  # ssh turned echo off
        answer(ed, wrong)
    code, output = result(ed, route)
    assert code == 255
    assert f"{world.other.name}@127.0.0.1: Permission denied (publickey,password)." in output
    assert len(ed.events("TtyOfferPresent")) == 1  # one window for the three questions
    window_gone(ed)
    assert world.server.log_text().count(f"Failed password for {world.other.name}") >= 3
    wait_until(lambda: not world.server.sessions(), 30, "the server's sessions to end")


@pytest.mark.parametrize("route", ROUTES)
def test_git_clone_over_ssh_asks_the_keys_passphrase(world: World, me_ed: Editor, route: str) -> None:
    ed = me_ed
    world.know_the_host()
    world.server.authorize(world.me.home / ".ssh" / "id_ed25519.pub")
    clone = world.me.home / f"clone-{route}"
    logins = world.accepted("publickey")
    try:
        url = f"ssh://{world.other.name}@127.0.0.1:{world.server.port}{world.repo}"
        start(ed, route, ["git", "clone", url, clone.name])
        key = world.me.home / ".ssh" / "id_ed25519"
        asked(ed, f"Enter passphrase for key '{key}':")
        answer(ed, world.passphrase)
        code, output = result(ed, route)
        assert code == 0, output
        assert f"Cloning into '{clone.name}'..." in output
        assert (clone / "README").read_text() == REPO_TEXT
        assert world.accepted("publickey") == logins + 1
        window_gone(ed)
    finally:
        world.server.authorized_keys.write_text("")


def test_git_over_ssh_from_a_vimscript_job_asks_the_host_key_then_the_password(
    world: World, me_ed: Editor
) -> None:
    """A Vimscript jobstart() gives git no terminal: git's core.sshCommand
    (:help ttyoffer-git-ssh) leases one of the editor's for ssh, whose
    questions, a new host's key and then a password, ask in one window."""
    ed = me_ed
    world.forget_the_host()
    clone = world.me.home / "clone-vimscript-job"
    logins = world.accepted("password")
    url = f"ssh://{world.other.name}@127.0.0.1:{world.server.port}{world.repo}"
    ed.nvim.vars["clone_argv"] = ["git", "clone", "-q", url, clone.name]
    ed.nvim.command(
        "let g:done = -1 | call jobstart(g:clone_argv, "
        "{'on_exit': {j, c, e -> execute('let g:done = ' . c)}})"
    )
    asked(ed, "Are you sure you want to continue connecting (yes/no/[fingerprint])?")
    answer(ed, "yes")
    asked(ed, f"{world.other.name}@127.0.0.1's password:")
    answer(ed, world.other.password)
    wait_until(lambda: ed.nvim.vars["done"] != -1, 60, "git clone to end")
    assert ed.nvim.vars["done"] == 0
    assert (clone / "README").read_text() == REPO_TEXT
    assert world.host_is_known()
    assert world.accepted("password") == logins + 1
    assert len(ed.events("TtyOfferPresent")) == 1
    window_gone(ed)


# --------------------------------------------------------------------------
# sudo


@pytest.mark.parametrize("route", ROUTES)
def test_sudo_asks_for_the_users_password_and_retries_after_a_wrong_one(
    world: World, me_ed: Editor, route: str
) -> None:
    ed = me_ed
    question = f"[sudo] password for {world.me.name}:"
    # -k: cached credentials ignored (and none kept), so every run asks.
    start(ed, route, ["sudo", "-k", "true"])
    asked(ed, question)
    answer(ed, world.me.password)
    assert result(ed, route) == (0, [])
    window_gone(ed)
    # A wrong password: sudo's own "Sorry, try again." and question again,
    # in the same window.
    start(ed, route, ["sudo", "-k", "true"])
    asked(ed, question)
    answer(ed, WRONG[0])
    shown = asked(ed, question, 2, timeout=30)
    assert "Sorry, try again." in shown
    answer(ed, world.me.password)
    assert result(ed, route, 2) == (0, [])
    assert len(ed.events("TtyOfferPresent")) == 2


def test_sudo_gives_up_after_three_wrong_passwords(world: World, me_ed: Editor) -> None:
    ed = me_ed
    question = f"[sudo] password for {world.me.name}:"
    ed.nvim.command("Bang sudo -k true")
    for times, wrong in enumerate(WRONG, 1):
        shown = asked(ed, question, times, timeout=30)
        assert shown.count("Sorry, try again.") == times - 1
        assert not [typed for typed in WRONG[: times - 1] if typed in shown]  # sudo turned echo off
        answer(ed, wrong)
    code, output = result(ed, "bang")
    assert (code, output) == (1, ["sudo: 3 incorrect password attempts"])
    assert len(ed.events("TtyOfferPresent")) == 1  # one window for the three questions
    window_gone(ed)


def test_sudo_with_S_or_A_is_left_to_the_caller(world: World, me_ed: Editor) -> None:
    """sudo -S reads the password from its stdin, sudo -A from an askpass
    program: whoever starts it answers, no window opens."""
    ed = me_ed
    secret_file = world.me.home / "sudo-password"
    secret_file.write_text(world.me.password + "\n")
    askpass = world.me.home / "askpass"
    askpass.write_text(f"#!/bin/sh\ncat {secret_file}\n")
    askpass.chmod(0o700)
    world.me.own(secret_file, askpass)
    # -S from a Lua plugin that passes the password as the command's stdin.
    done = ed.lua(
        "return vim.system({'sudo', '-S', '-k', 'true'}, {stdin = ..., text = true}):wait()",
        world.me.password + "\n",
    )
    assert done["code"] == 0, done
    assert f"[sudo] password for {world.me.name}:" in done["stderr"]  # asked on stderr, not the terminal
    # -A with the caller's askpass program, from :Bang.
    ed.nvim.command(f"Bang SUDO_ASKPASS={askpass} sudo -A -k true")
    assert result(ed, "bang") == (0, [])
    assert ed.events("TtyOfferPresent") == []
    assert ed.float_wins() == []


# --------------------------------------------------------------------------
# su


@pytest.mark.parametrize("route", [r for r in ROUTES if r != "jobstart"])
def test_su_fails_at_once_without_a_window(world: World, me_ed: Editor, route: str) -> None:
    """su reads the password from its standard input (PAM's conversation,
    not /dev/tty), which :!, :Bang and vim.system() without `stdin` give
    /dev/null, as stock Neovim does: su asks on stderr, reads nothing and
    fails at once with its own error. No window, no hang."""
    ed = me_ed
    start(ed, route, ["su", "-c", "true", world.other.name])
    code, output = result(ed, route)
    assert code == 1
    assert "Password: su: Authentication failure" in output
    assert ed.events("TtyOfferPresent") == []


def test_su_from_jobstart_is_answered_by_the_caller(world: World, me_ed: Editor) -> None:
    """jobstart() gives the job a pipe for stdin: su asks on the job's
    stderr and reads the caller's answer (chansend()), no window."""
    ed = me_ed
    ed.lua(
        """
        local other, password = ...
        _G.su = { stderr = '' }
        local job
        job = vim.fn.jobstart({ 'su', '-c', 'id -un', other }, {
          on_stdout = function(_, data) _G.su.stdout = (_G.su.stdout or '') .. table.concat(data, '\\n') end,
          on_stderr = function(_, data)
            _G.su.stderr = _G.su.stderr .. table.concat(data, '\\n')
            if _G.su.stderr:find('Password: ') and not _G.su.answered then
              _G.su.answered = true
              vim.fn.chansend(job, password .. '\\n')
            end
          end,
          on_exit = function(_, code) _G.su.code = code end,
        })
        """,
        world.other.name,
        world.other.password,
    )
    su = wait_until(lambda: ed.lua("return _G.su.code ~= nil and _G.su"), 30, "su to end")
    assert su["code"] == 0, su
    assert su["stdout"].strip() == world.other.name
    assert ed.events("TtyOfferPresent") == []


def test_su_asks_in_a_runs_pane(world: World, me_ed: Editor) -> None:
    """A run's pane is the program's whole terminal, its stdin too: there
    su asks, takes the password typed and goes on."""
    ed = me_ed
    other = world.other.name
    ed.nvim.command(f"TtyRun su -c 'id -un' {other}")
    pane = wait_until(
        lambda: ed.lua(
            "local b = vim.api.nvim_get_current_buf() return vim.bo[b].buftype == 'terminal' and b or nil"
        ),
        what="the run's pane",
    )

    def pane_text() -> str:
        return "\n".join(ed.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", pane))

    wait_until(lambda: "Password:" in pane_text(), 30, "su asking in the pane")
    wait_until(lambda: ed.mode() == "t", what="terminal mode in the pane")
    answer(ed, world.other.password)
    done = ed.wait_event("TtyRunExit", timeout=30)[0]["data"]
    assert (done["code"], done["signal"]) == (0, 0)
    wait_until(lambda: other in pane_text().split("Password:", 1)[1], what="su's command's output")
    assert ed.events("TtyOfferPresent") == []  # the pane, not a prompt window


# --------------------------------------------------------------------------
# sudo in the real TUI, typed as :!


class UserTui(Tui):
    """Neovim's TUI in a pty, run as the box's account."""

    def __init__(self, box: UserBox, reach: Reach, rows: int = 30, cols: int = 100) -> None:
        self.socket = str(box.base / "tui.sock")
        argv = editor_argv(box, reach, "--listen", self.socket)
        PtyScreen.__init__(self, argv, {"PATH": PATH, "TERM": "xterm-256color"}, rows, cols)
        wait_listening(self.socket)


@pytest.mark.tui
def test_typed_sudo_in_the_real_tui(world: World) -> None:
    box = make_box(world.me, world.reach, f"box{next(_boxes)}")
    term = UserTui(box, world.reach)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        term.wait_text("~")
        term.type(":!sudo -k true\r")
        question = f"[sudo] password for {world.me.name}:"
        lines = term.wait_text(question, timeout=30)
        # In the window: a framed float whose title names the command.
        top = next(i for i, line in enumerate(lines) if "╭" in line)
        bottom = next(i for i, line in enumerate(lines) if "╰" in line)
        assert "sudo -k true" in lines[top]
        assert any(f"│{question}" in line for line in lines[top + 1 : bottom])
        term.type(WRONG[0] + "\r")
        term.wait_text("Sorry, try again.", timeout=30)
        term.type(world.me.password + "\r")
        done = ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]
        assert (done["code"], done["output"]) == (0, [])
        term.wait_gone("╭")
        assert ed.nvim.vvars["shell_error"] == 0
        assert found_in_the_editor(ed, world.secrets) == []
        with term.lock:
            raw = bytes(term.raw)
        assert not [s for s in world.secrets if s.encode() in raw]
    finally:
        nvim.close()
        term.close()
        world.me.end_processes()
    assert found_in_files(box.files(), world.secrets) == []


# --------------------------------------------------------------------------
# Python's getpass, a program that opens /dev/tty itself, git over HTTPS:
# no account needed, run by whoever runs the tests.

SECRET = "tty-secret-7Qx_w"
GETPASS = (
    "import getpass, hashlib; print(hashlib.sha256(getpass.getpass('Vault password: ').encode()).hexdigest())"
)
# Its stdin closed, the program opens /dev/tty, which becomes its stdin, turns
# echo off and asks there (no % or # or !, which :! would expand).
OWN_TTY = (
    "exec 0<&-; exec 0<>/dev/tty; stty -echo; printf 'One-time code: ' >&0; "
    'read -r code; stty echo; echo "$code" | sha256sum'
)


@pytest.fixture
def plugin_ed(sandbox: Sandbox, tmp_path: Path) -> Iterator[Editor]:
    """An editor of the tests' own account with the stand-in plugin and the
    host's log at DEBUG; the secret looked for in both at the end."""
    logs = tmp_path / "logs"
    logs.mkdir()
    sandbox.env.update(NVIM_PYTHON_LOG_FILE=str(logs / "python"), NVIM_PYTHON_LOG_LEVEL="DEBUG")
    with editor(sandbox) as ed:
        install_stand_in(ed)
        yield ed
        if not ed.nvim.api.get_mode()["blocking"]:
            assert found_in_the_editor(ed, [SECRET]) == []
    written = [*logs.iterdir(), *(sandbox.base / "state").rglob("*")]
    assert any(path.name.startswith("python") for path in written), "the host's log"
    assert found_in_files(written, [SECRET]) == []


@pytest.mark.parametrize("route", ROUTES)
def test_python_getpass(plugin_ed: Editor, route: str) -> None:
    ed = plugin_ed
    start(ed, route, [sys.executable, "-c", GETPASS])
    asked(ed, "Vault password:")
    answer(ed, SECRET)
    code, output = result(ed, route)
    assert (code, output) == (0, [hashlib.sha256(SECRET.encode()).hexdigest()])


@pytest.mark.parametrize("route", ROUTES)
def test_a_program_that_closes_stdin_and_opens_dev_tty(plugin_ed: Editor, route: str) -> None:
    ed = plugin_ed
    start(ed, route, ["sh", "-c", OWN_TTY])
    asked(ed, "One-time code:")
    answer(ed, SECRET)
    code, output = result(ed, route)
    assert code == 0, output
    assert output == [hashlib.sha256(SECRET.encode() + b"\n").hexdigest() + "  -"]


@pytest.mark.parametrize("route", [r for r in ROUTES if r != "bang"])  # :Bang: test_e2e_prompts
def test_git_https_username_and_password(plugin_ed: Editor, route: str) -> None:
    ed = plugin_ed
    ed.lua("vim.env.GIT_ASKPASS = nil vim.env.SSH_ASKPASS = nil vim.env.GIT_TERMINAL_PROMPT = nil")
    request = (
        "printf 'protocol=https\\nhost=git.example.com\\n\\n' | git -c credential.helper= credential fill"
    )
    start(ed, route, ["sh", "-c", request])
    asked(ed, "Username for 'https://git.example.com':")
    answer(ed, "alice")
    asked(ed, "Password for 'https://alice@git.example.com':")
    answer(ed, "https-pw-5")  # git prints it back: not one of the secrets looked for
    code, output = result(ed, route)
    assert code == 0, output
    assert "username=alice" in output and "password=https-pw-5" in output


# --------------------------------------------------------------------------
# The README's and :help's list of prompts: what these tests prove.

# Family (as the lists name it) -> the tests that prove it (file::function).
PROVEN = {
    "gpg": [
        "test_e2e_prompts::test_signed_commit_through_pinentry_curses",
        "test_routes::test_typed_bang_answers_pinentry_and_sets_shell_error",
        "test_routes::test_a_lua_plugin_jobstart_gets_the_prompt",
        "test_routes::test_vim_system_wait_lets_the_user_answer",
    ],
    "ssh": [
        "test_prompts::test_ssh_to_a_new_host_asks_its_key_then_the_password",
        "test_prompts::test_three_wrong_ssh_passwords_end_with_sshs_own_error",
        "test_prompts::test_git_clone_over_ssh_asks_the_keys_passphrase",
        "test_git_push::test_bang_git_push_asks_in_the_prompt_window",
        "test_e2e_prompts::test_ssh_keygen_passphrase",
    ],
    "sudo": [
        "test_prompts::test_sudo_asks_for_the_users_password_and_retries_after_a_wrong_one",
        "test_prompts::test_sudo_gives_up_after_three_wrong_passwords",
        "test_prompts::test_typed_sudo_in_the_real_tui",
    ],
    "git over HTTPS": [
        "test_e2e_prompts::test_git_https_credential_prompts",
        "test_prompts::test_git_https_username_and_password",
    ],
    "Python's getpass": ["test_prompts::test_python_getpass"],
    "/dev/tty": ["test_prompts::test_a_program_that_closes_stdin_and_opens_dev_tty"],
    "su": [
        "test_prompts::test_su_asks_in_a_runs_pane",
        "test_prompts::test_su_fails_at_once_without_a_window",
        "test_prompts::test_su_from_jobstart_is_answered_by_the_caller",
    ],
}
# What the lists say is not shown in a window, and the test that shows it.
LEFT_TO_THE_CALLER = {
    "sudo -S": "test_prompts::test_sudo_with_S_or_A_is_left_to_the_caller",
    "sudo -A": "test_prompts::test_sudo_with_S_or_A_is_left_to_the_caller",
}


def listed(text: str, marker: str) -> list[str]:
    """The items of the first list after the line with `marker`: lines
    that start with '- ', their continuations indented, up to the first
    line of anything else."""
    items: list[str] = []
    for line in text.split(marker, 1)[1].splitlines()[1:]:
        if line.startswith("- "):
            items.append(line[2:])
        elif items and line.startswith("  ") and line.strip():
            items[-1] += " " + line.strip()
        elif items:
            break
    return items


def family(item: str) -> str:
    """The family an item names: its text before the first colon, without
    Markdown emphasis."""
    return item.split(":", 1)[0].replace("*", "").strip()


README_LIST = "<!-- prompts proven: keep in step with tests/e2e/test_prompts.py PROVEN -->"
HELP_LIST = "*ttyoffer-prompts*"


@pytest.mark.parametrize("document", ["README.md", "doc/ttyoffer.txt"])
def test_the_lists_of_prompts_name_what_the_tests_prove(document: str) -> None:
    text = (ROOT / document).read_text()
    items = listed(text, README_LIST if document == "README.md" else HELP_LIST)
    assert [family(item) for item in items] == list(PROVEN), items
    # su is named with the one place it asks, and with why not elsewhere.
    su = items[list(PROVEN).index("su")]
    assert ":TtyRun su" in su and "standard input" in su, su
    flowing = " ".join(text.split())
    for words in LEFT_TO_THE_CALLER:
        assert f"`{words}`" in flowing, words
    for test in [*itertools.chain(*PROVEN.values()), *LEFT_TO_THE_CALLER.values()]:
        module, name = test.split("::")
        assert callable(getattr(importlib.import_module(module), name, None)), test
