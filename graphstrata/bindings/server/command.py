"""``graphstrata serve`` and ``python -m graphstrata.bindings.server``: the service's own
command line.

``serve INDEX...`` runs the HTTP service and prints one line with its URL once it listens
(``graphstrata serve: listening on URL (...)``: tools wait for :data:`LISTENING`), and a
report when it stops. The ``graphstrata`` CLI adds this command to its parser
(:func:`add_arguments`); the server never imports the CLI. Everything heavy is imported when
the command runs, so building a parser costs nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphstrata.bindings.extras import MissingExtraError, require
from graphstrata.bindings.options import add_backend_args, add_threads_arg

if TYPE_CHECKING:
    from graphstrata.bindings.server.settings import ServerSettings

#: What the line printed once the service listens says before its URL.
LISTENING = "listening on "
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def settings_from_args(args: argparse.Namespace) -> ServerSettings:
    """The :class:`ServerSettings` of ``graphstrata serve``'s options."""
    from graphstrata.bindings.server.settings import ServerSettings

    settings = ServerSettings(
        host=args.host,
        port=args.port,
        token=args.token,
        embedder=args.embedder,
        llm=args.llm,
        use_cache=not args.no_cache,
    )
    for name in (
        "max_concurrency",
        "max_body_bytes",
        "max_query_chars",
        "max_pending_operations",
        "search_threads",
        "microbatch_wait_ms",
        "microbatch_max",
        "embed_threads",
        "threads",
        "query_cache_size",
        "header_timeout_s",
        "body_timeout_s",
        "keep_alive_timeout_s",
        "max_connections",
        "max_header_bytes",
        "writer_lock_wait_s",
        "request_timeout_s",
        "shutdown_grace_s",
        "answer_threads",
        "max_body_memory_bytes",
        "refresh_interval_s",
    ):
        value = getattr(args, name)
        if value is not None:
            setattr(settings, name, value)
    return settings


def index_paths(sources: list[str]) -> list[Path]:
    """The indexes named by ``graphstrata serve`` arguments.

    An argument that is an index (it has a ``manifest.json``) is served; a directory that is
    not is a root: every subdirectory of it that is an index is served, in name order.

    Raises
    ------
    ConfigError
        When an argument is neither, or a root holds no index.
    """
    from graphstrata.bindings.api import ConfigError

    out: list[Path] = []
    for source in sources:
        path = Path(source)
        if (path / "manifest.json").exists():
            out.append(path)
        elif path.is_dir():
            found = sorted(p for p in path.iterdir() if (p / "manifest.json").exists())
            if not found:
                raise ConfigError(f"no graphstrata index at {source} or in its subdirectories")
            out.extend(found)
        else:
            raise ConfigError(f"no graphstrata index at {source}")
    return out


def cmd_serve(args: argparse.Namespace) -> int:
    """``graphstrata serve DIR_OR_INDEX...``: serve until SIGINT/SIGTERM, then report."""
    for module in ("fastapi", "uvicorn"):
        require(module, "server", "graphstrata serve")
    from graphstrata.bindings.server.auth import TokenTable
    from graphstrata.bindings.server.run import busy_pool_threads, run_server

    paths = index_paths(args.index)
    settings = settings_from_args(args)
    if args.tokens:
        settings.tokens = TokenTable.read(args.tokens)
    if settings.host not in LOOPBACK_HOSTS and not (settings.resolved_token() or settings.tokens):
        print(
            f"graphstrata serve: warning: listening on {settings.host} without a bearer token "
            "(--token or GRAPHSTRATA_TOKEN)",
            file=sys.stderr,
        )

    def ready(url: str, app: Any) -> None:
        service = app.state.service
        others = list(app.state.services)[1:]
        served = f", also {','.join(others)}" if others else ""
        print(
            f"graphstrata serve: {LISTENING}{url} (index {service.name}{served}, "
            f"version {service.index.version}, "
            f"modes {','.join(sorted(service.index.modes))}, "
            f"auth {'on' if app.state.tokens else 'off'}, micro-batching "
            f"{settings.microbatch_wait_ms:g} ms / {settings.microbatch_max}, "
            f"query cache {settings.query_cache_size}, "
            f"MCP {'at /mcp' if app.state.mcp else 'off: no mcp package'})",
            flush=True,
        )

    target = paths[0] if len(paths) == 1 else paths
    summary = run_server(target, settings, on_ready=ready, log_level=args.log_level)
    print_serve_summary(summary, args.json)
    busy = busy_pool_threads(wait_s=1.0)
    if busy:
        # A search or an upstream call still running past the grace period would hold the
        # interpreter's exit (it joins pool threads) until it ends. The writer has stopped
        # and the report is out: nothing is lost by not waiting for a read.
        print(
            f"graphstrata serve: stopped with {len(busy)} request thread(s) still busy",
            file=sys.stderr,
            flush=True,
        )
        sys.stdout.flush()
        os._exit(0)
    return 0


def print_serve_summary(summary: dict[str, Any], as_json: bool) -> None:
    """Print the service's shutdown report (one line, or JSON)."""
    if as_json:
        print(json.dumps(summary, indent=1))
        return
    q = summary["queries"]
    ops = summary["operations"]
    mb = q["microbatch"]
    cache = q.get("query_cache", {"hits": 0, "misses": 0})
    print(
        f"served {summary['requests']} requests in {summary['seconds']:.1f}s "
        f"({summary['rejected_429']} refused with 429); {q['queries']} queries, "
        f"{mb['batches']} embedding batches (mean {mb['mean_batch']:.1f}, max {mb['max_batch']}); "
        f"embed {q['embed_seconds']:.2f}s, search {q['search_seconds']:.2f}s; "
        f"query cache {cache['hits']} hits, {cache['misses']} misses; "
        f"operations {ops['succeeded']} ok, {ops['failed']} failed, {ops['cancelled']} cancelled; "
        f"index version {summary['version']}"
    )


def add_serve_args(p: argparse.ArgumentParser) -> None:
    """Add the service's listening, limit and tuning options."""
    p.add_argument("--host", default="127.0.0.1", help="bind address (default loopback)")
    p.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p.add_argument(
        "--token", default=None, help="require this bearer token (env GRAPHSTRATA_TOKEN)"
    )
    p.add_argument(
        "--max-concurrency",
        type=int,
        dest="max_concurrency",
        help="retrievals in flight before 429 (default 64)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=int,
        dest="max_body_bytes",
        help="largest request body (default 8 MiB)",
    )
    p.add_argument(
        "--max-query-chars", type=int, dest="max_query_chars", help="longest query (default 4096)"
    )
    p.add_argument(
        "--max-pending-operations",
        type=int,
        dest="max_pending_operations",
        help="queued document operations before 429 (default 64)",
    )
    p.add_argument(
        "--search-threads",
        type=int,
        dest="search_threads",
        help="searches run at once (default: the thread budget's, min(8, max(1, cores - 1)))",
    )
    add_threads_arg(p)
    p.add_argument(
        "--microbatch-wait-ms",
        type=float,
        dest="microbatch_wait_ms",
        help="query-embedding batch window (default 2 ms)",
    )
    p.add_argument(
        "--microbatch-max",
        type=int,
        dest="microbatch_max",
        help="queries per embedding batch (default 64)",
    )
    p.add_argument(
        "--embed-threads",
        type=int,
        dest="embed_threads",
        help="intra-op threads of the embedder (default: its own, one per core)",
    )
    p.add_argument(
        "--query-cache",
        type=int,
        dest="query_cache_size",
        help="query embeddings kept in the LRU cache (default 4096; 0 = off)",
    )
    for flag, dest, kind, what in (
        ("--header-timeout", "header_timeout_s", float, "seconds to receive a request head (10)"),
        ("--body-timeout", "body_timeout_s", float, "seconds to receive a request body (60)"),
        ("--keep-alive-timeout", "keep_alive_timeout_s", float, "idle keep-alive seconds (30)"),
        ("--max-connections", "max_connections", int, "open connections at most (1024)"),
        ("--max-header-bytes", "max_header_bytes", int, "bytes of a request head (16384)"),
        ("--writer-lock-wait", "writer_lock_wait_s", float, "seconds a write waits (120)"),
        ("--request-timeout", "request_timeout_s", float, "seconds a request may take (120)"),
        ("--shutdown-grace", "shutdown_grace_s", float, "seconds to drain on SIGTERM (30)"),
        ("--answer-threads", "answer_threads", int, "threads for answers/upstream LLM (16)"),
        ("--max-body-memory", "max_body_memory_bytes", int, "body bytes held at once (64 MiB)"),
        (
            "--refresh-interval",
            "refresh_interval_s",
            float,
            "seconds between looks for versions other processes committed (1; 0 = never)",
        ),
    ):
        p.add_argument(flag, type=kind, dest=dest, help=what)
    p.add_argument("--log-level", default="warning", dest="log_level")  # fmt: skip


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the arguments of ``serve`` (indexes, listening, limits, tokens, backends).

    Parameters
    ----------
    p:
        The ``serve`` subcommand's parser, or the server's own.
    """
    p.add_argument(
        "index",
        nargs="+",
        help="an index, or a directory whose subdirectories are indexes (each served under "
        "its name at /v1/indexes/NAME/...; the first also at /v1/...)",
    )
    add_serve_args(p)
    p.add_argument(
        "--tokens",
        default=None,
        help='JSON file of scoped tokens: {"TOKEN": {"indexes": ["a"], "rights": ["read"]}}',
    )
    p.add_argument("--json", action="store_true", help="print the final report as JSON")
    add_backend_args(p)
    p.set_defaults(func=cmd_serve)


def main(argv: list[str] | None = None) -> int:
    """``python -m graphstrata.bindings.server INDEX... [options]``: as ``graphstrata serve``.

    Returns
    -------
    int
        The exit status: 0, 1 with a one-line cause on stderr (``GRAPHSTRATA_DEBUG=1``
        raises instead), 130 when interrupted.
    """
    parser = argparse.ArgumentParser(
        prog="python -m graphstrata.bindings.server",
        description="Serve graphstrata indexes over HTTP (as `graphstrata serve`)",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return cmd_serve(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("GRAPHSTRATA_DEBUG") == "1":
            raise
        if isinstance(exc, MissingExtraError):
            print(exc, file=sys.stderr)
            return 1
        notes = [str(n) for n in getattr(exc, "__notes__", [])]
        message = " ".join("; ".join([str(exc), *notes]).split()) or type(exc).__name__
        print(f"graphstrata serve: error: {type(exc).__name__}: {message}", file=sys.stderr)
        return 1
