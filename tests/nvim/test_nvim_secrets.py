"""Secrets: a passphrase typed into the float is found nowhere afterwards, and
keys meant for the editor and for a prompt never cross."""

from __future__ import annotations

import hashlib
import itertools
import time
from pathlib import Path

import pytest

from harness import Editor, Sandbox, editor, wait_until
from test_nvim_offer import exit_code, start

pytestmark = pytest.mark.nvim

PASSPHRASE = "Zq7-unique-passphrase-\u00e9\u00df-93a1"
# The child never prints what it read: only its digest, to prove it arrived.
CHECK = (
    "stty -echo < /dev/tty; printf 'Passphrase: ' > /dev/tty; IFS= read -r p < /dev/tty; "
    'stty echo < /dev/tty; printf %s "$p" | sha256sum'
)


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


def test_a_typed_passphrase_is_found_nowhere(sandbox: Sandbox, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    sandbox.env.update(
        NVIM_PYTHON_LOG_FILE=str(logs / "python"),
        NVIM_PYTHON_LOG_LEVEL="DEBUG",
        NVIM_LOG_FILE=str(logs / "nvim.log"),
    )
    undo, swap = tmp_path / "undo", tmp_path / "swap"
    undo.mkdir()
    swap.mkdir()
    document = tmp_path / "notes.txt"
    document.write_text("notes\n")
    with editor(sandbox) as ed:
        ed.lua(
            "local undo, swap = ... vim.o.undofile = true vim.o.undodir = undo "
            "vim.o.directory = swap .. '//' vim.o.swapfile = true",
            str(undo),
            str(swap),
        )
        ed.nvim.command(f"edit {document}")
        ed.nvim.input("Aedited<Esc>")
        wait_until(lambda: ed.nvim.current.buffer[:] == ["notesedited"], what="an edit")
        job = ed.lua(
            "_G.digest = {} _G.exit_codes = {} return require('ttyoffer').jobstart({'sh', '-c', ...}, "
            "{on_stdout = function(_, d) vim.list_extend(_G.digest, d) end, "
            "on_exit = function(id, code) _G.exit_codes[id] = code end})",
            CHECK,
        )
        ed.wait_event("TtyOfferPresent")
        win = ed.float_wins()[0]
        float_buf = ed.lua("return vim.api.nvim_win_get_buf(...)", win)
        wait_until(lambda: "Passphrase:" in ed.buf_text(win), what="the prompt")
        wait_until(lambda: ed.mode() == "t", what="terminal mode")
        ed.nvim.input(PASSPHRASE.replace("<", "<lt>") + "<CR>")
        assert exit_code(ed, job) == 0
        digest = hashlib.sha256(PASSPHRASE.encode()).hexdigest()
        wait_until(lambda: any(digest in line for line in ed.lua("return _G.digest")), what="the answer")
        ed.wait_event("TtyOfferClose")

        # The float's buffer is gone, and it never had a swap file or undo.
        assert ed.lua("return vim.api.nvim_buf_is_valid(...)", float_buf) is False
        for buf in ed.lua("return vim.api.nvim_list_bufs()"):
            text = "\n".join(ed.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf))
            assert PASSPHRASE not in text
        registers = ed.lua(
            "local out = {} for _, r in ipairs(vim.split(..., '')) do "
            "local ok, v = pcall(vim.fn.getreg, r) if ok then table.insert(out, v) end end return out",
            '"0123456789abcdefghijklmnopqrstuvwxyz-.:/#=',
        )
        assert not any(PASSPHRASE in r for r in registers)
        assert PASSPHRASE not in ed.nvim.command_output("messages")
        assert PASSPHRASE not in ed.nvim.command_output("history all")
        ed.nvim.command("write")
        ed.nvim.command("wshada!")
        shada = Path(
            ed.lua(
                "return vim.o.shadafile ~= '' and vim.o.shadafile "
                "or vim.fn.stdpath('state') .. '/shada/main.shada'"
            )
        )
        assert shada.exists()
        swapped = files_under(swap)
        assert swapped, "the edited file has a swap file, the float none"
        state = sandbox.base / "state"
    needle = PASSPHRASE.encode()
    written = [shada, *files_under(undo), *swapped, *files_under(logs), *files_under(state)]
    assert any(p.name.startswith("python") for p in files_under(logs)), "the host log exists"
    for path in written:
        if path.exists():
            assert needle not in path.read_bytes(), path


def buffer_lines(ed: Editor, buf: int) -> list[str]:
    lines: list[str] = ed.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf)
    return lines


SENTENCE = "the quick brown fox jumps over the lazy dog "


def prompt_waiting(ed: Editor) -> bool:
    """The prompt has reached the editor and waits there for the typing to pause."""
    return bool(ed.lua("return require('ttyoffer').status().queued") > 0)


def test_keys_typed_into_the_editor_as_a_prompt_arrives_stay_in_the_editor(ed: Editor) -> None:
    # A long pause, so that a stall of the test machine between two keys is
    # not taken for the user stopping to type.
    ed.lua("require('ttyoffer').setup({float = {typing_pause = 1000}})")
    ed.nvim.command("enew")
    origin = ed.nvim.current.buffer.number
    ed.nvim.input("i")
    wait_until(lambda: ed.mode() == "i", what="insert mode")
    typed = ""
    keys = itertools.cycle(SENTENCE)

    def type_key() -> None:
        # One key at a time, each in the buffer before the next: the user
        # types on, at the editor's pace.
        nonlocal typed
        key = next(keys)
        ed.nvim.input(key)
        typed += key
        wait_until(lambda: buffer_lines(ed, origin) == [typed], what=f"{typed!r} in the buffer")

    for _ in range(5):
        type_key()
    ed.lua(
        "_G.answer = {} require('ttyoffer').jobstart({'sh', '-c', ...}, "
        "{on_stdout = function(_, d) vim.list_extend(_G.answer, d) end})",
        "printf 'Password: ' > /dev/tty; read p < /dev/tty || exit 9; echo \"[$p]\"",
    )
    # Typing goes on while the prompt arrives, and after it has.
    deadline = time.monotonic() + 10
    while not prompt_waiting(ed):
        assert time.monotonic() < deadline, "the prompt never reached the editor"
        type_key()
    for _ in range(10):
        type_key()
    ed.wait_event("TtyOfferPresent")  # once the typing has paused
    assert buffer_lines(ed, origin) == [typed]
    wait_until(lambda: ed.mode() == "t", what="terminal mode in the prompt")
    ed.nvim.input("pw<CR>")
    wait_until(lambda: "[pw]" in ed.lua("return _G.answer"), what="the answer")
    assert buffer_lines(ed, origin) == [typed]


def type_taken(ed: Editor, key: str) -> None:
    """Type one key and wait until the editor has taken it (wherever it went:
    the float still up), as a user types on before seeing anything change."""
    before = ed.lua("return _G.keys_taken")
    ed.nvim.input(key)
    wait_until(lambda: ed.lua("return _G.keys_taken") > before, what=f"{key!r} taken")


def test_keys_typed_for_a_prompt_that_ends_never_reach_the_editor(ed: Editor) -> None:
    ed.lua("require('ttyoffer').setup({float = {typing_pause = 1000}})")
    ed.nvim.command("enew")
    origin = ed.nvim.current.buffer.number
    ed.nvim.input("i")
    wait_until(lambda: ed.mode() == "i", what="insert mode")
    # The command gives up after one character: the rest is still being typed.
    job = start(
        ed, ["sh", "-c", "printf 'PIN: ' > /dev/tty; stty raw -echo < /dev/tty; dd bs=1 count=1 < /dev/tty"]
    )
    ed.wait_event("TtyOfferPresent")
    wait_until(lambda: ed.mode() == "t", what="terminal mode")
    ed.lua("_G.keys_taken = 0 vim.on_key(function() _G.keys_taken = _G.keys_taken + 1 end)")
    type_taken(ed, "4")
    assert exit_code(ed, job) == 0  # it had its key, and has ended
    for key in "-secret-pin-digits":
        type_taken(ed, key)
    ed.wait_event("TtyOfferClose")
    assert buffer_lines(ed, origin) == [""]
    assert ed.nvim.current.buffer.number == origin
    ed.nvim.input("after")
    wait_until(lambda: ed.nvim.current.buffer[:] == ["after"], what="later keys reaching the editor")
