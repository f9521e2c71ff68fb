from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import processes
import pynvim
import pytest

from fixtures import Keyring, make_keyring, make_signing_repo, make_ssh_key
from harness import (
    LEADERS,
    ROOT,
    Editor,
    Leader,
    Sandbox,
    build_leader,
    editor,
    end_tmux_servers,
    fix_environment,
    fix_signals,
    keep_temporary_files_in,
    nvim_binary,
)
from sshd import SshdOptions, SshPush, SshServer, make_ssh_push, sshd

# Before any test module is collected: no test takes its terminal's size,
# type, locale or signals from how the suite was started, and everything
# the tests start is known as theirs.
fix_environment()
fix_signals()
THIS_RUN = processes.Census(processes.mark_this_run())
# (pid, start) -> the test after which the process was first seen running.
FIRST_SEEN: dict[tuple[int, int], str] = {}

# And everything they put in a temporary folder goes in the suite's own,
# removed at its end: pytest's tmp_path folders, and what the programs the
# tests start make in $TMPDIR (Neovim's nvim.USER, lazygit's), in the
# default tmux socket folder (TMUX_TMPDIR) and in $XDG_RUNTIME_DIR (fish's
# fish.USER, else in /tmp). Before, each run as a normal user left such
# folders in /tmp.
# Others may pass through it (0711), not list it: the tests' throwaway
# accounts reach the folders made for them there.
SUITE_TEMP = Path(tempfile.mkdtemp(prefix="tt-"))
SUITE_TEMP.chmod(0o711)
keep_temporary_files_in(SUITE_TEMP)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """pytest's tmp_path folders in the suite's temporary folder, unless
    --basetemp names one: shorter paths than /tmp/pytest-of-USER/pytest-N
    (a socket's path must fit 108 bytes), and none kept after the run."""
    if config.option.basetemp is None:
        config.option.basetemp = str(SUITE_TEMP / "p")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(SUITE_TEMP, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def nothing_left_running() -> Iterator[None]:
    """The suite fails when something it started still runs at its end
    (each test ends what it starts, by pid, whatever the outcome); those
    are listed with the test after which each was first seen, and killed.
    The first fixture: torn down after every other."""
    yield
    left = processes.end(THIS_RUN.count())
    if left:
        since = {p.pid: FIRST_SEEN.get((p.pid, p.started), "the end of the session") for p in left}
        lines = [f"  {p.describe()}\n    (first seen after {since[p.pid]})" for p in left]
        pytest.fail(
            f"the tests left {len(left)} processes running (now killed):\n" + "\n".join(lines), pytrace=False
        )


@pytest.fixture(autouse=True)
def signals_as_they_were() -> Iterator[None]:
    """A test that runs the host's code in the test process (RunTable, in
    the runs' unit tests and the persistent runs' ones) blocks SIGTERM in
    the runner's main thread (runs.hold_off_sigterm): put back after each
    test. Left blocked, every later test's tmux server and shell inherited
    it, and kill-server could not end them."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@pytest.fixture(autouse=True)
def processes_after_each_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Notes which test each process of the run was first seen after."""
    yield
    for process in THIS_RUN.count():
        FIRST_SEEN.setdefault((process.pid, process.started), request.node.nodeid)


@pytest.fixture(scope="session", autouse=True)
def compiled_leader() -> str:
    """The compiled leader of wrapped commands, built as scripts/test builds
    it (a C compiler is one of the suite's needs): the editors run with it,
    unless a test sets TTYOFFER_LEADER=sh for the /bin/sh prologue."""
    build = [str(ROOT / "scripts" / "build_leader")]
    built = subprocess.run(build, capture_output=True, text=True, check=True)
    return built.stdout.strip()


@pytest.fixture(scope="session")
def leader_builds(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The builds of the compiled leader, each made once a session, when
    first asked for (harness.build_leader: skips where one cannot be made,
    and every test of that build is skipped with the first one's reason)."""
    folder = tmp_path_factory.mktemp("leaders")
    built: dict[str, Path | BaseException] = {}

    def build(name: str) -> Path:
        if name not in built:
            try:
                built[name] = build_leader(name, folder)
            except BaseException as outcome:  # pytest's skip and fail too
                built[name] = outcome
        found = built[name]
        if isinstance(found, BaseException):
            raise found
        return found

    return build


@pytest.fixture
def leader(request: pytest.FixtureRequest, leader_builds: Callable[[str], Path]) -> Leader:
    """The leader of the wrapped commands in the test's editors.

    Unchosen it is "default": the editors find what scripts/build_leader
    built, as they always did. A test or module chooses with
    harness.on_leaders() (`@on_leaders()` for every leader of
    harness.LEADERS, `@on_leaders("nolibc", "sh")` for some; or as
    `pytestmark`), which parametrises this fixture indirectly: the test
    runs once per leader, and the `sandbox` fixture (so `ed`, and an
    `editor(sandbox)` of the test's own) is set up to lead with it; `ed`
    checks the editor did. A Sandbox made otherwise takes it with
    `leader.apply(sandbox)` before its editor starts, and `leader.check(ed)`
    after. `leader.compiled` says whether a compiled leader leads (some
    differences from stock are the /bin/sh prologue's, documented in
    :help ttyoffer-contract); `leader.name` says which."""
    name = getattr(request, "param", "default")
    if name == "default":
        return Leader(name)
    assert name in LEADERS, name
    return Leader(name, None if name == "sh" else leader_builds(name))


@pytest.fixture(scope="session")
def registered_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    sandbox = Sandbox(tmp_path_factory.mktemp("nvim"))
    sandbox.register()
    return sandbox


@pytest.fixture
def sandbox(registered_sandbox: Sandbox, tmp_path: Path, leader: Leader) -> Sandbox:
    """A fresh config per test, sharing the registered manifest, leading
    with the test's leader."""
    fresh = Sandbox(tmp_path / "nvim")
    fresh.manifest.write_text(registered_sandbox.manifest.read_text())
    leader.apply(fresh)
    return fresh


@pytest.fixture
def ed(sandbox: Sandbox, leader: Leader) -> Iterator[Editor]:
    with editor(sandbox) as e:
        leader.check(e)
        yield e


@pytest.fixture(scope="module")
def lua() -> Iterator[Any]:
    """exec_lua of a bare Neovim (no config, no host) with the plugin's Lua
    on 'runtimepath': for the Lua side's pure parts."""
    nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "--clean", "-n"])
    nvim.exec_lua("vim.opt.rtp:prepend(...)", str(ROOT))
    yield nvim.exec_lua
    nvim.close()


@pytest.fixture
def signing(tmp_path: Path) -> Iterator[tuple[Keyring, Path]]:
    """A keyring whose signing key has a passphrase (pinentry-curses asks
    for it), and a repository that signs with it."""
    keyring = make_keyring(tmp_path / "gnupg", "a passphrase to type")
    repo = make_signing_repo(tmp_path / "repo", keyring)
    try:
        yield keyring, repo
    finally:
        keyring.kill_agent()


@pytest.fixture
def sshd_factory(tmp_path: Path) -> Iterator[Callable[..., SshServer]]:
    """Starts real OpenSSH servers on 127.0.0.1: `sshd_factory()` for public
    keys of the current account, `sshd_factory(SshdOptions(...))` for more.
    Each is stopped, with whatever it forked, and its folder removed at the
    end of the test."""
    with ExitStack() as servers:
        count = 0

        def start(options: SshdOptions | None = None) -> SshServer:
            nonlocal count
            count += 1
            return servers.enter_context(sshd(tmp_path / f"sshd{count}", options))

        yield start


@pytest.fixture
def ssh_push(sshd_factory: Callable[..., SshServer], tmp_path: Path) -> SshPush:
    """A commit to push over ssh to a bare repository behind a real sshd,
    with an ed25519 key whose passphrase ssh must ask for."""
    passphrase = "push me softly"
    key = make_ssh_key(tmp_path / "push" / "key" / "id_ed25519", passphrase)
    return make_ssh_push(sshd_factory(), tmp_path / "push", key, passphrase)


@pytest.fixture
def tmux_dir() -> Iterator[Path]:
    """A private TMUX_TMPDIR: the tmux servers a test starts there, and the
    programs in their panes, are ended by pid, and the folder removed, at
    its end."""
    folder = Path(tempfile.mkdtemp(prefix="ttm-"))
    try:
        yield folder
    finally:
        end_tmux_servers(folder)
        shutil.rmtree(folder, ignore_errors=True)
