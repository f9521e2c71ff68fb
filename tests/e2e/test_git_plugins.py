"""Real git plugins at their pinned commits (tests/third_party), each signing
a commit with a passphrase-protected gpg key in Neovim's real TUI: the
question is asked where the user can answer it, the commit verifies, the
screen is intact afterwards, nothing is left running, and a second
signature right after works.

Where gpg asks: on the terminal of a terminal window when one shows git's
terminal (lazygit.nvim, snacks, toggleterm); in ttyoffer's prompt window
when git runs on a pty job's terminal that no window shows (Neogit,
overseer); on fugitive's own pty (loopback), which its loop relays."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pynvim
import pytest

from fixtures import Keyring
from harness import Editor, Sandbox, wait_until
from third_party import plugin
from tui import Tui

# Each test waits on screen text and events with generous bounds; on a loaded
# machine a whole one may take longer than the suite's default 120 s.
pytestmark = [pytest.mark.tui, pytest.mark.e2e, pytest.mark.timeout(600)]

DOCUMENT = ["first line of the notes", "second line stays put"]
PROMPT_TITLE = "gpg — Passphrase"  # ttyoffer's prompt window for a leased terminal
LAZYGIT_CONFIG = "disableStartupPopups: true\ngui:\n  showRandomTip: false\nupdate:\n  method: never\n"


def plugins_init(repos: list[str], setup: str = "") -> str:
    """Init lines putting each pinned plugin on 'runtimepath' (in init, so
    Neovim sources their plugin/ files at startup as for any rtp entry)."""
    lines = [f"vim.opt.rtp:append({str(plugin(repo))!r})" for repo in repos]
    return "\n".join([*lines, setup, ""])


def git(repo: Path, keyring: Keyring, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **keyring.env}, capture_output=True, text=True
    )


def head_subject(repo: Path, keyring: Keyring) -> str:
    return git(repo, keyring, "log", "-1", "--format=%s").stdout.strip()


def head_verifies(repo: Path, keyring: Keyring) -> bool:
    return git(repo, keyring, "verify-commit", "HEAD").returncode == 0


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def descendants(root: int) -> list[int]:
    parents = {pid: _ppid(pid) for pid in _all_pids()}
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _uses_gnupghome(pid: int, home: Path) -> bool:
    try:
        return f"GNUPGHOME={home}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def left_running(editor_pid: int, keyring: Keyring) -> list[str]:
    """What of a signature is still running: gpg, the wrapper or a pinentry
    that descends from this test's editor, or a pinentry of this test's
    GNUPGHOME (gpg-agent's child, outside the editor's tree). By pid."""
    suspects = [pid for pid in descendants(editor_pid)]
    suspects += [pid for pid in _all_pids() if _uses_gnupghome(pid, keyring.home)]
    left = []
    for pid in sorted(set(suspects)):
        cmd = _cmdline(pid)
        if "gpg-agent" in cmd:
            continue  # the agent itself is a daemon, and stays
        if "pinentry" in cmd or "ttyoffer-gpg" in cmd or cmd.split(" ", 1)[0].endswith("gpg"):
            left.append(f"{pid}: {cmd}")
    return left


@dataclass
class Session:
    term: Tui
    ed: Editor
    repo: Path
    keyring: Keyring
    runtime: Path  # the editor's XDG_RUNTIME_DIR

    def wait_commit(self, subject: str) -> None:
        self.term._wait(
            lambda: head_subject(self.repo, self.keyring) == subject, 60, f"the commit {subject!r}"
        )
        assert head_verifies(self.repo, self.keyring), git(self.repo, self.keyring, "verify-commit", "HEAD")

    def answer_in_prompt_window(self, title: str = PROMPT_TITLE) -> None:
        """ttyoffer's prompt window came up by itself: the passphrase typed
        there, the window gone after."""
        try:
            self.term.wait_text(title, timeout=60)
        except AssertionError as error:
            raise AssertionError(f"{error}\nthe editor's processes:\n{self.processes()}") from None
        self.term.wait_text("Passphrase:", timeout=30)
        self.term.type(self.keyring.passphrase + "\r")
        self.term.wait_gone(title, timeout=30)

    def type_at_a_persons_pace(self, text: str) -> None:
        for key in text:
            self.term.type(key)
            time.sleep(0.08)

    def processes(self) -> str:
        return "\n".join(f"{pid}: {_cmdline(pid)}" for pid in descendants(self.term.proc.pid))

    def assert_document_intact(self) -> None:
        def intact() -> list[str] | None:
            screen = self.term.lines()
            return screen if screen[0].startswith(DOCUMENT[0]) and screen[1].startswith(DOCUMENT[1]) else None

        screen = wait_until(intact, timeout=30, what="the document back on the screen")
        assert all(line.startswith("~") for line in screen[2:20]), self.term.text()
        assert not any("\x1b" in line or "[?" in line for line in screen), self.term.text()
        assert self.ed.nvim.current.buffer[:] == DOCUMENT
        assert self.ed.nvim.current.buffer.options["modified"] is False

    def assert_nothing_left(self) -> None:
        try:
            wait_until(
                lambda: not left_running(self.term.proc.pid, self.keyring),
                timeout=30,
                what="no gpg, wrapper or pinentry left",
            )
        except AssertionError as error:
            left = "\n".join(left_running(self.term.proc.pid, self.keyring))
            raise AssertionError(f"{error}; left:\n{left}") from None


@contextmanager
def session(
    registered: Sandbox, signing: tuple[Keyring, Path], base: Path, repos: list[str], setup: str = ""
) -> Iterator[Session]:
    keyring, repo = signing
    git(repo, keyring, "config", "commit.gpgSign", "true")
    box = Sandbox(base, extra_init=plugins_init(repos, setup))
    box.manifest.write_text(registered.manifest.read_text())
    box.env.update(keyring.env)
    box.env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + box.env["PATH"]  # lazygit-py's
    lazygit_config = Path(box.env["XDG_CONFIG_HOME"]) / "lazygit"
    lazygit_config.mkdir(parents=True)
    (lazygit_config / "config.yml").write_text(LAZYGIT_CONFIG)
    (Path(box.env["XDG_CACHE_HOME"]) / "nvim").mkdir(parents=True)  # as a first start of Neovim makes it
    doc = base / "notes.txt"
    doc.write_text("\n".join(DOCUMENT) + "\n")
    term = Tui(box, ["-c", f"cd {repo}", str(doc)], 30, 100)
    nvim = pynvim.attach("socket", path=term.socket)
    ed = Editor(nvim)
    try:
        ed.wait_host(timeout=60)
        term.wait_text(DOCUMENT[0], timeout=30)
        yield Session(term, ed, repo, keyring, Path(box.env["XDG_RUNTIME_DIR"]))
    finally:
        nvim.close()
        term.close()
        # Whatever a failed test left of its own keyring, by pid: a pinentry
        # on a dead terminal spins until killed.
        for pid in _all_pids():
            if _uses_gnupghome(pid, keyring.home) and "pinentry" in _cmdline(pid):
                with suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


def twice(s: Session, sign: Callable[[Session, str], None]) -> None:
    """The per-client proof: a signed commit, the screen intact, nothing left,
    and a second signature right after."""
    for subject in ("first signed commit", "second right after"):
        sign(s, subject)
        s.wait_commit(subject)
        s.assert_document_intact()
        s.assert_nothing_left()


NEOGIT = ["nvim-lua/plenary.nvim", "sindrets/diffview.nvim", "NeogitOrg/neogit"]


def release_neogits_editor_client_if_forgotten(s: Session) -> None:
    """Neogit's own race, not ours: git's editor is a headless Neovim of
    Neogit's that waits until the editor sends it `qall` (rpcnotify, then at
    once chanclose). Often, here, with ttyoffer off as well (measured), the
    notification never arrives and git waits for its editor for good. When
    the message buffer is closed, git has not reached gpg and that client
    still runs after 10 s, it is sent what Neogit meant to send."""

    def client() -> int | None:
        for pid in descendants(s.term.proc.pid):
            if "neogit.client" in _cmdline(pid) and not _cmdline(pid).startswith("/bin/sh"):
                return pid
        return None

    def reached_gpg() -> bool:
        return any(_cmdline(pid).split(" ", 1)[0].endswith("gpg") for pid in descendants(s.term.proc.pid))

    try:
        wait_until(lambda: client() is None or reached_gpg(), timeout=10, what="Neogit's client to end")
        return
    except AssertionError:
        pass
    pid = client()
    for address in Path(s.runtime).glob(f"nvim.{pid}.*"):
        with suppress(Exception):
            forgotten = pynvim.attach("socket", path=str(address))
            forgotten.command("qall", async_=True)
            forgotten.close()


def test_neogit_commit_asks_in_the_prompt_window(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    def sign(s: Session, subject: str) -> None:
        (s.repo / "README").write_text(subject + "\n")
        git(s.repo, s.keyring, "add", "README")
        s.term.type(":Neogit\r")
        s.term.wait_text("Staged changes", timeout=60)
        s.term.type("c")
        s.term.wait_text("Commit", timeout=30)  # the commit popup
        s.term.type("c")
        wait_until(
            lambda: s.ed.lua("return vim.api.nvim_buf_get_name(0)").endswith("COMMIT_EDITMSG"),
            timeout=60,
            what="Neogit's commit message buffer",
        )
        # Ready when Neogit has added its help and gone to Insert mode, as
        # the user sees it.
        s.term.wait_text("Commands:", timeout=30)
        wait_until(lambda: s.ed.mode() == "i", timeout=30, what="Insert mode in the message buffer")
        # At a person's pace: the same message typed as one burst leaves
        # Neogit's editor client waiting for good after :wq, stock as well
        # (measured with ttyoffer off), so git never gets to gpg.
        s.type_at_a_persons_pace(subject)
        s.term.type("\x1b")
        wait_until(lambda: s.ed.mode() == "n", timeout=30, what="Normal mode")
        s.term.type(":wq\r")
        release_neogits_editor_client_if_forgotten(s)
        # git runs on a pty of Neogit's job that no window shows: gpg asks in
        # ttyoffer's prompt window instead.
        s.answer_in_prompt_window()
        s.wait_commit(subject)
        s.term.wait_text("main " + subject, timeout=30)  # Neogit's status, refreshed
        s.term.type("q")

    with session(
        registered_sandbox, signing, tmp_path / "neogit", NEOGIT, "require('neogit').setup({})"
    ) as s:
        twice(s, sign)


def stage_a_change(s: Session, subject: str) -> None:
    (s.repo / "README").write_text(subject + "\n")
    git(s.repo, s.keyring, "add", "README")


def test_overseer_task_asks_in_the_prompt_window(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    def sign(s: Session, subject: str) -> None:
        stage_a_change(s, subject)
        if subject.startswith("first"):
            s.term.type(f":OverseerShell git commit -q -m '{subject}'\r")
        else:
            task = f"{{ cmd = {{ 'git', 'commit', '-q', '-m', '{subject}' }} }}"
            s.term.type(f":lua require('overseer').new_task({task}):start()\r")
        # The task's output buffer (hidden) is not its terminal: gpg asks in
        # ttyoffer's prompt window, drawn for Neovim's terminal, not in CP437.
        s.term.wait_text(PROMPT_TITLE, timeout=60)
        s.term.wait_text("Passphrase:", timeout=30)
        assert s.term.showing("┌") and not s.term.showing("Ú"), s.term.text()
        s.answer_in_prompt_window()

    with session(
        registered_sandbox,
        signing,
        tmp_path / "overseer",
        ["stevearc/overseer.nvim"],
        "require('overseer').setup({})",
    ) as s:
        twice(s, sign)
        tasks = s.ed.lua(
            "return vim.tbl_map(function(t) return t.status end, require('overseer').list_tasks())"
        )
        assert tasks == ["SUCCESS", "SUCCESS"]


def commit_in_lazygit(s: Session, subject: str) -> None:
    """In a lazygit already on screen: `c`, the message, then the passphrase
    on lazygit's own terminal (lazygit hands it to git), and `q`."""
    s.term.wait_text("Staged changes", timeout=60)
    s.term.type("c")
    s.term.wait_text("ummary", timeout=30)  # the commit message prompt
    s.term.type(subject + "\r")
    s.term.wait_text("Passphrase:", timeout=60)
    assert not s.term.showing(PROMPT_TITLE)  # its own terminal, shown: no window of ours
    s.term.type(s.keyring.passphrase + "\r")
    s.term.wait_text("Press enter to return to lazygit", timeout=60)
    s.term.wait_text(f"] {subject}", timeout=30)  # git's own line: [main 1a2b3c4] subject
    s.term.type("\r")
    s.term.wait_text("Keybindings: ?", timeout=30)  # lazygit's own screen again
    s.term.wait_text(f"○ {subject.split()[0]}", timeout=30)  # in its commit list, cut to the panel
    s.term.type("q")


def test_lazygit_nvim_asks_on_lazygits_terminal(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    def sign(s: Session, subject: str) -> None:
        stage_a_change(s, subject)
        s.term.type(":LazyGit\r")
        commit_in_lazygit(s, subject)

    with session(registered_sandbox, signing, tmp_path / "lazygit", ["kdheepak/lazygit.nvim"]) as s:
        twice(s, sign)


SNACKS_SETUP = "require('snacks').setup({ lazygit = { enabled = true }, terminal = { enabled = true } })"


def test_snacks_lazygit_asks_on_lazygits_terminal(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    def sign(s: Session, subject: str) -> None:
        stage_a_change(s, subject)
        s.term.type(":lua Snacks.lazygit()\r")
        commit_in_lazygit(s, subject)

    with session(registered_sandbox, signing, tmp_path / "snacks", ["folke/snacks.nvim"], SNACKS_SETUP) as s:
        twice(s, sign)


def test_snacks_terminal_asks_on_its_own_terminal(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    def sign(s: Session, subject: str) -> None:
        stage_a_change(s, subject)
        s.term.type(f":lua Snacks.terminal.open(\"git commit -q -m '{subject}'\")\r")
        s.term.wait_text("Passphrase:", timeout=60)
        assert not s.term.showing(PROMPT_TITLE)
        s.term.type(s.keyring.passphrase + "\r")

    with session(registered_sandbox, signing, tmp_path / "snacks", ["folke/snacks.nvim"], SNACKS_SETUP) as s:
        twice(s, sign)


def test_toggleterm_asks_on_its_own_terminal(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    def sign(s: Session, subject: str) -> None:
        stage_a_change(s, subject)
        s.term.type(":ToggleTerm direction=float\r")
        wait_until(lambda: s.ed.mode() == "t", timeout=30, what="the shell's terminal")
        s.term._wait(lambda: s.term.showing("│$ ") or s.term.showing("│# "), 30, "the shell's prompt")
        s.term.type(f"git commit -q -m '{subject}'\r")
        s.term.wait_text("Passphrase:", timeout=60)
        assert not s.term.showing(PROMPT_TITLE)
        s.term.type(s.keyring.passphrase + "\r")
        s.wait_commit(subject)
        s.term.type("exit\r")  # toggleterm closes its window as the shell ends

    with session(
        registered_sandbox,
        signing,
        tmp_path / "toggleterm",
        ["akinsho/toggleterm.nvim"],
        "require('toggleterm').setup({})",
    ) as s:
        twice(s, sign)


def test_fugitive_asks_on_its_own_terminal(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    def sign(s: Session, subject: str) -> None:
        stage_a_change(s, subject)
        s.term.type(f":Git commit -q -m '{subject}'\r")
        # fugitive's loop relays git's pty to the screen and the keys back:
        # gpg asks there itself (loopback), no window can open meanwhile.
        s.term.wait_text("Enter passphrase", timeout=60)
        assert not s.term.showing(PROMPT_TITLE)
        s.term.type(s.keyring.passphrase + "\r")

    with session(registered_sandbox, signing, tmp_path / "fugitive", ["tpope/vim-fugitive"]) as s:
        twice(s, sign)


def test_gitsigns_follows_a_signed_commit_made_through_bang(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    # gitsigns keeps its own reference to vim.system and runs git all the
    # time; a signed commit typed as :!git commit asks in the prompt window,
    # and gitsigns' signs follow it.
    def sign(s: Session, subject: str) -> None:
        s.term.type(":split README\r")
        s.term.wait_text("A repository for trying", timeout=30)
        s.term.type(f"ggO{subject}\x1b:w\r")
        s.term._wait(
            lambda: (s.ed.lua("return vim.b.gitsigns_status_dict or {}") or {}).get("added") == 1,
            60,
            "gitsigns' sign for the added line",
        )
        s.term.type(f":!git commit -q -am '{subject}'\r")
        s.answer_in_prompt_window(f"git commit -q -am '{subject}' — Passphrase")
        s.term._wait(
            lambda: (s.ed.lua("return vim.b.gitsigns_status_dict or {}") or {}).get("added") == 0,
            60,
            "gitsigns' signs cleared by the commit",
        )
        s.term.type(":close\r")

    with session(
        registered_sandbox,
        signing,
        tmp_path / "gitsigns",
        ["lewis6991/gitsigns.nvim"],
        "require('gitsigns').setup({})",
    ) as s:
        git(s.repo, s.keyring, "commit", "-q", "--no-gpg-sign", "-m", "unsigned start")
        twice(s, sign)


def overseer_commit(s: Session, subject: str) -> None:
    stage_a_change(s, subject)
    s.term.type(f":OverseerShell git commit -q -m '{subject}'\r")


@pytest.mark.parametrize("ending", ["declined", "task stopped"])
def test_a_leased_prompt_that_goes_leaves_nothing_and_the_next_asks_at_once(
    ending: str, registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    with session(
        registered_sandbox,
        signing,
        tmp_path / "overseer",
        ["stevearc/overseer.nvim"],
        "require('overseer').setup({})",
    ) as s:
        overseer_commit(s, "never made")
        s.term.wait_text("Passphrase:", timeout=60)
        if ending == "declined":
            s.term.type("\x11")  # <C-q>, keys.dismiss
        else:
            s.term.type("\x1c\x0e")  # <C-\><C-n>: out of the prompt, as a user would
            s.ed.lua("for _, task in ipairs(require('overseer').list_tasks()) do task:stop() end")
        # The window itself gone, not only its title: a prompt whose command
        # ended shows "[Process exited]" a moment (and its title changes),
        # still focused; keys typed then (the next command, the passphrase)
        # went into it. The user waits for it to go; so does the test.
        wait_until(lambda: s.ed.float_wins() == [], timeout=30, what="the prompt window closed")
        s.term.wait_gone(PROMPT_TITLE, timeout=30)
        s.assert_nothing_left()
        assert head_subject(s.repo, s.keyring) == ""
        # gpg-agent is free: the next signature asks at once.
        overseer_commit(s, "made right after")
        s.answer_in_prompt_window()
        s.wait_commit("made right after")
        s.assert_document_intact()
        s.assert_nothing_left()


def test_a_terminal_closed_while_pinentry_asks_there_leaves_nothing(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    with session(
        registered_sandbox,
        signing,
        tmp_path / "toggleterm",
        ["akinsho/toggleterm.nvim"],
        "require('toggleterm').setup({})",
    ) as s:
        stage_a_change(s, "never made")
        s.term.type(":ToggleTerm direction=float\r")
        wait_until(lambda: s.ed.mode() == "t", timeout=30, what="the shell's terminal")
        s.term._wait(lambda: s.term.showing("│$ ") or s.term.showing("│# "), 30, "the shell's prompt")
        s.term.type("git commit -q -m 'never made'\r")
        s.term.wait_text("Passphrase:", timeout=60)
        # The terminal goes with pinentry on it: its pty is closed, git and
        # gpg hung up; the pinentry gpg-agent started there is not in their
        # session, and would spin on the dead terminal.
        s.term.type("\x1c\x0e:bwipeout!\r")
        s.term.wait_gone("Passphrase:", timeout=30)
        s.assert_nothing_left()
        s.ed.lua("require('ttyoffer').start()")  # the next signature, through :Bang
        s.term.type(":!git commit -q -m 'made right after'\r")
        s.answer_in_prompt_window("git commit -q -m 'made right after' — Passphrase")
        s.wait_commit("made right after")
        s.assert_document_intact()
        s.assert_nothing_left()
