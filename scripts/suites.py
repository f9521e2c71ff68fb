"""Third-party plugins' own test suites, run with ttyoffer.nvim loaded and
without it, in the same run (`make suites`, scripts/suites).

The wrappers sit under every process a plugin starts: mini.nvim's suite
(mini.git, mini.deps and the rest) and plenary.nvim's (its job tests) must
give the same results either way. Each suite is taken whole, tests
included, at the commit tests/third_party/suites.txt pins: from the
OWNER+NAME.tgz archive in $TTYOFFER_TEST_PLUGINS/suites when that variable
is set, else from GitHub. Each run of a unit (a mini.nvim test file,
plenary's test folder) gets a fresh copy of the tree and a private HOME and
XDG folders, and runs the suite's own runner with the real Neovim:

- stock: as the suite's Makefile runs it;
- with the plugin: ttyoffer.nvim installed as a user installs it, in the
  site pack of the data folder (loaded by every editor that loads plugins,
  `--clean` ones too), its compiled leader and its Python where
  `:TtyOffer install` puts them, and loaded first by the suite's own init
  files (for the editors started with --noplugin). A probe first checks
  that such an editor leads its commands with a terminal of their own.

Cases are compared by name. A case that differs is run again, both ways, a
few times: one whose stock result varies is flaky in stock; the run fails
(exit 1) when a case fails with the plugin that passes stock every time.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import processes  # noqa: E402
from suites_editors import Editors, run_to_the_end  # noqa: E402

import harness  # noqa: E402
from third_party import ARCHIVES_VARIABLE, Pin, clone, manifest, unpack  # noqa: E402

STOCK, WRAPPED = "stock", "with plugin"
MODES = (STOCK, WRAPPED)
# Where a user's plugin manager puts a plugin (the site pack of the data
# folder); the sandbox's data folder is also its XDG_DATA_DIRS, so an editor
# started with --clean, as mini.test starts its child editors, loads it too.
SITE_PACK = Path("nvim/site/pack/ttyoffer/start/ttyoffer.nvim")
# What the suites' own init files get first, with the plugin: for the
# editors started with --noplugin (each suite's runner, plenary's children).
LOAD_FIRST = (
    "vim.opt.runtimepath:prepend(vim.fn.stdpath('data') .. '/site/pack/ttyoffer/start/ttyoffer.nvim')"
    " vim.cmd.runtime('plugin/ttyoffer.lua')"
)
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Whether a command started by each Lua route has a controlling terminal
# (only a led command has one). Run in an editor of the sandbox, after
# VimEnter, once the plugin's host is ready (or 30 s).
PROBE_LUA = r"""
local out_path = %(out)s
local check = { 'sh', '-c', '(exec 3</dev/tty) 2>/dev/null && echo tty || echo none' }
local result = { loaded = vim.g.loaded_ttyoffer == 1 }
if result.loaded then
  result.ready = vim.wait(30000, function()
    local host = package.loaded['ttyoffer.host']
    return host ~= nil and host.ready() and require('ttyoffer.host.leader').settled()
  end, 50)
  result.leader = require('ttyoffer.host.install').leader()
end
result.routes = {}
result.routes['vim.system'] = vim.trim(vim.system(check, { text = true }):wait(10000).stdout or '')
result.routes['vim.fn.system'] = vim.trim(vim.fn.system(check))
local lines = {}
local job = vim.fn.jobstart(check, { stdout_buffered = true, on_stdout = function(_, data) lines = data end })
vim.fn.jobwait({ job }, 10000)
result.routes['vim.fn.jobstart'] = lines[1] or ''
local pipe, got, ended = vim.uv.new_pipe(), '', false
local handle = vim.uv.spawn('sh', { args = { check[2], check[3] }, stdio = { nil, pipe, nil } }, function()
  ended = true
end)
if handle then
  pipe:read_start(function(_, data)
    got = got .. (data or '')
  end)
  vim.wait(10000, function()
    return ended and got:find('\n') ~= nil
  end, 20)
end
result.routes['vim.uv.spawn'] = vim.trim(got)
local file = assert(io.open(out_path, 'w'))
file:write(vim.json.encode(result))
file:close()
vim.cmd('qa!')
"""

# mini.test's own headless reporter, recording each case's state into a
# JSON file on the way; `only`, when given, the names of the cases to run.
MINI_REPORTER_LUA = r"""
local out_path, only = %(out)s, %(only)s
local MiniTest = require('mini.test')
local function namer()
  local seen = {}
  return function(case)
    local name = table.concat(case.desc, ' | ')
    if #case.args > 0 then
      name = name .. ' ' .. vim.inspect(case.args, { newline = ' ', indent = '' })
    end
    seen[name] = (seen[name] or 0) + 1
    return seen[name] > 1 and (name .. ' #' .. seen[name]) or name
  end
end
local stdout = MiniTest.gen_reporter.stdout()
local reporter = { start = stdout.start, update = stdout.update }
function reporter.finish()
  local results, name_of = {}, namer()
  for _, case in ipairs(MiniTest.current.all_cases or {}) do
    local exec = type(case.exec) == 'table' and case.exec or {}
    table.insert(results, { name = name_of(case), state = exec.state or 'Not run' })
  end
  local file = assert(io.open(out_path, 'w'))
  file:write(vim.json.encode(results))
  file:close()
  stdout.finish()
end
_G.ttyoffer_suites_opts = { execute = { reporter = reporter } }
if only then
  local wanted, name_of = {}, namer()
  for _, name in ipairs(only) do
    wanted[name] = true
  end
  _G.ttyoffer_suites_opts.collect = {
    filter_cases = function(case)
      return wanted[name_of(case)] == true
    end,
  }
end
"""


def lua_string(text: str) -> str:
    return json.dumps(text)  # a JSON string is a Lua string (no NUL, no control bytes here)


@dataclass
class Outcome:
    """One run of one unit: each case's result (True: passed), what it
    printed, what it left running."""

    cases: dict[str, bool]
    seconds: float
    log: Path
    left_running: list[str] = field(default_factory=list)


class Suite:
    """A plugin's test suite: its units (what one runner runs), how one is
    run and read, and the init files that load the plugin first."""

    title: str
    repo: str
    init_files: tuple[tuple[str, str], ...]  # (path in the tree, "lua" or "vim")
    timeout: float

    def units(self, tree: Path) -> list[str]:
        raise NotImplementedError

    def unit_of(self, case: str) -> str:
        raise NotImplementedError

    def argv(self, nvim: str, unit: str, scratch: Path, only: list[str] | None) -> list[str]:
        raise NotImplementedError

    def read(self, unit: str, output: str, scratch: Path) -> dict[str, bool]:
        raise NotImplementedError


class Mini(Suite):
    """mini.nvim: one runner per test file, as its `make test_xxx` does."""

    title = "mini.nvim"
    repo = "echasnovski/mini.nvim"
    init_files = (("scripts/minimal_init.lua", "lua"),)
    timeout = 400.0

    # The modules whose own code starts processes (vim.loop.spawn, vim.system,
    # jobstart), mini.test's (test_test) starting the child editors:
    # --modules spawning, a third of the time of all. In the rest the
    # runner's wrapped jobstart starts a child editor per case, and the code
    # under test spawns nothing.
    SPAWNING = ("deps", "diff", "extra", "git", "pick", "test")

    def __init__(self, modules: list[str]) -> None:
        self.modules = modules

    def units(self, tree: Path) -> list[str]:
        files = sorted(p.name for p in (tree / "tests").glob("test_*.lua"))
        if self.modules != ["all"]:
            names = list(self.SPAWNING) if self.modules == ["spawning"] else self.modules
            wanted = {m if m.startswith("test_") else f"test_{m}" for m in names}
            files = [f for f in files if f.removesuffix(".lua") in wanted]
        return [f"tests/{f}" for f in files]

    def unit_of(self, case: str) -> str:
        return case.split(" | ", 1)[0]

    def argv(self, nvim: str, unit: str, scratch: Path, only: list[str] | None) -> list[str]:
        reporter = scratch / "reporter.lua"
        reporter.write_text(
            MINI_REPORTER_LUA
            % {
                "out": lua_string(str(scratch / "results.json")),
                "only": "nil" if only is None else "{" + ", ".join(map(lua_string, only)) + "}",
            }
        )
        # The Makefile's command for one module, the reporter loaded between.
        return [
            nvim,
            "--headless",
            "--noplugin",
            "-u",
            "./scripts/minimal_init.lua",
            "-c",
            "lua require('mini.test').setup()",
            "-c",
            f"luafile {reporter}",
            "-c",
            f"lua MiniTest.run_file({lua_string(unit)}, _G.ttyoffer_suites_opts)",
        ]

    def read(self, unit: str, output: str, scratch: Path) -> dict[str, bool]:
        try:
            recorded = json.loads((scratch / "results.json").read_text())
        except (OSError, ValueError):
            return {f"{unit} | (the file's run: no results)": False}
        return {r["name"]: r["state"] in ("Pass", "Pass with notes") for r in recorded}


class Plenary(Suite):
    """plenary.nvim: its Makefile's PlenaryBustedDirectory, which starts an
    editor per spec file with plenary.job (vim.uv.spawn); a case is run
    again by its spec file."""

    title = "plenary.nvim"
    repo = "nvim-lua/plenary.nvim"
    init_files = (("scripts/minimal.vim", "vim"), ("tests/minimal_init.vim", "vim"))
    timeout = 600.0
    CASE = re.compile(r"^(Success|Fail|Errors|Pending)\s*\|\|\s*(.*?)\s*$")

    def units(self, tree: Path) -> list[str]:
        return ["tests/plenary/"]

    def unit_of(self, case: str) -> str:
        return case.split(" | ", 1)[0]

    def argv(self, nvim: str, unit: str, scratch: Path, only: list[str] | None) -> list[str]:
        opts = "{minimal_init = 'tests/minimal_init.vim', sequential = true}"
        return [
            nvim,
            "--headless",
            "--noplugin",
            "-u",
            "scripts/minimal.vim",
            "-c",
            f"PlenaryBustedDirectory {unit} {opts}",
        ]

    def read(self, unit: str, output: str, scratch: Path) -> dict[str, bool]:
        cases: dict[str, bool] = {}
        scheduled: list[str] = []
        reported: set[str] = set()
        spec = ""
        for raw in output.splitlines():
            line = ANSI.sub("", raw).rstrip()
            if "Scheduling: " in line:  # the first follows "Starting..." on its line
                scheduled.append(line.split("Scheduling: ", 1)[1].strip())
            elif line.startswith("Testing:"):
                # The spec file's absolute path: named from the tree's top.
                path = line.split(":", 1)[1].strip()
                spec = "tests/" + path.split("/tests/", 1)[1] if "/tests/" in path else path
            elif line.startswith(("Failed :", "Errors :")) and spec:
                reported.add(spec)
            elif (found := self.CASE.match(line)) and spec:
                kind, name = found.groups()
                if kind == "Pending":
                    continue
                key = f"{spec} | {name}"
                number = 1
                while key in cases:
                    number += 1
                    key = f"{spec} | {name} #{number}"
                cases[key] = kind == "Success"
        for path in scheduled:
            # A spec file whose editor never reported (a crash, a hang).
            cases[f"{path} | (the file's run)"] = path in reported
        return cases


class Runner:
    """Runs units of the suites in private copies and sandboxes."""

    def __init__(
        self, work: Path, logs: Path, nvim: str, plugin: Path, venv: Path, leader: Path | None
    ) -> None:
        self.work = work
        self.logs = logs
        self.nvim = nvim
        self.plugin = plugin
        self.venv = venv
        self.leader = leader
        # Each suite's trees per mode, one per runner at a time: a unit runs
        # in a tree of its suite's as `make` runs it in a checkout, after the
        # units before it there (a copy per run is slow on a loaded disk).
        self.trees: dict[tuple[str, str], queue.Queue[Path]] = {}
        # Run numbers, taken by the pool's threads at once (next() is atomic).
        self.numbers = itertools.count(1)
        self.editors = Editors()

    def prepare(self, suite: Suite, pin: Pin, archives: Path | None, copies: int) -> Path:
        """`copies` trees of the suite per mode: stock, and with the plugin
        loaded first by its init files. The first stock one."""
        stock = self.work / f"{pin.key}.stock.1"
        stock.mkdir()
        if archives is not None:
            unpack(pin, archives, stock)
        else:
            clone(pin, stock)
        for mode in MODES:
            self.trees[(suite.title, mode)] = queue.Queue()
            for number in range(1, copies + 1):
                tree = self.work / f"{pin.key}.{'stock' if mode == STOCK else 'wrapped'}.{number}"
                if tree != stock:
                    subprocess.run(["cp", "-a", str(stock), str(tree)], check=True)
                if mode == WRAPPED:
                    for path, language in suite.init_files:
                        init = tree / path
                        first = LOAD_FIRST if language == "lua" else f"lua {LOAD_FIRST}"
                        init.write_text(first + "\n" + init.read_text())
                self.trees[(suite.title, mode)].put(tree)
        return stock

    def sandbox(self, mode: str) -> tuple[Path, dict[str, str]]:
        number = next(self.numbers)
        base = self.work / f"run{number}"
        base.mkdir()
        home = base / "home"
        home.mkdir()
        env = harness.private_environment(base)
        (base / "runtime").chmod(0o700)
        env.update(HOME=str(home), SHELL="/bin/sh")
        env[processes.MARK] = f"suites.{os.getpid()}.{number}"
        if mode == WRAPPED:
            self.install(base / "data")
        return base, env

    def install(self, data: Path) -> None:
        """ttyoffer.nvim as a user installs it: the checkout in the site
        pack, its Python and its compiled leader where :TtyOffer install
        puts them (stdpath('data')/ttyoffer/venv and /bin)."""
        pack = data / SITE_PACK
        pack.parent.mkdir(parents=True)
        pack.symlink_to(self.plugin)
        own = data / "nvim" / "ttyoffer"
        own.mkdir(mode=0o700)
        (own / "venv").symlink_to(self.venv)
        if self.leader is not None:
            folder = own / "bin"
            folder.mkdir(mode=0o700)
            shutil.copyfile(self.leader, folder / self.leader.name)
            (folder / self.leader.name).chmod(0o700)

    def probe(self, suite: Suite, how: list[str]) -> dict[str, object]:
        """What an editor of the suite's wrapped tree, started `how`, does
        with the plugin: loaded, host ready, leader, each route led."""
        base, env = self.sandbox(WRAPPED)
        probe, out = base / "probe.lua", base / "probe.json"
        probe.write_text(PROBE_LUA % {"out": lua_string(str(out))})
        argv = [
            self.nvim,
            "--headless",
            *how,
            "-c",
            "lua vim.api.nvim_create_autocmd('VimEnter', { once = true, callback = function() "
            f"vim.schedule(function() dofile({lua_string(str(probe))}) end) end }})",
        ]
        tree = self.trees[(suite.title, WRAPPED)].get()
        try:
            self.execute(argv, tree, env, 90.0)
        finally:
            self.trees[(suite.title, WRAPPED)].put(tree)
        try:
            found: dict[str, object] = json.loads(out.read_text())
        except (OSError, ValueError):
            found = {"loaded": False, "routes": {}}
        return found

    def execute(
        self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float
    ) -> tuple[str, list[str]]:
        """Runs `argv` in a session of its own; what it printed and the
        processes of its run that had to be killed at its end (by pid, on
        every path: suites_editors)."""
        proc = self.editors.start(argv, cwd, env)
        killed: list[str] = []
        try:
            try:
                output, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                killed = self.editors.end(proc)
                try:
                    output, _ = proc.communicate(timeout=self.editors.grace)
                except subprocess.TimeoutExpired:  # its output held by what it started
                    output = b""
                output += f"\n(scripts/suites: stopped after {timeout:.0f} s)\n".encode()
        finally:
            killed += self.editors.release(proc)
        return output.decode("utf-8", "replace"), killed

    def run(self, suite: Suite, unit: str, mode: str, only: list[str] | None = None) -> Outcome:
        base, env = self.sandbox(mode)
        scratch = base / "scratch"
        scratch.mkdir()
        trees = self.trees[(suite.title, mode)]
        tree = trees.get()
        try:
            started = time.monotonic()
            output, left = self.execute(suite.argv(self.nvim, unit, scratch, only), tree, env, suite.timeout)
            seconds = time.monotonic() - started
        finally:
            trees.put(tree)
        cases = suite.read(unit, output, scratch)
        shutil.rmtree(base, ignore_errors=True)
        log = (
            self.logs
            / f"{base.name}.{suite.title}.{unit.strip('/').replace('/', '_')}.{mode.replace(' ', '_')}.log"
        )
        log.write_text(output)
        return Outcome(cases, seconds, log, left)


# What a case's results (first run and reruns, stock and with the plugin) say.
FAILS_WITH_PLUGIN = "fails with the plugin"
FLAKY_WITH_PLUGIN = "flaky with the plugin only"
FLAKY_IN_STOCK = "flaky in stock"
PASSES_WITH_PLUGIN = "stock fails every time"
SAME_ON_RERUN = "same both ways on rerun"
# Those that fail the run: stock passed every time, the plugin did not.
DEFECTS = (FAILS_WITH_PLUGIN, FLAKY_WITH_PLUGIN)


def classify(stock: list[bool], wrapped: list[bool]) -> str:
    if len(set(stock)) > 1:
        return FLAKY_IN_STOCK
    if all(stock):
        if not any(wrapped):
            return FAILS_WITH_PLUGIN
        return SAME_ON_RERUN if all(wrapped) else FLAKY_WITH_PLUGIN
    return PASSES_WITH_PLUGIN if any(wrapped) else SAME_ON_RERUN


def marks(results: list[bool]) -> str:
    return "".join("P" if ok else "F" for ok in results)


@dataclass
class Tally:
    """One suite in one mode: every case's first result, time, leftovers."""

    cases: dict[str, bool] = field(default_factory=dict)
    seconds: float = 0.0
    left_running: list[str] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.cases.update(outcome.cases)
        self.seconds += outcome.seconds
        self.left_running += outcome.left_running

    def counts(self) -> str:
        passed = sum(self.cases.values())
        return f"{passed}/{len(self.cases) - passed}"


def describe_probe(how: list[str], found: dict[str, object]) -> tuple[str, bool]:
    """One line on what the plugin does in an editor started `how`, and
    whether it leads any route there (else the run would prove nothing)."""
    routes = found.get("routes")
    routes = routes if isinstance(routes, dict) else {}
    led = sorted(name for name, said in routes.items() if said == "tty")
    stock = sorted(name for name, said in routes.items() if said != "tty")
    leader = found.get("leader")
    state = (
        "not loaded"
        if not found.get("loaded")
        else f"host {'ready' if found.get('ready') else 'NOT ready'}, leader "
        f"{Path(str(leader)).name if leader else 'the /bin/sh prologue'}"
    )
    line = f"  nvim {' '.join(how)}: {state}; a terminal of their own from {', '.join(led) or 'no route'}"
    if stock:
        line += f"; none from {', '.join(stock)}"
    return line, bool(led)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--suites", default="mini.nvim,plenary.nvim", help="comma-separated: mini.nvim, plenary.nvim"
    )
    parser.add_argument(
        "--modules",
        default="all",
        help=f"mini.nvim's test modules, comma-separated (git,deps), all (the default), or "
        f"spawning ({','.join(Mini.SPAWNING)})",
    )
    parser.add_argument("--jobs", type=int, default=2, help="runners at a time (default 2)")
    parser.add_argument(
        "--reruns", type=int, default=3, help="runs again of a differing case, each way (default 3)"
    )
    parser.add_argument(
        "--plugin", type=Path, default=ROOT, help="the ttyoffer.nvim checkout to load (default this one)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work folder (trees, sandboxes)")
    args = parser.parse_args()

    harness.fix_environment()
    harness.fix_signals()
    plugin = args.plugin.resolve()
    nvim = harness.nvim_binary()
    built = subprocess.run(
        [str(plugin / "scripts" / "build_leader")], capture_output=True, text=True, check=False
    )
    leader = Path(built.stdout.strip()) if built.returncode == 0 and built.stdout.strip() else None
    archives_folder = os.environ.get(ARCHIVES_VARIABLE)
    archives = Path(archives_folder) / "suites" if archives_folder else None
    pins = manifest("suites.txt")
    wanted = [name.strip() for name in args.suites.split(",") if name.strip()]
    modules = [m.strip() for m in args.modules.split(",") if m.strip()] or ["all"]
    suites: list[Suite] = []
    for name in wanted:
        if name not in ("mini.nvim", "plenary.nvim"):
            parser.error(f"no suite {name!r}")
        suites.append(Mini(modules) if name == "mini.nvim" else Plenary())

    work = Path(tempfile.mkdtemp(prefix="ttyoffer-suites."))
    # Each run's output, kept for reading: a folder per make suites.
    logs = ROOT / ".cache" / "suites" / time.strftime("%Y%m%d-%H%M%S")
    logs.mkdir(parents=True)
    runner = Runner(work, logs, nvim, plugin, Path(sys.prefix), leader)
    say = print
    say(
        f"suites: {plugin} ({git_describe(plugin)}) on {nvim_version(nvim)}, from "
        f"{archives if archives else 'GitHub'}, in {work}; each run's output in {logs}"
    )
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs))
    try:
        return run_to_the_end(
            runner.editors, pool, lambda: compare(args, suites, runner, pool, pins, archives, say), say
        )
    finally:
        if args.keep:
            say(f"suites: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def compare(
    args: argparse.Namespace,
    suites: list[Suite],
    runner: Runner,
    pool: concurrent.futures.ThreadPoolExecutor,
    pins: dict[str, Pin],
    archives: Path | None,
    say: Callable[[str], None],
) -> int:
    """The suites' runs both ways, the differing cases run again, the
    report; its exit status."""
    units: dict[str, list[str]] = {}
    for suite in suites:
        units[suite.title] = suite.units(runner.prepare(suite, pins[suite.repo], archives, max(1, args.jobs)))
        say(f"{suite.title} at {pins[suite.repo].commit[:12]}: {' '.join(units[suite.title])}")
    say("with the plugin, an editor of the suites' trees:")
    serving = False
    for suite in suites:
        for how in probes(suite):
            line, led = describe_probe(how, pool.submit(runner.probe, suite, how).result())
            say(f"  {suite.title}:{line[1:]}")
            serving = serving or led
    if not serving:
        say("suites: the plugin leads no command in the suites' editors: the run would prove nothing")
        return 2

    tallies = {(s.title, m): Tally() for s in suites for m in MODES}
    work_items = [
        (suite, unit, mode)
        for suite in sorted(suites, key=lambda s: s.title != "plenary.nvim")
        for unit in units[suite.title]
        for mode in MODES
    ]
    futures = {pool.submit(runner.run, s, u, m): (s, u, m) for s, u, m in work_items}
    # The logs of the runs where a case failed with the plugin.
    failing_logs: dict[tuple[str, str], list[Path]] = {}
    for future in concurrent.futures.as_completed(futures):
        suite, unit, mode = futures[future]
        outcome = future.result()
        tallies[(suite.title, mode)].add(outcome)
        failed = [n for n, ok in outcome.cases.items() if not ok]
        if mode == WRAPPED:
            failing_logs.update({(suite.title, name): [outcome.log] for name in failed})
        say(
            f"  {suite.title} {unit} {mode}: {len(outcome.cases) - len(failed)} passed, "
            f"{len(failed)} failed ({outcome.seconds:.0f} s)"
            + (f"; left running: {len(outcome.left_running)}" if outcome.left_running else "")
        )

    # The cases that differ, run again both ways, by unit.
    history: dict[tuple[str, str], dict[str, list[bool]]] = {}
    reruns: list[tuple[Suite, str, list[str]]] = []
    for suite in suites:
        stock, wrapped = tallies[(suite.title, STOCK)].cases, tallies[(suite.title, WRAPPED)].cases
        differing = sorted(
            n for n in stock.keys() | wrapped.keys() if stock.get(n, False) != wrapped.get(n, False)
        )
        by_unit: dict[str, list[str]] = {}
        for name in differing:
            history[(suite.title, name)] = {
                STOCK: [stock.get(name, False)],
                WRAPPED: [wrapped.get(name, False)],
            }
            by_unit.setdefault(suite.unit_of(name), []).append(name)
        reruns += [(suite, unit, names) for unit, names in by_unit.items()]
    if reruns:
        say(
            f"running {sum(len(n) for _, _, n in reruns)} differing cases again, {args.reruns} times each way"
        )

    def run_again(batch: list[tuple[Suite, str, list[str]]]) -> None:
        items = [(s, u, n, m) for _ in range(args.reruns) for s, u, n in batch for m in MODES]
        submitted = {
            pool.submit(runner.run, s, u, m, n if isinstance(s, Mini) else None): (s, n, m)
            for s, u, n, m in items
        }
        for future in concurrent.futures.as_completed(submitted):
            suite, names, mode = submitted[future]
            outcome = future.result()
            for name in names:
                history[(suite.title, name)][mode].append(outcome.cases.get(name, False))
                if mode == WRAPPED and not outcome.cases.get(name, False):
                    failing_logs.setdefault((suite.title, name), []).append(outcome.log)

    run_again(reruns)
    # A case stock passed every time that failed with the plugin only
    # some of the times: as many runs again, to see whether stock
    # varies too (a timing test on a loaded machine).
    doubtful: dict[tuple[Suite, str], list[str]] = {}
    for suite in suites:
        for name in [n for (t, n) in history if t == suite.title]:
            runs = history[(suite.title, name)]
            if classify(runs[STOCK], runs[WRAPPED]) == FLAKY_WITH_PLUGIN:
                doubtful.setdefault((suite, suite.unit_of(name)), []).append(name)
    if doubtful:
        say(
            f"running {sum(map(len, doubtful.values()))} cases flaky with the plugin only "
            f"{args.reruns} times more each way"
        )
        run_again([(s, u, n) for (s, u), n in doubtful.items()])

    return report(suites, tallies, history, failing_logs, say)


def probes(suite: Suite) -> list[list[str]]:
    """How the suite starts its editors: its runner with its init file
    (--noplugin), and, for mini.nvim, its child editors (--clean)."""
    path, _ = suite.init_files[-1]
    found = [["--noplugin", "-u", path]]
    if isinstance(suite, Mini):
        found.append(["--clean", "-n"])
    return found


def report(
    suites: list[Suite],
    tallies: dict[tuple[str, str], Tally],
    history: dict[tuple[str, str], dict[str, list[bool]]],
    failing_logs: dict[tuple[str, str], list[Path]],
    say: Callable[[str], None],
) -> int:
    """The table, the differing cases with their verdicts; 1 when a case
    fails with the plugin that stock passes every time."""
    say("")
    say(
        f"{'suite':<14}{'cases':>7}  {'stock pass/fail':>16}  {'with plugin':>12}  {'differ':>6}  "
        f"{'defects':>7}  {'left running':>12}  minutes"
    )
    defects = 0
    for suite in suites:
        stock, wrapped = tallies[(suite.title, STOCK)], tallies[(suite.title, WRAPPED)]
        names = stock.cases.keys() | wrapped.cases.keys()
        verdicts = {
            name: classify(runs[STOCK], runs[WRAPPED])
            for (title, name), runs in history.items()
            if title == suite.title
        }
        bad = sum(v in DEFECTS for v in verdicts.values())
        defects += bad
        say(
            f"{suite.title:<14}{len(names):>7}  {stock.counts():>16}  {wrapped.counts():>12}  "
            f"{len(verdicts):>6}  "
            f"{bad:>7}  {len(stock.left_running):>5} / {len(wrapped.left_running):<4}  "
            f"{stock.seconds / 60:.1f} / {wrapped.seconds / 60:.1f}"
        )
    for suite in suites:
        rows = sorted(
            (classify(runs[STOCK], runs[WRAPPED]), name, runs)
            for (title, name), runs in history.items()
            if title == suite.title
        )
        if rows:
            say("")
            say(f"{suite.title}: the cases that differ (P passed, F failed; first run, then the reruns)")
        for verdict, name, runs in rows:
            say(f"  {verdict:<28} stock {marks(runs[STOCK]):<6} plugin {marks(runs[WRAPPED]):<6} {name}")
            if verdict in DEFECTS:
                say(f"    {'':<26} its output with the plugin: {failing_logs[(suite.title, name)][0]}")
        for mode in MODES:
            for left in tallies[(suite.title, mode)].left_running:
                say(f"  left running ({mode}): {left}")
    say("")
    if defects:
        say(f"suites: {defects} case(s) fail with the plugin that pass stock every time")
        return 1
    say("suites: no case fails with the plugin that passes stock every time")
    return 0


def git_describe(checkout: Path) -> str:
    said = subprocess.run(
        ["git", "-C", str(checkout), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=False,
    )
    return said.stdout.strip() or "not a git checkout"


def nvim_version(nvim: str) -> str:
    said = subprocess.run([nvim, "--version"], capture_output=True, text=True, check=False)
    return (said.stdout.splitlines() or ["nvim ?"])[0]


if __name__ == "__main__":
    sys.exit(main())
