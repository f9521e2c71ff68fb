"""Persistent runs on another machine: a real OpenSSH server on 127.0.0.1
logging into a throwaway account (the "remote machine"), reached with a
client config of the test's own (runs.ssh = {'ssh', '-F', config}); dtach
and script(1) there; the host key and the password asked in the run's pane
and answered there."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Editor, Sandbox, editor, wait_until
from sshd import SshdOptions, SshServer, sshd
from ttyoffer_nvim.runs import remote
from ttyoffer_nvim.runs.sessions import sanitize_name
from users import Account, accounts, world_readable_folder

pytestmark = pytest.mark.e2e

DEST = "remote-box"
KEYED = "remote-keyed"


@dataclass
class Remote:
    account: Account
    server: SshServer
    config: Path
    known_hosts: Path
    runtime: Path

    @property
    def folder(self) -> Path:
        return Path(f"/tmp/ttyoffer-remote-{self.account.uid}")

    def ssh(self) -> list[str]:
        return ["ssh", "-F", str(self.config)]


@pytest.fixture
def remote_host(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Remote]:
    """The remote machine; with the parameter "no-tools", one whose PATH
    has everything of /usr/bin but dtach and script."""
    if os.getuid() != 0:
        pytest.skip("needs root: makes an account with a password for the sshd to log in")
    for tool in ("dtach", "script"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs {tool}")
    runtime = Path(tempfile.mkdtemp(prefix="ttr-"))
    # World-readable: sshd reads authorized_keys as the account.
    staging = world_readable_folder("ttyoffer-remote-")
    extra = ["KbdInteractiveAuthentication no"]
    if getattr(request, "param", "") == "no-tools":
        bare = staging / "bin"
        bare.mkdir(mode=0o755)
        for program in Path("/usr/bin").iterdir():
            if program.name not in ("dtach", "script"):
                (bare / program.name).symlink_to(program)
        extra.append(f"SetEnv PATH={bare}")
    with accounts("remote") as (account,):
        # No runtime folder for the sessions: the far side's fallback,
        # /tmp/ttyoffer-remote-UID, is what these tests look at (and remove).
        options = SshdOptions(user=account.name, password=True, extra=tuple(extra), runtime=False)
        with sshd(staging / "sshd", options) as server:
            key = tmp_path / "id_ed25519"
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
            server.authorize(Path(f"{key}.pub"))
            known = tmp_path / "known_hosts"
            known.touch()
            common = [
                "  HostName 127.0.0.1",
                f"  Port {server.port}",
                f"  User {account.name}",
                f"  UserKnownHostsFile {known}",
                "  GlobalKnownHostsFile /dev/null",
                "  UpdateHostKeys no",
                "  CheckHostIP no",
                "  IdentityAgent none",
                "  IdentitiesOnly yes",
                "  ConnectTimeout 20",
            ]
            config = tmp_path / "ssh_config"
            config.write_text(
                "\n".join(
                    [
                        f"Host {DEST}",
                        *common,
                        "  StrictHostKeyChecking ask",
                        "  IdentityFile none",
                        "  PubkeyAuthentication no",
                        "  PreferredAuthentications password",
                        f"Host {KEYED}",
                        *common,
                        "  StrictHostKeyChecking no",
                        f"  IdentityFile {key}",
                        "  PreferredAuthentications publickey",
                    ]
                )
                + "\n"
            )
            found = Remote(account, server, config, known, runtime)
            try:
                yield found
            finally:
                account.end_processes()
                shutil.rmtree(found.folder, ignore_errors=True)
                # The ControlPersist masters of the test's own folder.
                for sock in (runtime / "ttyoffer-ssh").glob("*"):
                    subprocess.run(
                        ["ssh", "-F", str(config), "-o", f"ControlPath={sock}", "-O", "exit", DEST],
                        capture_output=True,
                        timeout=10,
                    )
                shutil.rmtree(runtime, ignore_errors=True)
                shutil.rmtree(staging, ignore_errors=True)


@pytest.fixture
def remote_sandbox(sandbox: Sandbox, remote_host: Remote) -> Sandbox:
    sandbox.env["XDG_RUNTIME_DIR"] = str(remote_host.runtime)
    ssh = f"{{'ssh', '-F', {json.dumps(str(remote_host.config))}}}"
    sandbox.init.write_text(
        sandbox.init.read_text() + f"\nrequire('ttyoffer').setup({{runs = {{ssh = {ssh}}}}})\n"
    )
    return sandbox


def last_run(ed: Editor, after: int = 0) -> int:
    newest = "local l = require('ttyoffer.runs').list() return l[#l] and l[#l].id"
    run_id: int = wait_until(lambda: (ed.lua(newest) or 0) > after and ed.lua(newest), what="a run")
    return run_id


def shown(ed: Editor, run_id: int, text: str, timeout: float, what: str) -> None:
    """Waits for `text` in the run's pane; a timeout says what the pane held."""
    try:
        wait_until(lambda: text in ed.run_pane(run_id), timeout, what)
    except AssertionError as err:
        raise AssertionError(f"{err}; the pane: {ed.run_pane(run_id).strip()!r}") from None


def result(ed: Editor, run_id: int) -> dict[str, Any] | None:
    found: dict[str, Any] | None = ed.lua(
        "local r = require('ttyoffer.runs').get(...) return r and r.result or vim.NIL", run_id
    )
    return found


def answer_login(ed: Editor, run_id: int, password: str, new_host: bool) -> None:
    """Answers ssh's questions in the run's pane, as a person does."""
    wait_until(lambda: ed.mode() == "t", 20, "the pane in Terminal mode")
    if new_host:
        shown(ed, run_id, "continue connecting", 20, "the host key question")
        ed.nvim.input("yes<CR>")
    shown(ed, run_id, "password:", 20, "the password question")
    ed.nvim.input(password + "<CR>")


def remote_processes(account: Account, word: str) -> list[int]:
    found = []
    for pid in account.processes():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(word.encode() == part for part in argv):
            found.append(pid)
    return found


def test_a_remote_session_asks_in_its_pane_outlives_the_editor_and_tells_its_ending(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    password = remote_host.account.password
    with editor(remote_sandbox) as ed:
        ed.nvim.command(
            f"TtyRun! {DEST}:work sh -c "
            "'seq 1 50; echo before-the-quit; read x; echo got-$x; sleep 1; exit 3'"
        )
        run_id = last_run(ed)
        answer_login(ed, run_id, password, new_host=True)
        shown(ed, run_id, "before-the-quit", 30, "the program's output")
        assert password not in ed.run_pane(run_id)
        assert "127.0.0.1" in remote_host.known_hosts.read_text(), "the accepted host key was not kept"
        info = remote_host.folder.lstat()
        assert info.st_uid == remote_host.account.uid and (info.st_mode & 0o777) == 0o700
        control = remote_host.runtime / "ttyoffer-ssh"
        assert (control.stat().st_mode & 0o777) == 0o700
        nvim_pid = ed.lua("return vim.fn.getpid()")
        ed.nvim.command("qa!", async_=True)
        wait_until(lambda: not os.path.exists(f"/proc/{nvim_pid}"), 20, "the editor to end")
    assert remote_processes(remote_host.account, "work") or remote_host.folder.joinpath("work.sock").exists()

    with editor(remote_sandbox) as ed:
        listing = ed.nvim.api.exec2(f"TtyRun list {DEST}", {"output": True})["output"]
        assert "work" in listing and "running" in listing, listing
        ed.nvim.command(f"TtyRun! {DEST}:work")
        run_id = last_run(ed)
        # The connection is reused: nothing is asked, the replay comes.
        shown(ed, run_id, "before-the-quit", 30, "the replay")
        assert "password:" not in ed.run_pane(run_id)
        assert "50" in ed.run_pane(run_id)
        wait_until(lambda: ed.mode() == "t", 10, "terminal mode")
        ed.nvim.input("hello<CR>")
        shown(ed, run_id, "got-hello", 20, "the program to answer")
        # Detach while it sleeps: it ends (exit 3) while nobody is attached.
        ed.nvim.command(f"TtyRun close {run_id}")
        wait_until(lambda: (remote_host.folder / "work.status").exists(), 20, "the remote ending")
        listing = ed.nvim.api.exec2(f"TtyRun list {DEST}", {"output": True})["output"]
        assert "(exited 3)" in listing, listing
        ed.nvim.command(f"TtyRun! {DEST}:work")
        run_id = last_run(ed, run_id)
        ended = wait_until(lambda: result(ed, run_id), 30, "the ending to be told")
        assert (ended["code"], ended["reason"]) == (3, "exited"), ended
        # What it printed, replayed (the terminal shows it a moment later).
        shown(ed, run_id, "got-hello", 10, "the replay of the ended session")
        listing = ed.nvim.api.exec2(f"TtyRun list {DEST}", {"output": True})["output"]
        assert "no sessions" in listing, listing
    assert not list(remote_host.folder.glob("work.*"))


def test_kill_ends_only_that_session_and_completion_asks_the_remote(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f"TtyRun! {KEYED}:one sleep 301")
        first = last_run(ed)
        wait_until(lambda: (remote_host.folder / "one.pid").exists(), 30, "session one")
        ed.nvim.command(f"TtyRun! {KEYED}:two sleep 302")
        last_run(ed, first)
        wait_until(lambda: (remote_host.folder / "two.pid").exists(), 30, "session two")
        # Asked of the remote; a Tab that comes before its answer offers what
        # is known, and the next one what it said.
        wanted = [f"{KEYED}:one", f"{KEYED}:two"]
        complete = "return vim.fn.getcompletion(...)"
        wait_until(lambda: ed.lua(complete, f"TtyRun! {KEYED}:", "cmdline") == wanted, 20, "the names there")
        out = ed.nvim.api.exec2(f"TtyRun kill {KEYED}:one", {"output": True})["output"]
        assert f"session one on {KEYED} ended" in out
        wait_until(lambda: not remote_processes(remote_host.account, "301"), 10, "one's program to end")
        assert remote_processes(remote_host.account, "302"), "the other session was killed too"
        listing = ed.nvim.api.exec2(f"TtyRun list {KEYED}", {"output": True})["output"]
        assert "two" in listing and "one" not in listing.replace("on " + KEYED, ""), listing
        ended = wait_until(lambda: result(ed, first), 20, "one's pane to end")
        assert ended["reason"] != "disconnected", ended
        out = ed.nvim.api.exec2(f"TtyRun kill {KEYED}:two", {"output": True})["output"]
        assert "ended" in out
        # :TtyRun check, in a pane of its own.
        ed.nvim.command(f"TtyRun check {KEYED}")
        checked = last_run(ed, first + 1)
        shown(ed, checked, "ready for persistent runs", 30, "the check")
        assert "(drwx------, yours)" in ed.run_pane(checked)


def test_a_dropped_connection_is_no_ending_and_r_reattaches(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    password = remote_host.account.password
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f"TtyRun! {DEST}:drop sh -c 'echo first-words; exec cat'")
        run_id = last_run(ed)
        answer_login(ed, run_id, password, new_host=True)
        wait_until(lambda: "first-words" in ed.run_pane(run_id), 30, "the program's output")
        # The network goes: sshd's processes serving the connection are killed.
        served = [
            pid
            for pid in remote_host.server.sessions()
            if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd"
        ]
        assert served
        for pid in served:
            os.kill(pid, signal.SIGKILL)
        ended = wait_until(lambda: result(ed, run_id), 30, "the pane to notice")
        assert ended["reason"] == "disconnected", ended
        wait_until(lambda: "disconnected from" in ed.run_pane(run_id), 10, "the pane to say so")
        # The program goes on remotely.
        assert remote_processes(remote_host.account, "cat")
        buf = ed.lua("return require('ttyoffer.runs').get(...).pane.buf", run_id)
        ed.nvim.command(f"call win_gotoid(bufwinid({buf}))")
        wait_until(lambda: ed.mode().startswith("n"), 10, "normal mode")
        # The password was typed a moment before the end: keys are the
        # editor's again once the typing has paused.
        typing = "return require('ttyoffer.offer.typing').dropping()"
        wait_until(lambda: not ed.lua(typing), 10, "a pause in the typing")
        ed.nvim.input("r")
        again = last_run(ed, run_id)
        answer_login(ed, again, password, new_host=False)
        wait_until(lambda: "first-words" in ed.run_pane(again), 30, "the replay after the re-attach")
        wait_until(lambda: ed.mode() == "t", 10, "terminal mode")
        ed.nvim.input("echoed-back<CR>")
        wait_until(lambda: ed.run_pane(again).count("echoed-back") >= 2, 20, "cat to answer")


# -- the remote shell reads nothing we send as text of the user's --------------------


def run_through_ssh(argv: list[str], timeout: float = 30.0) -> bytes:
    """`argv` (a remote.command()) on a pty of its own, to its end: all it printed."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        os.close(master)
    return bytes(out)


PRINT_ARGV = "import json, sys; print('ARGV=' + json.dumps(sys.argv[1:]))"


@pytest.mark.parametrize("login_shell", ["/bin/sh", "/usr/bin/fish"])
def test_names_and_arguments_reach_the_remote_program_exactly(remote_host: Remote, login_shell: str) -> None:
    if not os.path.exists(login_shell):
        pytest.skip(f"no {login_shell}")
    subprocess.run(["usermod", "-s", login_shell, remote_host.account.name], check=True)
    ssh = remote_host.ssh()
    runtime = str(remote_host.runtime)

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        name=st.one_of(st.from_regex(r"[A-Za-z0-9_-]{1,12}", fullmatch=True), st.text(max_size=12)),
        args=st.lists(
            st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0"), max_size=12),
            max_size=4,
        ),
    )
    def check(name: str, args: list[str]) -> None:
        built = remote.command(ssh, KEYED, "run", name, ["python3", "-c", PRINT_ARGV, *args], runtime)
        if sanitize_name(name) != name or not name:
            assert isinstance(built, str), "a name the sanitiser changes was used"
            return
        assert isinstance(built, remote.Command)
        out = run_through_ssh(built.argv)
        stream = remote.Stream(built.nonce)
        shown = b"".join(part for part in stream.feed(out) if isinstance(part, bytes))
        lines = [line for line in shown.decode("utf-8", "replace").splitlines() if "ARGV=" in line]
        assert lines, out
        assert json.loads(lines[0].split("ARGV=", 1)[1]) == args
        assert stream.ending is not None and (stream.ending.code, stream.ending.reason) == (0, "exited")
        assert not list(remote_host.folder.glob(f"{name}.*")), "the ended session left files"

    check()
    # Nothing stranger than our own files is left in the folder.
    assert list(remote_host.folder.iterdir()) == []


def test_check_tells_what_the_host_lacks(remote_host: Remote) -> None:
    built = remote.command(remote_host.ssh(), KEYED, "check", "", None, str(remote_host.runtime))
    assert isinstance(built, remote.Command)
    out = run_through_ssh(built.argv).decode("utf-8", "replace")
    assert "dtach: /usr/bin/dtach" in out and "ready for persistent runs" in out, out
    assert f"/tmp/ttyoffer-remote-{remote_host.account.uid} (drwx------, yours)" in out


def test_the_test_sshds_sessions_keep_the_far_side_in_the_servers_folder(tmp_path: Path) -> None:
    """Every other test's sshd (the bench's too) serves the account the
    tests run as: its sessions' far side of a remote run is made in the
    server's folder and goes with it, never /tmp/ttyoffer-remote-UID (a
    root run of the suite left /tmp/ttyoffer-remote-0)."""
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    with sshd(tmp_path / "sshd") as server:
        server.authorize(Path(f"{key}.pub"))
        config = server.client_config(tmp_path / "client", key)
        with config.open("a") as client:
            client.write(f"Host here\n  HostName 127.0.0.1\n  Port {server.port}\n  User {server.user}\n")
        check = subprocess.run(
            ["ssh", "-F", str(config), "here", "sh", "-s"],
            input=remote.script_for("check", "", [], "n0nce").encode(),
            capture_output=True,
            timeout=60,
        )
        said = check.stdout.decode("utf-8", "replace")
        assert server.runtime is not None
        far_side = server.runtime / "ttyoffer-remote"
        assert f"{far_side} (drwx------, yours)" in said, (said, check.stderr)
        assert far_side.is_dir()
    assert not far_side.exists()


def test_a_folder_open_to_others_is_refused_remotely(remote_host: Remote) -> None:
    remote_host.folder.mkdir(mode=0o755)
    os.chown(remote_host.folder, remote_host.account.uid, remote_host.account.gid)
    os.chmod(remote_host.folder, 0o755)
    built = remote.command(remote_host.ssh(), KEYED, "run", "x", ["true"], str(remote_host.runtime))
    assert isinstance(built, remote.Command)
    out = run_through_ssh(built.argv)
    stream = remote.Stream(built.nonce)
    shown = b"".join(part for part in stream.feed(out) if isinstance(part, bytes)).decode()
    assert "not yours alone" in shown, shown
    assert stream.ending is not None and stream.ending.reason == "cannot_start"
    assert list(remote_host.folder.iterdir()) == []


@pytest.mark.parametrize("remote_host", ["no-tools"], indirect=True)
def test_a_host_without_dtach_or_script_says_so_and_how_to_install(remote_host: Remote) -> None:
    built = remote.command(remote_host.ssh(), KEYED, "run", "x", ["true"], str(remote_host.runtime))
    assert isinstance(built, remote.Command)
    out = run_through_ssh(built.argv)
    stream = remote.Stream(built.nonce)
    shown = b"".join(part for part in stream.feed(out) if isinstance(part, bytes)).decode()
    assert "dtach and script not found on" in shown, shown
    assert "sudo apt-get install dtach bsdutils" in shown
    assert stream.ending == (127, 0, "cannot_start")
    checked = remote.command(remote_host.ssh(), KEYED, "check", "", None, str(remote_host.runtime))
    assert isinstance(checked, remote.Command)
    said = run_through_ssh(checked.argv).decode()
    assert "dtach: MISSING" in said and "NOT READY" in said, said


def test_a_wrong_password_shows_sshs_error_and_leaves_nothing(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f"TtyRun! {DEST}:nope sleep 300")
        run_id = last_run(ed)
        wait_until(lambda: ed.mode() == "t", 20, "the pane in Terminal mode")
        wait_until(lambda: "continue connecting" in ed.run_pane(run_id), 20, "the host key question")
        ed.nvim.input("yes<CR>")
        for asked in (1, 2, 3):

            def questions(n: int = asked) -> bool:
                return ed.run_pane(run_id).count("password:") >= n

            wait_until(questions, 20, f"question {asked}")
            ed.nvim.input("not-the-password<CR>")
        ended = wait_until(lambda: result(ed, run_id), 30, "ssh to give up")
        assert ended["code"] == 255 and ended["reason"] == "exited", ended
        assert "ssh could not reach" in ended["message"]
        wait_until(lambda: "Permission denied" in ed.run_pane(run_id), 10, "ssh's own words")
    assert not remote_processes(remote_host.account, "300")
    assert not remote_host.folder.exists() or not list(remote_host.folder.iterdir())
    control = remote_host.runtime / "ttyoffer-ssh"
    assert not control.exists() or not list(control.iterdir()), "a connection was left behind"


# run:kill() as a user calls it, and run_signal by the run's id as the
# editor sends it (the host knows the run is remote).
SIGNALLED = {
    "run_kill": "require('ttyoffer.runs').get(...):kill('TERM')",
    "run_signal": "require('ttyoffer.host').notify('run_signal', ..., 15)",
}


@pytest.mark.parametrize("route", sorted(SIGNALLED))
def test_kill_signals_the_remote_program_and_the_run_ends_as_it_did(
    remote_sandbox: Sandbox, remote_host: Remote, route: str
) -> None:
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f"TtyRun! {KEYED}:sig sleep 303")
        run_id = last_run(ed)
        wait_until(lambda: remote_processes(remote_host.account, "303"), 30, "the remote program")
        wait_until(lambda: ed.lua("return require('ttyoffer.runs').get(...).session", run_id) == "sig")
        ed.lua(SIGNALLED[route], run_id)
        ended = wait_until(lambda: result(ed, run_id), 30, "the run to end")
        assert (ended["code"], ended["reason"], ended["signal"]) == (143, "signal", 15), ended
    assert not list(remote_host.folder.glob("sig.*"))


ASK = (
    "local answer, err = require('ttyoffer.host').request_within(8000, ...) "
    "return {answer = answer or vim.NIL, err = err or vim.NIL}"
)


def test_the_generic_requests_list_kill_and_check_a_remote_session(
    remote_sandbox: Sandbox, remote_host: Remote
) -> None:
    """run_sessions, run_session_kill and run_check with kind "remote", the
    ssh destination as `where` and the ssh words."""
    with editor(remote_sandbox) as ed:
        ed.nvim.command(f"TtyRun! {KEYED}:generic sleep 307")
        run_id = last_run(ed)
        wait_until(lambda: remote_processes(remote_host.account, "307"), 30, "the remote program")
        ssh = ed.lua("return require('ttyoffer.config').current.runs.ssh")
        new = wait_until(
            lambda: (lambda a: a if a.get("sessions") and not a.get("stale") else None)(
                ed.lua(ASK, "run_sessions", "remote", KEYED, ssh, 5000)["answer"]
            ),
            30,
            "a fresh list",
        )
        assert [(s["name"], s["state"]) for s in new["sessions"]] == [("generic", "running")]
        # ssh to that place (the remote line last: a nonce each).
        checked = ed.lua(ASK, "run_check", "remote", KEYED, ssh)["answer"]["argv"]
        assert checked[-2] == KEYED and "ssh" in checked[0], checked
        refused = ed.lua(ASK, "run_sessions", "remote", "-oProxyCommand=id", ssh, 5000)["err"]
        assert "is not an ssh destination" in refused, refused
        killed = ed.lua(ASK, "run_session_kill", "remote", KEYED, "generic", ssh, 5000)["answer"]
        assert killed.get("pending") or killed == {"name": "generic", "ended": True}, killed
        wait_until(lambda: not remote_processes(remote_host.account, "307"), 20, "the program to end")
        wait_until(lambda: result(ed, run_id), 20, "the run's end")
