"""One index's HTTP service under a bounded concurrent load: latency and throughput.

    python -m benchmarks.service.serve_load INDEX [--url URL] [--requests 1000]
        [--concurrency 1,8,32] [--duration-cap 60] [--modes naive,collapsed,graph]
        [--budget N] [--queries FILE] [--token T] [--server-arg ARG]... [--out FILE] [--json]
        [--embedder SPEC] [--llm SPEC]

Sends a fixed number of ``POST /v1/retrieve`` requests per (mode, concurrency) cell
(:func:`benchmarks.service.loadgen.run_load`), each cell stopped early by a duration cap.
Unless ``--url`` names a running service, it starts the real server in a subprocess on a free
loopback port (:mod:`benchmarks.service.server_process`, so the load generator and the server
do not share a Python interpreter) and stops it afterwards. It prints latency p50/p95/p99,
throughput, and how much of the server's query time went to embedding queries; ``--json``
prints the report as JSON instead, ``--out`` also writes it to a file. The queries are
``--queries`` (JSONL with a ``query`` or ``question`` field, or one per line), else the
titles (else ids) of the index's documents.

This was ``graphstrata bench serve`` (benchmark tooling is not part of the package). The
MultiHop-RAG grid of ``benchmarks/results/serve.md`` is :mod:`benchmarks.service.serve`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import write_json
from benchmarks.service.loadgen import format_load_table, run_load, service_modes
from benchmarks.service.server_process import ServerHandle, server_process
from graphstrata.bindings.cli.progress import Progress

DEFAULT_MODES = ("naive", "collapsed", "graph")


def load_queries(path: str | Path) -> list[str]:
    """Queries from JSONL (``query`` or ``question`` field) or a text file (one per line).

    Raises
    ------
    SystemExit
        When the file does not exist.
    """
    p = Path(path)
    if not p.is_file():
        raise SystemExit(f"queries file {p} not found")
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
    """Default queries: the titles (else ids) of the index's first ``limit`` documents."""
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


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Start the server unless ``--url`` names one, drive the load, and return the report."""
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
        wanted = args.modes.split(",") if args.modes else list(DEFAULT_MODES)
        modes = [m for m in wanted if m in available]
        skipped = [m for m in wanted if m not in available]
        if skipped:
            print(
                f"skipping modes this index does not serve: {', '.join(skipped)}", file=sys.stderr
            )
        if not modes:
            raise SystemExit(f"none of the modes {wanted} is served; available: {available}")
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
    report: dict[str, Any] = {
        "operation": "bench-serve",
        "url": url if args.url else "loopback subprocess",
        "queries": len(queries),
        "modes": modes,
        "skipped_modes": skipped,
        "results": [r.summary() for r in results],
    }
    if server is not None:
        report["server_report"] = server.output.strip().splitlines()[-1:]
    return report


def parser() -> argparse.ArgumentParser:
    """The script's options (those of the former ``graphstrata bench serve``)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("index")
    p.add_argument("--url", help="a running service (default: start one on loopback)")
    p.add_argument("--requests", type=int, default=1000, help="requests per cell (default 1000)")
    p.add_argument(
        "--concurrency",
        type=_int_list,
        default=[8],
        help="comma-separated concurrency levels (default 8)",
    )
    p.add_argument(
        "--duration-cap",
        type=float,
        default=60.0,
        dest="duration_cap",
        help="stop sending after this many seconds per cell (default 60)",
    )
    p.add_argument(
        "--modes", help="comma-separated modes (default naive,collapsed,graph if served)"
    )
    p.add_argument("--budget", type=int, default=None, help="budget_tokens of every request")
    p.add_argument("--queries", help="JSONL (query/question field) or text file of queries")
    p.add_argument("--token", help="bearer token of the service")
    p.add_argument(
        "--server-arg",
        action="append",
        default=[],
        dest="server_args",
        help="extra argument for the started server (repeatable)",
    )
    p.add_argument("--out", help="also write the JSON report here")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--embedder", help="embedder spec of the started server")
    p.add_argument("--llm", help="LLM backend spec of the started server")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the load and print its table (or JSON); failed requests are counted on stderr."""
    args = parser().parse_args(argv)
    report = run(args)
    rows = report["results"]
    if args.out:
        write_json(Path(args.out), report)
    if args.json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
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


if __name__ == "__main__":
    raise SystemExit(main())
