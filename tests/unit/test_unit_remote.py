"""The remote transport's pure parts: destinations, the line any login shell
reads alike, and the markers taken out of a connection's output however its
reads are cut."""

from __future__ import annotations

import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttyoffer_nvim.runs import remote


def test_destinations_ssh_takes_are_passed_and_others_refused() -> None:
    for dest in ("devbox", "me@build.example.org", "ssh://me@host:2222", "[::1]:22", "fe80::1%eth0"):
        assert remote.refusal(dest) is None, dest
    refused: list[object] = ["", "-oProxyCommand=x", "a b", "a;b", "$(id)", "a`b`", "a\nb", "x" * 300]
    refused += [None, 3]
    for wrong in refused:
        assert remote.refusal(wrong) is not None, wrong


def test_a_refused_destination_or_name_builds_no_command() -> None:
    assert isinstance(remote.command(["ssh"], "-oProxyCommand=id", "run", "x", ["true"]), str)
    assert isinstance(remote.command(["ssh"], "box", "run", "my.build", ["true"]), str)
    assert isinstance(remote.command(["ssh"], "box", "rm", "x"), str)
    assert isinstance(remote.command([], "box", "list"), str)


def test_the_command_reuses_one_private_connection_per_host() -> None:
    # The control folder in the suite's own runtime folder (conftest), not
    # /tmp/ttyoffer-ssh-UID, where it outlived the run.
    runtime = os.environ["XDG_RUNTIME_DIR"]
    built = remote.command(["ssh", "-F", "cfg"], "box", "run", "build", ["make"], runtime)
    assert isinstance(built, remote.Command)
    argv = built.argv
    assert argv[:3] == ["ssh", "-F", "cfg"] and argv[-3:-1] == ["--", "box"]
    assert "ControlMaster=auto" in argv and "-tt" in argv
    listing = remote.command(["ssh"], "box", "list", runtime_dir=runtime)
    assert isinstance(listing, remote.Command) and "BatchMode=yes" in listing.argv and "-T" in listing.argv


@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\0")))
def test_the_line_gives_sh_back_the_script_exactly(text: str) -> None:
    # What printf %b gives back is what we encoded, through /bin/sh -c.
    line = remote.remote_line(f"printf %s {shlex.quote(text)}")
    assert set(line) <= set(remote_chars())
    out = subprocess.run(["sh", "-c", line], capture_output=True, timeout=10).stdout
    assert out == text.encode("utf-8", "surrogateescape")


def remote_chars() -> str:
    # No backslash pair, no quote inside the single-quoted part: fish and csh
    # read it as sh does.
    return "".join(chr(c) for c in range(32, 127))


@given(st.binary(max_size=200), st.binary(max_size=200), st.lists(st.integers(1, 50), max_size=30))
def test_markers_come_out_whole_however_reads_are_cut(before: bytes, after: bytes, cuts: list[int]) -> None:
    nonce = "0123456789abcdef"
    marked = f"\x1b_ttyoffer-{nonce};".encode()
    before, after = before.replace(b"\x1b", b"e"), after.replace(b"\x1b", b"e")
    data = before + marked + b"attach\x1b\\" + after + marked + b"end;3;0;exited\x1b\\"
    stream = remote.Stream(nonce)
    parts: list[bytes | str] = []
    at = 0
    for cut in cuts:
        parts += stream.feed(data[at : at + cut])
        at += cut
    parts += stream.feed(data[at:])
    parts.append(stream.flush())
    joined: list[bytes | str] = []
    for part in parts:
        if isinstance(part, bytes) and joined and isinstance(joined[-1], bytes):
            joined[-1] += part
        elif part != b"":
            joined.append(part)
    assert joined == [p for p in (before, "attach", after) if p != b""]
    assert stream.ending == (3, 0, "exited")


def test_a_marker_without_the_nonce_is_output() -> None:
    stream = remote.Stream("aaaa")
    fake = b"\x1b_ttyoffer-bbbb;end;0;0;exited\x1b\\"
    assert b"".join(p for p in stream.feed(fake) if isinstance(p, bytes)) + stream.flush() == fake
    assert stream.ending is None


def test_the_editor_splits_dest_name_and_checks_both_before_any_pane(lua: Any) -> None:
    split = "return {require('ttyoffer.runs.kinds').split_address(...)}"
    assert lua(split, "devbox:build") == ["devbox", "build"]
    assert lua(split, "ssh://me@host:2222:build") == ["ssh://me@host:2222", "build"]
    assert lua(split, "[::1]:22:x") == ["[::1]:22", "x"]
    assert lua(split, "build") == [None, "build"]
    check = "local ok, err = pcall(require('ttyoffer.runs.runspec').check, ...) return ok and 'ok' or err"
    assert lua(check, {"persist": "b", "host": "devbox", "argv": ["make"]}) == "ok"
    assert "not an ssh destination" in lua(check, {"persist": "b", "host": "-oProxyCommand=id"})
    assert "host needs persist" in lua(check, {"host": "devbox", "argv": ["make"]})
    assert "not a session name" in lua(check, {"persist": "a.b", "host": "devbox"})


def test_ssh_hosts_of_the_users_config_complete(lua: Any, tmp_path: Path) -> None:
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "config").write_text(
        "Host devbox build-*\n  HostName 10.0.0.1\nhost box2 !nope\nHost *\n  User me\nMatch host x\n"
    )
    hosts = lua(
        "local home = vim.env.HOME vim.env.HOME = ... "
        "local ok, hosts = pcall(require('ttyoffer.runs.kinds.remote').places) vim.env.HOME = home "
        "return ok and hosts or {}",
        str(tmp_path),
    )
    assert hosts == ["devbox", "box2"]


def test_a_remote_list_leaves_a_session_being_made_and_forgets_a_stale_one(tmp_path: Path) -> None:
    """The remote list, run by a local sh: a socket dtach has bound whose
    wrapper has not written its pid yet is a session being made, left
    alone; one as old with no pid is debris, and goes."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    folder = runtime / "ttyoffer-remote"
    folder.mkdir(mode=0o700)
    made, stale = folder / "made.sock", folder / "stale.sock"
    for path in (made, stale):
        with socket.socket(socket.AF_UNIX) as bound:
            bound.bind(str(path))
    (folder / "stale.log").write_text("old output")
    os.utime(stale, (time.time() - 120, time.time() - 120), follow_symlinks=False)
    env = {"PATH": os.environ["PATH"], "XDG_RUNTIME_DIR": str(runtime)}
    listing = subprocess.run(
        ["sh", "-c", remote.script_for("list", "", [], "n0nce")], env=env, capture_output=True, timeout=10
    )
    assert listing.returncode == 0 and listing.stdout == b"", listing
    assert made.exists()
    assert not stale.exists() and not (folder / "stale.log").exists()


def test_the_shared_connection_is_the_process_listening_in_our_control_folder() -> None:
    """What a pane's teardown spares: a process listening on a socket in the
    control folder (ssh's ControlPersist master), not one listening
    elsewhere."""
    # Short: a socket's path must fit 108 bytes.
    tmp_path = Path(tempfile.mkdtemp(prefix="tto-"))
    folder = tmp_path / "ttyoffer-ssh"
    folder.mkdir(mode=0o700)
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    listen = (
        "import socket, sys, time; s = socket.socket(socket.AF_UNIX); "
        "s.bind(sys.argv[1]); s.listen(); time.sleep(30)"
    )
    ours = subprocess.Popen([sys.executable, "-c", listen, str(folder / ("c" * 40))])
    other = subprocess.Popen([sys.executable, "-c", listen, str(elsewhere / "sock")])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and ours.pid not in remote.shared_connections(folder):
            time.sleep(0.05)
        found = remote.shared_connections(folder)
        assert ours.pid in found and other.pid not in found
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp_path)


def test_a_remote_list_is_read_by_the_host_and_odd_lines_are_skipped() -> None:
    from ttyoffer_nvim.runs.remote_calls import parse_list

    out = (
        "session\tbuild\t100\t\t\t\trunning\n"
        "session\tdeaf\t101\t\t\t\tunreachable\n"
        "session\tdone\t102\t3\t0\texited\tended\n"
        "session\tkilled\t103\t143\t15\tsignal\tended\n"
        "session\tbad name\t104\t\t\t\trunning\n"
        "session\tshort\t105\n"
        "noise\n"
    )
    found, problem = parse_list(out)
    assert problem == ""
    assert [(s["name"], s["state"]) for s in found] == [
        ("build", "running"),
        ("deaf", "unreachable"),
        ("done", "ended"),
        ("killed", "ended"),
    ]
    assert found[2]["ended"]["code"] == 3 and found[3]["ended"]["signal_name"] == "SIGTERM"
    assert parse_list("error\tnot yours alone\n") == ([], "not yours alone")


def test_a_call_that_does_not_end_in_time_is_killed_and_said() -> None:
    import asyncio

    from ttyoffer_nvim.runs.remote_calls import call_ssh

    start = time.monotonic()
    code, _, said = asyncio.run(call_ssh(["sleep", "30"], timeout=0.3))
    assert code == 255 and "no answer within 0.3 s" in said
    assert time.monotonic() - start < 10


@pytest.mark.parametrize(
    "name",
    ["__NAME_LENGTH__", "__NAME_CHARACTERS__", "__ARGV__", "__NONCE__", "__WRAPPER__", "__RECORDING_HALF__"],
)
def test_a_session_named_like_a_placeholder_is_that_session(name: str) -> None:
    """The remote script is filled in one pass: a name (or an argument) that
    looks like one of its placeholders is never filled in again."""
    from ttyoffer_nvim.runs import remote_sh

    for action in ("kill", "signal"):
        script = remote_sh.script_for(action, name, ["TERM"], "0000", "")
        assert f"name={name}\n" in script, action
    script = remote_sh.script_for("run", name, ["echo", "__NAME__", "__NONCE__"], "0000", "")
    assert f"name={name}\n" in script
    assert script.startswith("set -- echo __NAME__ __NONCE__\n")
