"""Prometheus metrics of one app (``GET /metrics``), in a registry of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from graphstrata.bindings.api import NodeKind

if TYPE_CHECKING:
    from graphstrata.bindings.api import Index

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


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
        self.query_cache_hits = Counter(
            "graphstrata_query_cache_hits",
            "Query embeddings found in the query-vector cache (not embedded again)",
            registry=r,
        )
        self.query_cache_misses = Counter(
            "graphstrata_query_cache_misses",
            "Query embeddings looked up in the query-vector cache and not found",
            registry=r,
        )
        self.query_cache_entries = Gauge(
            "graphstrata_query_cache_entries",
            "Vectors held by the query-vector cache (shared by the app's indexes)",
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
        self.rerank_seconds = Histogram(
            "graphstrata_rerank_seconds",
            "Latency of the reranker's call per reranked query (docs/guide/rerank.md)",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.rerank_failures = Counter(
            "graphstrata_rerank_failures",
            "Queries whose reranker failed and which kept their mode's order",
            registry=r,
        )
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
