"""The Lua half of "one object per kind" (issue 33): what a pane, a dtach
session, a tmux session or a session on another machine does differently is
written in that kind's module, lua/ttyoffer/runs/kinds/{pane,dtach,tmux,
remote}.lua, behind the one interface kinds/init.lua declares. Nothing else
under lua/ttyoffer/ chooses by the kind: no read of a kind's option or field
(`.tmux`, `.persist`, `.host`, `.session`), no kind's name as a literal
('tmux', 'dtach', 'remote', 'persist'). This scan fails when such a branch
appears outside the kinds' folder; `python tests/unit/test_run_kinds_lua.py
[ROOT]` prints what it finds (the count the closing note gives)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import require_graph
from harness import ROOT

KINDS = ("pane", "dtach", "tmux", "remote")
# A kind's option or field read (`run.session`, `spec.host`, `opts.tmux`);
# an assignment (`run.session = session`, the host telling a name) is no
# choice. `host.x` is the host's module, not a field: only `.host` counts.
FIELD = re.compile(r"(?<![\w.])([A-Za-z_][\w.]*)\.(tmux|persist|host|session)\b(?!\s*=[^=])")
# A kind's name as a whole string.
LITERAL = re.compile(r"""(['"])(tmux|dtach|remote|persist)\1""")
# What may still read or name one, and why (keep it tiny).
ALLOWED = {
    # `:TtyOffer status`: the Python host's state, not a run's destination.
    ("lua/ttyoffer/command.lua", "s.host"),
    # :checkhealth names the programs the kinds need, to say which is missing.
    ("lua/ttyoffer/health.lua", "'tmux'"),
    ("lua/ttyoffer/health.lua", "'dtach'"),
}
# Generated from the protocol's one source (method names, not choices).
GENERATED = {"lua/ttyoffer/host/protocol.lua", "lua/ttyoffer/runs/rules.lua"}

_STRING = re.compile(r"""'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|\[(=*)\[.*?\]\1\]""")


def branches_in(name: str, source: str) -> list[str]:
    """`name:line: what` for each read of a kind's field and each kind's
    name in `source` (comments never count; a field inside a string neither)."""
    found = []
    for number, line in enumerate(require_graph._code(source), 1):
        code = _STRING.sub("''", line)
        for match in FIELD.finditer(code):
            found.append((number, f"{match.group(1)}.{match.group(2)}"))
        for match in LITERAL.finditer(line):
            found.append((number, match.group(0)))
    return [f"{name}:{number}: {what}" for number, what in found if (name, what) not in ALLOWED]


def branches(root: Path = ROOT) -> list[str]:
    """Every choice by the kind under lua/ttyoffer/, outside runs/kinds/."""
    lua = root / "lua" / "ttyoffer"
    found = []
    for path in sorted(lua.rglob("*.lua")):
        name = str(path.relative_to(root))
        if "kinds" in path.relative_to(lua).parts[:-1] or name in GENERATED:
            continue
        found += branches_in(name, path.read_text())
    return found


def test_no_kind_is_chosen_outside_its_module() -> None:
    found = branches()
    assert found == [], "ask the run's kind (lua/ttyoffer/runs/kinds/) instead: " + "\n".join(found)


def test_the_allowed_list_holds_only_what_is_there() -> None:
    # An entry nothing matches any more leaves the list.
    present = set()
    for name, _ in ALLOWED:
        for number, line in enumerate(require_graph._code((ROOT / name).read_text()), 1):
            present |= {(name, f"{m.group(1)}.{m.group(2)}") for m in FIELD.finditer(_STRING.sub("''", line))}
            present |= {(name, m.group(0)) for m in LITERAL.finditer(line)}
            del number
    assert ALLOWED - present == set()


def test_the_scan_sees_the_branches_it_should() -> None:
    source = (
        "if run.tmux then env.TMUX = nil end\n"
        "local where = opts.host and (opts.host .. ':') or ''\n"
        "run.session = session ~= '' and session or nil -- run.session in words\n"
        "if spec.persist == nil then x = 'dtach' end\n"
        "host.notify('run_signal', x) require('ttyoffer.host')\n"
        "local m = \"run.session\" k = kind == 'remote'\n"
    )
    assert branches_in("x.lua", source) == [
        "x.lua:1: run.tmux",
        "x.lua:2: opts.host",
        "x.lua:2: opts.host",
        "x.lua:4: spec.persist",
        "x.lua:4: 'dtach'",
        "x.lua:6: 'remote'",
    ]


# A method of the protocol (host/protocol.lua: `name = { kind = ... }`).
_METHOD = re.compile(r"^  (\w+) = \{ kind = '(?:request|notify)'", re.M)


def test_each_kinds_requests_are_made_in_its_module_once() -> None:
    # A method the kinds ask is asked nowhere else, and once in each kind's
    # module that asks it: what changes it at the protocol (the generic
    # run_sessions, run_session_kill...) is one line per kind.
    methods = _METHOD.findall((ROOT / "lua" / "ttyoffer" / "host" / "protocol.lua").read_text())
    assert "run_session_kill" in methods and "run_signal" in methods
    named: dict[str, dict[str, int]] = {}
    for path in sorted((ROOT / "lua" / "ttyoffer").rglob("*.lua")):
        name = str(path.relative_to(ROOT))
        if name in GENERATED:
            continue
        code = "\n".join(require_graph._code(path.read_text()))
        for method in methods:
            count = len(re.findall(rf"""(['"]){method}\1""", code))
            if count:
                named.setdefault(method, {})[name] = count
    kinds_methods = {m for m, files in named.items() if any("/runs/kinds/" in f for f in files)}
    assert {"run_sessions", "run_session_kill", "run_prepare", "run_check", "run_signal"} <= kinds_methods
    wrong = {m: files for m, files in named.items() if m in kinds_methods and set(files.values()) != {1}}
    wrong |= {
        m: files
        for m, files in named.items()
        if m in kinds_methods and any("/kinds/" not in f for f in files)
    }
    assert wrong == {}, "a kind's request, asked outside its module or twice in it"


def test_every_kind_implements_the_interface(lua: Any) -> None:
    missing = lua(
        "local kinds = require('ttyoffer.runs.kinds') local missing = {} "
        "for _, kind in ipairs(kinds.all) do for name, what in pairs(kinds.INTERFACE) do "
        "if type(kind[name]) ~= what then table.insert(missing, kind.name .. '.' .. name) end end end "
        "table.sort(missing) return {missing, vim.tbl_map(function(k) return k.name end, kinds.all)}"
    )
    assert missing == [[], ["pane", "dtach", "tmux", "remote"]]


def test_the_options_choose_the_kind(lua: Any) -> None:
    choose = (
        "local choice, problem = require('ttyoffer.runs.kinds').choose(...) "
        "return choice and {choice.kind.name, choice.session or vim.NIL, choice.where or vim.NIL} or problem"
    )
    assert lua(choose, {"argv": ["ls"]}) == ["pane", None, None]
    assert lua(choose, {"persist": "build"}) == ["dtach", "build", None]
    assert lua(choose, {"persist": "build", "host": "devbox"}) == ["remote", "build", "devbox"]
    assert "two kinds of session" in lua(choose, {"persist": "a", "tmux": "b"})
    split = "return {require('ttyoffer.runs.kinds').split_address(...)}"
    assert lua(split, "devbox:build") == ["devbox", "build"]
    assert lua(split, "ssh://me@host:2222:build") == ["ssh://me@host:2222", "build"]
    assert lua(split, "[::1]:22:x") == ["[::1]:22", "x"]
    assert lua(split, "build") == [None, "build"]


if __name__ == "__main__":
    found = branches(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    print("\n".join(found))
    print(f"{len(found)} choices by the kind outside lua/ttyoffer/runs/kinds/")
