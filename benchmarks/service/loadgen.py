"""A load generator for the HTTP service: bounded concurrent ``POST /v1/retrieve`` traffic.

:func:`run_load` drives a fixed number of requests per (mode, concurrency) cell over
keep-alive connections of a minimal raw-socket HTTP/1.1 client (:class:`RawConnection`), stops a
cell early after a duration cap, and reads the server's counters (``GET /v1/stats``) before and
after each cell, so a result says how much of the server's query time went to embedding.
:func:`format_load_table` prints results as Markdown. Used by :mod:`benchmarks.service.serve_load`
and :mod:`benchmarks.service.serve`; it needs neither FastAPI nor the index.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

#: ``progress(stage, done, total)``, e.g. the CLI's progress bars.
ProgressFn = Callable[[str, int, int], None]


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
        """The ``q``-th percentile of the successful requests' latency (ms; NaN without any)."""
        import numpy as np

        return float(np.percentile(self.latencies_ms, q)) if self.latencies_ms else float("nan")

    def summary(self) -> dict[str, Any]:
        """The cell as one JSON-ready row (latency percentiles, req/s, server counters)."""
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
        # Servers from before the query-vector cache have no such entry: no lookups.
        "cache_hits": float(q.get("query_cache", {}).get("hits", 0)),
        "cache_misses": float(q.get("query_cache", {}).get("misses", 0)),
    }


def _server_delta(
    before: dict[str, float], after: dict[str, float], wall: float
) -> dict[str, float]:
    d = {k: after[k] - before[k] for k in before}
    work = d["embed_seconds"] + d["search_seconds"]
    lookups = d["cache_hits"] + d["cache_misses"]
    return {
        "server_queries": d["queries"],
        "mean_batch": d["batch_items"] / d["batches"] if d["batches"] else 0.0,
        "embed_ms_per_query": 1000 * d["embed_seconds"] / d["queries"] if d["queries"] else 0.0,
        "search_ms_per_query": 1000 * d["search_seconds"] / d["queries"] if d["queries"] else 0.0,
        # Share of the engine's query work (embed + search) spent embedding.
        "embed_share": d["embed_seconds"] / work if work else 0.0,
        # Fraction of the run's wall time the embedder was busy (1.0 = saturated).
        "embed_busy": d["embed_seconds"] / wall if wall else 0.0,
        # Share of the queries answered from the query-vector cache (not embedded).
        "cache_hit_rate": d["cache_hits"] / lookups if lookups else 0.0,
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
            raise ValueError(f"the load generator speaks plain http only, got {url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.base = parts.path.rstrip("/")
        extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.head = f"Host: {self.host}:{self.port}\r\nContent-Type: application/json\r\n{extra}"
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    def request_bytes(self, path: str, body: bytes, method: str = "POST") -> bytes:
        """A whole ``METHOD path`` request with ``body``, encoded once and sent many times."""
        return (
            f"{method} {self.base}{path} HTTP/1.1\r\n{self.head}Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    async def send(self, request: bytes) -> tuple[int, bytes]:
        """Send a request from :meth:`request_bytes`; return the status and the body.

        Raises
        ------
        ConnectionError
            For a response without ``Content-Length`` (the connection is then closed).
        """
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
        """Close the connection (the next :meth:`send` opens a new one)."""
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
    progress: ProgressFn | None,
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
    progress: ProgressFn | None,
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
    progress: ProgressFn | None = None,
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
    progress:
        ``progress(label, sent, requested)`` per request.
    server_pid:
        The server's process id on this machine, to measure its CPU time per request.

    Returns
    -------
    list of LoadResult
        One per cell, modes outer, concurrencies inner.

    Raises
    ------
    ValueError
        Without queries, or for a URL that is not plain ``http``.
    """
    if not queries:
        raise ValueError("no queries to send")
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


def format_load_table(rows: Sequence[dict[str, Any]]) -> str:
    """A Markdown table of load results (a ``setting`` column when the rows carry one)."""
    setting = any("setting" in r for r in rows)
    cols = ["mode", "conc", "ok", "errors", "p50 ms", "p95 ms", "p99 ms", "req/s", "mean batch",
            "embed ms/q", "search ms/q", "embed share", "embedder busy", "cache hits",
            "server CPU ms/req"]  # fmt: skip
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
            f"{100 * r.get('cache_hit_rate', 0):.0f}%",
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


def service_modes(url: str, token: str | None) -> list[str]:
    """The search modes a running service serves (``GET /healthz``)."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=url, headers=headers, timeout=30, trust_env=False) as client:
        return list(client.get("/healthz").raise_for_status().json()["modes"])
