"""``graphstrata serve`` options reach ``ServerSettings`` (the hardening limits included)."""

from __future__ import annotations

from graphstrata.bindings.cli.main import build_parser
from graphstrata.bindings.server.command import settings_from_args


def test_limits_and_timeouts_reach_the_settings():
    args = build_parser().parse_args(
        [
            "serve",
            "ix",
            "--header-timeout",
            "2.5",
            "--body-timeout",
            "7",
            "--max-connections",
            "64",
            "--max-header-bytes",
            "8192",
            "--keep-alive-timeout",
            "3",
            "--writer-lock-wait",
            "9",
            "--embed-threads",
            "1",
            "--query-cache",
            "0",
        ]
    )
    s = settings_from_args(args)
    assert (s.header_timeout_s, s.body_timeout_s, s.keep_alive_timeout_s) == (2.5, 7.0, 3.0)
    assert (s.max_connections, s.max_header_bytes, s.writer_lock_wait_s) == (64, 8192, 9.0)
    assert s.embed_threads == 1
    assert s.query_cache_size == 0


def test_unset_options_keep_the_documented_defaults():
    from graphstrata.bindings.server import ServerSettings

    s = settings_from_args(build_parser().parse_args(["serve", "ix"]))
    d = ServerSettings()
    assert (s.header_timeout_s, s.max_connections, s.writer_lock_wait_s) == (
        d.header_timeout_s,
        d.max_connections,
        d.writer_lock_wait_s,
    )
    assert s.query_cache_size == d.query_cache_size == 4096
