"""git over ssh from routes that give git no terminal, against a real sshd on
127.0.0.1 with a passphrase-protected key and no agent: git's core.sshCommand
(libexec/ttyoffer-ssh) leases a terminal of the editor's as ssh's own, and
ssh asks in the prompt window. Vimscript jobstart() and mini.git's `:Git!
push` (pinned mini.nvim) in the real TUI, the passphrase typed there;
fugitive's `:Git push` is tests/e2e/test_git_push.py's (fugitive gives git a
terminal of its own, where ssh asks as without us). Vimscript system(),
which blocks the editor, fails as stock within about a second and says
which :Bang to run; mini.git's waiting `:Git push` is answered inside its
wait; lazy.nvim's GIT_SSH_COMMAND (BatchMode) fails exactly as
stock: git never runs ours."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pynvim
import pytest

from fixtures import make_ssh_key
from harness import Editor, Sandbox, editor, wait_until
from sshd import SshPush, SshServer, clean_client_env, git, make_ssh_push, ssh_reading_its_terminal
from test_git_push import ASKS, WRONG, prompt_of, unwrapped
from third_party import plugin
from tui import Tui

pytestmark = pytest.mark.e2e


def ssh_asking(push: SshPush) -> int:
    return wait_until(lambda: ssh_reading_its_terminal(push.ssh_config), timeout=30, what="ssh asking")[0]


def ssh_processes(push: SshPush) -> list[int]:
    """Every process started with the push's ssh config (ssh -F), asking or
    not."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if os.fsencode(push.ssh_config) in cmdline.read_bytes().split(b"\0"):
                found.append(int(cmdline.parent.name))
        except OSError:
            continue  # gone meanwhile
    return found


def fetched(push: SshPush) -> bool:
    """The work repository knows the bare one's main (put there first)."""
    done = subprocess.run(
        ["git", "-C", str(push.work), "rev-parse", "-q", "--verify", "refs/remotes/origin/main"],
        capture_output=True,
    )
    return done.returncode == 0


@contextmanager
def tui_in(box: Sandbox, folder: Path) -> Iterator[tuple[Tui, Editor]]:
    """The real TUI of `box` in `folder`, its host ready."""
    term = Tui(box, [], 24, 120)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        nvim.command(f"cd {folder}")
        yield term, ed
    finally:
        nvim.close()
        term.close()


@pytest.fixture
def tui(registered_sandbox: Sandbox, ssh_push: SshPush, tmp_path: Path) -> Iterator[tuple[Tui, Editor]]:
    """The real TUI in the push's work repository, with no agent."""
    box = Sandbox(tmp_path / "tui")
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    clean_client_env(box.env)
    with tui_in(box, ssh_push.work) as both:
        yield both


def answer_in_the_window(
    term: Tui, ed: Editor, push: SshPush, wrong_first: bool = False, pace: float = 0.0
) -> None:
    """ssh's question shows in the prompt window; the passphrase typed in the
    TUI answers it (after a wrong one, asked again in the same window), `pace`
    seconds between keys (0: at once)."""
    question = unwrapped(prompt_of(push))

    def asked() -> int:
        return sum(unwrapped(ed.buf_text(win)).count(question) for win in ed.float_wins())

    wait_until(asked, timeout=30, what="the question in the prompt window")
    term.wait_text("Enter passphrase", timeout=30)  # drawn on the screen
    if wrong_first:
        ssh_asking(push)
        term.type(WRONG + "\r")
        wait_until(lambda: asked() == 2, timeout=30, what="asked again")
    ssh_asking(push)
    for key in push.passphrase + "\r" if pace else [push.passphrase + "\r"]:
        term.type(key)
        time.sleep(pace)


def nothing_leaked(term: Tui, ed: Editor, push: SshPush) -> None:
    with term.lock:
        raw = bytes(term.raw)
    assert push.passphrase.encode() not in raw and WRONG.encode() not in raw
    messages = ed.nvim.api.exec2("messages", {"output": True})["output"]
    assert push.passphrase not in messages


@pytest.mark.tui
@pytest.mark.parametrize("command", ["push", "fetch"])
def test_vimscript_jobstart_asks_in_the_window(
    command: str, tui: tuple[Tui, Editor], ssh_push: SshPush
) -> None:
    term, ed = tui
    if command == "fetch":
        # Something to fetch: the commit, put in the bare repository beside the editor.
        git("--git-dir", str(ssh_push.bare), "fetch", "-q", str(ssh_push.work), "main:main")
    # Typed as a user types it: a Vimscript job (no pty: no terminal for ssh).
    term.type(
        f":let g:done = -1 | call jobstart(['git', '{command}', '-q'], "
        "{'on_exit': {j, c, e -> execute('let g:done = ' . c)}})\r"
    )
    answer_in_the_window(term, ed, ssh_push, wrong_first=command == "push")
    wait_until(lambda: ed.nvim.vars["done"] != -1, timeout=30, what="git to end")
    assert ed.nvim.vars["done"] == 0
    if command == "push":
        assert ssh_push.pushed()
    else:
        assert fetched(ssh_push)
    wait_until(lambda: not ed.float_wins(), timeout=30, what="the window to go")
    wait_until(lambda: not ssh_push.server.sessions(), timeout=30, what="sshd's session to end")
    nothing_leaked(term, ed, ssh_push)


def mini_git_box(registered_sandbox: Sandbox, folder: Path) -> Sandbox:
    mini = plugin("echasnovski/mini.nvim")
    box = Sandbox(folder, extra_init=f"vim.opt.rtp:append({str(mini)!r})\nrequire('mini.git').setup()\n")
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    clean_client_env(box.env)
    return box


@pytest.mark.tui
def test_mini_git_bang_push_asks_in_the_window(
    registered_sandbox: Sandbox, ssh_push: SshPush, tmp_path: Path
) -> None:
    with tui_in(mini_git_box(registered_sandbox, tmp_path / "mini"), ssh_push.work) as (term, ed):
        # mini.git runs git with vim.uv.spawn: no terminal, no $NVIM.
        term.type(":Git! push -q\r")
        answer_in_the_window(term, ed, ssh_push)
        wait_until(ssh_push.pushed, timeout=30, what="the push")
        wait_until(lambda: not ed.float_wins(), timeout=30, what="the window to go")
        nothing_leaked(term, ed, ssh_push)


@pytest.mark.tui
def test_mini_git_push_waiting_for_git_asks_in_the_window(
    registered_sandbox: Sandbox, ssh_push: SshPush, tmp_path: Path
) -> None:
    """Without !, mini.git waits for git in a vim.wait() of its own, where
    the editor reads no key. Its git, spawned through the wrapped
    vim.uv.spawn, has a terminal of its own, so ssh asks there; the keys
    typed reach the window all the same (offer/held.lua), inside the wait,
    and the push is done with nothing told."""
    with tui_in(mini_git_box(registered_sandbox, tmp_path / "mini"), ssh_push.work) as (term, ed):
        term.type(":Git push -q\r")
        answer_in_the_window(term, ed, ssh_push, pace=0.1)  # a person's pace
        wait_until(ssh_push.pushed, timeout=30, what="the push")
        term.wait_gone("╭", timeout=30)
        assert all_notices(ed) == [] and ed.float_wins() == []
        nothing_leaked(term, ed, ssh_push)


def all_notices(ed: Editor) -> list[str]:
    notices: list[str] = ed.lua("return require('ttyoffer').status().notices")
    return notices


def notices(ed: Editor) -> list[str]:
    return [n for n in ed.lua("return require('ttyoffer').status().notices") if "ssh" in n]


def test_vimscript_system_fails_at_once_and_says_what_to_run(sandbox: Sandbox, ssh_push: SshPush) -> None:
    """system() blocks the editor: no window can open. ssh runs as stock
    (no terminal: it cannot ask, and fails) after the wrapper's second, and
    once the editor is free it is told which :Bang answers it."""
    clean_client_env(sandbox.env)
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {ssh_push.work}")
        results = {}
        for name in ("stock", "wrapped"):
            ed.lua("require('ttyoffer').setup({ routes = { git = ... } })", name == "wrapped")
            started = time.monotonic()
            output = ed.nvim.eval("system('git fetch')")
            results[name] = (ed.nvim.vvars["shell_error"], output, time.monotonic() - started)
        assert results["wrapped"][:2] == results["stock"][:2]
        assert results["stock"][0] != 0 and "Permission denied" in results["stock"][1]
        # Failed without a wait of its own (the lease's second; figures in
        # bench blocked_ssh), not after a timeout of git's or ssh's.
        assert results["wrapped"][2] < 15, results
        told = wait_until(lambda: notices(ed), timeout=30, what="the notice")
        assert told == ["(ttyoffer) editor busy, ssh could not ask: run :Bang 'git' 'fetch' to answer it"]
        assert ed.float_wins() == []


def test_lazy_nvims_batch_mode_fails_as_stock(sandbox: Sandbox, ssh_push: SshPush) -> None:
    """lazy.nvim runs git with GIT_SSH_COMMAND="ssh -oBatchMode=yes" and
    GIT_TERMINAL_PROMPT=0 (lua/lazy/manage/process.lua): a GIT_SSH_COMMAND
    wins over any core.sshCommand, so ours never runs, nothing asks, and git
    fails exactly as stock. (The test's ssh config added, so that ssh reads
    nothing of the account's ~/.ssh.)"""
    clean_client_env(sandbox.env)
    env = {"GIT_SSH_COMMAND": f"ssh -oBatchMode=yes -F {ssh_push.ssh_config}", "GIT_TERMINAL_PROMPT": "0"}
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {ssh_push.work}")
        results = {}
        for name in ("stock", "wrapped"):
            ed.lua("require('ttyoffer').setup({ routes = { git = ... } })", name == "wrapped")
            ed.nvim.vars["lazy_env"] = env
            ed.nvim.command(
                "let g:lazy = {} | call jobstart(['git', 'fetch'], {'env': g:lazy_env, 'stderr_buffered': 1, "
                "'on_stderr': {j, d, e -> extend(g:lazy, {'stderr': d})}, "
                "'on_exit': {j, c, e -> extend(g:lazy, {'code': c})}})"
            )
            results[name] = wait_until(
                lambda: (lambda r: r if "code" in r and "stderr" in r else None)(ed.nvim.vars["lazy"]),
                timeout=30,
                what="git fetch to end",
            )
        assert results["wrapped"] == results["stock"]
        assert results["stock"]["code"] == 128
        assert any("Permission denied" in line for line in results["stock"]["stderr"]), results
        assert ed.events("TtyOfferPresent") == [] and notices(ed) == []


def test_a_new_host_key_and_the_passphrase_ask_in_one_window(sandbox: Sandbox, ssh_push: SshPush) -> None:
    """A server ssh does not know yet (StrictHostKeyChecking ask, no known
    host): ssh asks whether to trust its key, then for the passphrase, both
    in the one window of a Vimscript job's git."""
    known = ssh_push.ssh_config.parent / "known_hosts"
    known.write_text("")
    config = ssh_push.ssh_config.read_text().replace("StrictHostKeyChecking yes", "StrictHostKeyChecking ask")
    ssh_push.ssh_config.write_text(config)
    clean_client_env(sandbox.env)
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {ssh_push.work}")
        ed.nvim.command(
            "let g:done = -1 | call jobstart(['git', 'push', '-q'], "
            "{'on_exit': {j, c, e -> execute('let g:done = ' . c)}})"
        )
        win = wait_until(lambda: ed.float_wins(), timeout=30, what="the prompt window")[0]
        wait_until(
            lambda: "continue connecting" in ed.buf_text(win), timeout=30, what="the host key question"
        )
        wait_until(lambda: ed.mode() == "t", what="terminal mode")
        ssh_asking(ssh_push)
        ed.nvim.input("yes<CR>")
        question = unwrapped(prompt_of(ssh_push))
        wait_until(
            lambda: question in unwrapped(ed.buf_text(win)), timeout=30, what="the passphrase question"
        )
        ssh_asking(ssh_push)
        ed.nvim.input(ssh_push.passphrase + "<CR>")
        wait_until(lambda: ed.nvim.vars["done"] != -1, timeout=30, what="git to end")
        assert ed.nvim.vars["done"] == 0
        assert ssh_push.pushed()
        assert "127.0.0.1" in known.read_text()  # ssh kept the key, as it would on a terminal
        assert len(ed.events("TtyOfferPresent")) == 1


def test_plenary_job_fetch_asks_in_the_window(
    registered_sandbox: Sandbox, ssh_push: SshPush, tmp_path: Path
) -> None:
    """plenary.job (pinned) spawns with vim.uv.spawn, no terminal: its git
    fetch asks in the window too."""
    plenary = plugin("nvim-lua/plenary.nvim")
    box = Sandbox(tmp_path / "plenary", extra_init=f"vim.opt.rtp:append({str(plenary)!r})\n")
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    clean_client_env(box.env)
    git("--git-dir", str(ssh_push.bare), "fetch", "-q", str(ssh_push.work), "main:main")
    with editor(box) as ed:
        ed.lua(
            "vim.g.done = -1 require('plenary.job'):new({ command = 'git', args = { 'fetch', '-q' }, "
            "cwd = ..., on_exit = vim.schedule_wrap(function(_, code) vim.g.done = code end) }):start()",
            str(ssh_push.work),
        )
        win = wait_until(lambda: ed.float_wins(), timeout=30, what="the prompt window")[0]
        question = unwrapped(prompt_of(ssh_push))
        wait_until(lambda: question in unwrapped(ed.buf_text(win)), timeout=30, what="the question")
        wait_until(lambda: ed.mode() == "t", what="terminal mode")
        ssh_asking(ssh_push)
        ed.nvim.input(ssh_push.passphrase + "<CR>")
        wait_until(lambda: ed.nvim.vars["done"] != -1, timeout=30, what="git to end")
        assert ed.nvim.vars["done"] == 0
        assert fetched(ssh_push)


def test_mini_git_push_that_asks_nothing_says_nothing(
    registered_sandbox: Sandbox, sshd_factory: Callable[..., SshServer], tmp_path: Path
) -> None:
    """A key that asks nothing (as one an agent holds): mini.git's waiting
    :Git push has its terminal, needs no window, and nobody is told anything."""
    key = make_ssh_key(tmp_path / "key" / "id_ed25519", "")
    push = make_ssh_push(sshd_factory(), tmp_path / "push", key, "")
    with editor(mini_git_box(registered_sandbox, tmp_path / "mini")) as ed:
        ed.nvim.command(f"cd {push.work}")
        ed.nvim.input(":Git push<CR>")
        wait_until(push.pushed, timeout=30, what="the push")
        assert all_notices(ed) == [] and ed.float_wins() == []


def test_declining_the_window_ends_ssh_and_git_fails(sandbox: Sandbox, ssh_push: SshPush) -> None:
    """Declined (the dismiss key): ssh's terminal is hung up, ssh ends, git
    fails as it does when ssh cannot ask, and nothing is left running."""
    clean_client_env(sandbox.env)
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {ssh_push.work}")
        ed.nvim.command(
            "let g:done = -1 | call jobstart(['git', 'push', '-q'], "
            "{'on_exit': {j, c, e -> execute('let g:done = ' . c)}})"
        )
        win = wait_until(lambda: ed.float_wins(), timeout=30, what="the prompt window")[0]
        wait_until(lambda: ASKS in ed.buf_text(win), timeout=30, what="the question")
        ssh_asking(ssh_push)
        assert ed.lua("return require('ttyoffer').dismiss()")
        wait_until(lambda: ed.nvim.vars["done"] != -1, timeout=30, what="git to end")
        assert ed.nvim.vars["done"] != 0 and not ssh_push.pushed()
        wait_until(lambda: not ed.float_wins(), timeout=30, what="the window to go")
        wait_until(lambda: not ssh_processes(ssh_push), timeout=30, what="no ssh left")
        wait_until(lambda: not ssh_push.server.sessions(), timeout=30, what="sshd's session to end")
