"""The help file and :checkhealth, as a user reaches them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from harness import ROOT, Editor, Sandbox, editor, wait_until

pytestmark = pytest.mark.nvim

# Lua: every option path of the defaults ("float.width"), the tables too.
OPTION_PATHS = """
        local out = {}
        local function walk(t, prefix)
          for k, v in pairs(t) do
            table.insert(out, prefix .. k)
            if type(v) == 'table' and not vim.islist(v) then walk(v, prefix .. k .. '.') end
          end
        end
        walk(require('ttyoffer.config').defaults, '')
        return out
        """


def test_helptags_build_and_everything_is_documented(ed: Editor, tmp_path: Path) -> None:
    doc = tmp_path / "doc"
    shutil.copytree(ROOT / "doc", doc)
    ed.nvim.command(f"helptags {doc}")  # fails on duplicate or malformed tags
    tags = {line.split("\t")[0] for line in (doc / "tags").read_text().splitlines()}
    commands = ed.lua("return vim.tbl_keys(vim.api.nvim_get_commands({}))")
    assert {"Bang", "TtyOffer"} <= set(commands)
    for command in ("Bang", "TtyOffer"):
        assert f":{command}" in tags
    for sub in ed.lua("return vim.fn.getcompletion('TtyOffer ', 'cmdline')"):
        assert f":TtyOffer-{sub}" in tags, sub
    options = ed.lua(OPTION_PATHS)
    for option in options:
        assert f"ttyoffer-config-{option}" in tags, option
    for fn in ed.lua("return vim.tbl_keys(require('ttyoffer'))"):
        if isinstance(fn, str) and not fn.startswith("_"):  # _names are internal
            assert f"ttyoffer.{fn}()" in tags, fn
    for group in ("TtyOfferNormal", "TtyOfferBorder", "TtyOfferTitle"):
        assert f"hl-{group}" in tags
    for event in (
        "TtyOfferPresent",
        "TtyOfferClose",
        "TtyOfferBangDone",
        "TtyOfferHostReady",
        "TtyOfferUnserved",
    ):
        assert event in tags
    # Every |link| points at a tag of ours or of Neovim's own help.
    runtime = Path(ed.lua("return vim.env.VIMRUNTIME")) / "doc" / "tags"
    known = tags | {line.split("\t")[0] for line in runtime.read_text().splitlines()}
    text = (doc / "ttyoffer.txt").read_text()
    for link in set(re.findall(r"\|([^|\s]+)\|", text)):
        assert link in known, link


def test_checkhealth_reports_a_working_setup(ed: Editor) -> None:
    ed.nvim.command("checkhealth ttyoffer")
    report = "\n".join(ed.nvim.current.buffer[:])
    assert "ERROR" not in report, report
    assert "pynvim and pyte are importable" in report
    assert "Remote plugin: " in report
    assert "Host running" in report
    assert "A pty can be opened" in report
    assert "Commands start through the compiled leader " in report


def test_checkhealth_tells_when_the_sh_prologue_leads(sandbox: Sandbox) -> None:
    sandbox.env["TTYOFFER_LEADER"] = "sh"
    with editor(sandbox) as ed:
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
    assert "WARNING" not in report and "ERROR" not in report, report
    assert "Commands start through the /bin/sh prologue" in report, report


def test_checkhealth_at_startup_tells_the_truth(sandbox: Sandbox) -> None:
    # Typed the instant the editor is there, before the host is up: it waits
    # for the host rather than warn that it is not running.
    with editor(sandbox, wait_host=False) as ed:
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
    assert "ERROR" not in report and "WARNING" not in report, report
    assert "Host running" in report


def test_checkhealth_names_the_fix_without_a_python(ed: Editor) -> None:
    # As though no host had run: health looks for a Python again.
    ed.lua("vim.g.python3_host_prog = '/nonexistent/python3'")
    ed.lua("require('ttyoffer.host').get_python = function() end")
    ed.nvim.command("checkhealth ttyoffer")
    report = "\n".join(ed.nvim.current.buffer[:])
    assert "g:python3_host_prog (/nonexistent/python3) is not executable" in report
    assert ":TtyOffer install" in report


def test_without_a_python_the_user_is_told_once_and_commands_run(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "nvim", extra_init="vim.g.python3_host_prog = '/nonexistent/python3'\n")
    with editor(sandbox, wait_host=False) as ed:
        # One line that says where to look; the whole of it in the status.
        said = "(ttyoffer) no host (see :checkhealth ttyoffer)"
        wait_until(lambda: said in ed.nvim.command_output("messages"), what="the notice")
        out = ed.lua(
            "local out = {} local j = require('ttyoffer').jobstart({'echo', 'plain'},"
            " {on_stdout = function(_, d) vim.list_extend(out, d) end}) vim.fn.jobwait({j}) return out"
        )
        assert "plain" in out
        assert "g:python3_host_prog (/nonexistent/python3) is not executable" in ed.nvim.command_output(
            "TtyOffer status"
        )
        ed.lua("require('ttyoffer.host').forget_failure() require('ttyoffer').start() vim.wait(200)")
        assert ed.nvim.command_output("messages").count(said) == 1


def test_a_python_that_cannot_run_the_host_fails_once_and_is_not_restarted(tmp_path: Path) -> None:
    # /bin/false "runs" and exits at once: before, the host was started
    # again for every spawn, silently.
    sandbox = Sandbox(tmp_path / "nvim", extra_init="vim.g.python3_host_prog = '/bin/false'\n")
    with editor(sandbox, wait_host=False) as ed:
        wait_until(lambda: ed.lua("return require('ttyoffer.host').get_state()") == "failed", what="failed")
        for _ in range(5):
            assert ed.lua("return vim.fn.jobwait({require('ttyoffer').jobstart({'true'})}, 5000)[1]") == 0
        ed.lua("vim.wait(300)")
        gone = ed.lua("local h = require('ttyoffer.host') return {h.get_state(), h.get_job() == nil}")
        assert gone == ["failed", True]
        assert "cannot import pynvim and pyte" in ed.nvim.command_output("TtyOffer status")
        assert ed.nvim.command_output("messages").count("(ttyoffer) no host") == 1


def test_nothing_in_the_editors_folder_is_imported_by_the_plugins_python(ed: Editor, tmp_path: Path) -> None:
    # A repository the user opens may hold a neovim.py or pyte.py: the
    # plugin's own Python runs must never import them.
    folder = tmp_path / "untrusted"
    folder.mkdir()
    marker = tmp_path / "imported"
    for name in ("neovim.py", "pynvim.py", "pyte.py", "os.py"):
        (folder / name).write_text(f"open({str(marker)!r}, 'w').write('{name}')\n")
    ed.lua("vim.fn.chdir(...)", str(folder))
    ed.nvim.command("checkhealth ttyoffer")
    host_pid = ed.lua("return require('ttyoffer.host').get_pid()")
    ed.lua("vim.uv.kill(..., 'sigkill')", host_pid)
    wait_until(
        lambda: ed.lua(
            "return require('ttyoffer.host').ready() and require('ttyoffer.host').get_pid() ~= ...", host_pid
        ),
        20,
        "the host back",
    )
    assert not marker.exists(), marker.read_text()


def test_checkhealth_on_a_plain_machine_warns_of_nothing_optional(sandbox: Sandbox, tmp_path: Path) -> None:
    # A plain Debian has no dtach and no tmux: those are optional parts,
    # reported as information with the install line, never as warnings.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "git", "python3", "stty", "ps"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    sandbox.env["PATH"] = str(bin_dir)
    with editor(sandbox) as ed:
        ed.nvim.command("checkhealth ttyoffer")
        report = "\n".join(ed.nvim.current.buffer[:])
    assert "WARNING" not in report, report
    assert "dtach not found (optional)" in report and "sudo apt-get install dtach" in report, report
    assert "tmux not found (optional)" in report, report
