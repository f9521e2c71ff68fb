"""A command's terminal output reaches its prompt window and nothing beyond
it: clipboard (OSC 52), titles, hyperlinks and a tmux passthrough are
dropped by the host, while the prompt is drawn, its device query answered
and its question answered as always."""

from __future__ import annotations

import base64
import json
import re
import sys

import pytest

from harness import Editor, wait_until
from test_nvim_offer import exit_code, only_spares_left, start

pytestmark = pytest.mark.nvim

PAYLOAD = base64.b64encode(b"pwned-by-osc52").decode()

# Everything that would reach past the window, then a prompt that asks the
# terminal where its cursor is (as curses programs do) and then a question.
CHILD = (
    "import os, sys, termios, tty, json\n"
    "fd = os.open('/dev/tty', os.O_RDWR)\n"
    "cooked = termios.tcgetattr(fd)\n"
    "tty.setraw(fd)\n"
    f"os.write(fd, b'\\x1b]52;c;{PAYLOAD}\\x07')\n"  # the clipboard
    "os.write(fd, b'\\x1b]0;EVIL-TITLE\\x07')\n"  # the title
    f"os.write(fd, b'\\x1bPtmux;\\x1b\\x1b]52;c;{PAYLOAD}\\x07\\x1b\\\\')\n"  # tmux to the outer terminal
    "os.write(fd, b'\\x1b]777;notify;EVIL-NOTE;body\\x1b\\\\')\n"  # a notification
    "os.write(fd, b'\\xc2\\x9d2;EVIL-C1\\x07')\n"  # OSC as UTF-8 C1
    "os.write(fd, b'\\x1b_Gi=1;EVIL-APC\\x1b\\\\')\n"  # APC (kitty graphics)
    "os.write(fd, b'\\x1b]8;;https://evil.example/\\x1b\\\\see the link\\x1b]8;;\\x1b\\\\ ')\n"
    "os.write(fd, b'\\x1b[6n')\n"  # where is the cursor? the reply comes back here
    "reply = b''\n"
    "while not reply.endswith(b'R'):\n"
    "    reply += os.read(fd, 1)\n"
    "termios.tcsetattr(fd, termios.TCSANOW, cooked)\n"
    "os.write(fd, b'\\x1b]2;EVIL-TITLE-2\\x1b\\\\\\r\\nPassphrase: ')\n"
    "answer = os.read(fd, 100)\n"
    "print(json.dumps({'cpr': reply.decode(), 'answer': answer.decode().strip()}))\n"
)

RECORD = """
_G.term_requests = {}
vim.api.nvim_create_autocmd('TermRequest', {
  callback = function(args)
    local data = args.data
    table.insert(_G.term_requests, type(data) == 'table' and data.sequence or data)
  end,
})
_G.clipboard = {}
local function copy(lines) table.insert(_G.clipboard, table.concat(lines, '\\n')) end
local function paste() return {} end
vim.g.clipboard = {
  name = 'recorded',
  copy = { ['+'] = copy, ['*'] = copy },
  paste = { ['+'] = paste, ['*'] = paste },
}
"""


def test_only_the_prompt_reaches_the_window(ed: Editor) -> None:
    ed.lua(RECORD)
    job = ed.lua(
        "_G.out = {} _G.exit_codes = {} return require('ttyoffer').jobstart(..., "
        "{on_stdout = function(_, d) vim.list_extend(_G.out, d) end, "
        "on_exit = function(id, code) _G.exit_codes[id] = code end})",
        [sys.executable, "-c", CHILD],
    )
    ed.wait_event("TtyOfferPresent")
    win = wait_until(lambda: ed.float_wins(), what="the window")[0]
    buf = ed.lua("return vim.api.nvim_win_get_buf(...)", win)
    wait_until(lambda: "Passphrase:" in ed.buf_text(win), 20, "the question, after the cursor report")

    def title() -> str:
        return "".join(chunk[0] for chunk in ed.lua("return vim.api.nvim_win_get_config(...).title", win))

    wait_until(lambda: title().endswith(" — Passphrase "), what="the question in the window's title")
    text = ed.buf_text(win)
    assert "see the link" in text  # a hyperlink's text stays, its target goes
    for word in ("EVIL", "pwned", "evil.example", PAYLOAD):
        assert word not in text and word not in title()
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.nvim.input("hunter2<CR>")
    assert exit_code(ed, job) == 0
    result = json.loads("".join(ed.lua("return _G.out")))
    assert re.fullmatch(r"\x1b\[\d+;\d+R", result["cpr"]), result
    assert result["answer"] == "hunter2"
    # Nothing reached beyond the window: no terminal request from it, no
    # clipboard, no title on its buffer.
    assert ed.lua("return _G.term_requests") == []
    assert ed.lua("return _G.clipboard") == []
    assert ed.lua("return vim.b[...].term_title", buf) is None


def test_a_command_that_only_sets_a_title_shows_no_window(ed: Editor) -> None:
    ed.lua(RECORD)
    job = start(ed, ["sh", "-c", f"printf '\\033]0;EVIL\\007\\033]52;c;{PAYLOAD}\\007' > /dev/tty"])
    assert exit_code(ed, job) == 0
    wait_until(lambda: only_spares_left(ed), what="the offer released")
    assert ed.events("TtyOfferPresent") == []
    assert ed.float_wins() == []
    assert ed.lua("return _G.clipboard") == []
