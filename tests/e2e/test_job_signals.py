"""What the plugin starts for a user begins with the signals stock's jobs
do: none blocked, none ignored, that the same program started by Neovim's
own jobstart() in the same editor would not have (issue 31).

The host blocks SIGTERM once it has runs, and Python ignores SIGPIPE and
SIGXFSZ; a mask and an ignored signal both survive exec. A tmux server
started so could be ended neither by kill nor by `tmux kill-server`, and
passed the mask on to the shell in each of its panes. The editor here is
started from a parent with SIGTERM blocked and SIGHUP and SIGUSR2 ignored,
to show that nothing of the kind reaches what the plugin starts by any
way: libuv puts a job's signals back, and so must the host. A tmux
server and client, a dtach master and client, the script(1) recording a
session and its program, an ssh client and its ControlMaster: each process
is read from /proc/PID/status (SigBlk, SigIgn) and compared with the
process of the same program and role that stock started."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import processes
import pytest
import test_remote_runs
from test_remote_runs import KEYED, Remote

from harness import Editor, Sandbox, editor, wait_until
from ttyoffer_nvim.runs import sessionprocs
from ttyoffer_nvim.runs.kinds import dtach

pytestmark = pytest.mark.e2e

# The remote machine (an account behind a real sshd), as the remote runs'
# tests have it.
remote_host = test_remote_runs.remote_host
remote_sandbox = test_remote_runs.remote_sandbox

BLOCKED = {signal.SIGTERM}
IGNORED = {signal.SIGHUP, signal.SIGUSR2}


def signals_of(pid: int) -> tuple[int, int]:
    """The process's blocked and ignored signals, as bit masks."""
    fields = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line
    )
    return int(fields["SigBlk"], 16), int(fields["SigIgn"], 16)


def names(mask: int) -> list[str]:
    """The signals in `mask` a program can name. Not glibc's two internal
    ones (32 and 33): its posix_spawn leaves them ignored in every child
    (spawni.c), a glibc program sets them again as it starts, and no
    program can use them."""
    usable = signal.valid_signals()
    known = {sig.value: sig.name for sig in signal.Signals}
    return [known.get(n, f"signal {n}") for n in range(1, 65) if mask >> (n - 1) & 1 and n in usable]


def program_of(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def with_descendants(*roots: int) -> list[int]:
    """`roots` and every process below them, as /proc has them now."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            process = processes.read(int(entry.name))
            if process is not None:
                parents[process.pid] = process.parent
    found = [pid for pid in roots if pid in parents]
    for pid in found:  # grows as it goes: breadth first
        found += [child for child, parent in parents.items() if parent == pid and child not in found]
    return found


def is_the_wrapper(process: processes.Process) -> bool:
    """Whether `process` is a session's sessionwrap.py (`PYTHON -I -S
    .../sessionwrap.py ...`), not the dtach or script(1) whose argv names it."""
    words = process.command.split()
    return words[1:3] == ["-I", "-S"] and len(words) > 3 and words[3].endswith("/sessionwrap.py")


class Started:
    """The processes of one way of starting things (stock's or ours), by
    role (the way) and program; each remembered to be ended by pid."""

    def __init__(self, record: list[processes.Process]) -> None:
        self.masks: dict[tuple[str, str], tuple[int, int]] = {}
        self.pids: dict[tuple[str, str], list[int]] = {}
        self._record = record

    def add(self, role: str, *roots: int) -> None:
        for pid in with_descendants(*roots):
            process = processes.read(pid)
            if process is None:
                continue
            self._record.append(process)
            if is_the_wrapper(process):
                # The session's own wrapper, not what the user runs: it
                # ignores the signals a session outlives on purpose, and
                # starts the program with them back to the default.
                continue
            key = (role, program_of(pid))
            blocked, ignored = signals_of(pid)
            old_blocked, old_ignored = self.masks.get(key, (0, 0))
            self.masks[key] = (old_blocked | blocked, old_ignored | ignored)
            self.pids.setdefault(key, []).append(pid)


def more_than_stock(ours: Started, stock: Started) -> dict[str, Any]:
    """Per process of ours: the signals it has blocked or ignored that the
    same program in the same role, started by stock, has not."""
    found: dict[str, Any] = {}
    for key, (blocked, ignored) in ours.masks.items():
        label = f"{key[1]} ({key[0]}, pids {ours.pids[key]})"
        if key not in stock.masks:
            found[label] = f"no stock counterpart among {sorted(stock.masks)}"
            continue
        stock_blocked, stock_ignored = stock.masks[key]
        extra = {"blocked": names(blocked & ~stock_blocked), "ignored": names(ignored & ~stock_ignored)}
        if extra["blocked"] or extra["ignored"]:
            found[label] = extra
    return found


@contextmanager
def signals_of_a_careless_parent() -> Iterator[None]:
    """The test process, for the editor's start only, as a parent that
    leaves signals blocked and ignored to what it starts."""
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in IGNORED}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextmanager
def careless_editor(sandbox: Sandbox, record: list[processes.Process]) -> Iterator[Editor]:
    """An editor started by the careless parent; every process the test
    records is ended by pid at the end, whatever the outcome."""
    try:
        with ExitStack() as stack:
            with signals_of_a_careless_parent():
                ed = stack.enter_context(editor(sandbox))
            pid = ed.lua("return vim.fn.getpid()")
            # What the test sets up reaches the editor: Neovim unblocks its
            # own mask and catches SIGHUP, but keeps SIGUSR2 ignored (and
            # libuv puts it back for a job).
            assert "SIGUSR2" in names(signals_of(pid)[1])
            yield ed
    finally:
        # What those started meanwhile, too (a session's program).
        below = with_descendants(*(p.pid for p in record if processes.still_there(p)))
        record += [p for p in map(processes.read, below) if p is not None]
        processes.end(record, grace=5.0)


def stock_job(ed: Editor, record: list[processes.Process], argv: list[str], pty: bool = False) -> int:
    """Started by Neovim's own jobstart() (the plugin wraps vim.fn.jobstart:
    the function it wrapped)."""
    start = (
        "local job = require('ttyoffer.shared.originals').jobstart(..., {pty = select(2, ...)}) "
        "return job > 0 and vim.fn.jobpid(job)"
    )
    pid: int = ed.lua(start, argv, pty)
    assert pid, argv
    started = processes.read(pid)
    if started is not None:
        record.append(started)
    return pid


def run_pid(ed: Editor, record: list[processes.Process], opts: dict[str, Any]) -> int:
    """The pid the host started for a run of the plugin's."""
    run_id = ed.lua("return require('ttyoffer').run(...).id", opts)
    pid: int = wait_until(
        lambda: ed.lua("local r = require('ttyoffer.runs').get(...) return r and r.pid", run_id),
        20,
        f"the run {opts}",
    )
    started = processes.read(pid)
    if started is not None:
        record.append(started)
    return pid


def host_holds_sigterm(ed: Editor) -> None:
    """The host, once it has a run, does block SIGTERM (runs.hold_off_sigterm):
    what the comparison is about."""
    host = ed.host_status()["pid"]
    assert "SIGTERM" in names(signals_of(host)[0])


def program_started(pids: list[int] | tuple[int, ...], program: str = "sleep") -> bool:
    """Whether `program` runs in or below `pids` (it has been exec'd)."""
    with suppress(OSError):
        return any(program_of(pid) == program for pid in with_descendants(*pids))
    return False


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """A short $XDG_RUNTIME_DIR (a socket's path must fit 108 bytes); every
    dtach session in it (the plugin's, and stock's beside them) is killed
    afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="tts-"))
    try:
        yield folder
    finally:
        for found in (folder / "ttyoffer-sessions", folder):
            for sock in found.glob("*.sock"):
                dtach.kill_session(found, sock.name[: -len(".sock")])
        shutil.rmtree(folder, ignore_errors=True)


def tmux_processes(env: dict[str, str], *server: str) -> list[int]:
    """A tmux server's pid and its panes' programs'."""
    listed = subprocess.run(
        ["tmux", *server, "list-panes", "-a", "-F", "#{pid} #{pane_pid}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout
    return sorted({int(word) for word in listed.split()})


def dtach_session(socket: Path) -> list[int]:
    """The dtach master serving `socket`, once its program runs (`dtach -n`
    forks it and is gone)."""
    masters = sessionprocs.ProcessTable().masters(socket)
    return masters if program_started(masters) else []


def test_runs_tmux_and_dtach_start_with_a_jobs_signals(
    sandbox: Sandbox, tmux_dir: Path, runtime_dir: Path
) -> None:
    sandbox.env.update(TMUX_TMPDIR=str(tmux_dir), XDG_RUNTIME_DIR=str(runtime_dir))
    sandbox.env.pop("TMUX", None)
    record: list[processes.Process] = []
    stock, ours = Started(record), Started(record)
    with careless_editor(sandbox, record) as ed:
        # A program, as a job and as a run.
        job = stock_job(ed, record, ["sleep", "301"])
        wait_until(lambda: program_started([job]), what="stock's program")
        stock.add("program", job)
        ours.add("program", run_pid(ed, record, {"argv": ["sleep", "311"]}))
        host_holds_sigterm(ed)
        # tmux: a server with a program in its pane, and a client attached.
        stock_job(ed, record, ["tmux", "-L", "stock", "new-session", "-d", "-s", "stock", "sleep", "302"])
        server = wait_until(lambda: tmux_processes(sandbox.env, "-L", "stock"), what="stock's tmux server")
        wait_until(lambda: program_started(server), what="the program in stock's tmux pane")
        client = stock_job(ed, record, ["tmux", "-L", "stock", "attach-session", "-t", "=stock"], pty=True)
        wait_until(lambda: program_started([client], "tmux: client"), what="stock's tmux client")
        stock.add("tmux", *server, client)
        client = run_pid(ed, record, {"tmux": "sig", "argv": ["sleep", "312"]})
        server = wait_until(lambda: tmux_processes(sandbox.env), what="the run's tmux server")
        wait_until(lambda: program_started(server), what="the program in the run's tmux pane")
        wait_until(lambda: program_started([client], "tmux: client"), what="the run's tmux client")
        ours.add("tmux", *server, client)
        # dtach: a session's master with script(1) recording its program,
        # and a client attached.
        socket = runtime_dir / "stock.sock"
        recorded = ["script", "-q", "-f", "-e", "-c", "sleep 303", "/dev/null"]
        stock_job(ed, record, ["dtach", "-n", str(socket), "-E", "-z", *recorded])
        masters = wait_until(lambda: dtach_session(socket), what="stock's session and program")
        client = stock_job(ed, record, ["dtach", "-a", str(socket), "-E", "-z", "-r", "winch"], pty=True)
        wait_until(lambda: program_started([client], "dtach"), what="stock's dtach client")
        stock.add("dtach", *masters, client)
        client = run_pid(ed, record, {"persist": "sig", "argv": ["sleep", "313"]})
        ours_socket = runtime_dir / "ttyoffer-sessions" / "sig.sock"
        masters = wait_until(lambda: dtach_session(ours_socket), what="the run's session and program")
        ours.add("dtach", *masters, client)
        assert {program for role, program in ours.masks if role == "dtach"} >= {"dtach", "script", "sleep"}
        assert more_than_stock(ours, stock) == {}


def test_a_remote_runs_ssh_starts_with_a_jobs_signals(
    remote_sandbox: Sandbox, remote_host: Remote, tmp_path: Path
) -> None:
    record: list[processes.Process] = []
    stock, ours = Started(record), Started(record)
    # Both through a shared connection, as the plugin's ssh runs: a client
    # and the ControlMaster it leaves in the background.
    control = Path(tempfile.mkdtemp(prefix="ttc-"))
    shared = ["-o", "ControlMaster=auto", "-o", f"ControlPath={control}/%C", "-o", "ControlPersist=60"]
    try:
        with careless_editor(remote_sandbox, record) as ed:
            ssh = [*remote_host.ssh(), *shared, "-tt", KEYED]
            client = stock_job(ed, record, [*ssh, "sleep", "304"], pty=True)
            masters = wait_until(lambda: ssh_processes(str(control), client), 30, "stock's ssh master")
            stock.add("ssh", client, *masters)
            client = run_pid(ed, record, {"persist": "rsig", "host": KEYED, "argv": ["sleep", "314"]})
            host_holds_sigterm(ed)
            runtime = str(remote_host.runtime / "ttyoffer-ssh")
            masters = wait_until(lambda: ssh_processes(runtime, client), 30, "the run's ssh master")
            ours.add("ssh", client, *masters)
            assert more_than_stock(ours, stock) == {}
    finally:
        shutil.rmtree(control, ignore_errors=True)


def ssh_processes(control: str, client: int) -> list[int]:
    """The ssh processes other than `client` that name the control folder:
    the ControlMaster (a fork of the first client: `ssh: FOLDER/HASH [mux]`)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == client:
            continue
        process = processes.read(int(entry.name))
        with suppress(OSError):
            if process is not None and control in process.command and program_of(process.pid) == "ssh":
                found.append(process.pid)
    return found
