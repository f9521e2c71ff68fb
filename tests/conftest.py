from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvim
import pytest

from fixtures import Keyring, make_keyring, make_signing_repo
from harness import ROOT, Editor, Sandbox, editor, nvim_binary


@pytest.fixture(scope="session")
def registered_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    sandbox = Sandbox(tmp_path_factory.mktemp("nvim"))
    sandbox.register()
    return sandbox


@pytest.fixture
def sandbox(registered_sandbox: Sandbox, tmp_path: Path) -> Sandbox:
    """A fresh config per test, sharing the registered manifest."""
    fresh = Sandbox(tmp_path / "nvim")
    fresh.manifest.write_text(registered_sandbox.manifest.read_text())
    return fresh


@pytest.fixture
def ed(sandbox: Sandbox) -> Iterator[Editor]:
    with editor(sandbox) as e:
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
