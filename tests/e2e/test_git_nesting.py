"""git's gpg.program as git itself resolves it, for an editor inside an
editor, a plain vim.uv.spawn (mini.git) and plugins loaded after ttyoffer.
Real git, gpg-agent with pinentry-curses, Neovim's TUI, mini.nvim and
gitsigns at their pinned commits; the wrapper's execs counted with strace."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

from fixtures import Keyring
from harness import ROOT, Editor, Sandbox, editor, nvim_binary, wait_until
from third_party import plugin
from tui import Tui

WRAPPER = str(ROOT / "libexec" / "ttyoffer-gpg")


def head_is_signed(keyring: Keyring, repo: Path) -> bool:
    env = {**os.environ, **keyring.env}
    return (
        subprocess.run(["git", "verify-commit", "HEAD"], cwd=repo, env=env, capture_output=True).returncode
        == 0
    )


def subject(repo: Path) -> str:
    log = subprocess.run(["git", "log", "-1", "--format=%s"], cwd=repo, capture_output=True, text=True)
    return log.stdout.strip()


def wrapper_execs(log: Path) -> int:
    """How many times strace saw the wrapper exec'd (successfully)."""
    text = log.read_text() if log.exists() else ""
    return len(re.findall(r'execve\("[^"]*/ttyoffer-gpg", .*= 0$', text, re.M))


def wrappers_running() -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and WRAPPER.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


# --- GIT_CONFIG_COUNT as git reads it ---------------------------------------

COUNTS = ["0x1", "1e0", "1 ", "1.0", " 1", "+1", "\t1", "-0", "-1", "", " ", "007", "1\n", "many", "１"]
COUNTS += ["2147483647", "2147483648", "99999999999", "-18446744073709551615", "-18446744071562067969"]
COUNTS += ["-18446744071562067968", "18446744073709551616", "0", "00"]


def git_complaint(count: str, entries: int) -> str:
    env = {**os.environ, "GIT_CONFIG_COUNT": count}
    for i in range(entries):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = f"ttyoffer.k{i}", "v"
    git = subprocess.run(["git", "config", "--get", "user.name"], env=env, capture_output=True, text=True)
    return git.stderr


def test_a_count_is_read_exactly_as_git_reads_it(lua: Any) -> None:
    for count in COUNTS:
        complaint = git_complaint(count, 0)
        refused = next((c for c in ("bogus count", "too many entries") if c in complaint), None)
        ours = lua("return { require('ttyoffer.routes.gitenv').parse_count(...) }", count)
        if refused:
            assert ours == [None, refused], (count, complaint)
            continue
        assert len(ours) == 1, (count, ours, complaint)
        if "missing config key" not in complaint:
            assert ours[0] == 0, count
        elif ours[0] <= 10:  # exactly that many entries: all there is fine, one fewer is not
            assert "missing" not in git_complaint(count, ours[0]), count
            assert f"GIT_CONFIG_KEY_{ours[0] - 1}" in git_complaint(count, ours[0] - 1), count
        else:
            assert ours[0] <= 2147483647, count
    assert lua("return require('ttyoffer.routes.gitenv').parse_count('-18446744073709551615')") == 1


def test_a_count_git_refuses_is_left_as_it_is(sandbox: Sandbox) -> None:
    sandbox.env["GIT_CONFIG_COUNT"] = "1e0"
    with editor(sandbox) as ed:
        assert ed.lua("return vim.env.GIT_CONFIG_COUNT") == "1e0"
        assert ed.lua("return vim.env.GIT_CONFIG_KEY_1") is None
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
        assert 'GIT_CONFIG_COUNT is "1e0", not a count (git: bogus count)' in report


# --- Which program runs: stock git against git with our entry --------------


@pytest.fixture
def stubs(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """Programs that note their name and fail (git needs no key for that), a
    PATH that finds git's defaults (gpg, gpgsm, ssh-keygen) among them, and
    a repository with one commit."""
    folder, log = tmp_path / "stubs", tmp_path / "ran.log"
    folder.mkdir()
    for name in ("a", "b", "gpg", "gpgsm", "ssh-keygen"):
        stub = folder / name
        stub.write_text(f'#!/bin/sh\necho {name} >> "{log}"\nexit 1\n')
        stub.chmod(0o755)
    repo = tmp_path / "repo"
    env = {
        **os.environ,
        "PATH": f"{folder}:{os.environ['PATH']}",
        "GIT_CONFIG_NOSYSTEM": "1",
        "HOME": str(tmp_path),
        "GIT_AUTHOR_NAME": "a",
        "GIT_AUTHOR_EMAIL": "a@example.invalid",
        "GIT_COMMITTER_NAME": "a",
        "GIT_COMMITTER_EMAIL": "a@example.invalid",
    }
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    return repo, log, env


def program_run(stubs: tuple[Path, Path, dict[str, str]], entries: list[tuple[str, str]], ours: bool) -> str:
    repo, log, env = stubs
    if ours:
        entries = [*entries, ("gpg.program", WRAPPER)]
    env = {**env, "GIT_CONFIG_COUNT": str(len(entries))}
    for i, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    log.unlink(missing_ok=True)
    argv = ["git", "-c", "user.signingkey=/dev/null", "commit", "-q", "--allow-empty", "-S", "-m", "x"]
    subprocess.run(argv, cwd=repo, env=env, capture_output=True, timeout=30)
    return log.read_text().strip() if log.exists() else ""


@pytest.mark.parametrize(
    "entries",
    [
        [],
        [("gpg.program", "STUBS/a")],
        [("gpg.program", "STUBS/a"), ("gpg.openpgp.program", "STUBS/b")],
        [("gpg.openpgp.program", "STUBS/b"), ("gpg.program", "STUBS/a")],
        [("gpg.OPENPGP.program", "STUBS/b"), ("gpg.program", "STUBS/a")],  # subsections are case-sensitive
        [("GPG.openpgp.PROGRAM", "STUBS/b")],  # section and name are not
        [("gpg.program", "STUBS/a"), ("gpg.program", "/elsewhere/libexec/ttyoffer-gpg")],  # an outer editor's
        [("gpg.format", "x509"), ("gpg.program", "STUBS/a")],
        [("gpg.format", "x509"), ("gpg.x509.program", "STUBS/b")],
        [("gpg.format", "ssh"), ("gpg.program", "STUBS/a")],
        [("gpg.format", "x509"), ("gpg.format", "openpgp"), ("gpg.openpgp.program", "STUBS/b")],
    ],
)
def test_the_program_run_is_the_one_stock_git_runs(
    stubs: tuple[Path, Path, dict[str, str]], entries: list[tuple[str, str]]
) -> None:
    folder = str(stubs[1].parent / "stubs")
    entries = [(k, v.replace("STUBS", folder)) for k, v in entries]
    stock = program_run(stubs, [(k, v) for k, v in entries if not v.endswith("ttyoffer-gpg")], ours=False)
    assert stock, entries
    assert program_run(stubs, entries, ours=True) == stock


def test_the_users_program_leading_back_to_the_wrapper_ends(
    stubs: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    repo, log, env = stubs
    theirs = tmp_path / "their-gpg"
    theirs.write_text(f'#!/bin/sh\necho theirs >> "{log}"\nexec {WRAPPER} "$@"\n')
    theirs.chmod(0o755)
    trace = tmp_path / "trace"
    env = {
        **env,
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_0": "gpg.program",
        "GIT_CONFIG_VALUE_0": WRAPPER,  # an enclosing editor's
        "GIT_CONFIG_KEY_1": "gpg.program",
        "GIT_CONFIG_VALUE_1": str(theirs),
        "GIT_CONFIG_KEY_2": "gpg.program",
        "GIT_CONFIG_VALUE_2": WRAPPER,  # ours
    }
    argv = ["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace)]
    argv += ["git", "-c", "user.signingkey=/dev/null", "commit", "-q", "--allow-empty", "-S", "-m", "x"]
    subprocess.run(argv, cwd=repo, env=env, capture_output=True, timeout=30)
    assert log.read_text().split() == ["theirs", "gpg"]  # theirs, then git's default: no loop
    assert wrapper_execs(trace) == 2


# --- An editor inside an editor ----------------------------------------------


def inherited_environment(outer: Editor) -> dict[str, str]:
    """What a program started by the outer editor (its :terminal, a run)
    inherits of the editor's environment: its git entries, ours, $NVIM."""
    environ: dict[str, str] = outer.lua("return vim.fn.environ()")
    kept = {k: v for k, v in environ.items() if k.startswith(("GIT_CONFIG_", "TTYOFFER_"))}
    kept["NVIM"] = outer.lua("return vim.v.servername")
    return kept


@pytest.fixture
def nested(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> Iterator[tuple[Editor, Editor, Keyring, Path, Path]]:
    """An outer editor, and an inner one started (under strace) with the
    environment the outer one gives its programs: (outer, inner, keyring,
    repository, strace log)."""
    keyring, repo = signing
    boxes = []
    for name in ("outer", "inner"):
        box = Sandbox(tmp_path / name)
        box.manifest.write_text(registered_sandbox.manifest.read_text())
        box.env.update(keyring.env)
        boxes.append(box)
    trace = tmp_path / "trace"
    with editor(boxes[0]) as outer:
        boxes[1].env.update(inherited_environment(outer))
        argv = ["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace), *boxes[1].argv()]
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(boxes[1].env)
        try:
            nvim = pynvim.attach("child", argv=argv)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        inner = Editor(nvim)
        try:
            inner.wait_host(timeout=60)
            yield outer, inner, keyring, repo, trace
        finally:
            nvim.command("qa!", async_=True)
            nvim.close()


@pytest.mark.e2e
def test_an_editor_given_another_editors_environment_asks_once_in_its_own_window(
    nested: tuple[Editor, Editor, Keyring, Path, Path],
) -> None:
    outer, inner, keyring, repo, trace = nested
    assert inner.lua("return vim.env.GIT_CONFIG_COUNT") == "4"  # the outer's entries and its own
    inner.nvim.command(f"cd {repo}")
    inner.nvim.command("Bang git commit -q --allow-empty -S -m nested")
    win = wait_until(lambda: inner.float_wins(), timeout=60, what="the inner editor's prompt window")[0]
    wait_until(lambda: "Passphrase" in inner.buf_text(win), timeout=30, what="pinentry")
    assert outer.float_wins() == []
    inner.nvim.input(keyring.passphrase + "<CR>")
    assert inner.wait_event("TtyOfferBangDone", timeout=60)[0]["data"]["code"] == 0
    assert head_is_signed(keyring, repo)
    assert wrapper_execs(trace) == 1
    assert len(inner.events("TtyOfferPresent")) == 1
    wait_until(lambda: not wrappers_running(), what="no wrapper left")


@pytest.mark.tui
@pytest.mark.e2e
def test_neovim_in_a_terminal_of_neovim_signs_in_the_inner_editors_window(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    keyring, repo = signing
    box = Sandbox(tmp_path / "box")
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    box.env.update(keyring.env)
    trace = tmp_path / "trace"
    inner_socket = tmp_path / "inner.sock"
    term = Tui(box, [], 34, 110)
    nvim = pynvim.attach("socket", path=term.socket)
    outer = Editor(nvim)
    try:
        outer.wait_host()
        inner_argv = ["strace", "-f", "-qq", "-e", "trace=execve", "-o", str(trace), nvim_binary()]
        inner_argv += ["-u", str(box.init), "--listen", str(inner_socket), "-n"]
        outer.lua(
            "vim.cmd.enew() vim.fn.jobstart(..., { term = true, cwd = select(2, ...) })",
            inner_argv,
            str(repo),
        )
        outer.nvim.command("startinsert")
        wait_until(inner_socket.exists, timeout=30, what="the inner editor")
        inner = Editor(pynvim.attach("socket", path=str(inner_socket)))
        inner.wait_host(timeout=60)
        term.type(":!git commit -q --allow-empty -S -m nested\r")
        term.wait_text("Passphrase", timeout=60)
        assert inner.float_wins() and not outer.float_wins()  # the inner one's window
        term.type(keyring.passphrase + "\r")
        wait_until(lambda: head_is_signed(keyring, repo), timeout=60, what="the signed commit")
        assert wrapper_execs(trace) == 1
        assert len(inner.events("TtyOfferPresent")) == 1
        wait_until(lambda: not wrappers_running(), what="no wrapper left")
        inner.nvim.command("qa!", async_=True)
    finally:
        nvim.close()
        term.close()


# --- mini.git: a plain vim.uv.spawn, no $NVIM, TERM=dumb ---------------------


@pytest.fixture
def mini_git(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> Iterator[tuple[Editor, Keyring, Path]]:
    keyring, repo = signing
    mini = plugin("echasnovski/mini.nvim")
    box = Sandbox(
        tmp_path / "mini", extra_init=f"vim.opt.rtp:append({str(mini)!r})\nrequire('mini.git').setup()\n"
    )
    box.manifest.write_text(registered_sandbox.manifest.read_text())
    box.env.update(keyring.env)
    with editor(box) as ed:
        ed.nvim.command(f"cd {repo}")
        yield ed, keyring, repo


@pytest.mark.e2e
def test_mini_git_commit_asks_in_the_prompt_window(mini_git: tuple[Editor, Keyring, Path]) -> None:
    ed, keyring, repo = mini_git
    for round_ in range(2):  # a second signature right after works too
        # mini.git splits its arguments at white space: no quotes.
        ed.nvim.input(f":Git! commit -q --allow-empty -S -m from-mini.git-{round_}<CR>")
        wait_until(
            lambda: any("Passphrase" in ed.buf_text(w) for w in ed.float_wins()), timeout=30, what="pinentry"
        )
        ed.nvim.input(keyring.passphrase + "<CR>")
        wanted = f"from-mini.git-{round_}"
        wait_until(lambda: subject(repo) == wanted, timeout=30, what="the commit")  # noqa: B023
        assert head_is_signed(keyring, repo)
        wait_until(lambda: not ed.float_wins(), timeout=30, what="the window to go")
        if round_ == 0:
            subprocess.run(["gpgconf", "--kill", "gpg-agent"], env={**os.environ, **keyring.env}, check=True)
    wait_until(lambda: not wrappers_running(), what="no wrapper left")


@pytest.mark.e2e
def test_mini_git_commit_written_in_its_buffer_then_signed(mini_git: tuple[Editor, Keyring, Path]) -> None:
    ed, keyring, repo = mini_git
    ed.nvim.input(":Git commit --allow-empty -S<CR>")
    wait_until(
        lambda: ed.nvim.current.buffer.name.endswith("COMMIT_EDITMSG"), timeout=30, what="the message buffer"
    )
    ed.nvim.input("iwritten-in-the-buffer<Esc>:wq<CR>")
    wait_until(
        lambda: any("Passphrase" in ed.buf_text(w) for w in ed.float_wins()), timeout=30, what="pinentry"
    )
    ed.nvim.input(keyring.passphrase + "<CR>")
    wait_until(lambda: subject(repo) == "written-in-the-buffer", timeout=30, what="the commit")
    assert head_is_signed(keyring, repo)
    wait_until(lambda: not wrappers_running(), what="no wrapper left")


@pytest.mark.e2e
def test_mini_git_waiting_for_git_signs_in_the_window(mini_git: tuple[Editor, Keyring, Path]) -> None:
    # Without !, mini.git waits for git in a vim.wait() of its own, where the
    # editor reads no key: git has a prompt window through vim.uv.spawn,
    # pinentry draws in it, and the keys typed reach it inside the wait
    # (offer/held.lua). Signed; nobody told anything.
    ed, keyring, repo = mini_git
    ed.nvim.input(":Git commit -q --allow-empty -S -m waited-for<CR>")
    wait_until(
        lambda: any("Passphrase" in ed.buf_text(w) for w in ed.float_wins()), timeout=30, what="pinentry"
    )
    ed.nvim.input(keyring.passphrase + "<CR>")
    wait_until(lambda: subject(repo) == "waited-for", timeout=30, what="the commit")
    assert head_is_signed(keyring, repo)
    wait_until(lambda: not ed.float_wins(), timeout=30, what="the window to go")
    assert [n for n in ed.lua("return require('ttyoffer').status().notices") if ":Bang" in n] == []
    wait_until(lambda: not wrappers_running(), what="no wrapper left")


# --- lease() within bounds ---------------------------------------------------


def test_a_lease_is_only_for_the_editors_own_processes_within_max_offers(ed: Editor) -> None:
    ed.lua("require('ttyoffer').setup({ max_offers = 3 })")
    strangers = ed.lua(
        "local got = {} for _ = 1, 400 do table.insert(got, require('ttyoffer').lease(1)) end return got"
    )
    assert set(strangers) == {""}
    assert ed.lua("return require('ttyoffer.offer.records').live()") == 0
    children = ed.lua(
        "local pids, start = {}, require('ttyoffer.shared.originals').jobstart for _ = 1, 4 do "
        "table.insert(pids, vim.fn.jobpid(start({'sleep', '30'}))) end return pids"
    )
    try:
        first = ed.lua("return require('ttyoffer').lease(...)", children[0])
        assert first.startswith("/dev/pts/")
        assert ed.lua("return require('ttyoffer').lease(...)", children[0]) == ""  # one at a time
        assert ed.lua("return require('ttyoffer').lease(...)", children[1]).startswith("/dev/pts/")
        assert ed.lua("return require('ttyoffer').lease(...)", children[2]).startswith("/dev/pts/")
        assert ed.lua("return require('ttyoffer').lease(...)", children[3]) == ""  # max_offers
        assert ed.lua("return require('ttyoffer').lease(...)", ed.lua("return vim.fn.getpid()")) == ""
        assert ed.lua("return require('ttyoffer').lease(...)", os.getpid()) == ""  # the test's: not below it
    finally:
        # The sleeps are the test's: ended by pid, whatever the editor's
        # exit does with its jobs (they were seen outliving it).
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    skipped = ed.lua("return require('ttyoffer').status().skipped")
    assert skipped["lease refused: not a process of this editor"] == 2
    assert skipped["lease refused: the offer limit is reached (max_offers)"] == 1


# --- Plugins that keep their own reference to a spawner ------------------------


def gitsigns_box(registered: Sandbox, base: Path, before: bool, keyring: Keyring) -> Sandbox:
    gitsigns = plugin("lewis6991/gitsigns.nvim")
    load = f"vim.opt.rtp:append({str(gitsigns)!r})\n"
    if before:  # gitsigns loads first, in init.lua, before any plugin/ file
        load += "_G.kept = require('gitsigns.system')\n"
    else:  # ttyoffer set up first, as a plugin manager loading it first does
        load += "require('ttyoffer').setup({})\n_G.kept = require('gitsigns.system')\n"
    box = Sandbox(base, extra_init=load)
    box.manifest.write_text(registered.manifest.read_text())
    box.env.update(keyring.env)
    return box


@pytest.mark.e2e
def test_gitsigns_loaded_after_ttyoffer_gets_the_prompt(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    keyring, repo = signing
    with editor(gitsigns_box(registered_sandbox, tmp_path / "after", False, keyring)) as ed:
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
        assert "keeps its own reference" not in report
        ed.lua(
            "_G.kept.system({ 'git', 'commit', '-q', '--allow-empty', '-S', '-m', 'via gitsigns' }, "
            "{ cwd = ... }, function(out) _G.kept_code = out.code end)",
            str(repo),
        )
        win = wait_until(lambda: ed.float_wins(), timeout=30, what="the prompt window")[0]
        wait_until(lambda: "Passphrase" in ed.buf_text(win), timeout=30, what="pinentry")
        ed.nvim.input(keyring.passphrase + "<CR>")
        wait_until(lambda: ed.lua("return _G.kept_code") is not None, timeout=30, what="git to end")
        assert ed.lua("return _G.kept_code") == 0
        assert head_is_signed(keyring, repo)
        # Off: the editor's very own functions back; the kept one is stock.
        ed.nvim.command("TtyOffer off")
        same = "local o = require('ttyoffer.shared.originals') return rawequal(vim.system, o.system)"
        assert ed.lua(same) is True
        out = ed.lua(
            "return _G.kept.system({ 'sh', '-c', 'test -t 0 || echo no-tty' }, { text = true }):wait()"
        )
        assert out["stdout"] == "no-tty\n"


def test_gitsigns_loaded_before_ttyoffer_is_named_by_checkhealth(
    registered_sandbox: Sandbox, signing: tuple[Keyring, Path], tmp_path: Path
) -> None:
    keyring, _ = signing
    with editor(gitsigns_box(registered_sandbox, tmp_path / "before", True, keyring)) as ed:
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
        assert "Module gitsigns.system keeps its own reference to stock vim.system" in report
        assert "Load ttyoffer before that plugin" in report
