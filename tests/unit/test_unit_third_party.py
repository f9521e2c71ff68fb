"""Unpacking a pinned plugin's archive, on a Python with tarfile's
extraction filters and on one without (Debian 12's 3.11.2)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

import third_party


def archive(tmp_path: Path, *members: tarfile.TarInfo) -> Path:
    path = tmp_path / "plugin.tgz"
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            data = b"text\n" if member.isfile() else b""
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data) if data else None)
    return path


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = link
    # As git archive makes them: a folder searchable (TarInfo's default
    # 0644 on a folder is one only root can enter).
    if kind == tarfile.DIRTYPE:
        member.mode = 0o755
    return member


@pytest.fixture(params=["with filters", "without filters"])
def filters(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "without filters":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    return str(request.param)


def test_a_plugins_files_folders_and_inner_links_are_unpacked(tmp_path: Path, filters: str) -> None:
    path = archive(
        tmp_path,
        entry("lua", tarfile.DIRTYPE),
        entry("lua/plugin.lua"),
        entry("lua/alias.lua", tarfile.SYMTYPE, "plugin.lua"),
    )
    into = tmp_path / "into"
    into.mkdir()
    with tarfile.open(path) as tar:
        third_party._extract(tar, into)
    assert (into / "lua" / "plugin.lua").read_text() == "text\n"
    assert (into / "lua" / "alias.lua").read_text() == "text\n"


@pytest.mark.parametrize(
    "member",
    [
        entry("../outside.lua"),
        entry("lua/escape", tarfile.SYMTYPE, "../../outside"),
        entry("lua/absolute", tarfile.SYMTYPE, "/etc/passwd"),
        entry("lua/device", tarfile.CHRTYPE),
    ],
    ids=["a name out of the folder", "a link out of it", "an absolute link", "a device"],
)
def test_what_would_leave_the_folder_is_refused(
    tmp_path: Path, filters: str, member: tarfile.TarInfo
) -> None:
    path = archive(tmp_path, entry("lua", tarfile.DIRTYPE), member)
    into = tmp_path / "into"
    into.mkdir()
    with tarfile.open(path) as tar, pytest.raises((ValueError, tarfile.TarError)):
        third_party._extract(tar, into)
    assert not (tmp_path / "outside.lua").exists()
