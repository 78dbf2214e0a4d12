"""``graphstrata serve`` and ``graphstrata bench serve``.

``serve INDEX`` runs the HTTP service: its arguments and its command are the server's own
(:mod:`graphstrata.bindings.server.command`).

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

from graphstrata.bindings.cli.common import CLIError, Progress, print_report
from graphstrata.bindings.options import add_backend_args
from graphstrata.bindings.server.command import add_arguments

if TYPE_CHECKING:
    from benchmarks.service.server_process import ServerHandle

DEFAULT_BENCH_MODES = ("naive", "collapsed", "graph")


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
    from graphstrata.bindings.api import Index

    return [t or d for d, t in Index.read_version(index).documents()][:limit]


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
def register(sub: Any) -> None:
    """Add ``serve`` and the ``bench`` group with ``bench serve`` to the command line.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action of the main parser.
    """
    add_arguments(sub.add_parser("serve", help="run the HTTP service over one or several indexes"))

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
