"""Git that the plugin does not start itself: git's gpg.program, handed to
every git through the editor's environment, runs the user's gpg and makes it
ask where it can be answered, never on the editor's own screen. Real
gpg-agent with pinentry-curses, real git, the embedded Neovim."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

import ptyprocess
import pynvim
import pytest

from fixtures import Keyring
from harness import ROOT, Editor, Sandbox, editor, nvim_binary, wait_until
from third_party import plugin
from tui import Tui

WRAPPER = str(ROOT / "libexec" / "ttyoffer-gpg")
SSH_WRAPPER = str(ROOT / "libexec" / "ttyoffer-ssh")


@pytest.fixture
def editors_terminal() -> Iterator[tuple[int, str]]:
    """A terminal standing for the one the editor was started from, whose
    name the shell exported as GPG_TTY: nothing may draw on it."""
    master, slave = os.openpty()
    os.set_blocking(master, False)
    try:
        yield master, os.ttyname(slave)
    finally:
        os.close(master)
        os.close(slave)


@pytest.fixture
def started_from_a_shell(
    sandbox: Sandbox, signing: tuple[Keyring, Path], editors_terminal: tuple[int, str]
) -> tuple[Keyring, Path, int]:
    """The editor started from a shell that exported GPG_TTY (naming the
    editor's own terminal), with the signing keyring: the keyring, the
    repository, and that terminal's master, to see what is drawn on it."""
    keyring, repo = signing
    master, name = editors_terminal
    sandbox.env.update(keyring.env)
    sandbox.env["GPG_TTY"] = name
    return keyring, repo, master


def drawn_on(master: int) -> bytes:
    try:
        return os.read(master, 65536)
    except BlockingIOError:
        return b""


def head_is_signed(keyring: Keyring, repo: Path) -> bool:
    env = {**os.environ, **keyring.env}
    verify = subprocess.run(["git", "verify-commit", "HEAD"], cwd=repo, env=env, capture_output=True)
    return verify.returncode == 0


def test_the_environment_entry_is_appended_and_taken_back(sandbox: Sandbox) -> None:
    sandbox.env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="user.name", GIT_CONFIG_VALUE_0="From Env")
    with editor(sandbox) as ed:
        env = ed.lua(
            "return { vim.env.GIT_CONFIG_COUNT, vim.env.GIT_CONFIG_KEY_1, vim.env.GIT_CONFIG_VALUE_1, "
            "vim.env.GIT_CONFIG_KEY_2, vim.env.GIT_CONFIG_VALUE_2, vim.env.TTYOFFER_GIT_CONFIG_INDEX }"
        )
        assert env == ["3", "gpg.program", WRAPPER, "core.sshCommand", SSH_WRAPPER, "1"]
        # A child's git sees the user's entry and ours.
        seen = ed.lua(
            "return { vim.fn.system({'git', 'config', '--get', 'user.name'}), "
            "vim.fn.system({'git', 'config', '--get', 'gpg.program'}) }"
        )
        assert seen == ["From Env\n", WRAPPER + "\n"]
        ed.nvim.command("TtyOffer off")
        env = ed.lua(
            "return { vim.env.GIT_CONFIG_COUNT, vim.env.GIT_CONFIG_KEY_1 or vim.NIL, "
            "vim.env.GIT_CONFIG_KEY_2 or vim.NIL, vim.env.TTYOFFER_GIT_CONFIG_INDEX or vim.NIL }"
        )
        assert env == ["1", None, None, None]
        ed.nvim.command("TtyOffer on")
        ed.lua("require('ttyoffer').setup({ routes = { git = false } })")
        assert ed.lua("return vim.env.GIT_CONFIG_COUNT") == "1"
        assert "git signing and ssh stock" in ed.nvim.api.exec2("TtyOffer status", {"output": True})["output"]


def test_a_count_git_would_refuse_is_left_alone_and_reported(sandbox: Sandbox) -> None:
    sandbox.env["GIT_CONFIG_COUNT"] = "many"
    with editor(sandbox) as ed:
        assert ed.lua("return vim.env.GIT_CONFIG_COUNT") == "many"
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
        assert 'GIT_CONFIG_COUNT is "many", not a count' in report


@pytest.mark.e2e
def test_the_users_own_gpg_program_is_run(
    sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    keyring, repo = signing
    sandbox.env.update(keyring.env)
    log = tmp_path / "their-gpg.log"
    theirs = tmp_path / "their-gpg"
    theirs.write_text(f'#!/bin/sh\necho "$GPG_TTY" >> {log}\nexec gpg "$@"\n')
    theirs.chmod(0o755)
    subprocess.run(["git", "config", "gpg.program", str(theirs)], cwd=repo, check=True)
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {repo}")
        ed.nvim.command("Bang git commit -q --allow-empty -S -m 'through their gpg'")
        ed.wait_event("TtyOfferPresent", timeout=30)
        win = wait_until(lambda: ed.float_wins(), what="the prompt window")[0]
        wait_until(lambda: "Passphrase" in ed.buf_text(win), what="pinentry")
        ed.nvim.input(keyring.passphrase + "<CR>")
        assert ed.wait_event("TtyOfferBangDone", timeout=30)[0]["data"]["code"] == 0
        offer_tty = log.read_text().split()[0]
    assert offer_tty.startswith("/dev/pts/")
    assert head_is_signed(keyring, repo)


@pytest.mark.e2e
def test_a_terminal_gets_pinentry_on_its_own_screen_not_the_editors(
    sandbox: Sandbox, started_from_a_shell: tuple[Keyring, Path, int]
) -> None:
    keyring, repo, master = started_from_a_shell
    with editor(sandbox) as ed:
        job = ed.lua(
            "vim.cmd.enew() local argv = {'git', 'commit', '-q', '--allow-empty', '-S', '-m', 'term'} "
            "return vim.fn.jobstart(argv, { term = true, cwd = ..., "
            "on_exit = function(_, code) _G.term_exit = code end })",
            str(repo),
        )
        buf = ed.nvim.current.buffer
        wait_until(
            lambda: any("Passphrase" in line for line in buf[:]), timeout=30, what="pinentry in the terminal"
        )
        ed.lua("vim.fn.chansend(...)", job, keyring.passphrase + "\r")
        wait_until(lambda: ed.lua("return _G.term_exit ~= nil"), timeout=30, what="git to end")
        assert ed.lua("return _G.term_exit") == 0
    assert drawn_on(master) == b""
    assert head_is_signed(keyring, repo)


@pytest.mark.e2e
def test_vimscript_system_never_draws_on_the_editors_terminal(
    sandbox: Sandbox, started_from_a_shell: tuple[Keyring, Path, int]
) -> None:
    keyring, repo, master = started_from_a_shell
    with editor(sandbox) as ed:
        ed.nvim.command(f"cd {repo}")
        started = time.monotonic()
        output = ed.nvim.funcs.system("git commit -q --allow-empty -S -m 'from system()'")
        assert time.monotonic() - started < 20  # failed, not hung on a prompt nobody sees
        assert ed.nvim.vvars["shell_error"] != 0, output
        assert "gpg failed to sign" in output
    assert drawn_on(master) == b""


def fugitive_sandbox(base: Path, registered: Sandbox) -> Sandbox:
    """vim-fugitive from GitHub at its pinned commit (tests/third_party)."""
    fugitive = str(plugin("tpope/vim-fugitive"))
    box = Sandbox(base, extra_init=f"vim.opt.rtp:append({fugitive!r})\n")
    box.manifest.write_text(registered.manifest.read_text())
    return box


def gpg_asking_in_fugitive() -> bool:
    """gpg asks on the terminal fugitive gave git (loopback), and waits there
    for the keys: what a user sees as "Enter passphrase:" in fugitive."""
    found = subprocess.run(["pgrep", "-f", "pinentry-mode loopback"], capture_output=True, text=True)
    for pid in found.stdout.split():
        try:
            if Path(f"/proc/{pid}/wchan").read_text() == "wait_woken":  # in a tty read
                return True
        except OSError:
            pass
    return False


@pytest.mark.e2e
def test_fugitive_commit_with_message_asks_in_fugitives_own_window(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    keyring, repo = signing
    box = fugitive_sandbox(tmp_path / "fugitive", registered_sandbox)
    box.env.update(keyring.env)
    with editor(box) as ed:
        ed.nvim.command(f"cd {repo}")
        assert ed.nvim.funcs.exists(":Git") == 2
        # Typed as a user types it. Fugitive then waits in its loop, serving
        # nothing: gpg asks on the terminal fugitive gave git, whose keys the
        # loop passes on.
        ed.nvim.input(":Git commit -q --allow-empty -S -m 'from fugitive'<CR>")
        wait_until(gpg_asking_in_fugitive, timeout=30, what="gpg asking in fugitive")
        ed.nvim.input(keyring.passphrase + "<CR>")
        wait_until(lambda: head_is_signed(keyring, repo), timeout=30, what="the signed commit")
    assert (
        "from fugitive"
        in subprocess.run(
            ["git", "log", "-1", "--format=%s"], cwd=repo, capture_output=True, text=True
        ).stdout
    )


@pytest.mark.e2e
def test_fugitive_commit_written_in_its_buffer_then_signed(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    keyring, repo = signing
    box = fugitive_sandbox(tmp_path / "fugitive", registered_sandbox)
    box.env.update(keyring.env)
    with editor(box) as ed:
        ed.nvim.command(f"cd {repo}")
        ed.nvim.input(":Git commit --allow-empty -S<CR>")
        wait_until(
            lambda: ed.nvim.current.buffer.name.endswith("COMMIT_EDITMSG"),
            timeout=30,
            what="the message buffer",
        )
        ed.nvim.input("iwritten in the buffer<Esc>:wq<CR>")
        wait_until(gpg_asking_in_fugitive, timeout=30, what="gpg asking in fugitive")
        ed.nvim.input(keyring.passphrase + "<CR>")
        wait_until(lambda: head_is_signed(keyring, repo), timeout=30, what="the signed commit")
    assert (
        "written in the buffer"
        in subprocess.run(
            ["git", "log", "-1", "--format=%s"], cwd=repo, capture_output=True, text=True
        ).stdout
    )


def test_a_terminal_never_sees_the_editors_gpg_tty(
    sandbox: Sandbox, editors_terminal: tuple[int, str]
) -> None:
    _, name = editors_terminal
    sandbox.env["GPG_TTY"] = name  # exported by the shell that started the editor
    with editor(sandbox) as ed:
        ed.nvim.command("terminal sh -c 'echo \"seen=[$GPG_TTY]\"; sleep 30'")
        buf = ed.nvim.current.buffer
        line = wait_until(
            lambda: next((x for x in buf[:] if x.startswith("seen=")), None), what="the child's line"
        )
        assert line == "seen=[]"  # gpg then asks on the terminal of its stdin: this one
        ed.nvim.command("TtyOffer off")
        assert ed.lua("return vim.env.GPG_TTY") == name  # stock exactly
        ed.nvim.command("TtyOffer on")
        assert ed.lua("return vim.env.GPG_TTY") is None


LAZYGIT_CONFIG = "disableStartupPopups: true\ngui:\n  showRandomTip: false\nupdate:\n  method: never\n"


@pytest.mark.tui
@pytest.mark.e2e
@pytest.mark.parametrize(
    "override_gpg", [False, True], ids=["lazygit hands git its terminal", "git.overrideGpg"]
)
def test_lazygit_in_a_terminal_float_signs_with_keys_alone(
    override_gpg: bool,
    registered_sandbox: Sandbox,
    signing: tuple[Keyring, Path],
    tmp_path: Path,
    editors_terminal: tuple[int, str],
) -> None:
    # As lazygit.nvim opens it: a terminal job in a float. The editor was
    # started from a shell that exported GPG_TTY (its own screen).
    keyring, repo = signing
    master, name = editors_terminal
    subprocess.run(["git", "config", "commit.gpgSign", "true"], cwd=repo, check=True)
    box = Sandbox(tmp_path / "lazygit")
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    box.env.update(keyring.env)
    box.env["GPG_TTY"] = name
    box.env["PATH"] = (
        str(Path(sys.executable).parent) + os.pathsep + box.env["PATH"]
    )  # the lazygit-py wheel's
    (Path(box.env["XDG_CONFIG_HOME"]) / "lazygit").mkdir(parents=True)
    config = LAZYGIT_CONFIG + ("git:\n  overrideGpg: true\n" if override_gpg else "")
    (Path(box.env["XDG_CONFIG_HOME"]) / "lazygit" / "config.yml").write_text(config)
    doc = tmp_path / "notes.txt"
    doc.write_text("first line of the notes\nsecond line stays put\n")
    term = Tui(box, [str(doc)], 30, 100)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host()
        term.wait_text("first line of the notes")
        ed.lua(
            """
            local buf = vim.api.nvim_create_buf(false, true)
            _G.lazygit_win = vim.api.nvim_open_win(buf, true,
              { relative = 'editor', row = 2, col = 5, width = 90, height = 24, border = 'rounded' })
            vim.fn.jobstart({ 'lazygit' }, { term = true, cwd = ...,
              on_exit = function() vim.api.nvim_win_close(_G.lazygit_win, true) end })
            vim.cmd.startinsert()
            """,
            str(repo),
        )
        term.wait_text("Staged changes", timeout=60)
        # lazygit draws its panels before it reads keys: a "c" typed at the
        # first frame can be lost on a loaded machine. A user presses again.
        for _ in range(10):
            term.type("c")
            with suppress(AssertionError):
                term.wait_text("ummary", timeout=6)  # the commit message prompt
                break
        term.wait_text("ummary")
        term.type("from lazygit\r")
        if override_gpg:
            # lazygit keeps drawing and reading the keys: gpg asks in a
            # prompt window of ours, over lazygit's.
            term.wait_text("gpg — Passphrase", timeout=30)
            term.type(keyring.passphrase + "\r")
            ed.wait_event("TtyOfferClose", timeout=30)
        else:
            # lazygit hands its terminal to git; gpg asks there, in its float.
            term.wait_text("Passphrase:", timeout=30)
            term.type(keyring.passphrase + "\r")
            term.wait_text("Press enter to return to lazygit", timeout=30)
            term.type("\r")
        # In lazygit's commit list, its own screen back: not the same words
        # on git's screen, where a `q` typed is lost as lazygit returns.
        term.wait_text("Keybindings: ?", timeout=30)
        term.wait_text("○ from lazygit", timeout=30)
        # lazygit refreshes after the commit, and a "q" typed meanwhile can
        # be lost on a loaded machine (seen in CI): a user presses again.
        for _ in range(10):
            term.type("q")
            with suppress(AssertionError):
                term.wait_gone("╭", timeout=6)
                break
        term.wait_gone("╭")
        screen = term.lines()
        assert screen[0].startswith("first line of the notes")
        assert screen[1].startswith("second line stays put")
        assert all(line.startswith("~") for line in screen[2:20])
        assert not any("\x1b" in line or "[?" in line for line in screen)
        assert nvim.current.buffer[:] == ["first line of the notes", "second line stays put"]
        assert nvim.current.buffer.options["modified"] is False
    finally:
        nvim.close()
        term.close()
    assert head_is_signed(keyring, repo)
    assert drawn_on(master) == b""


def test_a_terminal_counts_as_shown_only_while_a_window_shows_its_job(ed: Editor) -> None:
    shown = ed.lua(
        """
        local shown = require('ttyoffer.routes.terminals').shown
        vim.cmd.enew()
        local term = vim.fn.jobstart({ 'sleep', '30' }, { term = true })
        local term_buf = vim.api.nvim_get_current_buf()
        local term_tty = vim.api.nvim_get_chan_info(term).pty
        -- A pty job (Neogit's git, overseer's task): a terminal nobody sees,
        -- even with a terminal buffer of another channel on screen.
        local job = vim.fn.jobstart({ 'sleep', '30' }, { pty = true })
        local job_tty = vim.api.nvim_get_chan_info(job).pty
        local result = { shown(term_tty), shown(job_tty), shown(''), shown('/dev/pts/999999') }
        vim.cmd.enew() -- the terminal buffer hidden, its job running
        table.insert(result, shown(term_tty))
        local float = { relative = 'editor', row = 1, col = 1, width = 20, height = 5 }
        vim.api.nvim_open_win(term_buf, false, float)
        table.insert(result, shown(term_tty))
        vim.fn.jobstop(term)
        vim.fn.jobstop(job)
        return result
        """
    )
    assert shown == [True, False, False, False, False, True]


@pytest.mark.e2e
def test_the_wrapper_asks_an_editor_that_never_answers_for_a_bounded_time(tmp_path: Path) -> None:
    """$NVIM names a socket that accepts and never answers (an editor
    blocked in a loop): the wrapper gives up within its bound and runs the
    user's gpg on its own terminal."""
    address = str(tmp_path / "silent.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(4)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(server.accept()[0]), daemon=True).start()
    theirs = tmp_path / "their-gpg"
    theirs.write_text('#!/bin/sh\necho "asked on [$GPG_TTY] tty [$(tty)]"\n')
    theirs.chmod(0o755)
    env = {
        **os.environ,
        "NVIM": address,
        "TTYOFFER_NVIM": nvim_binary(),
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "gpg.program",
        "GIT_CONFIG_VALUE_0": str(theirs),
        "TTYOFFER_GIT_CONFIG_COUNT": "1",
    }
    env.pop("GPG_TTY", None)
    env.pop("FUGITIVE", None)
    started = time.monotonic()
    proc = ptyprocess.PtyProcess.spawn([WRAPPER, "--status-fd=2", "-bsau", "KEY"], env=env)
    try:
        seen = b""
        while b"asked on" not in seen or not seen.endswith(b"\n"):
            try:
                seen += proc.read(4096)
            except EOFError:
                break
        elapsed = time.monotonic() - started
    finally:
        proc.close(force=True)
        server.close()
        for conn in held:
            conn.close()
    line = seen.decode().strip().splitlines()[-1]
    tty = line.split("tty [", 1)[1].rstrip("]")
    assert line == f"asked on [{tty}] tty [{tty}]"
    assert elapsed < 15  # the bound is 5 s (6 with the kill); margin for a loaded machine


def test_where_the_wrapper_has_gpg_ask(ed: Editor, tmp_path: Path) -> None:
    """The wrapper run as git runs it, under each kind of terminal, with a
    stand-in for the user's gpg that tells where it was pointed."""
    theirs = tmp_path / "their-gpg"
    theirs.write_text('#!/bin/sh\necho "asked=[$GPG_TTY] tty=[$(tty)] term=[$TERM]"\n')
    theirs.chmod(0o755)
    # Each run is waited for from here, not in a vim.wait() of the editor's:
    # lease() refuses a terminal while the editor is inside a plugin's own
    # wait (no key could reach the window), and Neogit waits in none.
    ed.lua(
        """
        local wrapper, theirs = ...
        local env = { GIT_CONFIG_COUNT = '1', GIT_CONFIG_KEY_0 = 'gpg.program',
          GIT_CONFIG_VALUE_0 = theirs, TTYOFFER_GIT_CONFIG_COUNT = '1', TERM = 'ansi' }
        _G.where = {}
        function _G.run_wrapper(name, args, opts)
          local out = {}
          opts = vim.tbl_extend('force', opts, { env = env,
            on_stdout = function(_, data) vim.list_extend(out, data) end,
            on_exit = function() _G.where[name] = table.concat(out, '') end })
          vim.fn.jobstart(vim.list_extend({ wrapper }, args), opts)
        end
        _G.sign = { '--status-fd=2', '-bsau', 'KEY' }
        """,
        WRAPPER,
        str(theirs),
    )

    def run(name: str, setup: str) -> None:
        ed.lua(setup)
        wait_until(lambda: ed.lua("return _G.where[...]", name) is not None, 20, f"the wrapper ({name})")

    # A pty job's terminal (Neogit's git): a leased terminal of ours.
    run("pty_job", "_G.run_wrapper('pty_job', _G.sign, { pty = true })")
    # The same, checking a signature: asks nothing, no question.
    run("verify", "_G.run_wrapper('verify', { '--status-fd=1', '--verify', 'sig', '-' }, { pty = true })")
    # A terminal a window shows (lazygit's, toggleterm's): its own.
    run("shown", "vim.cmd.enew() _G.run_wrapper('shown', _G.sign, { term = true })")
    # No terminal to lease: gpg fails at once instead of waiting unseen.
    run(
        "none",
        "local t = require('ttyoffer') _G.kept_lease = t.lease t.lease = function() return '' end "
        "_G.run_wrapper('none', _G.sign, { pty = true })",
    )
    ed.lua("require('ttyoffer').lease = _G.kept_lease")
    where = ed.lua("return _G.where")

    def fields(text: str) -> dict[str, str]:
        return dict(part.rstrip("]").split("=[", 1) for part in text.split("\r\n")[0].split())

    pty_job = fields(where["pty_job"])
    assert pty_job["asked"].startswith("/dev/pts/") and pty_job["asked"] != pty_job["tty"]
    assert pty_job["term"] == "xterm-256color"  # the prompt window's, not the job's ansi
    verify = fields(where["verify"])
    assert verify["asked"] == verify["tty"]
    shown = fields(where["shown"])
    assert shown["asked"] == shown["tty"] and shown["term"] == "ansi"
    assert fields(where["none"])["asked"] == ""
