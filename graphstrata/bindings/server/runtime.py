"""What one app holds while it serves: retrieval slots, the query runner, the service.

* :class:`Slots`: at most ``max_concurrency`` retrievals in flight; one more is answered 429
  at once instead of queueing without bound.
* :class:`QueryVectorCache`: a bounded LRU of query embeddings keyed by (embedder name,
  exact query text), shared by the indexes of one app; a repeated query is not embedded again.
* :class:`QueryRunner`: the query embeddings of concurrent requests are computed in one
  embedder call (:mod:`graphstrata.bindings.embed.microbatch`), then each request searches with its
  own vector in a thread pool, so the event loop never blocks.
* :class:`Service`: the index, the runner, the writer and the metrics of one app, and the
  checks of request input that the service makes before any work is queued.

See docs/architecture.md, "Service".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from graphstrata.bindings.api import (
    EdgeKind,
    Index,
    IndexLockedError,
    ModeParams,
    NodeKind,
    QueryResult,
)
from graphstrata.bindings.embed.microbatch import MicroBatcher
from graphstrata.bindings.server.deadline import check as check_deadline
from graphstrata.bindings.server.deadline import in_context
from graphstrata.bindings.server.errors import ApiError
from graphstrata.bindings.server.metrics import AppMetrics, ServiceMetrics
from graphstrata.bindings.server.refresher import VersionWatcher
from graphstrata.bindings.server.settings import ServerSettings
from graphstrata.bindings.server.writer import Writer
from graphstrata.bindings.threads import budget, current, thread_initializer

log = logging.getLogger(__name__)

T = TypeVar("T")

#: ``GET /v1/stats``'s ``kinds``: node kind letter -> words, edge kind number -> words.
KIND_WORDS = {
    "nodes": {k.letter: k.words for k in NodeKind},
    "edges": {str(int(k)): k.words for k in EdgeKind},
}

#: Queries of a batch searched between two checks of the request's deadline: small enough
#: that a step of maximal graph queries takes well under a second (issue 51 measured 8 ms per
#: maximal graph query on a small index, 0.4 ms per walk step on a larger one), large enough
#: that the modes that search a batch at once keep most of the gain.
BATCH_STEP = 8


class Slots:
    """A non-blocking semaphore: saturated means 429 now, not an unbounded queue.

    Parameters
    ----------
    limit:
        Holders at once.
    retry_after_s:
        ``Retry-After`` of the 429.
    metrics:
        Where the in-flight gauge and the rejections go.
    """

    def __init__(self, limit: int, retry_after_s: int, metrics: ServiceMetrics):
        self.limit = limit
        self.retry_after_s = retry_after_s
        self.metrics = metrics
        self.in_use = 0

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Hold a slot for the body of the ``async with``.

        Raises
        ------
        ApiError
            429 ``overloaded`` when every slot is held.
        """
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


class QueryVectorCache:
    """A bounded, thread-safe LRU of query embeddings keyed by (embedder name, exact text).

    The embedder name is part of the key, so indexes served by one app share the cache only
    where they share the embedding function (two indexes built with ``minilm-onnx`` reuse
    each other's vectors; a ``hashing`` index never sees them). The text is the exact query
    string: no normalization, since the embedder would see any difference.

    Parameters
    ----------
    capacity:
        Vectors kept (0 turns the cache off: every lookup misses, nothing is stored). The
        least recently used vector is dropped when a new one would exceed it.

    Notes
    -----
    Stored vectors are read-only copies, so a caller cannot change what the next hit
    returns. ``hits``, ``misses`` and ``evictions`` count over the cache's life.
    """

    def __init__(self, capacity: int):
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise ValueError(f"query cache capacity must be an integer >= 0, got {capacity!r}")
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._entries: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, embedder: str, text: str) -> np.ndarray | None:
        """The cached vector of ``text`` under ``embedder`` (now most recently used), or None.

        Every call counts as one hit or one miss.
        """
        key = (embedder, text)
        with self._lock:
            vector = self._entries.get(key)
            if vector is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return vector

    def put(self, embedder: str, text: str, vector: np.ndarray) -> None:
        """Remember ``vector`` for ``text`` under ``embedder``, evicting the oldest if full."""
        if self.capacity == 0:
            return
        stored = np.array(vector, dtype=np.float32, copy=True)
        stored.setflags(write=False)
        key = (embedder, text)
        with self._lock:
            self._entries[key] = stored
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
                self.evictions += 1

    def stats(self) -> dict[str, Any]:
        """Capacity, entries and counters, with the hit rate (0 before the first lookup)."""
        with self._lock:
            lookups = self.hits + self.misses
            return {
                "capacity": self.capacity,
                "entries": len(self._entries),
                "hits": self.hits,
                "misses": self.misses,
                "evictions": self.evictions,
                "hit_rate": round(self.hits / lookups, 6) if lookups else 0.0,
            }


class QueryRunner:
    """Runs retrievals: query embeddings micro-batched across concurrent requests.

    One micro-batcher embeds the queries of all concurrent requests (any mode, any budget) in
    one ``embedder.embed`` call on a dedicated thread; each request then searches with its own
    vector (``Index.query_vectors``) in the search pool, so slow searches of one mode never
    hold up the embedding of the others.

    Parameters
    ----------
    index:
        The served index.
    settings:
        Thread counts and the micro-batching window.
    metrics:
        Where the timings go.
    cache:
        The query-vector cache in front of the embedder (shared by the app's indexes);
        default: a new one of ``settings.query_cache_size`` vectors.
    """

    def __init__(
        self,
        index: Index,
        settings: ServerSettings,
        metrics: ServiceMetrics,
        cache: QueryVectorCache | None = None,
    ):
        self.index = index
        self.metrics = metrics
        self.cache = cache if cache is not None else QueryVectorCache(settings.query_cache_size)
        # Each search thread runs its kernels single-threaded (Numba's count is per thread,
        # so the pool's initializer sets it): concurrent requests are the parallelism.
        threads = budget("server", settings.threads)
        self.search_threads = settings.search_threads or threads.search_pool
        self.search_pool = ThreadPoolExecutor(
            self.search_threads,
            "gs-search",
            initializer=thread_initializer(threads),
        )
        # Answers wait on the upstream LLM most of their time: they get their own threads, so
        # slow upstreams can never hold the search threads that retrievals need (issue 51).
        self.answer_threads = settings.answer_threads
        self.answer_pool = ThreadPoolExecutor(
            self.answer_threads, "gs-answer", initializer=thread_initializer(threads)
        )
        # One embedding call at a time, on the cores the search threads leave (the server
        # role's ONNX threads, bindings/threads.py); ONNX Runtime releases the GIL while it runs.
        self.embed_pool = ThreadPoolExecutor(1, "gs-embed")
        self.batcher: MicroBatcher[str, tuple[np.ndarray, float]] = MicroBatcher(
            self._embed_batch,
            executor=self.embed_pool,
            wait_s=settings.microbatch_wait_ms / 1000.0,
            max_batch=settings.microbatch_max,
            max_inflight=1,
            on_batch=self._on_batch,
        )
        self.totals: dict[str, float] = {"queries": 0, "embed_seconds": 0.0, "search_seconds": 0.0}
        # This index's own lookups (the cache's counters add up every index of the app).
        self.cache_hits = 0
        self.cache_misses = 0
        self._lock = threading.Lock()

    async def retrieve(
        self, text: str, mode: str, budget: int | None, top_k: int | None, params: dict[str, Any]
    ) -> QueryResult:
        """One retrieval: the query embedded with its concurrent peers, then searched.

        Parameters
        ----------
        text, mode, budget, top_k, params:
            As for ``Index.query`` (``params`` already checked by :meth:`Service.check_params`).

        Returns
        -------
        QueryResult
            The retrieved nodes and the query's report.
        """
        start = time.perf_counter()
        vector = self._cached(text)
        embed_seconds = 0.0
        if vector is None:
            vector, embed_seconds = await self.batcher.submit(text)
            self.cache.put(self.index.embedder.name, text, vector)
        result = await self.run(
            self._search_one, text, vector, embed_seconds, mode, budget, top_k, params
        )
        self.metrics.query_seconds.labels(mode).observe(time.perf_counter() - start)
        return result

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking engine work (batch retrieval) in the search pool, under the request's
        deadline (:mod:`.deadline`)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.search_pool, in_context(lambda: fn(*args, **kwargs)))

    async def run_answer(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run an answer (retrieval + upstream LLM) in the answer pool, under the request's
        deadline: a slow upstream holds an answer thread, never a search thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.answer_pool, in_context(lambda: fn(*args, **kwargs)))

    def account(self, results: Sequence[QueryResult]) -> None:
        """Add finished queries to the totals and the per-mode search time."""
        with self._lock:
            for r in results:
                search = float(r.report.get("search_seconds", 0.0))
                self.totals["queries"] += 1
                self.totals["embed_seconds"] += float(r.report.get("embed_seconds", 0.0))
                self.totals["search_seconds"] += search
                self.metrics.search_seconds.labels(r.report.get("mode", "")).inc(search)
                self.metrics.observe_rerank(r.report.get("rerank"))

    def query_batch(
        self,
        texts: list[str],
        mode: str,
        budget: int | None,
        top_k: int | None,
        params: dict[str, Any],
    ) -> list[QueryResult]:
        """``Index.query_batch`` (blocking; the queries not in the cache embedded in one
        call), accounted. The caller has checked the mode, the queries and the parameters.

        The queries are searched :data:`BATCH_STEP` at a time, with the request's deadline
        checked between steps (:func:`.deadline.check`), so an expired batch stops within
        one step instead of holding its search thread to the end."""
        if self.cache.capacity == 0:
            results = []
            for i in range(0, len(texts), BATCH_STEP):
                check_deadline()
                step = texts[i : i + BATCH_STEP]
                results += self.index.query_batch(step, mode, budget, top_k, **params)
        else:
            embedder = self.index.embedder
            found = [self._cached(t) for t in texts]
            missing = sorted({t for t, v in zip(texts, found, strict=True) if v is None})
            embed_seconds = 0.0
            fresh: dict[str, np.ndarray] = {}
            if missing:
                t0 = time.perf_counter()
                vectors = np.asarray(embedder.embed(missing), dtype=np.float32)
                embed_seconds = (time.perf_counter() - t0) / len(texts)
                self.metrics.embed_seconds.inc(embed_seconds * len(texts))
                for t, v in zip(missing, vectors, strict=True):
                    fresh[t] = v
                    self.cache.put(embedder.name, t, v)
            matrix = np.empty((len(texts), embedder.dim), dtype=np.float32)
            for i, (t, v) in enumerate(zip(texts, found, strict=True)):
                matrix[i] = v if v is not None else fresh[t]
            results = []
            for i in range(0, len(texts), BATCH_STEP):
                check_deadline()
                results += self.index.query_vectors(
                    texts[i : i + BATCH_STEP],
                    matrix[i : i + BATCH_STEP],
                    mode,
                    budget,
                    top_k,
                    embed_seconds=embed_seconds,
                    **params,
                )
        self.account(results)
        return results

    def stats(self) -> dict[str, Any]:
        """Micro-batching statistics and the query totals."""
        with self._lock:
            totals = {k: round(v, 6) if isinstance(v, float) else v for k, v in self.totals.items()}
            lookups = self.cache_hits + self.cache_misses
            cache = {
                "capacity": self.cache.capacity,
                "entries": len(self.cache),
                "hits": self.cache_hits,
                "misses": self.cache_misses,
                "hit_rate": round(self.cache_hits / lookups, 6) if lookups else 0.0,
            }
        applied = current()
        return {
            "microbatch": self.batcher.stats.to_dict(),
            "microbatch_queued": self.batcher.queued,
            "query_cache": cache,
            # The search pool and the process's thread budget (None: none was applied, e.g.
            # an app created inside another process; see create_app).
            "threads": {
                "search_pool": self.search_threads,
                "budget": dict(applied.__dict__) if applied is not None else None,
            },
            **totals,
        }

    def close(self) -> None:
        """Stop the thread pools (queued work is cancelled)."""
        self.search_pool.shutdown(wait=False, cancel_futures=True)
        self.answer_pool.shutdown(wait=False, cancel_futures=True)
        self.embed_pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ batch functions
    def _cached(self, text: str) -> np.ndarray | None:
        """The cached vector of ``text`` (counted as this index's hit or miss), or None."""
        if self.cache.capacity == 0:
            return None
        vector = self.cache.get(self.index.embedder.name, text)
        with self._lock:
            if vector is None:
                self.cache_misses += 1
            else:
                self.cache_hits += 1
        (self.metrics.query_cache_misses if vector is None else self.metrics.query_cache_hits).inc()
        return vector

    def _embed_batch(self, key: Hashable, texts: list[str]) -> list[tuple[np.ndarray, float]]:
        start = time.perf_counter()
        vectors = np.asarray(self.index.embedder.embed(texts), dtype=np.float32)
        share = (time.perf_counter() - start) / max(len(texts), 1)
        self.metrics.embed_seconds.inc(share * len(texts))
        return [(vectors[i], share) for i in range(len(texts))]

    def _search_one(
        self,
        text: str,
        vector: np.ndarray,
        embed_seconds: float,
        mode: str,
        budget: int | None,
        top_k: int | None,
        params: dict[str, Any],
    ) -> QueryResult:
        (result,) = self.index.query_vectors(
            [text], vector[None, :], mode, budget, top_k, embed_seconds=embed_seconds, **params
        )
        self.account([result])
        return result

    def _on_batch(self, size: int, seconds: float) -> None:
        self.metrics.embed_batch_size.observe(size)


class Service:
    """Everything one app holds: the index, the query runner, the writer, the metrics.

    Parameters
    ----------
    index:
        The served index (its directory name is its ``name``: the chat model id).
    settings:
        Limits and tuning.
    query_cache:
        The app's query-vector cache (shared by its indexes); default: one of this service's
        own, of ``settings.query_cache_size`` vectors.
    metrics:
        The app's metrics (shared by its indexes, each series labelled with its index);
        default: a registry of this service's own.
    """

    def __init__(
        self,
        index: Index,
        settings: ServerSettings,
        query_cache: QueryVectorCache | None = None,
        metrics: AppMetrics | None = None,
    ):
        self.index = index
        self.name = index.path.name
        self.settings = settings
        self.token = settings.resolved_token()
        self.metrics = ServiceMetrics(metrics, self.name)
        self.slots = Slots(settings.max_concurrency, settings.retry_after_s, self.metrics)
        self.runner = QueryRunner(index, settings, self.metrics, query_cache)
        self.writer = Writer(
            index,
            settings.max_pending_operations,
            settings.keep_operations,
            self.metrics,
            settings.retry_after_s,
            settings.writer_lock_wait_s,
        )
        self.watcher = VersionWatcher(index, settings.refresh_interval_s, self.metrics)
        self.started = time.time()
        self.metrics.observe_index(index)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Any) -> AsyncIterator[None]:
        """The app's lifespan: while the app serves, the process is registered as a live
        writer of the index (a rebuild refuses to replace it), the writer applies document
        operations and the watcher follows versions committed by other processes."""
        loop = asyncio.get_running_loop()
        registered = await loop.run_in_executor(None, self._register)
        self.writer.start()
        self.watcher.start()
        try:
            yield
        finally:
            await loop.run_in_executor(None, self.watcher.stop)
            await loop.run_in_executor(None, self.writer.stop)
            self.runner.close()
            registered.close()

    def _register(self) -> contextlib.ExitStack:
        """Enter the live-writer registration (``Index.live_writer``); a folder where it
        cannot be written (read-only) is served all the same, with a warning."""
        registered = contextlib.ExitStack()
        try:
            registered.enter_context(self.index.live_writer("graphstrata serve"))
        except (OSError, IndexLockedError) as exc:
            log.warning(
                "%s: not registered as its live writer (%s); a rebuild will not see this service",
                self.index.path,
                exc,
            )
        return registered

    # ------------------------------------------------------------------ input checks
    def check_mode(self, mode: str) -> None:
        """Raise 400 ``mode_unavailable`` unless this index serves ``mode``."""
        if mode not in self.index.modes:
            raise ApiError(
                400,
                "mode_unavailable",
                f"search mode {mode!r} is not available in this index; "
                f"available: {sorted(self.index.modes)}",
            )

    def check_query(self, text: str) -> None:
        """Raise 422 for a blank query or one that is not valid Unicode."""
        if not text.strip():
            raise ApiError(422, "bad_request", "query must contain non-whitespace text")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ApiError(
                422, "bad_request", "query is not valid Unicode (lone surrogate)"
            ) from exc

    def check_params(self, mode: str, params: dict[str, Any]) -> dict[str, Any]:
        """The parameters of ``mode`` to give the engine, checked (``QueryError`` -> 422).

        A name that is not a field of the mode's parameters class is refused with the list of
        allowed names, so ``params`` can never shadow ``mode``, ``budget_tokens`` or ``top_k``.
        A float without a fraction given for an integer parameter is that integer (JSON
        Schema's ``integer`` includes ``5.0``; ``true`` and ``"5"`` stay refused). An integer
        too large for a float parameter is refused too.

        Returns
        -------
        dict
            ``params``, with integral floats of integer parameters as ints.
        """
        cls = self.index.mode_params.get(mode)
        if cls is not None:
            params = {k: _integral_for(cls, k, v) for k, v in params.items()}
        try:
            self.index.parse_params(mode, params)
        except OverflowError as exc:
            raise ApiError(
                422, "bad_request", f"mode {mode!r}: a parameter is too large to be a number"
            ) from exc
        return params

    def with_filter(self, params: dict[str, Any], flt: dict[str, Any] | None) -> dict[str, Any]:
        """``params`` with a request's metadata ``filter`` added, checked first
        (``QueryError`` -> 422), so a bad filter costs no embedding."""
        if flt is None:
            return params
        self.index.check_filter(flt)
        return {**params, "filter": flt}

    # ------------------------------------------------------------------ reports
    def stats(self) -> dict[str, Any]:
        """``GET /v1/stats``: the index's statistics (without its path) and the service's."""
        index_stats = self.index.stats()
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
            # The words of the kind letters and edge kind numbers the other answers use.
            "kinds": KIND_WORDS,
        }

    def summary(self) -> dict[str, Any]:
        """The report printed by ``graphstrata serve`` on shutdown."""
        requests_total, rejected = self.metrics.totals()
        return {
            "operation": "serve",
            "version": self.index.version,
            "requests": requests_total,
            "rejected_429": rejected,
            "queries": self.runner.stats(),
            "operations": self.writer.stats(),
            "seconds": round(time.time() - self.started, 3),
        }


def _integral_for(cls: type[ModeParams], name: str, value: Any) -> Any:
    """``value`` as an int when it is an integral float and ``name`` is an integer field."""
    if not isinstance(value, float) or not value.is_integer():
        return value
    prop = cls.json_schema()["properties"].get(name, {})
    types = {prop.get("type")} | {alt.get("type") for alt in prop.get("anyOf", ())}
    return int(value) if "integer" in types else value
