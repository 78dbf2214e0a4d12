"""Prometheus metrics of one app (``GET /metrics``), in a registry of its own.

One :class:`AppMetrics` per app holds every series. A series that describes one index (its
version, nodes, documents, queries, embedding, refusals, queue) carries an ``index`` label;
the app-wide ones (HTTP requests, the shared query-vector cache's size) do not. Each served
index sees the app's metrics through a :class:`ServiceMetrics`, which fills its ``index``
label in, so the code that counts never names the index. ``GET /metrics`` shows the series of
every index the caller may read, ``GET /v1/indexes/{name}/metrics`` those of one
(:func:`exposition`). Connections refused at the app's connection cap are counted in
``graphstrata_rejected{what="connection"}`` under the first (default) index.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics_core import Metric

from graphstrata.bindings.api import NodeKind

if TYPE_CHECKING:
    from graphstrata.bindings.api import Index

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

#: The label that names the index of a per-index series.
INDEX_LABEL = "index"


class AppMetrics:
    """Every metric of one app, in a registry of its own (per-index ones labelled ``index``)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        per_index = [INDEX_LABEL]
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
        self.query_cache_entries = Gauge(
            "graphstrata_query_cache_entries",
            "Vectors held by the query-vector cache (shared by the app's indexes)",
            registry=r,
        )
        self.query_seconds = Histogram(
            "graphstrata_query_seconds",
            "Retrieval latency per index and search mode (queueing, embedding and search)",
            [*per_index, "mode"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.embed_batch_size = Histogram(
            "graphstrata_embed_batch_size",
            "Queries per query-embedding call",
            per_index,
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            registry=r,
        )
        self.embed_seconds = Counter(
            "graphstrata_query_embed_seconds",
            "Seconds spent embedding queries",
            per_index,
            registry=r,
        )
        self.search_seconds = Counter(
            "graphstrata_query_search_seconds",
            "Seconds spent searching (after embedding)",
            [*per_index, "mode"],
            registry=r,
        )
        self.query_cache_hits = Counter(
            "graphstrata_query_cache_hits",
            "Query embeddings found in the query-vector cache (not embedded again)",
            per_index,
            registry=r,
        )
        self.query_cache_misses = Counter(
            "graphstrata_query_cache_misses",
            "Query embeddings looked up in the query-vector cache and not found",
            per_index,
            registry=r,
        )
        self.rejected = Counter(
            "graphstrata_rejected",
            "Requests refused because the service was saturated",
            [*per_index, "what"],
            registry=r,
        )
        self.in_flight = Gauge(
            "graphstrata_in_flight", "Retrieval/answer requests in flight", per_index, registry=r
        )
        self.pending_operations = Gauge(
            "graphstrata_pending_operations",
            "Document operations queued or running",
            per_index,
            registry=r,
        )
        self.index_version = Gauge(
            "graphstrata_index_version",
            "Committed index version being served",
            per_index,
            registry=r,
        )
        self.nodes = Gauge(
            "graphstrata_nodes",
            "Live nodes per kind in the served version",
            [*per_index, "kind"],
            registry=r,
        )
        self.documents = Gauge(
            "graphstrata_documents", "Documents in the served version", per_index, registry=r
        )
        self.rerank_seconds = Histogram(
            "graphstrata_rerank_seconds",
            "Latency of the reranker's call per reranked query (docs/guide/rerank.md)",
            per_index,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.rerank_failures = Counter(
            "graphstrata_rerank_failures",
            "Queries whose reranker failed and which kept their mode's order",
            per_index,
            registry=r,
        )

    def totals(self) -> tuple[int, int]:
        """Requests answered so far, and how many of them were refused with 429."""
        requests_total = 0.0
        rejected = 0.0
        for metric in self.registry.collect():
            for s in metric.samples:
                if s.name == "graphstrata_requests_total":
                    requests_total += s.value
                    if s.labels.get("status") == "429":
                        rejected += s.value
        return int(requests_total), int(rejected)


class _Bound:
    """A per-index metric with its ``index`` label filled in: ``labels(...)`` takes the other
    labels, and ``set``/``inc``/``observe`` act on the index's own series."""

    def __init__(self, metric: Any, index: str):
        self.metric = metric
        self.index = index

    def labels(self, *values: str) -> Any:
        return self.metric.labels(self.index, *values)

    def set(self, value: float) -> None:
        self.metric.labels(self.index).set(value)

    def inc(self, amount: float = 1) -> None:
        self.metric.labels(self.index).inc(amount)

    def observe(self, value: float) -> None:
        self.metric.labels(self.index).observe(value)


class ServiceMetrics:
    """One index's view of the app's metrics (its ``index`` label filled in).

    Parameters
    ----------
    app:
        The app's metrics (default: a registry of this index alone).
    index:
        The index's name (its ``index`` label).
    """

    def __init__(self, app: AppMetrics | None = None, index: str = "") -> None:
        self.app = app or AppMetrics()
        self.index = index
        self.registry = self.app.registry
        self.requests = self.app.requests
        self.request_seconds = self.app.request_seconds
        self.query_cache_entries = self.app.query_cache_entries
        self.query_seconds = _Bound(self.app.query_seconds, index)
        self.embed_batch_size = _Bound(self.app.embed_batch_size, index)
        self.embed_seconds = _Bound(self.app.embed_seconds, index)
        self.search_seconds = _Bound(self.app.search_seconds, index)
        self.query_cache_hits = _Bound(self.app.query_cache_hits, index)
        self.query_cache_misses = _Bound(self.app.query_cache_misses, index)
        self.rejected = _Bound(self.app.rejected, index)
        self.in_flight = _Bound(self.app.in_flight, index)
        self.pending_operations = _Bound(self.app.pending_operations, index)
        self.index_version = _Bound(self.app.index_version, index)
        self.nodes = _Bound(self.app.nodes, index)
        self.documents = _Bound(self.app.documents, index)
        self.rerank_seconds = _Bound(self.app.rerank_seconds, index)
        self.rerank_failures = _Bound(self.app.rerank_failures, index)
        # The series of this index exist from the start (a counter at 0 is a sample).
        for series in (
            self.embed_batch_size,
            self.embed_seconds,
            self.query_cache_hits,
            self.query_cache_misses,
            self.in_flight,
            self.pending_operations,
            self.index_version,
            self.documents,
            self.rerank_failures,
        ):
            series.labels()
        self._counted_version = -1

    def observe_index(self, index: Index) -> None:
        """Refresh the index gauges (node counts are recomputed once per version).

        Parameters
        ----------
        index:
            The served index.
        """
        pinned = index.pinned()
        self.index_version.set(pinned.version)
        if pinned.version == self._counted_version:
            return
        present = pinned.node_counts()
        for kind in NodeKind:
            self.nodes.labels(kind.letter).set(present.get(kind.letter, 0))
        self.documents.set(pinned.document_count)
        self._counted_version = pinned.version

    def observe_rerank(self, entry: dict[str, Any] | None) -> None:
        """Account a query report's ``rerank`` entry (none: the query was not reranked)."""
        if entry is None or "seconds" not in entry:
            return
        self.rerank_seconds.observe(float(entry["seconds"]))
        if "warning" in entry:
            self.rerank_failures.inc()

    def totals(self) -> tuple[int, int]:
        """The app's requests so far, and how many were refused with 429."""
        return self.app.totals()


class _Only:
    """A registry's series restricted to some indexes (and the app-wide ones)."""

    def __init__(self, registry: CollectorRegistry, indexes: Collection[str]):
        self.registry = registry
        self.indexes = set(indexes)

    def collect(self) -> Iterator[Metric]:
        for metric in self.registry.collect():
            kept = [
                s
                for s in metric.samples
                if INDEX_LABEL not in s.labels or s.labels[INDEX_LABEL] in self.indexes
            ]
            metric.samples = kept
            yield metric


def exposition(registry: CollectorRegistry, indexes: Collection[str]) -> bytes:
    """The Prometheus text of ``registry``: the app-wide series and those of ``indexes``."""
    return generate_latest(_Only(registry, indexes))  # type: ignore[arg-type]
