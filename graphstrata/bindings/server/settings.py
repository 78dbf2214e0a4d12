"""Limits and tuning of the HTTP service (:class:`ServerSettings`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from graphstrata.bindings.api import ConfigError
from graphstrata.bindings.threads import parse_override

#: Environment variable that holds the bearer token when ``ServerSettings.token`` is None.
TOKEN_ENV = "GRAPHSTRATA_TOKEN"


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
        This token has every right on every served index.
    tokens:
        Scoped tokens, ``{"TOKEN": {"indexes": [...], "rights": ["read", "write"]}}`` (the
        content of ``graphstrata serve --tokens FILE``; see :mod:`.auth`), or None.
    embedder, llm, use_cache:
        Backend specs, as for ``Index.open`` (default: the precedence rule of
        :func:`graphstrata.bindings.registry.resolve_backends`).
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
    writer_lock_wait_s:
        How long a document operation waits for the index lock while another process holds
        it (e.g. ``graphstrata compact`` run beside the service; default 120 s) before it
        fails with ``overloaded``.
    refresh_interval_s:
        How often the service looks for versions committed by other processes
        (``graphstrata insert``, ``compact``, ``maintain`` beside it): a background thread
        stats ``manifest.json`` every ``refresh_interval_s`` seconds (default 1) and, when it
        changed, loads the newer version; a commit made elsewhere is served within this
        interval plus the time to load it. The service never goes back to an older version
        than it served. 0 turns the polling off (the service then moves only with its own
        writes).
    search_threads:
        Threads that run searches (and whole-query batches); ``None`` (default): the server
        role's thread budget, ``min(8, max(1, cores - 1))``, where ``cores`` is the number of CPUs
        this process may run on (:func:`~graphstrata.bindings.threads.available_cores`: the
        CPU affinity, so a container or ``taskset`` limit counts, not the host's CPUs) or
        ``threads``. Query embeddings run on a thread of their own (ONNX Runtime releases the
        GIL); a search releases the GIL only in its kernels, so more search threads than the
        other cores only queue for the GIL. Each search runs single-threaded (one BLAS thread, one Numba
        thread): parallelism comes from the concurrent requests.
    threads:
        The process's thread budget (:mod:`graphstrata.bindings.threads`, role ``server``,
        applied when the app is created): a number of cores, ``"default"`` to leave every
        library at its own default, or ``None`` for ``GRAPHSTRATA_THREADS``, else the CPU
        affinity.
    microbatch_wait_ms, microbatch_max:
        Wait window and size cap of the query-embedding micro-batcher (2 ms, 64). A wait of 0
        with a cap of 1 turns micro-batching off.
    query_cache_size:
        Query embeddings kept in the app's LRU cache, keyed by (embedder name, exact query
        text) (default 4,096: ~6.5 MB of 384-dimension float32 vectors); a repeated query is
        searched without being embedded again. 0 turns the cache off. Hits and misses are in
        ``/metrics`` (``graphstrata_query_cache_hits_total`` / ``_misses_total``) and in
        ``/v1/stats`` (``service.queries.query_cache``).
    embed_threads:
        Intra-op threads of the embedder (its own ONNX Runtime session, or torch's
        process-wide pool), or ``None`` for the thread budget's: one per core of the budget
        for the ONNX Runtime embedders (with spin-waiting off), one for torch (a single
        query took 17.7 ms with one torch thread against 145 ms with two, issue 52). One embedding call runs at a time (the
        micro-batcher's single embed thread), so these threads are the embedder's whole
        share of the cores. Spinning intra-op threads collapse when the cores are shared
        (with search threads, or other processes): see ``benchmarks/results/serve.md``.
    answer_threads:
        Threads that run answers (retrieval + upstream LLM call; default 16), apart from the
        search threads, so answers waiting on a slow upstream never hold the threads that
        retrievals need. An answer that finds them all busy waits for one (within its
        deadline, ``request_timeout_s``).
    request_timeout_s:
        Seconds a request may take once its body has arrived: search, upstream LLM calls and
        streaming of the response together (default 120; ``graphstrata serve
        --request-timeout``). A request past it is answered ``504 deadline_exceeded`` (a
        streamed response that had started is cut and its connection closed); batch
        retrievals stop at their next step (:mod:`.deadline`).
    shutdown_grace_s:
        Seconds a stopping server (SIGTERM, SIGINT) lets the requests in flight finish before
        it closes their connections and stops (default 30; ``--shutdown-grace``). A search
        thread still busy then is not waited for.
    max_body_memory_bytes:
        Bytes of request bodies held at once across every connection (default 64 MiB): a
        body is counted from its ``Content-Length`` (or as it arrives, when chunked) before
        it is buffered, and one that would take the total past this is answered ``503
        overloaded`` with ``Retry-After`` and its connection closed.
    retry_after_s:
        The ``Retry-After`` value of a 429 (and of the 503 of a refused connection).
    header_timeout_s:
        Seconds a connection may take to send a request's line and headers, counted from the
        connection's opening or the first byte of the request (default 10). A client that
        sends its headers byte by byte (slowloris) gets ``408 request_timeout`` and the
        connection is closed; a new connection that sends nothing is closed.
    body_timeout_s:
        Seconds to receive a whole request body once its headers are in (default 60; 8 MiB
        in 60 s is about 140 KiB/s). A slower body gets ``408 request_timeout`` and the
        connection is closed.
    keep_alive_timeout_s:
        Seconds an idle keep-alive connection is kept open between requests (default 30).
    max_connections:
        Open connections at once (default 1024). One more is answered
        ``503 overloaded`` with ``Retry-After`` and closed at once, before anything is read,
        so a flood of idle connections cannot exhaust the server's file descriptors.
    max_header_bytes:
        Largest request line + headers (default 16 KiB); larger ones get 400 (while they
        arrive) or 431, and the connection is closed.

    Notes
    -----
    The bearer token is checked on the request's headers, before a byte of its body is read:
    an unauthenticated client cannot make the server buffer a body (it gets 401 and the
    connection is closed). An authenticated client's body is read up to ``max_body_bytes``
    within ``body_timeout_s``, so the memory held by request bodies is bounded by
    ``max_body_memory_bytes`` (and each body by ``max_body_bytes``), and no connection is
    held longer than the timeouts allow.
    """

    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    tokens: dict[str, Any] | None = None
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
    writer_lock_wait_s: float = 120.0
    refresh_interval_s: float = 1.0
    search_threads: int | None = None
    threads: int | str | None = None
    microbatch_wait_ms: float = 2.0
    microbatch_max: int = 64
    query_cache_size: int = 4096
    embed_threads: int | None = None
    answer_threads: int = 16
    request_timeout_s: float = 120.0
    shutdown_grace_s: float = 30.0
    max_body_memory_bytes: int = 64 * 1024 * 1024
    retry_after_s: int = 1
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    keep_alive_timeout_s: float = 30.0
    max_connections: int = 1024
    max_header_bytes: int = 16 * 1024

    def check(self) -> None:
        """Refuse settings that cannot work, with one message naming every problem.

        Raises
        ------
        ConfigError
            When a timeout or a limit is not positive.
        """
        problems = []
        for name in (
            "header_timeout_s",
            "body_timeout_s",
            "keep_alive_timeout_s",
            "writer_lock_wait_s",
            "request_timeout_s",
            "shutdown_grace_s",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                problems.append(f"{name} must be a number > 0, got {value!r}")
        for name in (
            "max_concurrency",
            "max_body_bytes",
            "max_query_chars",
            "max_batch_queries",
            "max_top_k",
            "max_budget_tokens",
            "max_pending_operations",
            "keep_operations",
            "microbatch_max",
            "max_connections",
            "max_header_bytes",
            "answer_threads",
            "max_body_memory_bytes",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                problems.append(f"{name} must be an integer >= 1, got {value!r}")
        if self.search_threads is not None and (
            isinstance(self.search_threads, bool)
            or not isinstance(self.search_threads, int)
            or self.search_threads < 1
        ):
            problems.append(f"search_threads must be an integer >= 1, got {self.search_threads!r}")
        try:
            parse_override(self.threads)
        except ValueError as exc:
            problems.append(f"threads: {exc}")
        retry = self.retry_after_s
        if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:
            problems.append(f"retry_after_s must be an integer >= 0, got {retry!r}")
        size = self.query_cache_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            problems.append(f"query_cache_size must be an integer >= 0, got {size!r}")
        every = self.refresh_interval_s
        if isinstance(every, bool) or not isinstance(every, int | float) or not every >= 0:
            problems.append(f"refresh_interval_s must be a number >= 0, got {every!r}")
        wait = self.microbatch_wait_ms
        if isinstance(wait, bool) or not isinstance(wait, int | float) or not wait >= 0:
            problems.append(f"microbatch_wait_ms must be a number >= 0, got {wait!r}")
        if problems:
            raise ConfigError("invalid server settings: " + "; ".join(problems))

    def resolved_token(self) -> str | None:
        """The bearer token in force: ``token``, else ``GRAPHSTRATA_TOKEN``; ``None`` = no auth.

        Returns
        -------
        str or None
            The token, or ``None`` when neither is set (or both are empty).
        """
        token = self.token if self.token is not None else os.environ.get(TOKEN_ENV)
        return token or None


def set_embed_threads(embedder: object, n: int) -> None:
    """Size the embedder's intra-op thread pool.

    An embedder with ``set_threads`` (the ONNX Runtime ones) sizes its own session; any
    other gets torch's process-wide setting (imported only then, so the ONNX path stays
    free of torch).

    Parameters
    ----------
    embedder:
        The served index's embedder.
    n:
        Threads, at least 1.

    Raises
    ------
    ValueError
        When ``n < 1``.
    """
    if n < 1:
        raise ValueError(f"embed_threads must be >= 1, got {n}")
    setter = getattr(embedder, "set_threads", None)
    if callable(setter):
        setter(n)
        return
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(n)
