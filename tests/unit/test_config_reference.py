"""The configuration is described once, in lua/ttyoffer/config.lua: the
help's entries and the setup() examples of the help and the README are
written from it by scripts/config_reference.py, and must be current."""

from __future__ import annotations

from typing import Any

import config_reference
from test_nvim_docs_health import OPTION_PATHS


def test_help_and_readme_are_written_from_config_lua() -> None:
    stale = [
        str(path.relative_to(config_reference.ROOT))
        for path, text in config_reference.expected().items()
        if path.read_text() != text
    ]
    assert not stale, f"{stale}: run python scripts/config_reference.py --write"


def test_every_option_is_read_from_the_defaults(lua: Any) -> None:
    def paths(options: list[config_reference.Option]) -> list[str]:
        return [p for o in options for p in [o.path, *paths(o.children)]]

    documented = paths(config_reference.parse(config_reference.CONFIG_LUA.read_text()))
    actual = lua(OPTION_PATHS)
    assert sorted(documented) == sorted(actual)


def test_help_lines_fit_78_columns() -> None:
    help_text = config_reference.HELP.read_text(encoding="utf-8")
    long = [(n, line) for n, line in enumerate(help_text.splitlines(), 1) if len(line) > 78]
    assert not long, long
