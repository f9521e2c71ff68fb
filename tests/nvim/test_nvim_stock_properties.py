"""Properties: whatever a caller gives a spawner, the wrapped one does what
stock does. Generated argv (empty, huge, bytes that are not UTF-8, quotes,
newlines), environments (odd names, huge values, clear_env), $PATH (relative,
empty, missing and non-executable entries), `cwd`, stdin forms, and
'shell'/'shellcmdflag'/'shellxquote' values go through stock and through the
wrappers in the same editor; results, errors and v:shell_error must match.

The program is a small C probe that writes what it was given (argv, the
environment, its folder, its stdin) hex-encoded, one field a line, so that a
difference in any byte shows. What the offer changes on purpose ($GPG_TTY,
a $TERM for a command that has none; :help ttyoffer-contract) is taken out.
One editor per tier, on 0.12-dev and 0.11.4 with the compiled leader and on
0.12-dev with the /bin/sh prologue. Examples are derandomized: a failure is
found again by the same run."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Editor, Sandbox, editor, nvim_011_binary, nvim_binary

pytestmark = [pytest.mark.nvim, pytest.mark.versions]

PROBE_C = r"""
#include <stdio.h>
#include <string.h>
#include <unistd.h>
extern char **environ;
static void field(char tag, const char *s, size_t n) {
    putchar(tag); putchar(' ');
    for (size_t i = 0; i < n; i++) printf("%02x", (unsigned char)s[i]);
    putchar('\n');
}
int main(int argc, char **argv) {
    static char buf[1 << 16];
    for (int i = 0; i < argc; i++) field('a', argv[i], strlen(argv[i]));
    for (char **e = environ; *e; e++) field('e', *e, strlen(*e));
    if (getcwd(buf, sizeof buf)) field('c', buf, strlen(buf));
    unsigned long total = 0;
    ssize_t got;
    putchar('i'); putchar(' ');
    while ((got = read(0, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < got; i++) printf("%02x", (unsigned char)buf[i]);
        total += (unsigned long)got;
    }
    putchar('\n');
    return (int)((argc + total) % 7);
}
"""

# Runs one spec through stock and through the wrappers; returns whether the
# results match, both results (vim.inspect) and whether ours had its offer
# (the probe ran with a $GPG_TTY naming a pty the caller did not give).
COMPARE = r"""
local spec = ...
-- Huge values travel as a mark ("\1huge:N"), for short reports.
local function grow(v)
  if type(v) == 'string' then
    local n = v:match('^\1huge:(%d+)$')
    return n and ('x'):rep(tonumber(n)) or v
  elseif type(v) == 'table' then
    local t = {}
    for k, x in pairs(v) do t[k] = grow(x) end
    return t
  end
  return v
end
spec.cmd = grow(spec.cmd)
if type(spec.opts) == 'table' then spec.opts = grow(spec.opts) end
local originals = require('ttyoffer.shared.originals')
local T = require('ttyoffer')
local function null(v) if v == vim.NIL then return nil end return v end
local opts = null(spec.opts)
spec.input = null(spec.input)
local function unhex(h) return (h:gsub('%x%x', function(x) return string.char(tonumber(x, 16)) end)) end
-- A probe's output with its environment sorted and the offer's own entries
-- ($GPG_TTY unless the caller named it, $TERM) taken out; other text as it is.
local seen_offer = false
local caller_gpg = type(opts) == 'table' and type(opts.env) == 'table' and opts.env.GPG_TTY ~= nil
local function normal(text)
  if type(text) == 'table' then text = table.concat(text, '\n') end
  if type(text) ~= 'string' or not text:find('^a %x*\n') then return text end
  local head, env, tail = {}, {}, {}
  for line in (text .. '\n'):gmatch('([^\n]*)\n') do
    if line:sub(1, 2) == 'e ' then
      local entry = unhex(line:sub(3))
      if not caller_gpg and entry:find('^GPG_TTY=/dev/pts/') then
        seen_offer = true
      end
      if not entry:find('^TERM=') and (caller_gpg or not entry:find('^GPG_TTY=')) then
        table.insert(env, entry)
      end
    elseif #env == 0 then table.insert(head, line) else table.insert(tail, line) end
  end
  table.sort(env)
  return { head = head, env = env, tail = tail }
end
-- A job's output as its callbacks give it: a list, the first item of each
-- call going on the last line of the one before.
local function add(lines, data)
  if #lines == 0 then
    vim.list_extend(lines, data)
  else
    lines[#lines] = lines[#lines] .. data[1]
    vim.list_extend(lines, data, 2)
  end
end
local function run(S)
  local shell_before = { vim.o.shell, vim.o.shellcmdflag, vim.o.shellxquote, vim.o.shellxescape }
  if spec.shell then
    vim.o.shell, vim.o.shellcmdflag = spec.shell, spec.shellcmdflag
    vim.o.shellxquote, vim.o.shellxescape = spec.shellxquote, spec.shellxescape
  end
  local ok, result = pcall(function()
    if spec.how == 'vim.system' then
      local obj = S.system(spec.cmd, opts)
      if opts and opts.stdin == true then
        if spec.stdin_pipe then obj:write(spec.stdin_pipe) end
        obj:write(nil)
      end
      local out = obj:wait(20000)
      return { code = out.code, signal = out.signal, stdout = normal(out.stdout), stderr = out.stderr }
    elseif spec.how == 'jobstart' then
      local code, out, err = nil, {}, {}
      local o = vim.tbl_extend('force', opts or {}, {
        on_stdout = function(_, d) add(out, d) end,
        on_stderr = function(_, d) add(err, d) end,
        on_exit = function(_, c) code = c end,
      })
      local job = S.jobstart(spec.cmd, o)
      if job <= 0 then return { job = job } end
      if o.stdin ~= 'null' then
        if spec.stdin_pipe then vim.fn.chansend(job, spec.stdin_pipe) end
        vim.fn.chanclose(job, 'stdin')
      end
      vim.wait(20000, function() return code ~= nil end)
      return { code = code, stdout = normal(out), stderr = err }
    end
    local fn = spec.how == 'system' and S.fn_system or S.systemlist
    local out
    if spec.input ~= nil then out = fn(spec.cmd, spec.input) else out = fn(spec.cmd) end
    return { out = normal(out), shell_error = vim.v.shell_error }
  end)
  vim.o.shell, vim.o.shellcmdflag, vim.o.shellxquote, vim.o.shellxescape = unpack(shell_before)
  if not ok then
    return { error = tostring(result) }
  end
  return result
end
if spec.path then vim.env.PATH = spec.path end
local stock = run(originals)
seen_offer = false
local wrapped = { system = T.system, jobstart = T.jobstart }
wrapped.fn_system, wrapped.systemlist = T.fn_system, T.systemlist
local ours = run(wrapped)
local offered = seen_offer
if spec.path then vim.env.PATH = spec.editor_path end
local same = vim.deep_equal(stock, ours)
-- What differs, in short: the keys whose values differ, and for a probe's
-- output the lines one side has and the other has not.
local function short(v)
  local text = vim.inspect(v)
  return #text > 1500 and (text:sub(1, 1500) .. '...') or text
end
local function only_in(a, b)
  local seen, found = {}, {}
  for _, x in ipairs(b) do seen[x] = true end
  for _, x in ipairs(a) do if not seen[x] then table.insert(found, x) end end
  return found
end
local report = {}
if not same then
  for _, key in ipairs(vim.tbl_keys(vim.tbl_extend('force', {}, stock, ours))) do
    local a, b = stock[key], ours[key]
    if not vim.deep_equal(a, b) then
      if type(a) == 'table' and type(b) == 'table' and a.env and b.env then
        for _, part in ipairs({ 'head', 'env', 'tail' }) do
          local gone, added = only_in(a[part], b[part]), only_in(b[part], a[part])
          if #gone + #added > 0 then
            local line = ('%s.%s: stock only %s; ours only %s'):format(key, part, short(gone), short(added))
            table.insert(report, line)
          end
        end
      else
        table.insert(report, ('%s: stock %s; ours %s'):format(key, short(a), short(b)))
      end
    end
  end
end
return { same, table.concat(report, '\n'), offered }
"""


class Tier:
    def __init__(self, ed: Editor, root: Path, name: str) -> None:
        self.ed = ed
        self.root = root
        self.name = name
        self.cases = 0
        self.offered = 0
        self.editor_path = str(ed.lua("return vim.env.PATH"))

    def compare(self, spec: dict[str, Any]) -> None:
        spec.setdefault("editor_path", self.editor_path)
        same, report, offered = self.ed.lua(COMPARE, spec)
        self.cases += 1
        self.offered += bool(offered)
        assert same, f"{self.name}: {spec!r}\n{report}"


@pytest.fixture(scope="module", params=["0.12", "0.11", "0.12, sh"])
def tier(
    request: pytest.FixtureRequest, registered_sandbox: Sandbox, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Tier]:
    """One editor for the module on each tier, in a folder with the probe
    (by name in bin/, relative in relbin/, in a folder with a space), and a
    file that is not executable; it reports how many cases it compared."""
    base = tmp_path_factory.mktemp("properties")
    sandbox = Sandbox(base / "nvim")
    sandbox.manifest.write_text(registered_sandbox.manifest.read_text())
    root = base / "work"
    for folder in ("bin", "relbin", "x y", "other", "noexec"):
        (root / folder).mkdir(parents=True)
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is one of the suite's needs"
    (base / "probe.c").write_text(PROBE_C)
    subprocess.run([cc, "-O1", "-o", str(root / "bin" / "probe"), str(base / "probe.c")], check=True)
    shutil.copy(root / "bin" / "probe", root / "relbin" / "relprobe")
    shutil.copy(root / "bin" / "probe", root / "x y" / "my probe")
    shutil.copy(root / "bin" / "probe", root / "hereprobe")
    (root / "noexec" / "probe").write_bytes((root / "bin" / "probe").read_bytes())
    (root / "noexec" / "probe").chmod(0o644)
    binary = nvim_011_binary() if request.param == "0.11" else nvim_binary()
    sandbox.env["TTYOFFER_NVIM"] = binary
    if request.param.endswith("sh"):
        sandbox.env["TTYOFFER_LEADER"] = "sh"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TTYOFFER_NVIM", binary)
        with editor(sandbox) as ed:
            leader = ed.lua("return require('ttyoffer.host.install').leader()")
            assert (leader is None) == request.param.endswith("sh"), leader
            ed.lua("vim.fn.chdir(...)", str(root))
            t = Tier(ed, root, request.param)
            yield t
            print(f"\n{t.name}: {t.cases} cases compared, the probe ran with the offer in {t.offered}")


# -- what is generated ---------------------------------------------------------

# Text an argv or environment can carry (no NUL): any code point, bytes that
# are not UTF-8, quotes, newlines, blanks.
CHARS = st.characters(exclude_categories=["Cs"], exclude_characters="\x00")
WORD = st.one_of(
    st.text(CHARS, max_size=12),
    st.sampled_from(["", " ", "'", '"', "\\", "\n", "a b", "$HOME", "*", "-e", "--", "a\tb", "é"]),
    st.binary(min_size=1, max_size=8).filter(lambda b: b"\x00" not in b),
)
HUGE = st.sampled_from([1000, 100_000, 131_072, 140_000]).map(lambda n: f"\x01huge:{n}")
ARGS = st.lists(st.one_of(WORD, HUGE), max_size=5)
# No name starting with "PATH=": the child's getenv("PATH") may then read
# that entry, and with a value longer than PATH_MAX execvp() tries no folder
# and fails with whatever errno was left over: stock itself is not the same
# twice (measured on 0.12-dev: 2 of 300 identical calls gave ESRCH, or a
# wait() that returned nil, where the rest raised ENOENT).
NAME = st.one_of(
    st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,6}\Z"),
    st.sampled_from(["A-B", "1X", "a.b", "é", "A B", "X=Y", " ", "%", "GPG_TTY", "TERM", "PWD", "HOME"]),
)
VALUE = st.one_of(WORD, st.sampled_from(["\x01huge:70000"]))
ENV = st.dictionaries(NAME, VALUE, max_size=4)
# Entries of a $PATH, relative to the editor's folder (the probe's root).
PATH_ENTRY = st.sampled_from(
    ["relbin", "", ".", "bin", "noexec", "missing", "x y", "/usr/bin", "/bin", "bin/probe"]
)
PATHS = st.lists(PATH_ENTRY, min_size=1, max_size=4).map(":".join)
CWD = st.sampled_from([None, "other", "bin", "relbin", "missing", "hereprobe", ""])
# Programs: by full path, by name on $PATH, relative, through relative or
# empty entries, missing, not executable, a folder, empty.
STARTS = st.sampled_from(["probe", "relprobe", "hereprobe", "./hereprobe", "bin/probe", "x y/my probe"])
FAILS = st.sampled_from(["noexec/probe", "missing", "bin", ""])
PROGRAMS = st.one_of(STARTS, STARTS, FAILS)
STDIN = st.one_of(st.none(), st.text(CHARS, max_size=20), st.lists(st.text(CHARS, max_size=8), max_size=3))


def options(
    tier: Tier, env: dict[str, Any] | None, clear_env: bool, cwd: str | None, path: str | None
) -> Any:
    opts: dict[str, Any] = {}
    if env is not None:
        opts["env"] = dict(env)
        if path is not None:
            opts["env"]["PATH"] = path
    if clear_env:
        opts["clear_env"] = True
    if cwd is not None:
        opts["cwd"] = cwd if cwd in ("", "missing") or cwd.startswith("/") else str(tier.root / cwd)
    return opts or None


def fix_probe(tier: Tier, program: str) -> str:
    return str(tier.root / "bin" / "probe") if program == "probe" else program


SETTINGS = settings(
    max_examples=int(os.environ.get("TTYOFFER_PROPERTY_EXAMPLES", "120")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@SETTINGS
@given(
    program=PROGRAMS,
    args=ARGS,
    env=st.one_of(st.none(), ENV),
    clear_env=st.booleans(),
    cwd=CWD,
    path=st.one_of(st.none(), PATHS),
    editor_path=st.booleans(),
    stdin=STDIN,
    pipe=st.booleans(),
    text=st.booleans(),
)
def test_vim_system_as_in_stock(
    tier: Tier,
    program: str,
    args: list[Any],
    env: dict[str, Any] | None,
    clear_env: bool,
    cwd: str | None,
    path: str | None,
    editor_path: bool,
    stdin: Any,
    pipe: bool,
    text: bool,
) -> None:
    opts = options(tier, env, clear_env, cwd, path) or {}
    if pipe:
        opts["stdin"] = True
    elif stdin is not None:
        opts["stdin"] = stdin
    opts["text"] = text
    spec: dict[str, Any] = {"how": "vim.system", "cmd": [program, *args], "opts": opts}
    if pipe and isinstance(stdin, str):
        spec["stdin_pipe"] = stdin
    if editor_path and path is not None:
        # The editor's own $PATH with the entries (relative ones from its folder).
        spec["path"] = path + ":" + tier.editor_path
    tier.compare(spec)


@SETTINGS
@given(
    program=PROGRAMS,
    args=ARGS,
    env=st.one_of(st.none(), ENV),
    clear_env=st.booleans(),
    cwd=CWD,
    path=st.one_of(st.none(), PATHS),
    editor_path=st.booleans(),
    stdin=st.one_of(st.none(), st.text(CHARS, max_size=20)),
    string=st.booleans(),
)
def test_jobstart_as_in_stock(
    tier: Tier,
    program: str,
    args: list[Any],
    env: dict[str, Any] | None,
    clear_env: bool,
    cwd: str | None,
    path: str | None,
    editor_path: bool,
    stdin: str | None,
    string: bool,
) -> None:
    opts = options(tier, env, clear_env, cwd, None if editor_path else path) or {}
    if stdin is None:
        opts["stdin"] = "null"
    spec: dict[str, Any] = {"how": "jobstart", "cmd": [fix_probe(tier, program), *args], "opts": opts}
    if stdin is not None:
        spec["stdin_pipe"] = stdin
    if editor_path and path is not None:
        spec["path"] = path + ":" + tier.editor_path
    if string:
        # The probe as the 'shell' ('shellcmdflag' and the string its arguments).
        spec.update(cmd="echo hi", shell=program, shellcmdflag="-c", shellxquote="", shellxescape="")
    tier.compare(spec)


@SETTINGS
@given(
    program=PROGRAMS,
    args=ARGS,
    path=st.one_of(st.none(), PATHS),
    how=st.sampled_from(["system", "systemlist"]),
    string=st.booleans(),
    stdin=STDIN,
)
def test_system_and_systemlist_as_in_stock(
    tier: Tier, program: str, args: list[Any], path: str | None, how: str, string: bool, stdin: Any
) -> None:
    spec: dict[str, Any] = {"how": how, "cmd": [fix_probe(tier, program), *args], "input": stdin}
    if path is not None:
        spec["path"] = path + ":" + tier.editor_path
    if string:
        spec.update(cmd="echo hi", shell=program, shellcmdflag="-c", shellxquote="", shellxescape="")
    tier.compare(spec)


# 'shell' values: the probe (by a path with a space, or by name) with words
# Neovim's tokenizer reads, quotes and backslashes in every place.
SHELL_WORD = st.one_of(
    st.text(st.sampled_from(["a", " ", "\t", '"', "\\", "'", "é", "$", "-"]), max_size=8),
    st.sampled_from(['"two words"', '"q\\"uote"', '"back\\\\slash"', '"a\\b"', '""', "'x y'"]),
)


def unsafe_for_neovim(text: str) -> bool:
    """A backslash ending a value inside an open quote: Neovim's
    word_length() reads past the value's end (not a case to compare)."""
    quoted = False
    i = 0
    while i < len(text):
        c = text[i]
        if c == '"':
            quoted = not quoted
        elif c == "\\" and quoted:
            if i + 1 >= len(text):
                return True
            i += 1
        i += 1
    return False


@SETTINGS
@given(
    lead=st.sampled_from(["", " ", "\t"]),
    program=st.sampled_from(
        [
            '"{root}/x y/my probe"',
            "{root}/bin/probe",
            "probe",
            '"probe"',
            '{root}/x" "y/my" probe"',
            "missing",
        ]
    ),
    words=st.lists(SHELL_WORD, max_size=3),
    flag=st.lists(SHELL_WORD, max_size=3),
    xquote=st.sampled_from(["", '"', "(", '"(', "'"]),
    xescape=st.sampled_from(["", "^|&", '"\\']),
    how=st.sampled_from(["jobstart", "system", "systemlist"]),
    cmd=st.one_of(st.text(CHARS, min_size=1, max_size=12), st.sampled_from(["echo hi", 'a "b" (c)|d&e^'])),
)
def test_shell_options_as_in_stock(
    tier: Tier,
    lead: str,
    program: str,
    words: list[str],
    flag: list[str],
    xquote: str,
    xescape: str,
    how: str,
    cmd: str,
) -> None:
    shell = lead + " ".join([program.format(root=tier.root), *words])
    shellcmdflag = " ".join(flag)
    if unsafe_for_neovim(shell) or unsafe_for_neovim(shellcmdflag):
        return
    spec: dict[str, Any] = {
        "how": how,
        "cmd": cmd,
        "shell": shell,
        "shellcmdflag": shellcmdflag,
        "shellxquote": xquote,
        "shellxescape": xescape,
        "opts": {"stdin": "null"} if how == "jobstart" else None,
        "path": str(tier.root / "bin") + ":" + tier.editor_path,
    }
    tier.compare(spec)
