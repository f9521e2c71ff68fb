"""Hermetic: the compiled leader (libexec/ttyoffer-lead.c), each build of
libexec/ttyoffer-lead.flags that compiles here (without libc, on a static
libc, on the shared one), run as jobstart() runs it: a session leader
given a real pty to take."""

from __future__ import annotations

import ctypes
import os
import platform
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from harness import programs_with, wait_until
from ttyoffer_nvim.term.hangup import HANG_UP_MARK, send_hang_up
from ttyoffer_nvim.term.procfs import process_gone

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "libexec" / "ttyoffer-lead.c"
FLAGS = ROOT / "libexec" / "ttyoffer-lead.flags"
FREESTANDING = platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64")

BUILDS = [
    line.split() for line in FLAGS.read_text().splitlines() if line.strip() and not line.startswith("#")
]
NAMES = [
    "freestanding" if "-DLEAD_FREESTANDING" in b else "static" if "-static" in b else "shared" for b in BUILDS
]

# What the program reports of itself: pid, group, session, the terminal's
# foreground group, its controlling terminal (tty_nr of /proc/PID/stat),
# and the environment entries the leader sets.
REPORT = (
    "import os; fd = os.open('/dev/tty', os.O_RDWR); "
    "print(os.getpid(), os.getpgrp(), os.getsid(0), os.tcgetpgrp(fd), "
    "open('/proc/self/stat').read().rsplit(')', 1)[1].split()[4]); "
    "print(os.environ.get('GPG_TTY'), os.environ.get('TERM'))"
)


# The build without libc for arm64 too, where a cross compiler and
# qemu-user are there (scripts/bootstrap.sh installs them for the tests on
# x86-64): its assembly runs under qemu, the programs it starts natively.
CROSS_ARM64 = ("aarch64-linux-gnu-gcc", "qemu-aarch64-static")


@pytest.fixture(scope="module", params=[*range(len(BUILDS)), "arm64"], ids=[*NAMES, "freestanding-arm64"])
def leader(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The argv that starts the leader of one build."""
    out = tmp_path_factory.mktemp("leader") / "ttyoffer-lead"
    if request.param == "arm64":
        if platform.machine() == "aarch64" or not all(shutil.which(tool) for tool in CROSS_ARM64):
            pytest.skip("no arm64 cross compiler and qemu-user here (or this is arm64: built natively)")
        build, compiler, runner = BUILDS[0], CROSS_ARM64[0], [CROSS_ARM64[1]]
    else:
        build, compiler, runner = BUILDS[request.param], "cc", []
    if shutil.which(compiler) is None:
        pytest.skip("no C compiler")
    built = subprocess.run([compiler, *build, "-o", str(out), str(SOURCE)], capture_output=True, text=True)
    if built.returncode != 0:
        if "-DLEAD_FREESTANDING" in build and (FREESTANDING or runner):
            pytest.fail(f"the build without libc must compile for {platform.machine()}: {built.stderr}")
        pytest.skip(f"this build does not compile here: {built.stderr[-200:]}")
    return [*runner, str(out)]


@contextmanager
def pty_slave() -> Iterator[str]:
    """A pty's slave path, its master held open (as the host holds it)."""
    master, slave = os.openpty()
    name = os.ttyname(slave)
    os.close(slave)
    try:
        yield name
    finally:
        os.close(master)


def signals_as_for_a_job() -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def lead(
    leader: list[str], slave: str, flags: str, *argv: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """The leader started as jobstart() starts it: a session of its own,
    and the signals as Neovim leaves them to a child (none blocked, none
    ignored), whatever the test runner's are."""
    return subprocess.Popen(
        [*leader, slave, flags, *argv],
        start_new_session=True,
        preexec_fn=signals_as_for_a_job,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_the_program_runs_in_a_group_of_its_own_in_the_foreground_of_the_terminal(leader: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TERM", "GPG_TTY")}
    with pty_slave() as slave:
        proc = lead(leader, slave, "g", "python3", "-c", REPORT, env=env)
        out, err = proc.communicate(timeout=30)
        device = os.stat(slave).st_rdev
    assert proc.returncode == 0, err
    ids, names = out.splitlines()
    pid, group, session, foreground, tty = ids.split()
    assert int(session) == proc.pid  # the leader leads the session
    assert int(group) == int(pid) != proc.pid  # the program: a group of its own
    assert int(foreground) == int(group)  # ... the terminal's foreground one
    assert int(tty) == device
    assert names.split() == [slave, "xterm-256color"]


def test_the_environment_is_the_callers_with_gpg_tty_only_when_asked(leader: list[str]) -> None:
    env = {"PATH": os.environ["PATH"], "TERM": "screen", "GPG_TTY": "/dev/stale", "A-B": "x", "EMPTY": ""}
    with pty_slave() as slave:
        kept = lead(leader, slave, "-", "env", "-0", env=env).communicate(timeout=30)[0]
        set_ = lead(leader, slave, "g", "env", "-0", env=env).communicate(timeout=30)[0]
    assert sorted(kept.split("\0")[:-1]) == sorted(f"{k}={v}" for k, v in env.items())
    assert sorted(set_.split("\0")[:-1]) == sorted(f"{k}={v}" for k, v in {**env, "GPG_TTY": slave}.items())


def test_an_empty_term_is_supplied(leader: list[str]) -> None:
    with pty_slave() as slave:
        out = lead(leader, slave, "-", "printenv", "TERM", env={"PATH": os.environ["PATH"], "TERM": ""})
        assert out.communicate(timeout=30)[0] == "xterm-256color\n"


def test_it_ends_as_the_program_ended(leader: list[str]) -> None:
    with pty_slave() as slave:
        exited = lead(leader, slave, "-", "sh", "-c", "exit 7")
        killed = lead(leader, slave, "-", "sh", "-c", "kill -TERM $$")
        exited.communicate(timeout=30)
        killed.communicate(timeout=30)
    assert exited.returncode == 7
    assert killed.returncode == -signal.SIGTERM


def test_what_cannot_run_is_reported_as_the_shell_does(leader: list[str], tmp_path: Path) -> None:
    script = tmp_path / "no-interpreter-line"
    script.write_text("echo read by sh\n")
    script.chmod(0o700)
    with pty_slave() as slave:
        missing = lead(leader, slave, "-", "no-such-program")
        directory = lead(leader, slave, "-", "/")
        scripted = lead(leader, slave, "-", str(script))
        results = [p.communicate(timeout=30) for p in (missing, directory, scripted)]
    assert (missing.returncode, results[0][1]) == (127, "ttyoffer-lead: no-such-program: not found\n")
    assert (directory.returncode, results[1][1]) == (126, "ttyoffer-lead: /: Permission denied\n")
    # A file without #! is read by /bin/sh, as execvp(3) does.
    assert (scripted.returncode, results[2][0]) == (0, "read by sh\n")


def test_without_its_terminal_the_program_runs_as_it_is(leader: list[str]) -> None:
    proc = lead(
        leader,
        "/nonexistent/pts",
        "g",
        "sh",
        "-c",
        'echo "$GPG_TTY"; exec 3</dev/tty',
        env={"PATH": "/bin:/usr/bin"},
    )
    out, _ = proc.communicate(timeout=30)
    assert out == "\n"  # no GPG_TTY set, and no controlling terminal
    assert proc.returncode != 0


def test_too_few_arguments_is_a_usage_error(leader: list[str]) -> None:
    proc = subprocess.run([*leader, "/dev/null", "-"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: ttyoffer-lead")


def test_what_the_program_left_in_the_background_lives_on(leader: list[str]) -> None:
    with pty_slave() as slave:
        proc = lead(leader, slave, "-", "sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!")
        out, _ = proc.communicate(timeout=30)
        background = int(out)
        try:
            # The leader hung up the terminal's foreground group as it ended:
            # by then that was the leader's own, so the sleep lives.
            time.sleep(0.3)
            assert not process_gone(background)
        finally:
            os.kill(background, signal.SIGKILL)


@pytest.mark.parametrize(
    ("flags", "sleep_lives"), [("-", False), ("p", True)], ids=["to-group", "to-program"]
)
def test_a_signal_for_the_leader_goes_on_to_the_program(
    leader: list[str], flags: str, sleep_lives: bool
) -> None:
    with pty_slave() as slave:
        proc = lead(
            leader, slave, flags, "sh", "-c", "trap 'exit 3' TERM; sleep 60 >/dev/null 2>&1 & echo $!; wait"
        )
        assert proc.stdout is not None
        background = int(proc.stdout.readline())
        try:
            # Until its exec the sleep is a copy of the shell, the trap too.
            wait_until(lambda: Path(f"/proc/{background}/comm").read_text() == "sleep\n", 10, "sleep's exec")
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
            assert proc.returncode == 3  # the trap ran: the program got it
            # jobstop() and system() signal the job's group, vim.system()'s
            # kill() its pid: the leader passes a signal on the same way.
            if sleep_lives:
                time.sleep(0.5)  # an absence: a signal passed on lands sooner
                assert not process_gone(background)
            else:
                wait_until(lambda: process_gone(background), 10, "the group's sleep to end")
        finally:
            if not process_gone(background):
                os.kill(background, signal.SIGKILL)


def test_a_sigkill_of_the_leader_ends_the_program_too(leader: list[str]) -> None:
    with pty_slave() as slave:
        proc = lead(leader, slave, "-", "sh", "-c", "echo $$; trap '' HUP; exec sleep 60")
        assert proc.stdout is not None
        program = int(proc.stdout.readline())
        proc.kill()
        proc.communicate(timeout=30)
        try:
            wait_until(lambda: process_gone(program), 10, "the program to end")
        finally:
            if not process_gone(program):
                os.kill(program, signal.SIGKILL)


def test_the_build_without_libc_is_what_it_says(leader: list[str], request: pytest.FixtureRequest) -> None:
    if not request.node.callspec.id.startswith("freestanding"):
        pytest.skip("the other builds use libc")
    data = Path(leader[-1]).read_bytes()
    # Static, no loader named, and nothing of glibc in it.
    assert b"ld-linux" not in data and b"GLIBC" not in data
    assert len(data) < 128 * 1024  # a static glibc one is 0.75 MB


def close_pipes(proc: subprocess.Popen[str]) -> None:
    """A leader's ends of the pipes its program's leftovers may still hold."""
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]


# A command whose shell and sleep ignore SIGTERM and SIGHUP: only a SIGKILL
# ends them, and the sleep is not the leader's child.
STUBBORN = 'trap "" TERM HUP; sleep {}; true'


def children_of(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def group_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()[2])


def watcher_of(leader: int) -> int | None:
    """The leader's watcher (its second child) once it is in a group of
    its own, else None."""
    children = children_of(leader)
    return children[1] if len(children) == 2 and group_of(children[1]) == children[1] else None


@pytest.mark.parametrize("started_by", ["stock", "leader"])
def test_jobstops_sigkill_ends_the_programs_whole_group(leader: list[str], started_by: str) -> None:
    # jobstop(): SIGTERM to the job's process group, then SIGKILL to it once
    # the job has not ended. Stock's SIGKILL ends the `sh` and its `sleep`;
    # the leader's dies alone, so its watcher, started by the SIGTERM it
    # passed on, kills the program's group for it.
    argument = "311.71" if started_by == "stock" else "311.72"
    command = ["sh", "-c", STUBBORN.format(argument)]
    with pty_slave() as slave:
        if started_by == "stock":
            proc = subprocess.Popen(
                command, start_new_session=True, preexec_fn=signals_as_for_a_job, text=True
            )
        else:
            proc = lead(leader, slave, "g", *command)
        try:
            wait_until(lambda: programs_with(argument), 10, "the sleep")
            os.killpg(proc.pid, signal.SIGTERM)
            if started_by == "leader":  # the watcher, out of the group the SIGKILL is for
                wait_until(lambda: watcher_of(proc.pid), 10, "the watcher in a group of its own")
            assert proc.poll() is None  # the SIGTERM ended nothing
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            wait_until(lambda: not programs_with(argument), 10, "the sleep to end")
        finally:
            close_pipes(proc)
            for pid in programs_with(argument):
                os.kill(pid, signal.SIGKILL)


class Tracer:
    """ptrace(2) through libc, as much as holding a new child takes: the
    tracee seized (it runs on), its signals passed on, the children it
    forks held stopped before their first instruction."""

    SEIZE, INTERRUPT, CONT, DETACH, GETEVENTMSG = 0x4206, 0x4207, 7, 17, 0x4201
    TRACE_FORKS = 0x2 | 0x4 | 0x8  # PTRACE_O_TRACEFORK, TRACEVFORK, TRACECLONE
    FORK_EVENTS = (1, 2, 3)  # PTRACE_EVENT_FORK, VFORK, CLONE
    WALL = 0x40000000

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.ptrace.restype = ctypes.c_long
        self.libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]

    def call(self, request: int, pid: int, data: int = 0, address: Any = None) -> None:
        if self.libc.ptrace(request, pid, address, data) == -1:
            error = ctypes.get_errno()
            raise OSError(error, f"ptrace({request:#x}, {pid}): {os.strerror(error)}")

    def seize(self, pid: int) -> None:
        self.call(self.SEIZE, pid, self.TRACE_FORKS)

    def next_fork(self, pid: int) -> int:
        """Let `pid` run on, its signals delivered, until it forks: the
        new child's pid (held in its first stop)."""
        while True:
            _, status = os.waitpid(pid, self.WALL)
            assert os.WIFSTOPPED(status), status
            event = status >> 16
            if event in self.FORK_EVENTS:
                child = ctypes.c_ulong()
                self.call(self.GETEVENTMSG, pid, ctypes.addressof(child))
                self.call(self.CONT, pid)
                os.waitpid(child.value, self.WALL)  # its first stop
                return child.value
            self.call(self.CONT, pid, 0 if event else os.WSTOPSIG(status))

    def end(self, pid: int) -> None:
        """SIGKILL to a tracee (held or running), reaped here: its stops
        and its end are reported to its tracer first."""
        os.kill(pid, signal.SIGKILL)
        with suppress(ChildProcessError):
            while not os.WIFEXITED(status := os.waitpid(pid, self.WALL)[1]) and not os.WIFSIGNALED(status):
                pass

    def detach(self, pid: int, stopped: bool) -> None:
        if not stopped:
            self.call(self.INTERRUPT, pid)
            os.waitpid(pid, self.WALL)
        self.call(self.DETACH, pid)


# wait4's number where the leader's system calls are the kernel's.
WAIT4 = {"x86_64": 61, "aarch64": 260}.get(platform.machine())


def test_the_watcher_is_in_a_group_of_its_own_before_it_first_runs(
    leader: list[str], request: pytest.FixtureRequest
) -> None:
    # A new child may wait long for its first run on a loaded machine, and
    # until it leaves the leader's group, jobstop()'s SIGKILL for that group
    # ends it with the leader: nothing then ends the program's group. So
    # the leader puts its watcher in a group of its own before it goes back
    # to its wait. Here the watcher is held (ptrace) before its first
    # instruction, and its group read once the leader waits again.
    if request.node.callspec.id.endswith("arm64") or WAIT4 is None:
        pytest.skip("under qemu the leader's forks and waits are qemu's")
    tracer = Tracer()
    with pty_slave() as slave:
        proc = lead(leader, slave, "-", "sh", "-c", STUBBORN.format("311.75"))
        traced: list[int] = []  # the leader and the watcher while they are our tracees
        try:
            wait_until(lambda: programs_with("311.75"), 10, "the sleep")
            try:
                tracer.seize(proc.pid)
            except OSError as error:
                pytest.skip(f"no ptrace here: {error}")
            traced.append(proc.pid)
            os.killpg(proc.pid, signal.SIGTERM)
            held = tracer.next_fork(proc.pid)
            traced.append(held)
            syscall = Path(f"/proc/{proc.pid}/syscall")
            wait_until(
                lambda: syscall.read_text().split()[0] == str(WAIT4), 10, "the leader back in its wait"
            )
            assert group_of(held) == held
            tracer.detach(held, stopped=True)
            tracer.detach(proc.pid, stopped=False)
            traced.clear()
            # The rest of jobstop(): its SIGKILL for the group ends it all.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            wait_until(lambda: not programs_with("311.75"), 10, "the sleep to end")
        finally:
            for pid in traced:  # a failure on the way
                tracer.end(pid)
            if proc.returncode is None:
                proc.kill()
                proc.wait(timeout=30)
            close_pipes(proc)
            for pid in programs_with("311.75"):
                os.kill(pid, signal.SIGKILL)


def test_a_sigkill_for_the_program_alone_leaves_what_stock_leaves(leader: list[str]) -> None:
    # vim.system()'s :kill(9) and a timed-out :wait() signal the pid: stock's
    # `sh` dies and its `sleep` lives on; so here (no watcher for flag p).
    with pty_slave() as slave:
        proc = lead(leader, slave, "p", "sh", "-c", STUBBORN.format("311.73"))
        try:
            wait_until(lambda: programs_with("311.73"), 10, "the sleep")
            proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)  # an absence: the SIGTERM passed on ends nothing
            proc.kill()
            proc.wait(timeout=30)
            time.sleep(0.5)  # an absence: nothing kills the sleep, as in stock
            assert programs_with("311.73")
        finally:
            close_pipes(proc)
            for pid in programs_with("311.73"):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("flags", ["-", "p"])
def test_the_watcher_goes_with_a_leader_that_ends_as_its_program_did(leader: list[str], flags: str) -> None:
    # A program that ends on the SIGTERM passed on: the leader ends as it
    # did, and what it left in the background lives on, as in stock (its
    # job ended, so jobstop() sends no SIGKILL).
    with pty_slave() as slave:
        script = "trap 'exit 3' TERM; (trap '' TERM HUP; exec sleep 311.74) & wait"
        proc = lead(leader, slave, flags, "sh", "-c", script)
        try:
            wait_until(lambda: programs_with("311.74"), 10, "the sleep")
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            assert proc.returncode == 3
            time.sleep(0.5)  # an absence: no watcher kills the sleep
            assert programs_with("311.74")
        finally:
            close_pipes(proc)
            for pid in programs_with("311.74"):
                os.kill(pid, signal.SIGKILL)


def test_a_program_stopped_by_sigstop_stays_stopped(leader: list[str]) -> None:
    # kill -STOP from outside stops stock's command until a SIGCONT; so here.
    # The stops of job control (SIGTSTP, SIGTTIN, SIGTTOU) stock's command
    # never gets (its group is orphaned): here it is let go on at once.
    with pty_slave() as slave:
        proc = lead(leader, slave, "-", "sleep", "311.75")
        try:
            program = wait_until(lambda: programs_with("311.75"), 10, "the sleep")[0]
            os.kill(program, signal.SIGTSTP)
            wait_until(lambda: state(program) != "T", 10, "the stop let go on")
            os.kill(program, signal.SIGSTOP)
            wait_until(lambda: state(program) == "T", 10, "the stop")
            time.sleep(0.5)  # an absence: nothing continues it
            assert state(program) == "T" and proc.poll() is None
            os.kill(program, signal.SIGCONT)
            wait_until(lambda: state(program) != "T", 10, "the sleep to go on")
            os.kill(program, signal.SIGTERM)
            proc.wait(timeout=30)
            assert proc.returncode == -signal.SIGTERM
        finally:
            close_pipes(proc)
            for pid in programs_with("311.75"):
                os.kill(pid, signal.SIGKILL)


# The terminal's hang-up, which only the plugin causes (a prompt declined,
# one no key could reach): a program it kills ends the leader with 129, a
# failure however the caller reads it (luv's on_exit would give code 0,
# signal 1 for a death by SIGHUP, and mini.deps reads the code only). Any
# other SIGHUP is mirrored as stock's.


@pytest.mark.parametrize("flags", ["-", "p"])
def test_a_program_the_terminals_hang_up_killed_ends_the_leader_with_129(
    leader: list[str], flags: str
) -> None:
    master, slave = os.openpty()
    name = os.ttyname(slave)
    os.close(slave)
    proc = lead(leader, name, flags, "sleep", "311.76")
    try:
        wait_until(lambda: programs_with("311.76"), 10, "the sleep")
        os.close(master)  # the kernel's SIGHUP (SI_KERNEL) to the leader
        master = -1
        proc.communicate(timeout=30)
        assert proc.returncode == 128 + signal.SIGHUP
    finally:
        if master >= 0:
            os.close(master)
        for pid in programs_with("311.76"):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("flags", ["-", "p"])
def test_the_plugins_marked_hang_up_ends_the_leader_with_129(leader: list[str], flags: str) -> None:
    # The host sends its own first (its keeper may hold the last master).
    with pty_slave() as slave:
        script = "sleep 311.77 & wait"
        proc = lead(leader, slave, flags, "sh", "-c", script)
        try:
            wait_until(lambda: programs_with("311.77"), 10, "the sleep")
            send_hang_up(proc.pid)
            proc.communicate(timeout=30)
            assert proc.returncode == 128 + signal.SIGHUP
            # It went to the program's group, as the kernel's would: the
            # sleep too, with flag p as without.
            wait_until(lambda: not programs_with("311.77"), 10, "the group's sleep to end")
        finally:
            close_pipes(proc)
            for pid in programs_with("311.77"):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("to", ["leader", "program"])
def test_any_other_sighup_is_mirrored_as_stock(leader: list[str], to: str) -> None:
    # `kill -HUP`, uv.kill(pid, 'sighup'), handle:kill('sighup'): SI_USER.
    with pty_slave() as slave:
        proc = lead(leader, slave, "p", "sleep", "311.78")
        try:
            program = wait_until(lambda: programs_with("311.78"), 10, "the sleep")[0]
            os.kill(proc.pid if to == "leader" else program, signal.SIGHUP)
            proc.communicate(timeout=30)
            assert proc.returncode == -signal.SIGHUP
        finally:
            for pid in programs_with("311.78"):
                os.kill(pid, signal.SIGKILL)


def test_a_program_that_ends_on_the_hang_up_is_mirrored(leader: list[str]) -> None:
    with pty_slave() as slave:
        proc = lead(leader, slave, "-", "sh", "-c", "trap 'exit 3' HUP; sleep 311.79 & wait")
        try:
            wait_until(lambda: programs_with("311.79"), 10, "the sleep")
            send_hang_up(proc.pid)
            proc.communicate(timeout=30)
            assert proc.returncode == 3
        finally:
            close_pipes(proc)
            for pid in programs_with("311.79"):
                os.kill(pid, signal.SIGKILL)


def test_the_leader_and_the_host_mark_the_hang_up_alike() -> None:
    defined = re.search(r"#define LEAD_HANG_UP_MARK (0x[0-9a-fA-F]+)UL", SOURCE.read_text())
    assert defined is not None
    assert int(defined.group(1), 16) == HANG_UP_MARK
