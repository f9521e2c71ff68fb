"""mini.deps (pinned mini.nvim) installing and updating plugins over ssh,
from bare repositories a real sshd on 127.0.0.1 serves, with a key whose
passphrase ssh must ask for and no agent: stock and wrapped in one run,
and typed in the real TUI."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pynvim
import pytest

from fixtures import make_ssh_key
from harness import Editor, Sandbox, editor, wait_until
from sshd import SshServer, clean_client_env, ssh_reading_its_terminal
from third_party import plugin
from tui import Tui

pytestmark = pytest.mark.e2e

PASSPHRASE = "deps over ssh"
NAMES = ("alpha", "beta", "gamma")


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], check=True, capture_output=True, text=True)
    return done.stdout.strip()


@dataclass
class Remote:
    """Plugins served over ssh: each a working repository (its commits) and
    a bare one behind sshd (ssh://…/NAME.git), with a passphrase key."""

    server: SshServer
    folder: Path
    ssh_config: Path

    def work(self, name: str) -> Path:
        return self.folder / "work" / name

    def bare(self, name: str) -> Path:
        return self.folder / "served" / f"{name}.git"

    def url(self, name: str) -> str:
        return self.server.url(self.bare(name))

    def commit(self, name: str, value: int) -> str:
        """A commit in `name` setting vim.g[name] to `value`, in the served
        repository too; its hash."""
        work = self.work(name)
        (work / "plugin").mkdir(parents=True, exist_ok=True)
        (work / "plugin" / f"{name}.lua").write_text(f"vim.g.{name} = {value}\n")
        git("-C", str(work), "add", ".")
        git(
            "-C",
            str(work),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            f"{name} {value}",
        )
        git("-C", str(work), "push", "-q", str(self.bare(name)), "main")
        return git("-C", str(work), "rev-parse", "HEAD")


def serve(server: SshServer, folder: Path) -> Remote:
    key = make_ssh_key(folder / "key" / "id_ed25519", PASSPHRASE)
    server.authorize(Path(f"{key}.pub"))
    remote = Remote(server, folder, server.client_config(folder / "ssh", key))
    for name in NAMES:
        git("init", "-q", "--bare", "-b", "main", str(remote.bare(name)))
        # mini.deps clones with --filter=blob:none: served as a forge serves
        # it (a server that does not filter makes git warn, and the warnings
        # a hit-enter prompt), its checkout's blobs fetched on demand.
        for option in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
            git("-C", str(remote.bare(name)), "config", option, "true")
        git("init", "-q", "-b", "main", str(remote.work(name)))
        remote.commit(name, 1)
    return remote


@pytest.fixture
def remote(sshd_factory: Callable[..., SshServer], tmp_path: Path) -> Remote:
    return serve(sshd_factory(), tmp_path / "remote")


def deps_box(registered_sandbox: Sandbox, folder: Path, remote: Remote, threads: int = 0) -> Sandbox:
    """An editor with mini.deps installing into `folder`/site (`threads` git
    at once: 0 for mini.deps' own choice); git runs ssh with the test's
    config (core.sshCommand in a global config of its own)."""
    mini = plugin("echasnovski/mini.nvim")
    site = folder / "site"
    job = f", job = {{ n_threads = {threads} }}" if threads else ""
    box = Sandbox(
        folder / "nvim",
        extra_init=f"vim.opt.rtp:append({str(mini)!r})\n"
        f"require('mini.deps').setup({{ path = {{ package = {str(site)!r} }}{job} }})\n",
    )
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    clean_client_env(box.env)
    gitconfig = folder / "gitconfig"
    gitconfig.write_text(f"[core]\n\tsshCommand = ssh -F {remote.ssh_config}\n")
    box.env["GIT_CONFIG_GLOBAL"] = str(gitconfig)
    box.env["GIT_CONFIG_NOSYSTEM"] = "1"
    return box


def installed(folder: Path, name: str) -> Path:
    return folder / "site" / "pack" / "deps" / "opt" / name


@contextmanager
def tui_of(box: Sandbox) -> Iterator[tuple[Tui, Editor]]:
    term = Tui(box, [], 30, 120)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        yield term, ed
    finally:
        nvim.close()
        term.close()


RECORD_NOTIFY = """
_G.said = {}
local notify = vim.notify
vim.notify = function(msg, ...)
  table.insert(_G.said, msg)
  return notify(msg, ...)
end
"""


# The same, kept from the screen: mini.deps' errors for declined fetches
# (several lines each) would stop at a hit-enter prompt, which holds every
# request the test makes of the editor.
RECORD_NOTIFY_QUIETLY = """
_G.said = {}
vim.notify = function(msg)
  table.insert(_G.said, msg)
end
"""


def said(ed: Editor) -> list[str]:
    """What mini.deps said (vim.notify), ttyoffer's notices left out."""
    return [m for m in ed.lua("return _G.said") if not m.startswith("(ttyoffer)")]


def notices(ed: Editor) -> list[str]:
    return list(ed.lua("return require('ttyoffer').status().notices"))


def install_from_the_served(remote: Remote, folder: Path, name: str) -> None:
    """`name` installed as mini.deps installs it, its origin the ssh URL,
    without asking (cloned from the served folder itself)."""
    path = installed(folder, name)
    git("clone", "-q", "--origin", "origin", str(remote.bare(name)), str(path))
    git("-C", str(path), "remote", "set-url", "origin", remote.url(name))


def deps_run(ed: Editor, command: str, ends: str, decline: bool = False) -> list[str]:
    """`command` typed (not an RPC request: as a user runs it), then what
    mini.deps said once it said `ends`; with `decline`, the first prompt
    window declined, and those of its burst with it."""
    ed.lua("_G.said = {}")
    ed.nvim.input(f"{command}<CR>")
    if decline:
        wait_until(ed.float_wins, timeout=60, what="the prompt window")
        ed.lua("require('ttyoffer').dismiss_all()")
    wait_until(lambda: any(ends in m for m in said(ed)), timeout=120, what=f"mini.deps to say {ends!r}")
    return said(ed)


STOCK_FAILS = (
    "ERROR CODE 128",
    "Permission denied (publickey).",
    "fatal: Could not read from remote repository.",
)


@pytest.mark.parametrize("action", ["add", "update"])
def test_mini_deps_over_ssh_reports_what_stock_reports(
    registered_sandbox: Sandbox, remote: Remote, tmp_path: Path, action: str
) -> None:
    """The question asked inside mini.deps' own vim.wait() declined in its
    window (ttyoffer.dismiss_all(), as the <M-q> key): ssh's terminal is
    hung up, and the same question again in the burst declined with no
    window. mini.deps must then fail for the same plugins as without
    ttyoffer (ssh with no terminal: Permission denied, git's 128), nothing
    installed or updated: the declined git ends with 129, a failure
    (:help ttyoffer-hangup), never taken for a success."""
    results = {}
    for state in ("off", "on"):
        folder = tmp_path / state
        with editor(deps_box(registered_sandbox, folder, remote)) as ed:
            ed.lua(RECORD_NOTIFY)
            ed.nvim.command(f"TtyOffer {state}")
            if action == "add":
                deps_run(ed, add_line(remote, "alpha"), "alpha", decline=state == "on")
                wait_until(lambda: len(said(ed)) >= 2, timeout=120, what="mini.deps' result")
                changed = [installed(folder, "alpha").exists()]
            else:
                before = {}
                for name in NAMES:
                    install_from_the_served(remote, folder, name)
                    before[name] = git("-C", str(installed(folder, name)), "rev-parse", "HEAD")
                    ed.nvim.command(f"lua MiniDeps.add({{ source = '{remote.url(name)}', name = '{name}' }})")
                for name in NAMES:
                    remote.commit(name, 2 if state == "off" else 3)
                wait_until(lambda: not remote.server.sessions(), timeout=30, what="no ssh session")
                deps_run(ed, ":DepsUpdate!", "update", decline=state == "on")
                wait_until(lambda: len(said(ed)) >= 1 + len(NAMES), timeout=120, what="mini.deps' results")
                changed = [
                    git("-C", str(installed(folder, name)), "rev-parse", "HEAD") != before[name]
                    for name in NAMES
                ]
            if state == "on":
                assert notices(ed), "the user is told what was declined"
            results[state] = (sorted(said(ed)), changed)
            wait_until(lambda: not remote.server.sessions(), timeout=30, what="sshd's sessions to end")
    stock, wrapped = results["off"], results["on"]
    assert not any(stock[1]) and not any(wrapped[1])
    assert all(any(line in m for m in stock[0]) for line in STOCK_FAILS), stock
    assert failed_plugins(wrapped[0]) == failed_plugins(stock[0]) != set(), (stock, wrapped)
    assert any("ERROR CODE 129" in m for m in wrapped[0]), wrapped


def failed_plugins(messages: list[str]) -> set[str]:
    """The plugins mini.deps said an error for."""
    return {name for name in NAMES for m in messages if f"Error in `{name}`" in m}


def add_line(remote: Remote, name: str) -> str:
    return f":lua MiniDeps.add({{ source = '{remote.url(name)}', name = '{name}' }})"


# A person's pace: one key every 100 ms.
KEY_INTERVAL = 0.1


def type_slowly(term: Tui, keys: str) -> None:
    for key in keys:
        term.type(key)
        time.sleep(KEY_INTERVAL)


def presented(ed: Editor) -> int:
    return len(ed.events("TtyOfferPresent"))


def answer_next(term: Tui, ed: Editor, remote: Remote, count: int) -> None:
    """The `count`th prompt window asks for the key's passphrase while
    mini.deps holds the editor in its wait; typed there, at a person's pace."""
    wait_until(lambda: presented(ed) >= count, timeout=60, what=f"prompt window {count}")
    term.wait_text("Enter passphrase", timeout=60)  # drawn, inside mini.deps' wait
    wait_until(lambda: ssh_reading_its_terminal(remote.ssh_config), timeout=30, what="ssh asking")
    type_slowly(term, PASSPHRASE + "\r")


def nothing_leaked(term: Tui, ed: Editor) -> None:
    with term.lock:
        raw = bytes(term.raw)
    assert PASSPHRASE.encode() not in raw
    messages = ed.nvim.api.exec2("messages", {"output": True})["output"]
    assert PASSPHRASE not in messages and all(PASSPHRASE not in m for m in ed.lua("return _G.said"))


@pytest.mark.tui
def test_add_over_ssh_in_the_tui_asks_and_installs(
    registered_sandbox: Sandbox, remote: Remote, tmp_path: Path
) -> None:
    """In the real TUI, typed: MiniDeps.add() of plugins not installed yet,
    over ssh with a passphrase key. mini.deps waits for its git clone in a
    vim.wait() of its own, where the editor reads no key: the window asks
    all the same, the passphrase typed at a person's pace reaches it, and
    the plugin is installed. Stock, in the same run (an editor with no
    terminal, `:TtyOffer off`): ssh cannot ask, the clone fails and nothing
    is installed."""
    stock_folder = tmp_path / "stock"
    with editor(deps_box(registered_sandbox, stock_folder, remote)) as ed:
        ed.lua(RECORD_NOTIFY)
        ed.nvim.command("TtyOffer off")
        deps_run(ed, add_line(remote, "alpha"), "alpha")
        stock = wait_until(lambda: said(ed)[1:], timeout=120, what="stock's result")
        assert all(any(line in m for m in stock) for line in STOCK_FAILS), stock
        assert not installed(stock_folder, "alpha").exists()
    folder = tmp_path / "deps"
    with tui_of(deps_box(registered_sandbox, folder, remote)) as (term, ed):
        ed.lua(RECORD_NOTIFY)
        term.type(add_line(remote, "alpha") + "\r")
        answer_next(term, ed, remote, 1)
        # A partial clone (--filter=blob:none): its checkout fetches the
        # blobs it needs over a second ssh, which asks again, in the window.
        asked_again = "\n".join(term.lines()).count("Enter passphrase") + 1
        term._wait(
            lambda: "\n".join(term.lines()).count("Enter passphrase") >= asked_again or None,
            60,
            "ssh to ask again",
        )
        wait_until(lambda: ssh_reading_its_terminal(remote.ssh_config), timeout=30, what="ssh asking")
        type_slowly(term, PASSPHRASE + "\r")
        term.wait_gone("╭", timeout=60)
        got = wait_until(lambda: said(ed)[1:], timeout=30, what="mini.deps' result")
        assert got == ["(mini.deps) (1/1) Installed `alpha`"], said(ed)
        assert git("-C", str(installed(folder, "alpha")), "log", "-1", "--format=%s") == "alpha 1"
        assert presented(ed) == 1 and notices(ed) == [] and not ed.float_wins()
        wait_until(lambda: not remote.server.sessions(), timeout=30, what="sshd's session to end")
        nothing_leaked(term, ed)


def update_all(term: Tui, ed: Editor) -> None:
    ed.lua("_G.said = {}")
    term.type(":DepsUpdate!\r")


def heads(folder: Path) -> dict[str, str]:
    return {name: git("-C", str(installed(folder, name)), "rev-parse", "HEAD") for name in NAMES}


def installed_from_the_served(ed: Editor, remote: Remote, folder: Path) -> dict[str, str]:
    """Every plugin installed and added (no question), new commits served."""
    for name in NAMES:
        install_from_the_served(remote, folder, name)
        ed.nvim.command(f"lua MiniDeps.add({{ source = '{remote.url(name)}', name = '{name}' }})")
    before = heads(folder)
    for name in NAMES:
        remote.commit(name, int(git("-C", str(remote.work(name)), "rev-list", "--count", "HEAD")) + 1)
    return before


def updated_said(ed: Editor) -> list[str]:
    """What mini.deps said of the update once it was over (it says
    `Done`/`Nothing to update`-like last words per plugin, then the end)."""
    wait_until(lambda: len(said(ed)) >= 1 + len(NAMES), timeout=180, what="mini.deps' results")
    return said(ed)


@pytest.mark.tui
def test_a_burst_of_updates_over_ssh_is_asked_once_each_in_the_tui(
    registered_sandbox: Sandbox, remote: Remote, tmp_path: Path
) -> None:
    """`:DepsUpdate!` of three plugins over ssh, typed in the real TUI: each
    git fetch asks once, in its window, inside mini.deps' wait, and is
    answered there; every plugin is updated. Stock first, in the same run
    (an editor with no terminal, `:TtyOffer off`): every fetch fails,
    nothing is updated."""
    stock_folder = tmp_path / "stock"
    with editor(deps_box(registered_sandbox, stock_folder, remote)) as ed:
        ed.lua(RECORD_NOTIFY)
        ed.nvim.command("TtyOffer off")
        stock_before = installed_from_the_served(ed, remote, stock_folder)
        deps_run(ed, ":DepsUpdate!", "update")
        stock = updated_said(ed)
        assert sum("Permission denied (publickey)" in m for m in stock) == len(NAMES), stock
        assert heads(stock_folder) == stock_before
    folder = tmp_path / "deps"
    with tui_of(deps_box(registered_sandbox, folder, remote)) as (term, ed):
        ed.lua(RECORD_NOTIFY)
        before = installed_from_the_served(ed, remote, folder)
        update_all(term, ed)
        for count in range(1, len(NAMES) + 1):
            answer_next(term, ed, remote, count)
        served = {name: git("-C", str(remote.work(name)), "rev-parse", "HEAD") for name in NAMES}
        # Fetched, then checked out (mini.deps' second wait, asking nothing).
        wait_until(lambda: heads(folder) == served, timeout=60, what="every plugin checked out")
        term.wait_gone("╭", timeout=30)
        wrapped = said(ed)
        assert not any("ERROR" in m for m in wrapped), wrapped
        assert all(served[name] != before[name] for name in NAMES)
        assert presented(ed) == len(NAMES) and notices(ed) == []
        wait_until(lambda: not remote.server.sessions(), timeout=30, what="sshd's sessions to end")
        nothing_leaked(term, ed)


@pytest.mark.tui
def test_a_burst_of_updates_over_ssh_is_declined_once_for_all_in_the_tui(
    registered_sandbox: Sandbox, remote: Remote, tmp_path: Path
) -> None:
    """The same three updates, all three git at once: the window asks, "2
    more waiting" at its foot, and the key that declines all (<M-q>), typed
    inside mini.deps' wait, declines the three; one message says so,
    nothing is updated and no ssh is left. (One git at a time, each asks
    after the decline, and asks again once the burst's 3 s have passed
    without it: a loaded machine starts git and ssh slower than that; and a
    question on its way as the decline reaches the host was seen asked
    again in a window. Both are the storm's, burst.py, left to its owner.)"""
    folder = tmp_path / "deps"
    with tui_of(deps_box(registered_sandbox, folder, remote, threads=len(NAMES))) as (term, ed):
        ed.lua(RECORD_NOTIFY_QUIETLY)
        before = installed_from_the_served(ed, remote, folder)
        update_all(term, ed)
        term.wait_text(f"{len(NAMES) - 1} more waiting · <M-q> declines all", timeout=60)
        wait_until(lambda: ssh_reading_its_terminal(remote.ssh_config), timeout=30, what="ssh asking")
        term.type("\x1bq")  # <M-q>, as the terminal sends it
        updated_said(ed)
        told = wait_until(lambda: notices(ed), timeout=30, what="the decline's message")
        assert len(told) == 1 and "declined 3 questions, and the same again in this burst" in told[0], told
        assert heads(folder) == before
        term.wait_gone("╭", timeout=30)
        assert presented(ed) == 1 and not ed.float_wins()  # the one window shown
        wait_until(lambda: not ssh_reading_its_terminal(remote.ssh_config), timeout=30, what="no ssh asking")
        wait_until(lambda: not remote.server.sessions(), timeout=30, what="sshd's sessions to end")


# What lazy.nvim logged of each task, its timings left out.
LAZY_TASKS = """
local plugin = require('lazy.core.config').plugins.alpha
return vim.tbl_map(function(task)
  return task.name .. ': ' .. task:output():gsub(' in %d+ms', '')
end, plugin._.tasks or {})
"""


def test_lazy_nvim_update_over_ssh_fails_as_stock(
    registered_sandbox: Sandbox, remote: Remote, tmp_path: Path
) -> None:
    """lazy.nvim (pinned) updates the same served repository with its own
    GIT_SSH_COMMAND="ssh -oBatchMode=yes": ssh never asks, and the update
    fails with stock's very words, no window and nothing told. (An `ssh` of
    the test's first in PATH gives ssh the test's config: BatchMode stays
    lazy.nvim's.)"""
    lazy = plugin("folke/lazy.nvim")
    root = tmp_path / "lazy"
    shim = tmp_path / "bin" / "ssh"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec /usr/bin/ssh -F {remote.ssh_config} "$@"\n')
    shim.chmod(0o755)
    path = root / "alpha"
    git("clone", "-q", "--origin", "origin", str(remote.bare("alpha")), str(path))
    git("-C", str(path), "remote", "set-url", "origin", remote.url("alpha"))
    box = Sandbox(
        tmp_path / "nvim",
        extra_init=f"vim.opt.rtp:prepend({str(lazy)!r})\n"
        f"require('lazy').setup({{ {{ url = {remote.url('alpha')!r}, name = 'alpha' }} }}, {{\n"
        f"  root = {str(root)!r}, lockfile = {str(tmp_path / 'lock.json')!r},\n"
        "  install = { missing = false }, rocks = { enabled = false }, checker = { enabled = false },\n"
        "  change_detection = { enabled = false },\n"
        "  performance = { reset_packpath = false, rtp = { reset = false } },\n"
        "})\n"
        # With no UI attached lazy.nvim prints git's output instead of
        # logging it: logged, as for a user.
        "require('lazy.core.config').headless = function() return false end\n",
    )
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    clean_client_env(box.env)
    box.env["PATH"] = f"{shim.parent}:{box.env['PATH']}"
    remote.commit("alpha", 2)
    with editor(box) as ed:
        results = {}
        for state in ("off", "on"):
            ed.nvim.command(f"TtyOffer {state}")
            ed.nvim.vars["lazy_done"] = 0
            ed.nvim.input(
                ":lua require('lazy').update({ wait = true, show = false }) vim.g.lazy_done = 1<CR>"
            )
            wait_until(lambda: ed.nvim.vars["lazy_done"] == 1, timeout=120, what="lazy.nvim's update")
            results[state] = ed.lua(LAZY_TASKS)
        assert results["on"] == results["off"]
        assert any("Permission denied (publickey)" in line for line in results["off"]), results
        assert ed.float_wins() == [] and ed.events("TtyOfferPresent") == [] and notices(ed) == []
        assert git("-C", str(path), "log", "-1", "--format=%s") == "alpha 1"
