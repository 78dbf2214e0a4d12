"""The HTTP service: retrieval, answers, document updates, stats, health and metrics.

``create_app(index_path, settings=ServerSettings())`` returns a FastAPI app over one open index;
``run_server`` serves it with uvicorn (``graphstrata serve INDEX``, or
``python -m graphstrata.bindings.server INDEX``).

How it stays fast and safe under load:

* Reads never block the event loop: retrievals run in a thread pool, and the query embeddings
  of concurrent requests are computed in one embedder call (:mod:`microbatch`), because the
  embedder dominates the cost of a query on CPU.
* Reads never wait for writes: document inserts and deletes are queued to one background
  writer thread and answered ``202`` with an operation id. The engine swaps its immutable state
  after each commit, so a query sees either the previous or the new version, never a mix.
* Bounded work: at most ``max_concurrency`` retrievals in flight; one more is answered ``429``
  with ``Retry-After`` at once instead of queueing without bound. The writer queue is bounded
  the same way. Request bodies (8 MiB) and query strings (4,096 characters) are limited.
* Errors are JSON ``{"error": {"code": ..., "message": ...}}`` with a stable ``code``:
  ``bad_request``, ``unauthorized``, ``not_found``, ``method_not_allowed``,
  ``payload_too_large``, ``overloaded``, ``mode_unavailable``, ``internal``.
* Nothing in a request names a file: documents come only from the request body, and ids in
  paths are only looked up in tables.

This module deliberately does not use ``from __future__ import annotations``: the request
models are built per app (their limits come from the settings) and FastAPI must resolve the
endpoint annotations to those local classes.
"""

import asyncio
import contextlib
import hmac
import json
import logging
import os
import queue
import signal
import socket
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pyarrow.compute as pc
from fastapi import APIRouter, Depends, FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from graphstrata.bindings.api import Index
from graphstrata.bindings.microbatch import MicroBatcher
from graphstrata.engine.documents import Document, DocumentError, as_documents, validate_batch
from graphstrata.engine.index import QueryResult
from graphstrata.engine.types import NodeKind

log = logging.getLogger("graphstrata.server")

TOKEN_ENV = "GRAPHSTRATA_TOKEN"
NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/x-jsonlines")
#: Keyword names of ``Engine.query_batch`` that a mode parameter may not shadow.
RESERVED_PARAMS = frozenset({"text", "texts", "mode", "budget_tokens", "top_k", "vectors"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


@dataclass
class ServerSettings:
    """Service limits and tuning. Every limit answers with a JSON error, never a hang.

    Attributes
    ----------
    host, port:
        Where ``run_server`` listens (default loopback 127.0.0.1:8000; port 0 picks a free one).
    token:
        Bearer token required on every ``/v1`` route and ``/metrics`` (``/healthz`` stays open
        for load balancers). ``None`` reads ``GRAPHSTRATA_TOKEN``; empty string disables it.
    embedder, llm, use_cache:
        Backend specs, as for ``Index.open`` (default: those recorded in the index).
    max_concurrency:
        Retrieval/answer requests in flight at once; the next one gets 429 + Retry-After.
    max_body_bytes:
        Largest request body (default 8 MiB); larger ones get 413.
    max_query_chars:
        Longest query string (default 4,096 characters); longer ones get 422.
    max_batch_queries:
        Queries in one ``/v1/retrieve/batch`` request (default 256).
    max_top_k, max_budget_tokens:
        Upper bounds of the per-request ``top_k`` and ``budget_tokens``.
    max_pending_operations:
        Document operations queued or running; the next one gets 429.
    keep_operations:
        Finished operations remembered for ``GET /v1/operations/{id}``.
    search_threads:
        Threads that run searches (and whole-query batches).
    microbatch_wait_ms, microbatch_max:
        Wait window and size cap of the query-embedding micro-batcher (2 ms, 64). A wait of 0
        with a cap of 1 turns micro-batching off.
    embed_threads:
        torch intra-op threads for the embedder (process-wide), or ``None`` to keep torch's
        default (one per core). Spinning intra-op threads collapse when the cores are shared
        (with search threads, or other processes): see ``benchmarks/results/serve.md``.
    retry_after_s:
        The ``Retry-After`` value of a 429.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    embedder: str | None = None
    llm: str | None = None
    use_cache: bool = True
    max_concurrency: int = 64
    max_body_bytes: int = 8 * 1024 * 1024
    max_query_chars: int = 4096
    max_batch_queries: int = 256
    max_top_k: int = 1000
    max_budget_tokens: int = 1_000_000
    max_pending_operations: int = 64
    keep_operations: int = 10_000
    search_threads: int = field(default_factory=lambda: min(8, (os.cpu_count() or 1) + 2))
    microbatch_wait_ms: float = 2.0
    microbatch_max: int = 64
    embed_threads: int | None = None
    retry_after_s: int = 1

    def resolved_token(self) -> str | None:
        token = self.token if self.token is not None else os.environ.get(TOKEN_ENV)
        return token or None


# ---------------------------------------------------------------------------- errors
class ApiError(Exception):
    """An error answered as ``{"error": {"code", "message", ...}}`` with an HTTP status."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        **details: Any,
    ):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.details = details


STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "bad_request",
    422: "bad_request",
    429: "overloaded",
}


def error_body(code: str, message: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, **details}}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **details: Any
) -> JSONResponse:
    return JSONResponse(error_body(code, message, **details), status_code=status, headers=headers)


def _validation_message(errors: Sequence[Any]) -> list[str]:
    out = []
    for err in errors[:10]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        out.append(f"{loc or 'body'}: {err.get('msg', 'invalid')}")
    return out


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as JSON with a stable code."""

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers, **exc.details)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = _validation_message(exc.errors())
        return error_response(422, "bad_request", "; ".join(problems), problems=problems)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = STATUS_CODES.get(
            exc.status_code, "bad_request" if exc.status_code < 500 else "internal"
        )
        return error_response(exc.status_code, code, str(exc.detail), dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(500, "internal", f"internal error: {type(exc).__name__}")


# ---------------------------------------------------------------------------- ASGI middleware
class BodyLimitMiddleware:
    """Refuse bodies over ``max_bytes`` with 413, whether or not Content-Length is sent.

    The body is read (up to the limit) before the app sees the request, so a chunked upload
    cannot slip past the limit and the app never holds more than ``max_bytes``.
    """

    def __init__(self, app: Any, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared is not None:
            if not declared.isdigit():
                await _send_error(send, 400, "bad_request", "invalid Content-Length header")
                return
            if int(declared) > self.max_bytes:
                await self._too_large(send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._too_large(send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, send: Callable) -> None:
        await _send_error(
            send,
            413,
            "payload_too_large",
            f"request body is over the limit of {self.max_bytes} bytes",
        )


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1").strip()
    return None


async def _send_error(send: Callable, status: int, code: str, message: str) -> None:
    payload = json.dumps(error_body(code, message)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class MetricsMiddleware:
    """Count requests by endpoint template and status, and time them."""

    def __init__(self, app: Any, metrics: "ServiceMetrics"):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: dict) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            self.metrics.requests.labels(endpoint, scope.get("method", ""), str(status)).inc()
            self.metrics.request_seconds.labels(endpoint).observe(time.perf_counter() - start)


# ---------------------------------------------------------------------------- metrics
class ServiceMetrics:
    """Prometheus metrics of one app, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "graphstrata_requests",
            "HTTP requests by endpoint template, method and status",
            ["endpoint", "method", "status"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "graphstrata_request_seconds",
            "HTTP request latency by endpoint template",
            ["endpoint"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.query_seconds = Histogram(
            "graphstrata_query_seconds",
            "Retrieval latency per search mode (queueing, embedding and search)",
            ["mode"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.embed_batch_size = Histogram(
            "graphstrata_embed_batch_size",
            "Queries per query-embedding call",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            registry=r,
        )
        self.embed_seconds = Counter(
            "graphstrata_query_embed_seconds",
            "Seconds spent embedding queries",
            registry=r,
        )
        self.search_seconds = Counter(
            "graphstrata_query_search_seconds",
            "Seconds spent searching (after embedding)",
            ["mode"],
            registry=r,
        )
        self.rejected = Counter(
            "graphstrata_rejected",
            "Requests refused because the service was saturated",
            ["what"],
            registry=r,
        )
        self.in_flight = Gauge(
            "graphstrata_in_flight", "Retrieval/answer requests in flight", registry=r
        )
        self.pending_operations = Gauge(
            "graphstrata_pending_operations", "Document operations queued or running", registry=r
        )
        self.index_version = Gauge(
            "graphstrata_index_version", "Committed index version being served", registry=r
        )
        self.nodes = Gauge(
            "graphstrata_nodes", "Live nodes per kind in the served version", ["kind"], registry=r
        )
        self.documents = Gauge(
            "graphstrata_documents", "Documents in the served version", registry=r
        )
        self._counted_version = -1

    def observe_index(self, index: Index) -> None:
        """Refresh the index gauges (node counts are recomputed once per version)."""
        snapshot = index.engine.state.snapshot
        self.index_version.set(snapshot.version)
        if snapshot.version == self._counted_version:
            return
        kinds, counts = np.unique(snapshot.nodes.kind, return_counts=True)
        present = {NodeKind(int(k)).letter: int(c) for k, c in zip(kinds, counts, strict=True)}
        for kind in NodeKind:
            self.nodes.labels(kind.letter).set(present.get(kind.letter, 0))
        self.documents.set(snapshot.docs.num_rows)
        self._counted_version = snapshot.version


# ---------------------------------------------------------------------------- concurrency
class Slots:
    """A non-blocking semaphore: saturated means 429 now, not an unbounded queue."""

    def __init__(self, limit: int, retry_after_s: int, metrics: ServiceMetrics):
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.metrics = metrics
        self.in_use = 0

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        # All callers run on the event loop thread, so a plain counter is race free.
        if self.in_use >= self.limit:
            self.metrics.rejected.labels("query").inc()
            raise ApiError(
                429,
                "overloaded",
                f"{self.limit} requests are in flight; retry after {self.retry_after_s} s",
                headers={"Retry-After": str(self.retry_after_s)},
            )
        self.in_use += 1
        self.metrics.in_flight.set(self.in_use)
        try:
            yield
        finally:
            self.in_use -= 1
            self.metrics.in_flight.set(self.in_use)


class QueryRunner:
    """Runs retrievals: query embeddings micro-batched across concurrent requests.

    One micro-batcher embeds the queries of all concurrent requests (any mode, any budget) in
    one ``embedder.embed`` call on a dedicated thread; each request then searches with its own
    vector (``Engine.query_vectors``) in the search pool, so slow searches of one mode never
    hold up the embedding of the others.
    """

    def __init__(self, index: Index, settings: ServerSettings, metrics: ServiceMetrics):
        self.engine = index.engine
        self.metrics = metrics
        self.search_pool = ThreadPoolExecutor(settings.search_threads, "gs-search")
        # One embedding call at a time: the model already spreads one call over every core.
        self.embed_pool = ThreadPoolExecutor(1, "gs-embed")
        self.batcher: MicroBatcher = MicroBatcher(
            self._embed_batch,
            executor=self.embed_pool,
            wait_s=settings.microbatch_wait_ms / 1000.0,
            max_batch=settings.microbatch_max,
            max_inflight=1,
            on_batch=self._on_batch,
        )
        self.totals = {"queries": 0, "embed_seconds": 0.0, "search_seconds": 0.0}
        self._lock = threading.Lock()

    async def retrieve(
        self, text: str, mode: str, budget: int | None, top_k: int | None, params: dict[str, Any]
    ) -> QueryResult:
        start = time.perf_counter()
        vector, embed_seconds = await self.batcher.submit(text)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(
            self.search_pool,
            self._search_one,
            text,
            vector,
            embed_seconds,
            (mode, budget, top_k, params),
        )
        self.metrics.query_seconds.labels(mode).observe(time.perf_counter() - start)
        return result

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run blocking engine work (batch retrieval, answers) in the search pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.search_pool, lambda: fn(*args, **kwargs))

    def account(self, results: Sequence[QueryResult]) -> None:
        with self._lock:
            for r in results:
                self.totals["queries"] += 1
                self.totals["embed_seconds"] += float(r.report.get("embed_seconds", 0.0))
                self.totals["search_seconds"] += float(r.report.get("search_seconds", 0.0))
                self.metrics.search_seconds.labels(r.report.get("mode", "")).inc(
                    float(r.report.get("search_seconds", 0.0))
                )

    # ------------------------------------------------------------------ batch functions
    def _embed_batch(self, key: Hashable, texts: list[str]) -> list[tuple[np.ndarray, float]]:
        start = time.perf_counter()
        vectors = np.asarray(self.engine.embedder.embed(texts), dtype=np.float32)
        share = (time.perf_counter() - start) / max(len(texts), 1)
        self.metrics.embed_seconds.inc(share * len(texts))
        return [(vectors[i], share) for i in range(len(texts))]

    def _search_one(
        self, text: str, vector: np.ndarray, embed_seconds: float, spec: tuple
    ) -> QueryResult:
        mode, budget, top_k, params = spec
        (result,) = self.engine.query_vectors(
            [text], vector[None, :], mode, budget, top_k, embed_seconds=embed_seconds, **params
        )
        self.account([result])
        return result

    def _on_batch(self, size: int, seconds: float) -> None:
        self.metrics.embed_batch_size.observe(size)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            totals = {k: round(v, 6) if isinstance(v, float) else v for k, v in self.totals.items()}
        return {
            "microbatch": self.batcher.stats.to_dict(),
            "microbatch_queued": self.batcher.queued,
            **totals,
        }

    def close(self) -> None:
        self.search_pool.shutdown(wait=False, cancel_futures=True)
        self.embed_pool.shutdown(wait=False, cancel_futures=True)


# ---------------------------------------------------------------------------- writer
@dataclass
class Operation:
    """One queued document insert or delete."""

    id: str
    kind: str
    doc_ids: list[str]
    docs: list[Document] | None = None
    status: str = "queued"  # queued | running | succeeded | failed | cancelled
    submitted_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed", "cancelled")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "status": self.status,
            "documents": len(self.doc_ids),
            "doc_ids": self.doc_ids[:100],
            "submitted_at": self.submitted_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "report": self.report,
            "error": self.error,
        }


class Writer:
    """The one background thread that applies document operations, in submission order.

    Readers are never blocked: the engine commits a new immutable version and swaps it in.
    """

    def __init__(
        self,
        index: Index,
        max_pending: int,
        keep: int,
        metrics: ServiceMetrics,
        retry_after_s: int = 1,
    ):
        self.index = index
        self.max_pending = max_pending
        self.retry_after_s = retry_after_s
        self.keep = keep
        self.metrics = metrics
        self._queue: queue.Queue[Operation | None] = queue.Queue()
        self._ops: OrderedDict[str, Operation] = OrderedDict()
        self._pending_docs: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.done = {"succeeded": 0, "failed": 0, "cancelled": 0}

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="gs-writer", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the running operation, cancel the queued ones."""
        self._stopping = True
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def pending(self) -> int:
        with self._lock:
            return sum(1 for op in self._ops.values() if not op.finished)

    def submit(self, kind: str, doc_ids: list[str], docs: list[Document] | None) -> Operation:
        op = Operation(id=uuid.uuid4().hex, kind=kind, doc_ids=doc_ids, docs=docs)
        with self._lock:
            if self._stopping:
                raise ApiError(503, "overloaded", "the service is shutting down")
            if sum(1 for o in self._ops.values() if not o.finished) >= self.max_pending:
                self.metrics.rejected.labels("operation").inc()
                raise ApiError(
                    429,
                    "overloaded",
                    f"{self.max_pending} document operations are pending; retry later",
                    headers={"Retry-After": str(self.retry_after_s)},
                )
            self._ops[op.id] = op
            for d in doc_ids:
                self._pending_docs.setdefault(d, []).append(op.id)
            self._prune()
        self.metrics.pending_operations.set(self.pending)
        self._queue.put(op)
        return op

    def get(self, op_id: str) -> Operation | None:
        with self._lock:
            return self._ops.get(op_id)

    def pending_for(self, doc_id: str) -> list[Operation]:
        with self._lock:
            return [self._ops[i] for i in self._pending_docs.get(doc_id, ())]

    def _prune(self) -> None:
        while len(self._ops) > self.keep:
            oldest_id = next((i for i, o in self._ops.items() if o.finished), None)
            if oldest_id is None:
                return
            del self._ops[oldest_id]

    def _loop(self) -> None:
        while True:
            op = self._queue.get()
            if op is None:
                if self._stopping:
                    self._cancel_queued()
                    return
                continue
            if self._stopping:
                self._finish(op, "cancelled", error={"code": "cancelled", "message": "shutdown"})
                continue
            self._apply(op)

    def _cancel_queued(self) -> None:
        while True:
            try:
                op = self._queue.get_nowait()
            except queue.Empty:
                return
            if op is not None:
                self._finish(op, "cancelled", error={"code": "cancelled", "message": "shutdown"})

    def _apply(self, op: Operation) -> None:
        op.status = "running"
        op.started_at = time.time()
        try:
            if op.kind == "insert":
                report = self.index.insert(op.docs or [])
            else:
                report = self.index.delete(op.doc_ids, missing_ok=True)
        except DocumentError as exc:
            self._finish(op, "failed", error={"code": "bad_request", "message": str(exc)})
        except Exception as exc:
            log.exception("operation %s (%s) failed", op.id, op.kind)
            message = " ".join(str(exc).split()) or type(exc).__name__
            self._finish(
                op,
                "failed",
                error={"code": "internal", "message": f"{type(exc).__name__}: {message}"},
            )
        else:
            self._finish(op, "succeeded", report=report.to_dict())
        finally:
            self.metrics.observe_index(self.index)

    def _finish(
        self,
        op: Operation,
        status: str,
        report: dict[str, Any] | None = None,
        error: dict[str, str] | None = None,
    ) -> None:
        with self._lock:
            op.report = report
            op.error = error
            op.docs = None  # release the texts
            op.finished_at = time.time()
            op.status = status
            self.done[status] += 1
            for d in op.doc_ids:
                ids = self._pending_docs.get(d)
                if ids and op.id in ids:
                    ids.remove(op.id)
                    if not ids:
                        del self._pending_docs[d]
        self.metrics.pending_operations.set(self.pending)

    def stats(self) -> dict[str, Any]:
        return {"pending": self.pending, **self.done}


# ---------------------------------------------------------------------------- the service
class Service:
    """Everything one app holds: the index, the query runner, the writer, the metrics."""

    def __init__(self, index: Index, settings: ServerSettings):
        self.index = index
        self.settings = settings
        self.token = settings.resolved_token()
        self.metrics = ServiceMetrics()
        self.slots = Slots(settings.max_concurrency, settings.retry_after_s, self.metrics)
        self.runner = QueryRunner(index, settings, self.metrics)
        self.writer = Writer(
            index,
            settings.max_pending_operations,
            settings.keep_operations,
            self.metrics,
            settings.retry_after_s,
        )
        self.started = time.time()
        self.metrics.observe_index(index)

    @property
    def engine(self) -> Any:
        return self.index.engine

    def check_mode(self, mode: str) -> None:
        if mode not in self.engine.modes:
            raise ApiError(
                400,
                "mode_unavailable",
                f"search mode {mode!r} is not available in this index; "
                f"available: {sorted(self.engine.modes)}",
            )

    def check_query(self, text: str) -> None:
        if not text.strip():
            raise ApiError(422, "bad_request", "query must contain non-whitespace text")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ApiError(
                422, "bad_request", "query is not valid Unicode (lone surrogate)"
            ) from exc

    def check_params(self, params: dict[str, Any]) -> None:
        clash = sorted(RESERVED_PARAMS & set(params))
        if clash:
            raise ApiError(422, "bad_request", f"params may not set {clash}; use the fields")

    def stats(self) -> dict[str, Any]:
        index_stats = self.engine.stats()
        index_stats.pop("path", None)  # the server's filesystem layout is not the client's business
        return {
            "index": index_stats,
            "service": {
                "uptime_seconds": round(time.time() - self.started, 3),
                "in_flight": self.slots.in_use,
                "max_concurrency": self.slots.limit,
                "queries": self.runner.stats(),
                "operations": self.writer.stats(),
                "auth": self.token is not None,
            },
        }

    def summary(self) -> dict[str, Any]:
        """Printed by ``graphstrata serve`` on shutdown."""
        requests_total = 0.0
        rejected = 0.0
        for metric in self.metrics.registry.collect():
            for s in metric.samples:
                if s.name == "graphstrata_requests_total":
                    requests_total += s.value
                    if s.labels.get("status") == "429":
                        rejected += s.value
        return {
            "operation": "serve",
            "version": self.engine.version,
            "requests": int(requests_total),
            "rejected_429": int(rejected),
            "queries": self.runner.stats(),
            "operations": self.writer.stats(),
            "seconds": round(time.time() - self.started, 3),
        }


def _run_query_call(
    service: Service, fn: Callable[..., list[QueryResult]], *args: Any, **kwargs: Any
) -> list[QueryResult]:
    results = fn(*args, **kwargs)
    service.runner.account(results)
    return results


@contextlib.contextmanager
def _engine_errors(has_params: bool) -> Iterator[None]:
    """Bad input detected by the engine (ValueError; TypeError from mode params) -> 422."""
    try:
        yield
    except ValueError as exc:
        raise ApiError(422, "bad_request", " ".join(str(exc).split())) from exc
    except TypeError as exc:
        if not has_params:
            raise
        raise ApiError(422, "bad_request", f"bad mode parameters: {exc}") from exc


# ---------------------------------------------------------------------------- request models
def _models(settings: ServerSettings, modes: Sequence[str]) -> dict[str, type[BaseModel]]:
    """Request/response models; their limits come from the settings."""
    query_field = Field(
        min_length=1,
        max_length=settings.max_query_chars,
        description=f"The question (at most {settings.max_query_chars} characters).",
    )
    mode_field = Field(
        default="naive",
        description="Search mode; this index serves: " + ", ".join(sorted(modes)),
        json_schema_extra={"enum": sorted(modes)},
    )
    budget_field = Field(
        default=None,
        ge=0,
        le=settings.max_budget_tokens,
        description="Token budget of the retrieved context (default: the index's, 2000).",
    )
    top_k_field = Field(
        default=None, ge=1, le=settings.max_top_k, description="Vector candidates per kind."
    )
    params_field = Field(
        default_factory=dict, description="Mode parameters (e.g. bias_share for detailed)."
    )

    class RetrieveRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        query: str = query_field
        mode: str = mode_field
        budget_tokens: int | None = budget_field
        top_k: int | None = top_k_field
        params: dict[str, Any] = params_field

    class BatchRetrieveRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        queries: list[str] = Field(
            min_length=1,
            max_length=settings.max_batch_queries,
            description=f"1 to {settings.max_batch_queries} questions, embedded in one call.",
            json_schema_extra={
                "items": {"type": "string", "minLength": 1, "maxLength": settings.max_query_chars}
            },
        )
        mode: str = mode_field
        budget_tokens: int | None = budget_field
        top_k: int | None = top_k_field
        params: dict[str, Any] = params_field

    class NodeOut(BaseModel):
        id: int
        kind: str
        layer: int
        text: str
        score: float
        tokens: int
        docs: list[str]

    class RetrieveResponse(BaseModel):
        nodes: list[NodeOut]
        report: dict[str, Any]

    class AnswerResponse(RetrieveResponse):
        answer: str

    class BatchRetrieveResponse(BaseModel):
        results: list[RetrieveResponse]

    class DocumentIn(BaseModel):
        doc_id: str = Field(min_length=1, max_length=1024)
        text: str = Field(min_length=1)
        title: str = ""
        metadata: dict[str, Any] = Field(default_factory=dict)

    class OperationOut(BaseModel):
        id: str
        kind: str
        status: str
        documents: int
        doc_ids: list[str]
        submitted_at: float
        started_at: float | None
        finished_at: float | None
        report: dict[str, Any] | None
        error: dict[str, str] | None

    class DocumentStatus(BaseModel):
        doc_id: str
        status: str
        present: bool
        index_version: int
        version: int | None = None
        chunks: int | None = None
        title: str | None = None
        pending_operations: list[str] = Field(default_factory=list)

    class ErrorDetail(BaseModel):
        model_config = ConfigDict(extra="allow")
        code: str
        message: str

    class ErrorOut(BaseModel):
        error: ErrorDetail

    return {
        "RetrieveRequest": RetrieveRequest,
        "BatchRetrieveRequest": BatchRetrieveRequest,
        "RetrieveResponse": RetrieveResponse,
        "AnswerResponse": AnswerResponse,
        "BatchRetrieveResponse": BatchRetrieveResponse,
        "DocumentIn": DocumentIn,
        "OperationOut": OperationOut,
        "DocumentStatus": DocumentStatus,
        "ErrorOut": ErrorOut,
    }


def _errors(*statuses: int, model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    return {s: {"model": model, "description": STATUS_CODES.get(s, "error")} for s in statuses}


# ---------------------------------------------------------------------------- documents
def parse_documents(body: bytes, content_type: str) -> list[dict[str, Any]]:
    """A JSON list of documents, or JSONL (one document per line)."""
    media = content_type.split(";", 1)[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(422, "bad_request", "body is not UTF-8") from exc
    if media in NDJSON_TYPES:
        out = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ApiError(
                    422, "bad_request", f"line {lineno}: not valid JSON ({exc.msg})"
                ) from exc
        return out
    if media in ("application/json", ""):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ApiError(422, "bad_request", f"body is not valid JSON ({exc.msg})") from exc
        if not isinstance(data, list):
            raise ApiError(422, "bad_request", "expected a JSON list of documents")
        return data
    raise ApiError(
        415,
        "bad_request",
        f"unsupported content type {media!r}; send application/json or application/x-ndjson",
    )


def validated_documents(raw: list[Any], index: Index) -> list[Document]:
    if not raw:
        raise ApiError(422, "bad_request", "no documents in the request")
    try:
        docs = as_documents(raw)
        validate_batch(docs, index.engine.config.ingest)
    except DocumentError as exc:
        raise ApiError(422, "bad_request", str(exc), problems=exc.problems[:50]) from exc
    return docs


def document_status(service: Service, doc_id: str) -> dict[str, Any] | None:
    snapshot = service.engine.state.snapshot
    docs = snapshot.docs
    out: dict[str, Any] = {
        "doc_id": doc_id,
        "present": False,
        "index_version": snapshot.version,
    }
    if docs.num_rows:
        row = docs.filter(pc.equal(docs.column("doc_id"), doc_id))
        if row.num_rows:
            out.update(
                present=True,
                version=int(row.column("version")[0].as_py()),
                chunks=int(row.column("n_chunks")[0].as_py()),
                title=row.column("title")[0].as_py() or "",
            )
    pending = [op.id for op in service.writer.pending_for(doc_id)]
    if not out["present"] and not pending:
        return None
    out["pending_operations"] = pending
    out["status"] = "pending" if pending else "present"
    return out


# ---------------------------------------------------------------------------- the app
def create_app(
    index_path: str | Path,
    *,
    settings: ServerSettings | None = None,
    index: Index | None = None,
) -> FastAPI:
    """A FastAPI app serving the index at ``index_path``.

    Parameters
    ----------
    index_path:
        The index directory (opened with the settings' embedder and LLM specs).
    settings:
        Limits and tuning (:class:`ServerSettings`; defaults documented there).
    index:
        An already open :class:`Index` to serve instead of opening ``index_path``.
    """
    settings = settings or ServerSettings()
    if settings.embed_threads is not None:
        set_torch_threads(settings.embed_threads)
    if index is None:
        index = Index.open(
            index_path, embedder=settings.embedder, llm=settings.llm, use_cache=settings.use_cache
        )
    service = Service(index, settings)
    models = _models(settings, index.modes)
    RetrieveRequest = models["RetrieveRequest"]
    BatchRetrieveRequest = models["BatchRetrieveRequest"]
    ErrorOut = models["ErrorOut"]

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.writer.start()
        try:
            yield
        finally:
            await asyncio.get_running_loop().run_in_executor(None, service.writer.stop)
            service.runner.close()

    app = FastAPI(
        title="graphstrata",
        version=_package_version(),
        description="Graph retrieval over an incremental index (EraRAG hierarchy + NodeRAG "
        "heterograph). Errors are JSON with a stable `error.code`.",
        lifespan=lifespan,
    )
    app.state.service = service
    install_error_handlers(app)
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_body_bytes)
    app.add_middleware(MetricsMiddleware, metrics=service.metrics)

    bearer = HTTPBearer(auto_error=False)

    async def require_token(
        credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)],
    ) -> None:
        token = service.token
        if credentials is None or not hmac.compare_digest(
            credentials.credentials.encode(), token.encode() if token else b""
        ):
            raise ApiError(
                401,
                "unauthorized",
                "missing or wrong bearer token",
                headers={"WWW-Authenticate": "Bearer"},
            )

    deps = [Depends(require_token)] if service.token else []
    auth_errors = (401,) if service.token else ()
    v1 = APIRouter(dependencies=deps)

    @v1.post(
        "/v1/retrieve",
        summary="Retrieve a context for one query",
        response_model=models["RetrieveResponse"],
        responses=_errors(400, 413, 422, 429, *auth_errors, model=ErrorOut),
    )
    async def retrieve(body: RetrieveRequest) -> Response:  # type: ignore[valid-type]
        service.check_mode(body.mode)
        service.check_query(body.query)
        service.check_params(body.params)
        async with service.slots.hold():
            with _engine_errors(bool(body.params)):
                result = await service.runner.retrieve(
                    body.query, body.mode, body.budget_tokens, body.top_k, body.params
                )
        return JSONResponse(result.to_dict())

    @v1.post(
        "/v1/retrieve/batch",
        summary="Retrieve for many queries (embedded in one call)",
        response_model=models["BatchRetrieveResponse"],
        responses=_errors(400, 413, 422, 429, *auth_errors, model=ErrorOut),
    )
    async def retrieve_batch(body: BatchRetrieveRequest) -> Response:  # type: ignore[valid-type]
        service.check_mode(body.mode)
        for q in body.queries:
            if len(q) > settings.max_query_chars:
                raise ApiError(
                    422, "bad_request", f"a query is over {settings.max_query_chars} characters"
                )
            service.check_query(q)
        service.check_params(body.params)
        async with service.slots.hold():
            with _engine_errors(bool(body.params)):
                results = await service.runner.run(
                    _run_query_call,
                    service,
                    service.engine.query_batch,
                    list(body.queries),
                    body.mode,
                    body.budget_tokens,
                    body.top_k,
                    **body.params,
                )
        service.metrics.embed_batch_size.observe(len(results))
        return JSONResponse({"results": [r.to_dict() for r in results]})

    @v1.post(
        "/v1/answer",
        summary="Retrieve, then answer with the configured LLM",
        response_model=models["AnswerResponse"],
        responses=_errors(400, 413, 422, 429, *auth_errors, model=ErrorOut),
    )
    async def answer(body: RetrieveRequest) -> Response:  # type: ignore[valid-type]
        service.check_mode(body.mode)
        service.check_query(body.query)
        service.check_params(body.params)
        params = dict(body.params)
        if body.top_k is not None:
            params["top_k"] = body.top_k
        async with service.slots.hold():
            with _engine_errors(bool(body.params)):
                start = time.perf_counter()
                result = await service.runner.run(
                    service.engine.answer, body.query, body.mode, body.budget_tokens, **params
                )
                service.metrics.query_seconds.labels(f"answer:{body.mode}").observe(
                    time.perf_counter() - start
                )
        service.runner.account([result])
        return JSONResponse(result.to_dict())

    ndjson_schema = {"type": "string", "description": "one JSON document per line"}
    docs_schema = {
        "type": "array",
        "minItems": 1,
        "items": models["DocumentIn"].model_json_schema(),
    }

    @v1.post(
        "/v1/documents",
        status_code=202,
        summary="Queue documents for insertion (JSON list or JSONL upload)",
        response_model=models["OperationOut"],
        responses=_errors(413, 415, 422, 429, *auth_errors, model=ErrorOut),
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": docs_schema},
                    "application/x-ndjson": {"schema": ndjson_schema},
                },
            }
        },
    )
    async def insert_documents(request: Request) -> Response:
        body = await request.body()
        content_type = request.headers.get("content-type", "")

        def prepare() -> list[Document]:
            return validated_documents(parse_documents(body, content_type), service.index)

        docs = await asyncio.get_running_loop().run_in_executor(None, prepare)
        op = service.writer.submit("insert", [d.doc_id for d in docs], docs)
        return JSONResponse(
            op.to_dict(), status_code=202, headers={"Location": f"/v1/operations/{op.id}"}
        )

    @v1.delete(
        "/v1/documents/{doc_id:path}",
        status_code=202,
        summary="Queue the deletion of a document",
        response_model=models["OperationOut"],
        responses=_errors(404, 429, *auth_errors, model=ErrorOut),
    )
    async def delete_document(doc_id: str) -> Response:
        if document_status(service, doc_id) is None:
            raise ApiError(404, "not_found", f"document {doc_id!r} is not in the index")
        op = service.writer.submit("delete", [doc_id], None)
        return JSONResponse(
            op.to_dict(), status_code=202, headers={"Location": f"/v1/operations/{op.id}"}
        )

    @v1.get(
        "/v1/documents/{doc_id:path}",
        summary="Whether a document is committed, pending, or unknown",
        response_model=models["DocumentStatus"],
        responses=_errors(404, *auth_errors, model=ErrorOut),
    )
    async def get_document(doc_id: str) -> Response:
        status = document_status(service, doc_id)
        if status is None:
            raise ApiError(404, "not_found", f"document {doc_id!r} is not in the index")
        return JSONResponse(status)

    @v1.get(
        "/v1/operations/{op_id}",
        summary="Status and report of a document operation",
        response_model=models["OperationOut"],
        responses=_errors(404, *auth_errors, model=ErrorOut),
    )
    async def get_operation(op_id: str) -> Response:
        op = service.writer.get(op_id)
        if op is None:
            raise ApiError(404, "not_found", f"no operation {op_id!r}")
        return JSONResponse(op.to_dict())

    @v1.get(
        "/v1/stats",
        summary="Index and service statistics",
        responses=_errors(*auth_errors, model=ErrorOut),
    )
    async def stats() -> Response:
        data = await asyncio.get_running_loop().run_in_executor(None, service.stats)
        return JSONResponse(data)

    @v1.get(
        "/metrics",
        summary="Prometheus metrics",
        response_class=Response,
        responses=_errors(*auth_errors, model=ErrorOut),
    )
    async def metrics() -> Response:
        service.metrics.observe_index(service.index)
        service.metrics.pending_operations.set(service.writer.pending)
        return Response(generate_latest(service.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(v1)

    @app.get("/healthz", summary="Liveness and the served version")
    async def healthz() -> dict[str, Any]:
        return {"status": "ok", "version": service.engine.version, "modes": service.engine.modes}

    return app


def set_torch_threads(n: int) -> None:
    """Limit torch's intra-op threads (process-wide); a no-op without torch."""
    if n < 1:
        raise ValueError(f"embed_threads must be >= 1, got {n}")
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(n)


def _package_version() -> str:
    from graphstrata import __version__

    return __version__


# ---------------------------------------------------------------------------- runner
def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0 picks a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must say TCP: asyncio sets TCP_NODELAY on accepted sockets only when it does, and
    # without it Nagle + delayed ACK add ~40 ms to every keep-alive response (measured).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run_server(
    index_path: str | Path,
    settings: ServerSettings,
    *,
    on_ready: Callable[[str, FastAPI], None] | None = None,
    log_level: str = "warning",
) -> dict[str, Any]:
    """Serve until SIGINT/SIGTERM; return the service summary.

    ``on_ready(url, app)`` is called once the socket listens (connections made from then on
    are accepted as soon as the app has started).
    """
    import uvicorn

    app = create_app(index_path, settings=settings)
    sock = bind_socket(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_keep_alive=30,
        # A stuck request must not keep a stopping server alive forever.
        timeout_graceful_shutdown=30,
    )
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(url, app)
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        server.run(sockets=[sock])
    except (KeyboardInterrupt, _Terminated):
        # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal.
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()
    return app.state.service.summary()


class _Terminated(Exception):
    """SIGTERM, turned into an exception so the shutdown report is still printed."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


if __name__ == "__main__":  # python -m graphstrata.bindings.server INDEX [options]
    from graphstrata.bindings.cli import main

    sys.exit(main(["serve", *sys.argv[1:]]))
