"""Hermetic: what the host does to its own process (hostsetup), and the
protocol's bytes."""

from __future__ import annotations

import io
import logging
import resource

from ttyoffer_nvim.hostsetup import install_log_redaction, raise_fd_limit
from ttyoffer_nvim.protocol import as_bytes


def test_terminal_traffic_never_reaches_the_log() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logging.root.addHandler(handler)
    host_log = logging.getLogger("pynvim.plugin.host")
    pynvim_log = logging.getLogger("pynvim")  # the level setup_logging sets
    old_level = pynvim_log.level
    pynvim_log.setLevel(logging.DEBUG)
    try:
        install_log_redaction()
        install_log_redaction()  # idempotent
        # What pynvim's debug logging writes for a key and for relayed output.
        host_log.debug(
            'calling notification handler for "%s", args: "%s"', "ttyoffer_input", [3, "hunter2\r"]
        )
        logging.getLogger("pynvim.msgpack_rpc.msgpack_stream").debug(
            "sent %s",
            [
                2,
                "nvim_exec_lua",
                ["require('ttyoffer.events').output(...)", [3, b"hunter2"]],
            ],
        )
        host_log.debug("calling request handler for %s", "ttyoffer_status")
    finally:
        logging.root.removeHandler(handler)
        pynvim_log.setLevel(old_level)
    text = stream.getvalue()
    assert "hunter2" not in text
    assert text.count("terminal traffic (redacted)") == 2
    assert "ttyoffer_status" in text  # everything else is still logged
    assert len(handler.filters) == 1


def test_lua_strings_come_back_as_the_same_bytes() -> None:
    raw = b"\xff\xfe caf\xc3\xa9 \x1b[A"
    assert as_bytes(raw.decode("utf-8", "surrogateescape")) == raw
    assert as_bytes(raw) == raw


def test_fd_limit_is_raised_within_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
        raise_fd_limit(ceiling=4096)
        new_soft, new_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        assert new_hard == hard
        assert new_soft == (4096 if hard == resource.RLIM_INFINITY else min(hard, 4096))
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
