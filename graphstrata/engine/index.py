"""The engine: one index directory, its backends, its components, and every operation.

Writes are transactions: validate -> chunk -> embed -> components update -> commit. Any
exception before the commit leaves the index at its last committed version. Reads use an
immutable ``EngineState`` (``engine.state``: snapshot, vector index, BM25 parts, per-mode
views) that is advanced by each commit and swapped atomically after it, so concurrent queries never see a half-applied change
(docs/architecture.md, "Write path" and "Query path").
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphstrata.core.lsh import sample_hyperplanes
from graphstrata.engine.answer import answer_result
from graphstrata.engine.component import (
    Component,
    ComponentView,
    MeteredEmbedder,
    MeteredLLM,
    ProgressFn,
    Query,
    UpdateContext,
)
from graphstrata.engine.config import ConfigError, IndexConfig, SearchConfig
from graphstrata.engine.conversation import conversation_query
from graphstrata.engine.documents import Document, DocumentError, as_documents, validate_batch
from graphstrata.engine.embedder_check import check_embedder
from graphstrata.engine.filters import parse_filter
from graphstrata.engine.ingest import add_docs, doc_lookup, remove_docs
from graphstrata.engine.interfaces import LLM, Embedder, Reranker
from graphstrata.engine.modes.registry import default_components, served_params
from graphstrata.engine.params import ModeParams, QueryError
from graphstrata.engine.pinned import PinnedVersion
from graphstrata.engine.prompts import ANSWER_MAX_TOKENS, with_prompts
from graphstrata.engine.read_caches import open_vectors, save_caches
from graphstrata.engine.report import OperationReport
from graphstrata.engine.rerank import rerank_candidates, reranked_search, with_rerank
from graphstrata.engine.results import QueryResult, format_context, tokens_by_kind
from graphstrata.engine.sparse.index import KindIndex
from graphstrata.engine.state import EngineState
from graphstrata.engine.store import Delta, Snapshot, Store
from graphstrata.engine.store.arrow_numpy import numpy_of
from graphstrata.engine.types import NodeKind
from graphstrata.engine.verified import recorded_config, verified_snapshot

__all__ = [
    "Engine",
    "EngineState",
    "ProgressFn",
    "QueryResult",
    "check_embedder",
    "format_context",
    "tokens_by_kind",
]


#: Largest ``budget_tokens`` or ``top_k`` a query may ask for: the kernels count in 32-bit
#: integers, and a larger Python int reached them as a typing error (issue 51, #15).
MAX_QUERY_INT = 2**31 - 1
#: Versions listed by :meth:`Engine.stats` (the newest kept under ``manifests/``).
STATS_VERSIONS = 10

#: Times a write is prepared outside the writer lock before it is prepared under it (another
#: process committing meanwhile makes a prepared write stale; decision 0032).
OPTIMISTIC_TRIES = 2


class Engine:
    """An open index with its embedder, LLM and components."""

    def __init__(
        self,
        store: Store,
        config: IndexConfig,
        embedder: Embedder,
        llm: LLM,
        components: list[Component] | None = None,
        reranker: Reranker | None = None,
    ):
        self.store = store
        self.config = config
        self.embedder = embedder
        self.llm = with_prompts(llm, config.prompts)
        #: Rescores each mode's top candidates when a query asks (``engine.rerank``).
        self.reranker = reranker
        comps = components if components is not None else default_components(config)
        enabled = store.manifest.get("components_enabled")
        if enabled is not None:
            # Only components that processed every change of this index may serve its modes
            # (one added later would answer from a partial structure).
            comps = [c for c in comps if c.name in enabled]
        self.components = comps
        #: Typed parameters of every mode this index serves (``engine.modes.registry``), each
        #: with ``rerank_candidates`` (``engine.rerank.with_rerank``).
        self.mode_params: dict[str, type[ModeParams]] = {
            mode: with_rerank(cls) for mode, cls in served_params(comps).items()
        }
        self._write_lock = threading.Lock()
        self._state = self._load_state(store.load())

    # ------------------------------------------------------------------ create / open
    @classmethod
    def create(
        cls,
        path: str | Path,
        config: IndexConfig,
        embedder: Embedder,
        llm: LLM,
        components: list[Component] | None = None,
        reranker: Reranker | None = None,
    ) -> Engine:
        """Create an empty index at ``path`` (see ``Store.create``). Choices left to the
        backend (``HeterographConfig.attributes="auto"``) are decided for ``llm`` and recorded
        in the index's config, a copy: the caller's ``config`` stays as given."""
        config.validate()
        config = dataclasses.replace(config, heterograph=config.heterograph.resolved(llm.name))
        if (
            embedder.max_input_tokens
            and config.chunking.chunk_tokens > 4 * embedder.max_input_tokens
        ):
            raise ConfigError(
                f"chunk_tokens={config.chunking.chunk_tokens} is far beyond what {embedder.name} reads "
                f"({embedder.max_input_tokens} word pieces): the rest would be silently truncated"
            )
        hp_cfg = config.hierarchy
        comps = components if components is not None else default_components(config)
        hyperplanes = sample_hyperplanes(embedder.dim, hp_cfg.n_bits, hp_cfg.seed)
        store = Store.create(
            path,
            config=config.to_dict(),
            embedder={"name": embedder.name, "dim": int(embedder.dim)},
            hyperplanes=hyperplanes,
            hyperplane_seed=hp_cfg.seed,
            components=[c.name for c in comps],
        )
        return cls(store, config, embedder, llm, comps, reranker)

    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder: Embedder,
        llm: LLM,
        version: int | None = None,
        components: list[Component] | None = None,
        search: SearchConfig | None = None,
        reranker: Reranker | None = None,
    ) -> Engine:
        """Open an index (its current or a pinned ``version``) with the embedder that built it.

        ``search`` replaces the query defaults recorded at creation (``IndexConfig.search``:
        budget, top k, HNSW expansion) for this process only; the index is not changed.
        Every other section shapes what is stored and stays as recorded.
        """
        store = Store.open(path, version=version)
        config = recorded_config(store)
        if search is not None:
            config = dataclasses.replace(config, search=search)
        check_embedder(store.manifest, embedder)
        return cls(store, config, embedder, llm, components, reranker)

    # ------------------------------------------------------------------ state
    def _load_state(
        self, snapshot: Snapshot, seeded: dict[int, KindIndex] | None = None
    ) -> EngineState:
        """The state of ``snapshot`` built from it (its vector caches mapped)."""
        vectors = open_vectors(self.store.root, snapshot, self.config)
        return EngineState.opened(snapshot, vectors, self.config, self.components, seeded)

    @property
    def state(self) -> EngineState:
        """The version queries are served from now."""
        return self._state

    @property
    def version(self) -> int:
        """The version served now."""
        return self._state.version

    @property
    def modes(self) -> list[str]:
        """The search modes this index serves."""
        return list(self._state.views)

    def refresh(self) -> bool:
        """Switch to the newest committed version if another process wrote one.

        Never to an older version than the one served (a manifest rewound by a replaced
        index): readers never see the index go back. A load that fails is retried by the
        next call (the comparison is with the version served, not the manifest last read).
        """
        with self._write_lock:
            self.store.reload_manifest()
            if self.store.version <= self._state.version:
                return False
            self._state = self._load_state(self.store.load())
            return True

    # ------------------------------------------------------------------ writes
    def insert(
        self, docs: Iterable[Any], progress: ProgressFn | None = None, wait: float = 0.0
    ) -> OperationReport:
        """Insert or update documents; an unchanged document is a no-op (``wait``: seconds to
        wait for the writer lock another process holds, taken only to commit)."""
        report = OperationReport("insert")
        start = time.perf_counter()
        with report.stage("validate"):
            batch = as_documents(docs)
            validate_batch(batch, self.config.ingest)

        def plan(snapshot: Snapshot) -> tuple[list[Document], np.ndarray]:
            existing = doc_lookup(snapshot, [d.doc_id for d in batch])
            to_add: list[Document] = []
            to_remove: list[int] = []
            report.docs_added = report.docs_unchanged = report.docs_updated = 0
            for doc in batch:
                old = existing.get(doc.doc_id)
                if old is None:
                    to_add.append(doc)
                    report.docs_added += 1
                elif old[1] == doc.sha256:
                    report.docs_unchanged += 1
                else:
                    to_add.append(doc)
                    to_remove.append(old[0])
                    report.docs_updated += 1
            return to_add, np.asarray(to_remove, dtype=np.int64)

        self._transact(report, plan, progress, wait)
        report.seconds = time.perf_counter() - start
        return report

    def delete(
        self,
        doc_ids: Sequence[str],
        missing_ok: bool = False,
        progress: ProgressFn | None = None,
        wait: float = 0.0,
    ) -> OperationReport:
        """Delete documents and everything derived only from them (``progress`` and ``wait``
        as for :meth:`insert`)."""
        report = OperationReport("delete")
        start = time.perf_counter()

        def plan(snapshot: Snapshot) -> tuple[list[Document], np.ndarray]:
            existing = doc_lookup(snapshot, list(doc_ids))
            unknown = [d for d in doc_ids if d not in existing]
            if unknown and not missing_ok:
                raise DocumentError([f"doc {d!r}: not in the index" for d in unknown])
            keys = [existing[d][0] for d in dict.fromkeys(doc_ids) if d in existing]
            report.docs_deleted = len(keys)
            return [], np.asarray(keys, dtype=np.int64)

        self._transact(report, plan, progress, wait)
        report.seconds = time.perf_counter() - start
        return report

    def _transact(
        self,
        report: OperationReport,
        plan: Callable[[Snapshot], tuple[list[Document], np.ndarray]],
        progress: ProgressFn | None,
        wait: float,
    ) -> None:
        """Prepare a write (chunks, embeddings, every LLM stage: the slow part) outside the
        writer lock on the newest version, then take the lock to commit it if no other process
        committed meanwhile; else prepare again on the newer version (the LLM cache answers
        the prompts asked before). The last try prepares under the lock, so a busy index cannot
        starve this writer (decision 0032). ``plan(snapshot)`` gives the documents to add and
        the doc keys to remove, and sets the report's document counts."""
        with self._write_lock:
            for _ in range(OPTIMISTIC_TRIES):
                state = self._newest_state()
                # The sealed manifest's checksum names the version exactly (a rebuild swapped
                # in meanwhile may reach the same version number).
                base = self.store.manifest.get("checksum")
                ctx = self._prepare(state, report, plan, progress)
                with self.store.writer(wait=wait):
                    if self.store.manifest.get("checksum") == base:
                        self._finish(state, ctx, report)
                        return
                report.notes.append(
                    f"version {self.store.version} was committed by another writer while this "
                    f"write was prepared on version {state.version}: prepared again"
                )
            with self.store.writer(wait=wait):
                state = self._fresh_state()
                self._finish(state, self._prepare(state, report, plan, progress), report)

    def _newest_state(self) -> EngineState:
        """Outside the writer lock: the newest committed version (as a reader finds it)."""
        self.store.reload_manifest()
        return self._fresh_state()

    def _fresh_state(self) -> EngineState:
        """The state of the store's manifest (inside the writer lock: the newest version)."""
        if self.store.version != self._state.version:
            self._state = self._load_state(self.store.load())
        return self._state

    def _verified_state(self, operation: str) -> EngineState:
        """:meth:`_fresh_state`, its files hashed first: ``operation`` rewrites data read from
        them (``engine.verified.verified_snapshot``; bad caches are rebuilt)."""
        state = self._fresh_state()
        snapshot = verified_snapshot(self.store, state.snapshot, operation)
        return state if snapshot is None else self._load_state(snapshot)

    def _prepare(
        self,
        state: EngineState,
        report: OperationReport,
        plan: Callable[[Snapshot], tuple[list[Document], np.ndarray]],
        progress: ProgressFn | None,
    ) -> UpdateContext | None:
        """The write's delta on ``state`` (None: nothing to change); touches no file."""
        to_add, remove_keys = plan(state.snapshot)
        if not to_add and remove_keys.size == 0:
            return None
        ctx = self._context(state, report)
        removed_chunks = remove_docs(ctx, remove_keys)
        change = add_docs(ctx, to_add, self.config.chunking, removed_chunks, remove_keys, progress)
        for comp in self.components:
            if progress:
                progress(comp.name, 0, 1)
            with report.stage(comp.name):
                comp.update(ctx, change)
            if progress:
                progress(comp.name, 1, 1)
        return ctx

    def _finish(
        self, state: EngineState, ctx: UpdateContext | None, report: OperationReport
    ) -> None:
        """Inside the writer lock: commit a prepared write (``ctx`` None: nothing to do)."""
        if ctx is None:
            report.version = state.version
        else:
            self._commit(state, ctx, report)

    def _context(self, state: EngineState, report: OperationReport) -> UpdateContext:
        """A new operation on ``state``: a fresh delta and the version's shared read state."""
        return UpdateContext(
            snapshot=state.snapshot,
            delta=self.store.new_delta(),
            config=self.config,
            embedder=MeteredEmbedder(self.embedder, report),
            llm=MeteredLLM(self.llm, report, self.config.yield_floor),
            report=report,
            hyperplanes=state.snapshot.hyperplanes,
            text_index=state.text_index,
            vectors=state.vectors,
            views=state.views,
            carried=state.carried,
        )

    def _commit(self, state: EngineState, ctx: UpdateContext, report: OperationReport) -> None:
        delta = ctx.delta
        with report.stage("vector_index"):
            add_ids, add_kinds, add_mat = delta.vectors()
            vectors = state.vectors.updated(
                add_ids, add_kinds, add_mat, delta.dead_nodes, delta.version, ctx.neighbour_lists
            )
        with report.stage("caches"):
            root = self.store.root
            stale = self.config.maintenance.cache_stale
            caches, parts = save_caches(root, state.snapshot, state.sparse, vectors, stale, delta)
        with report.stage("commit"):
            counts = _counts_after(state.snapshot, delta)
            if report.llm_yield:  # what this version's write got from its LLM stages
                counts["llm_yield"] = report.llm_yield
            result = self.store.commit(delta, counts=counts, caches=caches)
            vectors.mark_saved(caches.get("vector_cache", {}))
        report.version = result.version
        report.bytes_written = result.bytes_written
        report.nodes_added = int(delta.nodes.num_rows)
        report.nodes_removed = int(delta.dead_nodes.size)
        report.edges_added = int(delta.edges.num_rows)
        with report.stage("reload"):
            snapshot = self.store.advance(state.snapshot, delta)
            new_state = state.advanced(
                snapshot, delta, vectors, self.config, self.components, ctx.carry, parts
            )
        try:
            with report.stage("warm"):
                # Before it serves: the previous version answers queries meanwhile.
                probe = _probe_vector(state.snapshot, add_mat, delta.dead_nodes)
                if probe is not None:
                    vectors.warm(probe)
        finally:
            self._state = new_state

    def maintain(self, wait: float = 0.0) -> OperationReport:
        """Redo over the whole index what writes do locally or on a schedule, and commit.

        Each component's ``maintain`` (the heterograph: important entities selected again,
        Leiden over the whole graph from the stored partition, the attributes and elements
        of what moved written again). A version is committed only when some component had
        something to do.

        Parameters
        ----------
        wait:
            Seconds to wait for the writer lock (as :meth:`compact`).
        """
        report = OperationReport("maintain")
        start = time.perf_counter()
        with self._write_lock, self.store.writer(wait=wait):
            state = self._verified_state("maintain")
            ctx = self._context(state, report)
            done = False
            for comp in self.components:
                with report.stage(comp.name):
                    done = comp.maintain(ctx) or done
            if done:
                self._commit(state, ctx, report)
            else:
                report.version = state.version
        report.seconds = time.perf_counter() - start
        return report

    def compact(self, wait: float = 0.0) -> OperationReport:
        """Merge all segments into one per table and rewrite the vector cache.

        Parameters
        ----------
        wait:
            Seconds to wait for the writer lock when another process (a running service)
            holds it; 0 fails at once with ``IndexLockedError``.
        """
        report = OperationReport("compact")
        start = time.perf_counter()
        with self._write_lock, self.store.writer(wait=wait):
            state = self._verified_state("compact")
            before = self.store.size_bytes()
            stale = self.config.maintenance.cache_stale
            caches, parts = save_caches(
                self.store.root, state.snapshot, state.sparse, state.vectors, stale
            )
            result = self.store.rewrite(state.snapshot, caches=caches)
            report.version = result.version
            report.bytes_written = result.bytes_written
            report.notes.append(f"size {before} -> {self.store.size_bytes()} bytes")
            snapshot = self.store.load(verify=False)
            # The usearch indexes are mapped from the files just written: the compacted
            # vector segment has the new version, so the in-memory bases' versions no
            # longer say which vectors are fresh.
            self._state = self._load_state(snapshot, parts)
        report.seconds = time.perf_counter() - start
        return report

    # ------------------------------------------------------------------ reads
    def query(
        self,
        text: str,
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        **params: Any,
    ) -> QueryResult:
        """Retrieve a context for ``text`` with one search mode."""
        return self.query_batch([text], mode, budget_tokens, top_k, **params)[0]

    def query_batch(
        self,
        texts: Sequence[str],
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        *,
        filter: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> list[QueryResult]:
        """Retrieve for many queries; their embeddings are computed in one call. ``filter``:
        a metadata filter (``engine.filters``) pushed into the search.

        Raises
        ------
        QueryError
            On an unknown mode, unknown or ill-typed mode parameters, a bad budget or top-k,
            a bad filter or an empty query; checked before anything is embedded.
        """
        # Fail fast on bad input, before paying for the embedding.
        self._view(self._state, mode)
        self.parse_params(mode, params)
        parse_filter(filter)
        _check_queries(texts)
        t0 = time.perf_counter()
        qvecs = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        embed_seconds = (time.perf_counter() - t0) / max(len(texts), 1)
        return self.query_vectors(
            texts, qvecs, mode, budget_tokens, top_k, embed_seconds, filter=filter, **params
        )

    def query_vectors(
        self,
        texts: Sequence[str],
        vectors: np.ndarray,
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        embed_seconds: float = 0.0,
        *,
        filter: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> list[QueryResult]:
        """Retrieve for queries whose embeddings were computed by the caller (micro-batching).

        ``vectors`` must come from this index's embedder (``float32[len(texts), dim]``).
        """
        state = self._state
        view = self._view(state, mode)
        mode_params = self.parse_params(mode, params)
        flt = parse_filter(filter)
        _check_queries(texts)
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(texts), self.embedder.dim):
            raise ValueError(
                f"expected query vectors of shape {(len(texts), self.embedder.dim)}, got {vectors.shape}"
            )
        budget = int(
            budget_tokens if budget_tokens is not None else self.config.search.budget_tokens
        )
        if not 0 <= budget <= MAX_QUERY_INT:
            raise QueryError(f"budget_tokens must be between 0 and {MAX_QUERY_INT}, got {budget}")
        k = int(top_k if top_k is not None else self.config.search.top_k)
        if not 0 < k <= MAX_QUERY_INT:
            raise QueryError(f"top_k must be between 1 and {MAX_QUERY_INT}, got {k}")
        allowed, filtered = None, {}
        if flt is not None:  # one evaluation for the batch (docs/guide/filters.md)
            f0 = time.perf_counter()
            share, cap = (
                self.config.search.filter_exact_share,
                self.config.hierarchy.summary_docs_max,
            )
            allowed = state.doc_names.allowed(flt, share, cap)
            filtered = {**allowed.report(), "seconds": round(time.perf_counter() - f0, 6)}
        results = []
        for text, qvec in zip(texts, vectors, strict=True):
            qreport = OperationReport("query")
            info: dict[str, Any] = {"filter": dict(filtered)} if filtered else {}
            query = Query(
                text, qvec, budget, k, mode_params, MeteredLLM(self.llm, qreport), info, allowed
            )
            s0 = time.perf_counter()
            n = rerank_candidates(mode_params, self.config.search)
            if n and self.reranker is not None:
                hits, info["rerank"] = reranked_search(view, mode, query, self.reranker, n)
            else:
                hits = view.search(mode, query)
                if n:  # the server's setup, not the query, lacks it: not a QueryError
                    info["rerank"] = {
                        "warning": "no reranker is configured: the mode order is kept"
                    }
            search_seconds = time.perf_counter() - s0
            report = {
                "mode": mode,
                "version": state.version,
                "nodes": len(hits),
                "tokens": int(sum(h.tokens for h in hits)),
                "tokens_by_kind": tokens_by_kind(hits),
                "budget_tokens": budget,
                "embed_seconds": round(embed_seconds, 6),
                "search_seconds": round(search_seconds, 6),
                "seconds": round(embed_seconds + search_seconds, 6),
                "llm_calls": qreport.llm_calls,
                "prompt_tokens": qreport.prompt_tokens,
                "completion_tokens": qreport.completion_tokens,
                **info,
            }
            results.append(QueryResult(hits, report))
        return results

    def answer(
        self,
        text: str,
        mode: str = "naive",
        budget_tokens: int | None = None,
        *,
        history: Sequence[tuple[str, str]] = (),
        max_tokens: int = ANSWER_MAX_TOKENS,
        **params: Any,
    ) -> QueryResult:
        """Retrieve, then answer citing the retrieved nodes as ``[n]`` (``answer.answer_result``:
        one prompt for every mode and door; ``history``: a chat's earlier turns, whose user
        turns complete the search query, ``conversation.conversation_query``)."""
        query = conversation_query(text, history)
        result = self.query(query, mode, budget_tokens, **params)
        answer_result(self.llm, text, result, history, max_tokens, query=query)
        return result

    def pinned(self) -> PinnedVersion:
        """A read view of the version served now, kept while others commit."""
        return PinnedVersion(self._state.snapshot, self._state.doc_names)

    def parse_params(self, mode: str, params: dict[str, Any]) -> ModeParams:
        """The typed parameters of ``mode`` from user input (``QueryError`` when invalid)."""
        if mode not in self.mode_params:
            self._view(self._state, mode)  # the error that lists the available modes
        return self.mode_params[mode].parse(params, mode)

    def _view(self, state: EngineState, mode: str) -> ComponentView:
        if mode not in state.views:
            raise QueryError(
                f"search mode {mode!r} is not available in this index; available: {sorted(state.views)}"
            )
        return state.views[mode]

    def stats(self) -> dict[str, Any]:
        """Sizes, layout and settings of the version served now (``graphstrata stats``)."""
        state = self._state
        snap = state.snapshot
        kinds, counts = np.unique(snap.nodes.kind, return_counts=True)
        edge_kinds, edge_counts = np.unique(numpy_of(snap.edges.column("kind")), return_counts=True)
        layers = snap.nodes.layer[snap.nodes.kind == int(NodeKind.L)]
        return {
            "path": str(self.store.root),
            "version": snap.version,
            "documents": snap.docs.num_rows,
            "nodes": {NodeKind(int(k)).letter: int(c) for k, c in zip(kinds, counts, strict=True)},
            "edges": int(snap.edges.num_rows),
            "edges_by_kind": {int(k): int(c) for k, c in zip(edge_kinds, edge_counts, strict=True)},
            "hierarchy_layers": int(layers.max()) if layers.size else 0,
            "vectors": len(snap.vectors),
            "size_bytes": self.store.size_bytes(),
            "committed_at": snap.manifest.get("committed_at"),
            "versions": self.store.history(STATS_VERSIONS),
            "segments": {t: len(v) for t, v in snap.manifest["segments"].items()},
            "embedder": snap.manifest["embedder"],
            "llm": self.llm.name,
            "chunking": snap.config["chunking"],
            "hyperplanes": {k: v for k, v in snap.manifest["hyperplanes"].items() if k != "file"},
            "modes": sorted(state.views),
            "maintenance": self.config.maintenance.policies(),
            "yield_floor": dataclasses.asdict(self.config.yield_floor),
            "last_write_yield": snap.manifest.get("counts", {}).get("llm_yield", {}),
            "prompts": {
                "sha256": self.config.prompts.sha256,
                "custom": self.config.prompts.overridden,
            },
        }


def _check_queries(texts: Sequence[str]) -> None:
    if isinstance(texts, str):
        raise QueryError("expected a sequence of query strings, got one string")
    for t in texts:
        if not isinstance(t, str) or not t.strip():
            raise QueryError("query text must be a non-empty string")


def _probe_vector(before: Snapshot, add_mat: np.ndarray, dead: np.ndarray) -> np.ndarray | None:
    """A vector of the change that warms the new version's searches (``VectorIndex.warm``):
    its first new vector, or a deleted node's vector from the version before; None when it
    has neither (a write of unembedded rows only)."""
    if add_mat.shape[0]:
        return np.asarray(add_mat[0], np.float32)
    held = dead[before.vectors.has(dead)] if dead.size else dead
    return before.vectors.get(held[:1])[0] if held.size else None


def _counts_after(snapshot: Snapshot, delta: Delta) -> dict[str, Any]:
    return {"documents_before": snapshot.docs.num_rows, "nodes_before": len(snapshot.nodes)}
