from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Editor, Sandbox, editor


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
