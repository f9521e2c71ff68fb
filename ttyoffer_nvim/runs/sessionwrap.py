"""Inside a persistent session: the program's parent, and the recording's
writer.

    dtach -A SOCK … script -q -f -e -c 'exec PYTHON -I -S sessionwrap.py
        FOLDER NAME SHELL -- ARGV…' FOLDER/NAME.fifo

script(1) runs this with `sh -c`; it runs the program as its child on
script's terminal and waits for it, so that how the program ended (its exit
status, the signal that killed it, that it could not start) is known to
someone and written down: NAME.status in the session folder, read by the
editor that is attached then, or by the next one that asks. The signals a
terminal or a kill of the whole session sends are ignored here (the program
gets them as it would without us), so the ending is written whatever the
program dies of.

script writes its typescript into NAME.fifo, a FIFO the host made; this
reads it and keeps the last RECORDING_BYTES of it in two files, NAME.log and
NAME.log.1 (each at most half: when NAME.log is full it becomes NAME.log.1),
so a session printing for days while nobody looks stays bounded. Once the
program has ended, a fork of this keeps reading until script closes the FIFO
(script still copies what the program printed last): script would die of a
write nobody reads.

Run as a script of its own with `-I -S`: standard library only, and nothing
of the package is imported (the session outlives the editor and its host).
Every file is opened below the folder's descriptor, never following a link,
and made afresh (O_EXCL) after whatever had its name is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import shutil
import signal
import stat
import sys
import time

# rules.RECORDING_BYTES: this module runs alone and imports nothing of ours
# (tests/nvim/test_run_rules.py holds the two equal).
RECORDING_BYTES = 1024 * 1024
READ_SIZE = 1024 * 1024
# The FIFO's buffer: larger than the default 64 KB, so that script, writing a
# few KB at a time, wakes this reader less often under a flood.
FIFO_SIZE = 1024 * 1024
# After the program's end: how long the fork waits for script to close.
DRAIN_SECONDS = 10.0
# Ignored here, defaults for the program (an ignored signal stays ignored
# across exec): a shell waiting for its foreground job does the same.
IGNORED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGTSTP)
DEFAULTS = (*IGNORED, signal.SIGPIPE, signal.SIGXFSZ)
_OPEN = os.O_CLOEXEC | os.O_NOFOLLOW


class Ring:
    """The recording: at most `limit` bytes in two files of half that."""

    def __init__(self, folder: int, name: str, limit: int = RECORDING_BYTES) -> None:
        self.folder, self.current, self.previous = folder, f"{name}.log", f"{name}.log.1"
        self.half = max(1, limit // 2)
        for old in (self.current, self.previous):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(old, dir_fd=folder)
        self.fd = self._fresh()
        self.size = 0

    def _fresh(self) -> int:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.current, dir_fd=self.folder)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | _OPEN
        return os.open(self.current, flags, 0o600, dir_fd=self.folder)

    def _still_ours(self) -> bool:
        try:
            named = os.stat(self.current, dir_fd=self.folder, follow_symlinks=False)
        except OSError:
            return False
        mine = os.fstat(self.fd)
        return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)

    def write(self, data: bytes) -> None:
        if len(data) > self.half:
            data = data[-self.half :]
        if self.size + len(data) > self.half:
            if not self._still_ours():
                return  # the session was forgotten; its name may be another's now
            os.rename(self.current, self.previous, src_dir_fd=self.folder, dst_dir_fd=self.folder)
            os.close(self.fd)
            self.fd = self._fresh()
            self.size = 0
        view = memoryview(data)
        while view:
            written = os.write(self.fd, view)
            view = view[written:]
        self.size += len(data)


def open_folder(path: str) -> int:
    """The session folder's descriptor: a directory of ours, 0700."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _OPEN)
    info = os.fstat(fd)
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        os.close(fd)
        raise OSError(f"{path} is not a folder of yours alone")
    return fd


def open_fifo(folder: int, name: str) -> int:
    """The read end of the FIFO script writes to, or -1 when what has its
    name is not a FIFO of ours (then nothing is recorded)."""
    try:
        fd = os.open(f"{name}.fifo", os.O_RDONLY | os.O_NONBLOCK | _OPEN, dir_fd=folder)
    except OSError:
        return -1
    info = os.fstat(fd)
    if not stat.S_ISFIFO(info.st_mode) or info.st_uid != os.getuid():
        os.close(fd)
        return -1
    with contextlib.suppress(OSError):  # above /proc/sys/fs/pipe-max-size
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, FIFO_SIZE)
    return fd


class Status:
    """How the program ended: ending.Ending's fields, written down as
    Ending.status_line writes them (a test holds the two alike; this runs
    alone and cannot import it). A plain class: typing costs every start."""

    __slots__ = ("code", "signal", "reason", "message")

    def __init__(self, code: int, signal: int = 0, reason: str = "exited", message: str = "") -> None:
        self.code, self.signal, self.reason, self.message = code, signal, reason, message

    def line(self, ended: float) -> str:
        message = " ".join(self.message.split())
        return (
            f"{self.code} {self.signal} {self.reason} {int(ended)}"
            + (f" {message}" if message else "")
            + "\n"
        )


def write_status(folder: int, name: str, ending: Status) -> None:
    """NAME.status, 0600, written whole under another name and renamed over
    (a rename replaces a link; it never follows one)."""
    temporary = f"{name}.status.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary, dir_fd=folder)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN, 0o600, dir_fd=folder)
    try:
        os.write(fd, ending.line(time.time()).encode())
    finally:
        os.close(fd)
    os.rename(temporary, f"{name}.status", src_dir_fd=folder, dst_dir_fd=folder)


def start(argv: list[str]) -> tuple[int, Status | None]:
    """The program's pid, or 0 and how it could not start (127)."""
    program = argv[0]
    executable = program if "/" in program else shutil.which(program)
    if executable is None or not os.path.exists(executable):
        return 0, Status(127, 0, "not_found", f"{program}: not found")
    try:
        return os.posix_spawn(executable, argv, dict(os.environ), setsigdef=DEFAULTS, setsigmask=()), None
    except OSError as err:
        reason = "not_executable" if isinstance(err, PermissionError) else "cannot_start"
        return 0, Status(127, 0, reason, f"{program}: {err.strerror or err}")


def ending_of(info: os.waitid_result | None) -> Status:
    if info is None:
        return Status(255)
    if info.si_code == os.CLD_EXITED:
        return Status(info.si_status)
    return Status(128 + info.si_status, info.si_status, "signal")


# What script(1) writes into the typescript besides the program's output,
# even with -q: a line before it, a line after it.
SCRIPT_HEADER = re.compile(rb"\AScript started on [^\n]*\n")
SCRIPT_FOOTER = re.compile(rb"\r?\n?Script done on [^\n]*\n?\Z")


class Recorder:
    """The FIFO's reader: what script copies, into the ring, without
    script's own lines. After the program's end (`ending`) what comes is
    kept back until the FIFO's end, to drop script's last line."""

    def __init__(self, fifo: int, ring: Ring | None) -> None:
        self.fifo, self.ring = fifo, ring
        self.first = True
        self.ending = False
        self.held = b""

    def read(self) -> bool:
        """Copy what is there; False at the FIFO's end."""
        while True:
            try:
                data = os.read(self.fifo, READ_SIZE)
            except BlockingIOError:
                return True
            if not data:
                self._write(SCRIPT_FOOTER.sub(b"", self.held))
                self.held = b""
                return False
            if self.first:
                self.first = False
                data = SCRIPT_HEADER.sub(b"", data)
            if self.ending:
                self.held = (self.held + data)[-(RECORDING_BYTES // 2) :]
            else:
                self._write(data)

    def _write(self, data: bytes) -> None:
        if self.ring is not None and data:
            with contextlib.suppress(OSError):
                self.ring.write(data)


def main(args: list[str]) -> int:
    if len(args) < 5 or args[3] != "--":
        print("usage: sessionwrap.py FOLDER NAME SHELL -- PROGRAM [ARG…]", file=sys.stderr)
        return 2
    folder_path, name, shell, argv = args[0], args[1], args[2], args[4:]
    for signum in IGNORED:
        signal.signal(signum, signal.SIG_IGN)
    os.environ["SHELL"] = shell
    folder = open_folder(folder_path)
    fifo = open_fifo(folder, name)
    ring: Ring | None = None
    with contextlib.suppress(OSError):
        ring = Ring(folder, name)
    recorder = Recorder(fifo, ring)
    pid, not_started = start(argv)
    if not_started is not None:
        print(f"ttyoffer: {not_started.message}", file=sys.stderr, flush=True)
        write_status(folder, name, not_started)
        drain(recorder)
        return not_started.code
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    if fifo >= 0:
        poller.register(fifo, select.POLLIN)
    while True:
        ready = dict(poller.poll())
        if fifo >= 0 and fifo in ready and not recorder.read():
            poller.unregister(fifo)
            fifo = -1
        if pidfd in ready:
            break
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED)
    except ChildProcessError:
        info = None
    ending = ending_of(info)
    write_status(folder, name, ending)
    recorder.fifo = fifo
    drain(recorder)
    return ending.code


def drain(recorder: Recorder) -> None:
    """What script still copies, in a fork of ours that this leaves to it:
    script goes on only once we have ended."""
    if recorder.fifo < 0 or os.fork() != 0:
        return
    recorder.ending = True
    deadline = time.monotonic() + DRAIN_SECONDS
    poller = select.poll()
    poller.register(recorder.fifo, select.POLLIN)
    while time.monotonic() < deadline:
        poller.poll(100)
        if not recorder.read():
            break
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
