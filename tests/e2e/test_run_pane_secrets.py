"""Keys typed into a run's pane as its program ends stay out of the editor:
a real ssh asking a password in the pane (test_remote_runs' remote
machine, password authentication), three wrong answers typed at a person's
pace end it, and the person goes on typing the password they expected to be
asked for; then every place the editor keeps text is searched."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import test_remote_runs
from test_remote_runs import DEST, Remote, last_run, result

from harness import Editor, Sandbox, editor, wait_until

pytestmark = pytest.mark.e2e

remote_host = test_remote_runs.remote_host
remote_sandbox = test_remote_runs.remote_sandbox

# What the person types after ssh has given up. The part after the colon is
# what any leak would show: an Ex command line, its history, its register.
SECRET = "t3rm:Horse7staple"
NEEDLE = "Horse7staple"
# Seconds between two keys, as a person types.
PACE = 0.12


def type_keys(ed: Editor, keys: str, pace: float = PACE) -> None:
    for key in keys:
        ed.nvim.input("<lt>" if key == "<" else key)
        time.sleep(pace)


def files_under(path: Path) -> list[Path]:
    return [p for p in path.rglob("*") if p.is_file()]


def test_a_password_typed_as_the_pane_ends_lands_nowhere(
    remote_sandbox: Sandbox, remote_host: Remote, tmp_path: Path
) -> None:
    undo, swap = tmp_path / "undo", tmp_path / "swap"
    undo.mkdir()
    swap.mkdir()
    document = tmp_path / "notes.txt"
    document.write_text("notes\n")
    with editor(remote_sandbox) as ed:
        # A pause of a second (not 300 ms): a stall of a loaded machine
        # between two keys is not taken for the person stopping.
        ed.lua(
            "local undo, swap = ... require('ttyoffer').setup({float = {typing_pause = 1000}}) "
            "vim.o.undofile = true vim.o.undodir = undo vim.o.directory = swap .. '//' vim.o.swapfile = true",
            str(undo),
            str(swap),
        )
        ed.nvim.command(f"edit {document}")
        ed.nvim.input("Aedited<Esc>")
        wait_until(lambda: ed.nvim.current.buffer[:] == ["notesedited"], what="an edit")
        ed.nvim.command(f"TtyRun! {DEST}:pw sleep 300")
        run_id = last_run(ed)
        wait_until(lambda: ed.mode() == "t", 20, "the pane in Terminal mode")
        wait_until(lambda: "continue connecting" in ed.run_pane(run_id), 20, "the host key question")
        type_keys(ed, "yes")
        ed.nvim.input("<CR>")
        for asked in (1, 2, 3):

            def questions(n: int = asked) -> bool:
                return ed.run_pane(run_id).count("password:") >= n

            wait_until(questions, 20, f"question {asked}")
            type_keys(ed, f"wrong-{asked}")
            ed.nvim.input("<CR>")
        # A fourth question is expected: its password is being typed when
        # ssh gives up (a long one, typed on until the editor is told).
        deadline = time.monotonic() + 60
        typed = 0
        while result(ed, run_id) is None:
            assert time.monotonic() < deadline, "ssh did not give up"
            type_keys(ed, SECRET[typed % len(SECRET)])
            typed += 1
        # The rest of that line, with the pause of a person who looks at
        # the keyboard (longer than typing_pause), then its Enter.
        type_keys(ed, SECRET)
        time.sleep(1.3)
        type_keys(ed, SECRET)
        ed.nvim.input("<CR>")
        ended = result(ed, run_id)
        assert ended is not None and ended["code"] == 255, ended
        # After a pause, keys are the editor's again.
        time.sleep(1.5)
        ed.nvim.input(":let g:after_the_pause = 1<CR>")
        wait_until(lambda: ed.lua("return vim.g.after_the_pause") == 1, 10, "keys to work again")

        pane = ed.lua("return require('ttyoffer.runs').get(...).pane.buf", run_id)
        for buf in ed.lua("return vim.api.nvim_list_bufs()"):
            if buf != pane:
                text = "\n".join(ed.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", buf))
                assert NEEDLE not in text, buf
        registers = ed.lua(
            "local out = {} for _, r in ipairs(vim.split(..., '')) do "
            "local ok, v = pcall(vim.fn.getreg, r) if ok then table.insert(out, v) end end return out",
            '"0123456789abcdefghijklmnopqrstuvwxyz-.:/#=',
        )
        assert not any(NEEDLE in r for r in registers), registers
        messages = ed.nvim.api.exec2("messages", {"output": True})["output"]
        assert NEEDLE not in messages, messages
        history = ed.nvim.api.exec2("history all", {"output": True})["output"]
        assert NEEDLE not in history, history
        ed.nvim.command(f"buffer {ed.lua('return vim.fn.bufnr(...)', str(document))}")
        ed.nvim.command("write")
        ed.nvim.command("wshada!")
        shada = Path(ed.lua("return vim.fn.stdpath('state') .. '/shada/main.shada'"))
        assert shada.exists()
        assert files_under(swap), "the edited document has a swap file"
    for path in [shada, *files_under(undo), *files_under(swap), *files_under(remote_sandbox.base / "state")]:
        if path.exists():
            assert NEEDLE.encode() not in path.read_bytes(), path
