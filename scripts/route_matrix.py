"""What each route by which the editor starts a command does with each of
five real questions: the one source of README.md's route matrix and of the
test that holds it true (tests/e2e/test_route_matrix.py, in the real TUI).

``python scripts/route_matrix.py --write`` writes the README's table from
ROUTES; without it, the differences are printed and the exit is 1. The test
checks the README is current, then runs every cell as the table says.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN = "<!-- routes: written by scripts/route_matrix.py from its ROUTES -->\n"
END = "<!-- /routes -->\n"


@dataclass(frozen=True)
class Question:
    key: str
    label: str


# The five questions, in the table's order.
QUESTIONS = (
    Question("getpass", "Python `getpass`"),
    Question("commit", "`git commit -S` (pinentry-curses)"),
    Question("keygen", "`ssh-keygen -y`"),
    Question("ssh", "`git fetch` over ssh"),
    Question("http", "git over HTTP (`Username for`)"),
)


@dataclass(frozen=True)
class Outcome:
    """What the user sees, as the README says it.

    asked: the question opens the prompt window, the answer typed there
    reaches the command, which succeeds. fails: no window, the command fails
    at once, printing `says`. waits: no window, the command waits on its
    standard input (as in stock: the caller's pipe, never written). hint:
    the editor is blocked, so no window can open: the command fails within
    about a second and the user is told to run it with :Bang."""

    kind: str
    says: str = ""

    def text(self) -> str:
        if self.kind == "asked":
            return "asked, answered"
        if self.kind == "fails":
            return f'fails: "{self.says}"'
        if self.kind == "waits":
            return "not asked: waits on its stdin"
        if self.kind == "hint":
            return "fails at once, told to use `:Bang`"
        raise ValueError(self.kind)


ASKED = Outcome("asked")
WAITS = Outcome("waits")
HINT = Outcome("hint")
NO_USERNAME = Outcome("fails", "could not read Username")
ALL_ASKED = {q.key: ASKED for q in QUESTIONS}


@dataclass(frozen=True)
class Route:
    """key: the test's name for it; label: the README's; start: how the test
    starts a command on it ("typed": keys in the TUI; "async": a call that
    returns at once; "sync": a call the editor waits in)."""

    key: str
    label: str
    start: str
    outcomes: dict[str, Outcome]


ROUTES = (
    Route("typed_bang", "`:!{cmd}` as typed", "typed", ALL_ASKED),
    Route("bang", "`:Bang {cmd}`", "typed", ALL_ASKED),
    Route("lua_jobstart", "Lua `vim.fn.jobstart()`", "async", ALL_ASKED),
    Route("system_wait", "`vim.system():wait()`", "sync", ALL_ASKED),
    Route("system_on_exit", "`vim.system()` with `on_exit`", "async", ALL_ASKED),
    Route("fn_system", "Lua `vim.fn.system()`", "sync", ALL_ASKED),
    Route("fn_systemlist", "Lua `vim.fn.systemlist()`", "sync", ALL_ASKED),
    Route("uv_spawn", "`vim.uv.spawn()` (raw luv)", "async", ALL_ASKED),
    Route("plenary", "plenary.job", "async", ALL_ASKED),
    Route(
        "vim_jobstart",
        "Vimscript `jobstart()` (fugitive, Vimscript plugins)",
        "async",
        {"getpass": WAITS, "commit": ASKED, "keygen": WAITS, "ssh": ASKED, "http": NO_USERNAME},
    ),
    Route(
        "vim_system",
        "Vimscript `system()` (blocks the editor: no key reaches any window)",
        "sync",
        {
            "getpass": Outcome("fails", "EOFError"),
            "commit": HINT,
            "keygen": Outcome("fails", "incorrect passphrase supplied"),
            "ssh": HINT,
            "http": NO_USERNAME,
        },
    ),
)


def table() -> str:
    """The README's table: a row per route, a column per question."""
    head = ["route", *(q.label for q in QUESTIONS)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for route in ROUTES:
        cells = [route.label, *(route.outcomes[q.key].text() for q in QUESTIONS)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def readme_with_table(text: str) -> str:
    start = text.index(BEGIN) + len(BEGIN)
    end = text.index(END, start)
    return text[:start] + table() + text[end:]


def main(argv: list[str]) -> int:
    text = README.read_text()
    wanted = readme_with_table(text)
    if "--write" in argv:
        README.write_text(wanted)
        return 0
    if wanted != text:
        print("README.md's route table is not current: python scripts/route_matrix.py --write")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
