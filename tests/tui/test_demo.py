"""The README's demo command, run as a new user would: in a terminal, following
the instructions it puts on the screen."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import wait_until
from tui import PtyScreen

pytestmark = pytest.mark.tui

ROOT = Path(__file__).resolve().parents[2]
PASSPHRASE = "ttyoffer"  # the one the welcome text tells the user


def demo_env(tmpdir: Path) -> dict[str, str]:
    """A new user's environment: nothing of ours but the prepared virtualenv."""
    home = tmpdir / "home"
    home.mkdir(exist_ok=True)
    keep = ("PATH", "LANG", "LC_ALL", "USER", "LOGNAME")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(
        HOME=str(home),
        TMPDIR=str(tmpdir),  # where the demo makes its folder
        TERM="xterm-256color",
        SHELL="/bin/sh",
        TTYOFFER_VENV=sys.prefix,  # the suite's own virtualenv, already prepared
    )
    return env


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    # pytest's tmp_path is too deep for gpg-agent's sockets (see the next test).
    with tempfile.TemporaryDirectory(prefix="tto-", dir="/tmp") as path:
        yield Path(path)


@pytest.fixture
def demo(short_tmp: Path) -> Iterator[PtyScreen]:
    screen = PtyScreen(["bash", str(ROOT / "scripts" / "demo")], demo_env(short_tmp), rows=40, cols=100)
    try:
        # Key generation and :UpdateRemotePlugins come first.
        screen.wait_text("ttyoffer.nvim demo", timeout=90)
        yield screen
    finally:
        screen.close()


def run(screen: PtyScreen, command: str) -> None:
    screen.type(f":{command}\r")


def bang_output(lines: list[str]) -> list[str]:
    """What :! printed below the editor: from its ":!cmd" line on (the
    welcome text above quotes some of the same words)."""
    start = max(i for i, line in enumerate(lines) if line.startswith(":!"))
    return [line.rstrip() for line in lines[start:]]


def wait_host(screen: PtyScreen) -> None:
    """What a user would look at: `:TtyOffer status` says the host is ready.
    Each answer is dismissed at once: Neovim handles no RPC (so the host
    cannot finish starting) while its hit-enter prompt is up."""

    def ready() -> bool:
        run(screen, "TtyOffer status")
        lines = screen.wait_text("Press ENTER")
        screen.type("\r")
        screen.wait_gone("Press ENTER")
        return any("host ready" in line for line in lines)

    wait_until(ready, 30, "the host to be ready")


def test_demo_step_by_step_as_the_welcome_text_says(demo: PtyScreen, short_tmp: Path) -> None:
    # The whole welcome text fits the 40-line terminal, its last line too.
    demo.wait_text("Help: :help ttyoffer")
    wait_host(demo)
    run(demo, '!git commit -S -m "signed inside Neovim"')
    # gpg's real pinentry-curses dialog, drawn inside the float's frame.
    demo.wait_text("Please enter the passphrase", timeout=30)
    # The frame's title names the command and, once read, the question.
    lines = demo.wait_text('signed inside Neovim" — Passphrase')
    assert any("╭" in line and "git commit -S" in line for line in lines)
    demo.type(PASSPHRASE + "\r")
    lines = demo.wait_text("(root-commit)", timeout=30)  # git's "[main (root-commit) 1a2b3c4] signed…"
    # pinentry tearing its dialog down did not retitle the window with its buttons.
    assert not any("<OK>" in line and "╭" in line for line in lines)
    demo.wait_text("Press ENTER")
    demo.type("\r")
    demo.wait_gone("╭")  # the float
    run(demo, "!git log --show-signature -1")
    demo.wait_text("Good signature", timeout=30)
    demo.type("\r")
    demo.wait_gone("Good signature")

    # 3. A command that asks for nothing never opens a window.
    run(demo, "!ls -l")
    lines = demo.wait_text("Press ENTER")
    assert any(line.endswith(" README") for line in bang_output(lines))
    assert not any("╭" in line for line in lines)
    demo.type("\r")
    demo.wait_gone("Press ENTER")

    # 4. An ssh key with a passphrase, answered in the window.
    folder = next(short_tmp.glob("ttyoffer-demo.*"))
    key = folder / "ssh" / "id_ed25519"
    run(demo, f"!ssh-keygen -y -f {key}")
    lines = demo.wait_text("│Enter passphrase")
    assert any("╭" in line and "ssh-keygen -y -f" in line for line in lines)
    demo.type(PASSPHRASE + "\r")
    public = " ".join(Path(f"{key}.pub").read_text().split()[:2])
    demo.wait_text(public, timeout=30)
    demo.type("\r")
    demo.wait_gone(public)
    demo.wait_gone("╭")

    # 5. Declining hangs the command up at once (128 + SIGHUP) instead of
    # leaving it waiting for an answer.
    decline = '!git commit --allow-empty -S -m "declined"'
    run(demo, decline)
    demo.wait_text("Please enter the passphrase", timeout=30)
    demo.type("\x11")  # <C-q>, the documented dismiss key
    lines = demo.wait_text("Press ENTER", timeout=30)
    assert bang_output(lines)[1:] == ["", "shell returned 129", "Press ENTER or type command to continue"]
    demo.wait_gone("╭")
    demo.type("\r")
    demo.wait_gone("Press ENTER")

    # 6. Off is stock Neovim: no window, gpg cannot ask. On brings it back.
    run(demo, "TtyOffer off")
    run(demo, decline)
    lines = demo.wait_text("Press ENTER", timeout=30)
    output = bang_output(lines)
    assert any("gpg failed to sign the data" in line for line in output)
    assert "shell returned 128" in output
    assert not any("╭" in line for line in lines)
    demo.type("\r")
    demo.wait_gone("Press ENTER")
    run(demo, "TtyOffer on")

    # 7. What is going on.
    run(demo, "TtyOffer status")
    demo.wait_text("(ttyoffer) on; host ready")
    demo.type("\r")
    run(demo, "qa!")
    wait_until(lambda: not demo.proc.isalive(), 30, "the demo to exit")
    # The demo leaves nothing behind: its folder (keys, repository) and its gpg-agent.
    assert demo.proc.exitstatus == 0
    assert list(short_tmp.glob("ttyoffer-demo.*")) == []
    wait_until(lambda: processes_mentioning(str(short_tmp)) == [], 10, "the demo's gpg-agent to be gone")


def processes_mentioning(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        if text in args:
            found.append(args)
    return found


@pytest.mark.skipif(
    Path(f"/run/user/{os.getuid()}").is_dir(), reason="gpg-agent keeps its sockets in /run/user here"
)
def test_demo_names_the_fix_when_tmpdir_is_too_deep(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60)
    deep.mkdir()
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo")],
        env=demo_env(deep),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "too deep for gpg-agent's sockets" in result.stderr
    assert "TMPDIR=/tmp" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(deep.glob("ttyoffer-demo.*")) == []  # nothing left behind


def test_demo_without_a_terminal_signs_for_you(short_tmp: Path) -> None:
    # Started with no terminal (a CI job, a pipe): nobody can type, so the
    # demo runs its first step with the passphrase typed for the user into
    # the prompt window, headless, and says what happened.
    demo = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo")],
        env=demo_env(short_tmp),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )
    said = demo.stdout + demo.stderr
    assert demo.returncode == 0, said
    assert "pinentry asks in the prompt window:" in said and "Passphrase:" in said, said
    assert "Good signature" in said and "signed: the commit verifies" in said, said
    # Each message on a line of its own: Neovim's own (a notice, the :! line,
    # unended on stderr) no longer run into git's output or the next one.
    lines = demo.stdout.splitlines()
    assert "git commit printed:" in lines and "git log --show-signature -1:" in lines, said
    assert any(
        re.fullmatch(r"  \[main \(root-commit\) \w+\] signed inside Neovim, without a terminal", line)
        for line in lines
    ), said
    assert "   create mode 100644 README" in lines, said
    assert all(line.startswith("  gpg: ") for line in lines if "gpg: " in line), said
    assert ":!git" not in said and "\r" not in said, said
    assert list(short_tmp.glob("ttyoffer-demo.*")) == []
