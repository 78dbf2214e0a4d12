"""``graphstrata serve`` and ``graphstrata bench serve``.

``serve INDEX`` runs the HTTP service (:mod:`graphstrata.bindings.server`) and prints one line
with its URL once it listens, and a report when it stops.

``bench serve INDEX`` drives the service with a bounded concurrent load
(:mod:`benchmarks.service.loadgen`): a fixed number of ``POST /v1/retrieve`` requests per
(mode, concurrency) cell, stopped early by a fixed duration cap. Unless ``--url`` names a
running service, it starts the real server in a subprocess on a free loopback port
(:mod:`benchmarks.service.server_process`, so the load generator and the server do not share
a Python interpreter) and stops it afterwards. It prints latency p50/p95/p99, throughput, and
how much of the server's query time went to embedding queries.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.service.server_process import LISTENING
from graphstrata.bindings.cli.common import (
    CLIError,
    Progress,
    add_backend_args,
    add_threads_arg,
    print_report,
)

if TYPE_CHECKING:
    from benchmarks.service.server_process import ServerHandle
    from graphstrata.bindings.server import ServerSettings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_BENCH_MODES = ("naive", "collapsed", "graph")


def settings_from_args(args: argparse.Namespace) -> ServerSettings:
    """The :class:`ServerSettings` of ``graphstrata serve``'s options."""
    from graphstrata.bindings.server import ServerSettings

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
        "query_cache_size",
        "header_timeout_s",
        "body_timeout_s",
        "keep_alive_timeout_s",
        "max_connections",
        "max_header_bytes",
        "writer_lock_wait_s",
        "threads",
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
    CLIError
        When an argument is neither, or a root holds no index.
    """
    out: list[Path] = []
    for source in sources:
        path = Path(source)
        if (path / "manifest.json").exists():
            out.append(path)
        elif path.is_dir():
            found = sorted(p for p in path.iterdir() if (p / "manifest.json").exists())
            if not found:
                raise CLIError(f"no graphstrata index at {source} or in its subdirectories")
            out.extend(found)
        else:
            raise CLIError(f"no graphstrata index at {source}")
    return out


def cmd_serve(args: argparse.Namespace) -> int:
    """``graphstrata serve DIR_OR_INDEX...``: serve until SIGINT/SIGTERM, then report."""
    from graphstrata.bindings.server import run_server
    from graphstrata.bindings.server.auth import TokenTable

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
            f"version {service.engine.version}, "
            f"modes {','.join(sorted(service.engine.modes))}, "
            f"auth {'on' if app.state.tokens else 'off'}, micro-batching "
            f"{settings.microbatch_wait_ms:g} ms / {settings.microbatch_max}, "
            f"query cache {settings.query_cache_size})",
            flush=True,
        )

    target = paths[0] if len(paths) == 1 else paths
    summary = run_server(target, settings, on_ready=ready, log_level=args.log_level)
    print_serve_summary(summary, args.json)
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


# ---------------------------------------------------------------------------- bench serve
def load_queries(path: str | Path) -> list[str]:
    """Queries from JSONL (``query`` or ``question`` field) or a text file (one per line)."""
    p = Path(path)
    if not p.is_file():
        raise CLIError(f"queries file {p} not found")
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        if p.suffix in (".jsonl", ".ndjson"):
            obj = json.loads(line)
            text = obj.get("query") or obj.get("question")
            if text:
                out.append(str(text))
        else:
            out.append(line)
    return out


def queries_from_index(index: str | Path, limit: int = 500) -> list[str]:
    """Default bench queries: the titles (else ids) of the index's documents."""
    from graphstrata.engine.store import Store

    docs = Store.open(index).load(verify=False).docs
    titles = docs.column("title").to_pylist()
    ids = docs.column("doc_id").to_pylist()
    return [t or d for t, d in zip(titles, ids, strict=True)][:limit]


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from exc
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError("concurrency values must be >= 1")
    return values


def cmd_bench_serve(args: argparse.Namespace) -> int:
    """``graphstrata bench serve INDEX``: latency and throughput under a bounded load."""
    from benchmarks.service.loadgen import format_load_table, run_load, service_modes
    from benchmarks.service.server_process import server_process

    queries = load_queries(args.queries) if args.queries else queries_from_index(args.index)
    token = args.token or os.environ.get("GRAPHSTRATA_TOKEN") or None
    server: ServerHandle | None = None
    with contextlib.ExitStack() as stack:
        if args.url:
            url = args.url.rstrip("/")
        else:
            extra = [*args.server_args]
            for flag in ("embedder", "llm"):
                if getattr(args, flag):
                    extra += [f"--{flag}", getattr(args, flag)]
            server = stack.enter_context(server_process(args.index, extra))
            url = server.url
        available = service_modes(url, token)
        wanted = args.modes.split(",") if args.modes else list(DEFAULT_BENCH_MODES)
        modes = [m for m in wanted if m in available]
        skipped = [m for m in wanted if m not in available]
        if skipped:
            print(
                f"skipping modes this index does not serve: {', '.join(skipped)}", file=sys.stderr
            )
        if not modes:
            raise CLIError(f"none of the modes {wanted} is served; available: {available}")
        progress = Progress(not args.json)
        try:
            results = run_load(
                url,
                queries,
                modes=modes,
                concurrencies=args.concurrency,
                requests=args.requests,
                duration_cap=args.duration_cap,
                budget_tokens=args.budget,
                token=token,
                progress=progress,
                server_pid=server.proc.pid if server is not None else None,
            )
        finally:
            progress.close()
    rows = [r.summary() for r in results]
    report: dict[str, Any] = {
        "operation": "bench-serve",
        "url": url if args.url else "loopback subprocess",
        "queries": len(queries),
        "modes": modes,
        "skipped_modes": skipped,
        "results": rows,
    }
    if server is not None:
        report["server_report"] = server.output.strip().splitlines()[-1:]
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    if args.json:
        print_report(report, True)
    else:
        print(format_load_table(rows))
        for line in report.get("server_report", []):
            print(f"server: {line}")
    errors = [r for r in rows if r["errors"]]
    if errors:
        print(
            f"{sum(sum(r['errors'].values()) for r in errors)} requests failed; "
            f"first error: {errors[0].get('first_error', '')}",
            file=sys.stderr,
        )
    return 0


# ---------------------------------------------------------------------------- registration
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
        help="searches run at once (default: the thread budget's, min(8, cores + 2))",
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
        help="intra-op threads of the embedder (default: the thread budget's)",
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
    ):
        p.add_argument(flag, type=kind, dest=dest, help=what)
    p.add_argument("--log-level", default="warning", dest="log_level")  # fmt: skip


def register(sub: Any) -> None:
    """Add ``serve`` and the ``bench`` group with ``bench serve`` to the command line.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    p = sub.add_parser("serve", help="run the HTTP service over one or several indexes")
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

    group = sub.add_parser("bench", help="benchmarks against an index")
    bench = group.add_subparsers(dest="bench_command", required=True)
    b = bench.add_parser(
        "serve", help="latency and throughput of the HTTP service under a bounded load"
    )
    b.add_argument("index")
    b.add_argument("--url", help="a running service (default: start one on loopback)")
    b.add_argument("--requests", type=int, default=1000, help="requests per cell (default 1000)")
    b.add_argument(
        "--concurrency",
        type=_int_list,
        default=[8],
        help="comma-separated concurrency levels (default 8)",
    )
    b.add_argument(
        "--duration-cap",
        type=float,
        default=60.0,
        dest="duration_cap",
        help="stop sending after this many seconds per cell (default 60)",
    )
    b.add_argument(
        "--modes", help="comma-separated modes (default naive,collapsed,graph if served)"
    )
    b.add_argument("--budget", type=int, default=None, help="budget_tokens of every request")
    b.add_argument("--queries", help="JSONL (query/question field) or text file of queries")
    b.add_argument("--token", help="bearer token of the service")
    b.add_argument(
        "--server-arg",
        action="append",
        default=[],
        dest="server_args",
        help="extra argument for the started server (repeatable)",
    )
    b.add_argument("--out", help="also write the JSON report here")
    b.add_argument("--json", action="store_true")  # fmt: skip
    add_backend_args(b)
    b.set_defaults(func=cmd_bench_serve)
