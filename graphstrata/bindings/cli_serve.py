"""``graphstrata serve`` and ``graphstrata bench serve``.

``serve INDEX`` runs the HTTP service (:mod:`graphstrata.bindings.server`) and prints one line
with its URL once it listens, and a report when it stops.

``bench serve INDEX`` drives the service with a bounded concurrent load: a fixed number of
``POST /v1/retrieve`` requests per (mode, concurrency) cell, stopped early by a fixed duration
cap. Unless ``--url`` names a running service, it starts the real server in a subprocess on a
free loopback port (so the load generator and the server do not share a Python interpreter)
and stops it afterwards. It prints latency p50/p95/p99, throughput, and how much of the
server's query time went to embedding queries.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from graphstrata.bindings.cli import CLIError, Progress, add_backend_args, print_report

LISTENING = "listening on "
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
DEFAULT_BENCH_MODES = ("naive", "collapsed", "graph")


# ---------------------------------------------------------------------------- serve
def _settings_from_args(args: argparse.Namespace) -> Any:
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
    ):
        value = getattr(args, name)
        if value is not None:
            setattr(settings, name, value)
    return settings


def cmd_serve(args: argparse.Namespace) -> int:
    from graphstrata.bindings.server import run_server

    if not (Path(args.index) / "manifest.json").exists():
        raise CLIError(f"no graphstrata index at {args.index}")
    settings = _settings_from_args(args)
    if settings.host not in LOOPBACK_HOSTS and settings.resolved_token() is None:
        print(
            f"graphstrata serve: warning: listening on {settings.host} without a bearer token "
            "(--token or GRAPHSTRATA_TOKEN)",
            file=sys.stderr,
        )

    def ready(url: str, app: Any) -> None:
        service = app.state.service
        print(
            f"graphstrata serve: {LISTENING}{url} (version {service.engine.version}, "
            f"modes {','.join(sorted(service.engine.modes))}, "
            f"auth {'on' if service.token else 'off'}, micro-batching "
            f"{settings.microbatch_wait_ms:g} ms / {settings.microbatch_max})",
            flush=True,
        )

    summary = run_server(args.index, settings, on_ready=ready, log_level=args.log_level)
    print_serve_summary(summary, args.json)
    return 0


def print_serve_summary(summary: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary, indent=1))
        return
    q = summary["queries"]
    ops = summary["operations"]
    mb = q["microbatch"]
    print(
        f"served {summary['requests']} requests in {summary['seconds']:.1f}s "
        f"({summary['rejected_429']} refused with 429); {q['queries']} queries, "
        f"{mb['batches']} embedding batches (mean {mb['mean_batch']:.1f}, max {mb['max_batch']}); "
        f"embed {q['embed_seconds']:.2f}s, search {q['search_seconds']:.2f}s; "
        f"operations {ops['succeeded']} ok, {ops['failed']} failed, {ops['cancelled']} cancelled; "
        f"index version {summary['version']}"
    )


# ---------------------------------------------------------------------------- load driver
@dataclass
class LoadResult:
    """One (mode, concurrency) cell of a load run."""

    mode: str
    concurrency: int
    requested: int
    sent: int = 0
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    first_error: str = ""
    wall_seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    client_cpu_seconds: float = 0.0
    capped: bool = False
    server: dict[str, float] = field(default_factory=dict)
    server_marks: dict[str, dict[str, float]] = field(default_factory=dict)
    server_pid: int | None = None
    server_cpu_seconds: float | None = None

    def percentile(self, q: float) -> float:
        import numpy as np

        return float(np.percentile(self.latencies_ms, q)) if self.latencies_ms else float("nan")

    def summary(self) -> dict[str, Any]:
        rps = self.ok / self.wall_seconds if self.wall_seconds else 0.0
        out = {
            "mode": self.mode,
            "concurrency": self.concurrency,
            "requested": self.requested,
            "sent": self.sent,
            "ok": self.ok,
            "errors": dict(self.errors),
            "capped": self.capped,
            "wall_seconds": round(self.wall_seconds, 3),
            "rps": round(rps, 2),
            "p50_ms": round(self.percentile(50), 3),
            "p95_ms": round(self.percentile(95), 3),
            "p99_ms": round(self.percentile(99), 3),
            "mean_ms": round(sum(self.latencies_ms) / len(self.latencies_ms), 3)
            if self.latencies_ms
            else float("nan"),
            "client_cpu_seconds": round(self.client_cpu_seconds, 3),
            # CPU time the server process used per successful request (None: not measured).
            # Unlike latency, it barely moves when other processes compete for the cores.
            "server_cpu_ms_per_request": round(1000 * self.server_cpu_seconds / self.ok, 3)
            if self.server_cpu_seconds is not None and self.ok
            else None,
            **{k: round(v, 4) for k, v in self.server.items()},
        }
        if self.first_error:
            out["first_error"] = self.first_error
        return out


def _server_counters(stats: dict[str, Any]) -> dict[str, float]:
    q = stats["service"]["queries"]
    return {
        "queries": float(q["queries"]),
        "embed_seconds": float(q["embed_seconds"]),
        "search_seconds": float(q["search_seconds"]),
        "batches": float(q["microbatch"]["batches"]),
        "batch_items": float(q["microbatch"]["items"]),
    }


def _server_delta(
    before: dict[str, float], after: dict[str, float], wall: float
) -> dict[str, float]:
    d = {k: after[k] - before[k] for k in before}
    work = d["embed_seconds"] + d["search_seconds"]
    return {
        "server_queries": d["queries"],
        "mean_batch": d["batch_items"] / d["batches"] if d["batches"] else 0.0,
        "embed_ms_per_query": 1000 * d["embed_seconds"] / d["queries"] if d["queries"] else 0.0,
        "search_ms_per_query": 1000 * d["search_seconds"] / d["queries"] if d["queries"] else 0.0,
        # Share of the engine's query work (embed + search) spent embedding.
        "embed_share": d["embed_seconds"] / work if work else 0.0,
        # Fraction of the run's wall time the embedder was busy (1.0 = saturated).
        "embed_busy": d["embed_seconds"] / wall if wall else 0.0,
    }


def process_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of a process (all its threads), from /proc; None elsewhere."""
    if pid is None:
        return None
    try:
        # Fields after the ")" that closes the command name: state is [0], utime [11], stime [12].
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class RawConnection:
    """A minimal keep-alive HTTP/1.1 client for the load generator.

    A general client (httpx) spends 2-3 ms of CPU per request (measured here), which on a
    small machine steals the cores the server is being measured on. This one writes
    pre-encoded requests and reads ``Content-Length`` responses, which is all the service
    sends; anything else is reported as an error, never guessed.
    """

    def __init__(self, url: str, headers: dict[str, str]):
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise CLIError(f"the load generator speaks plain http only, got {url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.base = parts.path.rstrip("/")
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.head = f"Host: {self.host}:{self.port}\r\nContent-Type: application/json\r\n{extra}"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    def request_bytes(self, path: str, body: bytes) -> bytes:
        return (
            f"POST {self.base}{path} HTTP/1.1\r\n{self.head}Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    async def send(self, request: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        try:
            self.writer.write(request)
            head = await self.reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ", 2)[1])
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            if "content-length" not in headers:
                raise ConnectionError("response without Content-Length")
            body = await self.reader.readexactly(int(headers["content-length"]))
            if headers.get("connection", "").lower() == "close":
                await self.close()
            return status, body
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()
        self.reader = self.writer = None


async def _drive(
    url: str,
    headers: dict[str, str],
    requests_bytes: Sequence[bytes],
    result: LoadResult,
    duration_cap: float,
    progress: Progress | None,
) -> None:
    next_i = 0
    deadline = time.perf_counter() + duration_cap
    label = f"{result.mode} c={result.concurrency}"

    async def worker(conn: RawConnection) -> None:
        nonlocal next_i
        while next_i < result.requested:
            if time.perf_counter() > deadline:
                result.capped = True
                return
            i = next_i
            next_i += 1
            result.sent += 1
            t0 = time.perf_counter()
            try:
                status, body = await conn.send(requests_bytes[i % len(requests_bytes)])
            except Exception as exc:  # a transport error is a failed request, not a crash
                status, body = 0, f"{type(exc).__name__}: {exc}".encode()
            elapsed = (time.perf_counter() - t0) * 1000
            if status == 200:
                result.ok += 1
                result.latencies_ms.append(elapsed)
            else:
                key = str(status) if status else "transport"
                result.errors[key] = result.errors.get(key, 0) + 1
                result.first_error = result.first_error or body[:300].decode(errors="replace")
            if progress is not None:
                progress(label, result.sent, result.requested)

    conns = [RawConnection(url, headers) for _ in range(result.concurrency)]
    try:
        # One untimed request per connection, so connection setup is not measured.
        await asyncio.gather(*(c.send(requests_bytes[0]) for c in conns))
        await _stats_mark(url, headers, result, "before")
        server_cpu0 = process_cpu_seconds(result.server_pid)
        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker(c) for c in conns))
        result.wall_seconds = time.perf_counter() - t0
        result.client_cpu_seconds = time.process_time() - cpu0
        server_cpu1 = process_cpu_seconds(result.server_pid)
        if server_cpu0 is not None and server_cpu1 is not None:
            result.server_cpu_seconds = server_cpu1 - server_cpu0
    finally:
        for c in conns:
            await c.close()


async def _stats_mark(url: str, headers: dict[str, str], result: LoadResult, when: str) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, trust_env=False) as c:
        counters = _server_counters((await c.get("/v1/stats")).raise_for_status().json())
    result.server_marks[when] = counters


async def _load_cell(
    url: str,
    payloads: Sequence[dict[str, Any]],
    mode: str,
    concurrency: int,
    requests: int,
    duration_cap: float,
    headers: dict[str, str],
    progress: Progress | None,
    server_pid: int | None,
) -> LoadResult:
    result = LoadResult(
        mode=mode, concurrency=concurrency, requested=requests, server_pid=server_pid
    )
    encoder = RawConnection(url, headers)
    requests_bytes = [
        encoder.request_bytes("/v1/retrieve", json.dumps(p).encode()) for p in payloads
    ]
    await _drive(url, headers, requests_bytes, result, duration_cap, progress)
    await _stats_mark(url, headers, result, "after")
    marks = result.server_marks
    result.server = _server_delta(marks["before"], marks["after"], result.wall_seconds)
    return result


def run_load(
    url: str,
    queries: Sequence[str],
    *,
    modes: Sequence[str],
    concurrencies: Sequence[int],
    requests: int,
    duration_cap: float,
    budget_tokens: int | None = None,
    top_k: int | None = None,
    token: str | None = None,
    progress: Progress | None = None,
    server_pid: int | None = None,
) -> list[LoadResult]:
    """Drive ``POST /v1/retrieve`` at ``url``: one cell per (mode, concurrency).

    Parameters
    ----------
    url:
        Base URL of a running service.
    queries:
        Query strings, cycled.
    modes, concurrencies:
        The grid; each cell sends ``requests`` requests with ``concurrency`` workers, or stops
        sending after ``duration_cap`` seconds.
    budget_tokens, top_k:
        Sent with every request when given.
    token:
        Bearer token, if the service requires one.
    server_pid:
        The server's process id on this machine, to measure its CPU time per request.
    """
    if not queries:
        raise CLIError("no queries to send")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    results = []
    for mode in modes:
        payloads = []
        for q in queries:
            p: dict[str, Any] = {"query": q, "mode": mode}
            if budget_tokens is not None:
                p["budget_tokens"] = budget_tokens
            if top_k is not None:
                p["top_k"] = top_k
            payloads.append(p)
        for c in concurrencies:
            results.append(
                asyncio.run(
                    _load_cell(
                        url,
                        payloads,
                        mode,
                        c,
                        requests,
                        duration_cap,
                        headers,
                        progress,
                        server_pid,
                    )
                )
            )
    return results


# ---------------------------------------------------------------------------- server process
@dataclass
class ServerHandle:
    """A server started by :func:`server_process`; ``output`` is filled when it stops."""

    url: str
    proc: subprocess.Popen
    output: str = ""


@contextlib.contextmanager
def server_process(
    index: str | Path,
    extra_args: Sequence[str] = (),
    *,
    env: dict[str, str] | None = None,
    startup_timeout: float = 120.0,
) -> Iterator[ServerHandle]:
    """Start ``graphstrata serve INDEX --port 0`` on loopback in a subprocess.

    On exit the server gets SIGTERM (graceful shutdown; it prints its report) and, if it
    lingers, SIGKILL.
    """
    cmd = [
        sys.executable,
        "-m",
        "graphstrata.bindings.server",
        str(index),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        *extra_args,
    ]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    handle = ServerHandle(url="", proc=proc)
    try:
        handle.url = _wait_listening(proc, startup_timeout)
        yield handle
    finally:
        handle.output = stop_process(proc)


def _wait_listening(proc: subprocess.Popen, timeout: float) -> str:
    import selectors

    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if not sel.select(timeout=0.5):
            if proc.poll() is not None:
                break
            continue
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip())
        if LISTENING in line:
            return line.split(LISTENING, 1)[1].split()[0]
    stop_process(proc)
    raise CLIError("the server did not start: " + " | ".join(seen[-5:]))


def stop_process(proc: subprocess.Popen, timeout: float = 30.0) -> str:
    """SIGTERM (graceful), wait, SIGKILL if needed; return what the process printed.

    SIGTERM rather than SIGINT: a process started from a non-interactive background job
    inherits an ignored SIGINT until uvicorn installs its handlers.
    """
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out or ""


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


def format_load_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table of load results (a ``setting`` column when the rows carry one)."""
    setting = any("setting" in r for r in rows)
    cols = ["mode", "conc", "ok", "errors", "p50 ms", "p95 ms", "p99 ms", "req/s", "mean batch",
            "embed ms/q", "search ms/q", "embed share", "embedder busy", "server CPU ms/req"]  # fmt: skip
    if setting:
        cols.insert(0, "setting")
    load = any("load1" in r for r in rows)
    if load:
        cols.append("load")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        errors = ", ".join(f"{k}:{v}" for k, v in r["errors"].items()) or "0"
        cells = [
            r["mode"],
            str(r["concurrency"]),
            f"{r['ok']}{' (capped)' if r['capped'] else ''}",
            errors,
            f"{r['p50_ms']:.1f}",
            f"{r['p95_ms']:.1f}",
            f"{r['p99_ms']:.1f}",
            f"{r['rps']:.1f}",
            f"{r.get('mean_batch', 0):.1f}",
            f"{r.get('embed_ms_per_query', 0):.2f}",
            f"{r.get('search_ms_per_query', 0):.2f}",
            f"{100 * r.get('embed_share', 0):.0f}%",
            f"{100 * r.get('embed_busy', 0):.0f}%",
            "n/a"
            if r.get("server_cpu_ms_per_request") is None
            else f"{r['server_cpu_ms_per_request']:.1f}",
        ]
        if setting:
            cells.insert(0, r.get("setting", ""))
        if load:
            cells.append(str(r.get("load1", "")))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


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


def service_modes(url: str, token: str | None) -> list[str]:
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as client:
        return list(client.get("/healthz").raise_for_status().json()["modes"])


def cmd_bench_serve(args: argparse.Namespace) -> int:
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
    p.add_argument("--search-threads", type=int, dest="search_threads")
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
        help="torch threads of the embedder (default: torch's, one per core)",
    )
    p.add_argument("--log-level", default="warning", dest="log_level")  # fmt: skip


def _bench_subparsers(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """The ``bench`` group's subcommands, created here unless another module made it first."""
    bench = subparsers.choices.get("bench")
    if bench is None:
        bench = subparsers.add_parser("bench", help="benchmarks against an index")
        return bench.add_subparsers(dest="bench_command", required=True)
    for action in bench._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return bench.add_subparsers(dest="bench_command", required=True)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``serve`` and ``bench serve`` to the ``graphstrata`` command line."""
    p = subparsers.add_parser("serve", help="run the HTTP service over an index")
    p.add_argument("index")
    add_serve_args(p)
    p.add_argument("--json", action="store_true", help="print the final report as JSON")
    add_backend_args(p)
    p.set_defaults(func=cmd_serve)

    b = _bench_subparsers(subparsers).add_parser(
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
