"""Headless Neovim, real remote-plugin host: the offer end to end."""

from __future__ import annotations

import pytest

from harness import Editor, wait_until

pytestmark = pytest.mark.nvim

ASK = "printf 'Secret please: ' > /dev/tty; read answer < /dev/tty; echo \"got $answer\""


def test_child_writing_to_tty_is_presented_once_with_its_bytes(ed: Editor) -> None:
    job = ed.lua("return require('ttyoffer').jobstart({'sh', '-c', ...})", ASK)
    assert job > 0
    present = ed.wait_event("TtyOfferPresent")
    assert len(present) == 1
    win = wait_until(lambda: ed.float_wins(), what="a float")[0]
    wait_until(lambda: "Secret please:" in ed.buf_text(win), what="the prompt in the float")
    assert present[0]["data"]["pid"] == ed.lua("return vim.fn.jobpid(...)", job)
    wait_until(lambda: ed.mode() == "t", what="terminal mode in the float")
    ed.nvim.input("hunter2\r")
    ed.wait_event("TtyOfferClose")
    assert ed.float_wins() == []
    assert len(ed.events("TtyOfferPresent")) == 1
