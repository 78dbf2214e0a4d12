"""The engine: one index directory, its backends, its components, and every operation.

Writes are transactions: validate -> chunk -> embed -> components update -> commit. Any
exception before the commit leaves the index at its last committed version. Reads use an
immutable ``EngineState`` (snapshot + vector index + per-mode views) that is swapped
atomically after a commit, so concurrent queries never see a half-applied change.
"""

from __future__ import annotations

import hashlib
import importlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphstrata.core.lsh import sample_hyperplanes
from graphstrata.engine.chunking import chunk_text
from graphstrata.engine.component import (
    ChangeSet,
    Component,
    ComponentView,
    Hit,
    MeteredEmbedder,
    MeteredLLM,
    Query,
    UpdateContext,
)
from graphstrata.engine.config import ConfigError, IndexConfig
from graphstrata.engine.documents import Document, DocumentError, as_documents, validate_batch
from graphstrata.engine.interfaces import LLM, Embedder, LLMRequest
from graphstrata.engine.params import ModeParams, NoParams, QueryError
from graphstrata.engine.prompts import answer_request
from graphstrata.engine.report import OperationReport
from graphstrata.engine.schema import DOC_SCHEMA
from graphstrata.engine.search import DocNames, NaiveView
from graphstrata.engine.store import Snapshot, Store
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex

#: Components shipped with the engine, imported if present: (module, class).
DEFAULT_COMPONENTS: tuple[tuple[str, str], ...] = (
    ("graphstrata.engine.hierarchy", "HierarchyComponent"),
    ("graphstrata.engine.heterograph", "HeterographComponent"),
    ("graphstrata.engine.sparse", "SparseComponent"),
)

ProgressFn = Callable[[str, int, int], None]


def default_components(config: IndexConfig) -> list[Component]:
    comps: list[Component] = []
    for module_name, class_name in DEFAULT_COMPONENTS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        comp = getattr(module, class_name)()
        if comp.enabled(config):
            comps.append(comp)
    return comps


@dataclass
class QueryResult:
    """Retrieved nodes and the query's report."""

    nodes: list[Hit]
    report: dict[str, Any]
    answer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": [h.to_dict() for h in self.nodes], "report": self.report}
        if self.answer is not None:
            out["answer"] = self.answer
        return out

    @property
    def context(self) -> str:
        """The retrieved text grouped by kind, as handed to an LLM."""
        return format_context(self.nodes)


KIND_TITLES = {
    "T": "Text chunks",
    "L": "Summaries",
    "S": "Semantic units",
    "R": "Relationships",
    "A": "Entity attributes",
    "H": "High-level elements",
}


def format_context(hits: Sequence[Hit]) -> str:
    groups: dict[str, list[Hit]] = {}
    for h in hits:
        groups.setdefault(h.kind, []).append(h)
    parts = []
    for kind in ("H", "A", "L", "S", "R", "T"):
        if kind in groups:
            lines = [
                f"- {h.text}" + (f" [{', '.join(h.docs)}]" if h.docs else "") for h in groups[kind]
            ]
            parts.append(f"## {KIND_TITLES[kind]}\n" + "\n".join(lines))
    return "\n\n".join(parts)


@dataclass
class EngineState:
    snapshot: Snapshot
    vectors: VectorIndex
    doc_names: DocNames
    views: dict[str, ComponentView] = field(default_factory=dict)
    text_index: dict[str, int] | None = None

    @property
    def version(self) -> int:
        return self.snapshot.version


def _text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class Engine:
    """An open index with its embedder, LLM and components."""

    def __init__(
        self,
        store: Store,
        config: IndexConfig,
        embedder: Embedder,
        llm: LLM,
        components: list[Component] | None = None,
    ):
        self.store = store
        self.config = config
        self.embedder = embedder
        self.llm = llm
        comps = components if components is not None else default_components(config)
        enabled = store.manifest.get("components_enabled")
        if enabled is not None:
            # Only components that processed every change of this index may serve its modes
            # (one added later would answer from a partial structure).
            comps = [c for c in comps if c.name in enabled]
        self.components = comps
        #: Typed parameters of every mode this index serves (``naive`` is the engine's own).
        self.mode_params: dict[str, type[ModeParams]] = {"naive": NoParams}
        for comp in comps:
            self.mode_params.update({m: comp.mode_params[m] for m in comp.modes})
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
    ) -> Engine:
        config.validate()
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
        return cls(store, config, embedder, llm, comps)

    @classmethod
    def open(
        cls,
        path: str | Path,
        embedder: Embedder,
        llm: LLM,
        version: int | None = None,
        components: list[Component] | None = None,
    ) -> Engine:
        store = Store.open(path, version=version)
        config = IndexConfig.from_dict(store.manifest["config"])
        check_embedder(store.manifest, embedder)
        return cls(store, config, embedder, llm, components)

    # ------------------------------------------------------------------ state
    def _load_state(self, snapshot: Snapshot, vectors: VectorIndex | None = None) -> EngineState:
        if vectors is None:
            vectors = self._open_vectors(snapshot)
        doc_names = DocNames(snapshot)
        state = EngineState(snapshot=snapshot, vectors=vectors, doc_names=doc_names)
        state.views["naive"] = NaiveView(snapshot, vectors, doc_names)
        for comp in self.components:
            view = comp.view(snapshot, vectors, self.config)
            for mode in comp.modes:
                state.views[mode] = view
        return state

    def _open_vectors(self, snapshot: Snapshot) -> VectorIndex:
        dtype = self.config.vector_dtype
        ef = self.config.search.expansion_search
        cache = snapshot.manifest.get("vector_cache")
        if cache:
            path = self.store.root / cache["file"]
            if path.exists():
                return VectorIndex.restore(path, snapshot.vectors, int(cache["version"]), dtype, ef)
        return VectorIndex.build(snapshot.vectors, dtype, ef)

    @property
    def state(self) -> EngineState:
        return self._state

    @property
    def version(self) -> int:
        return self._state.version

    @property
    def modes(self) -> list[str]:
        return list(self._state.views)

    def refresh(self) -> bool:
        """Switch to the newest committed version if another process wrote one."""
        with self._write_lock:
            if not self.store.reload_manifest():
                return False
            self._state = self._load_state(self.store.load())
            return True

    # ------------------------------------------------------------------ writes
    def insert(self, docs: Iterable[Any], progress: ProgressFn | None = None) -> OperationReport:
        """Insert or update documents; an unchanged document is a no-op."""
        report = OperationReport("insert")
        start = time.perf_counter()
        with report.stage("validate"):
            batch = as_documents(docs)
            validate_batch(batch, self.config.ingest)
        with self._write_lock, self.store.writer():
            state = self._fresh_state()
            snapshot = state.snapshot
            existing = _doc_lookup(snapshot)
            to_add: list[Document] = []
            to_remove: list[int] = []
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
            self._run(state, report, to_add, np.asarray(to_remove, dtype=np.int64), progress)
        report.seconds = time.perf_counter() - start
        return report

    def delete(self, doc_ids: Sequence[str], missing_ok: bool = False) -> OperationReport:
        """Delete documents and everything derived only from them."""
        report = OperationReport("delete")
        start = time.perf_counter()
        with self._write_lock, self.store.writer():
            state = self._fresh_state()
            existing = _doc_lookup(state.snapshot)
            unknown = [d for d in doc_ids if d not in existing]
            if unknown and not missing_ok:
                raise DocumentError([f"doc {d!r}: not in the index" for d in unknown])
            keys = np.asarray(
                [existing[d][0] for d in dict.fromkeys(doc_ids) if d in existing], dtype=np.int64
            )
            report.docs_deleted = int(keys.size)
            self._run(state, report, [], keys, None)
        report.seconds = time.perf_counter() - start
        return report

    def _fresh_state(self) -> EngineState:
        """Inside the writer lock: make sure we write on top of the newest version."""
        if self.store.version != self._state.version:
            self._state = self._load_state(self.store.load())
        return self._state

    def _run(
        self,
        state: EngineState,
        report: OperationReport,
        to_add: list[Document],
        remove_keys: np.ndarray,
        progress: ProgressFn | None,
    ) -> None:
        snapshot = state.snapshot
        if not to_add and remove_keys.size == 0:
            report.version = snapshot.version
            return
        delta = self.store.new_delta()
        ctx = UpdateContext(
            snapshot=snapshot,
            delta=delta,
            config=self.config,
            embedder=MeteredEmbedder(self.embedder, report),
            llm=MeteredLLM(self.llm, report),
            report=report,
            hyperplanes=snapshot.hyperplanes,
        )
        removed_chunks = self._remove_docs(ctx, remove_keys)
        change = self._add_docs(ctx, state, to_add, removed_chunks, remove_keys, progress)
        for comp in self.components:
            if progress:
                progress(comp.name, 0, 1)
            with report.stage(comp.name):
                comp.update(ctx, change)
            if progress:
                progress(comp.name, 1, 1)
        self._commit(state, ctx, report)

    def _remove_docs(self, ctx: UpdateContext, keys: np.ndarray) -> np.ndarray:
        if keys.size == 0:
            return np.zeros(0, np.int64)
        nodes = ctx.snapshot.nodes
        chunk_ids = nodes.ids_of_kind(int(NodeKind.T))
        chunk_docs = nodes.docs_of(chunk_ids)
        wanted = set(keys.tolist())
        removed = np.asarray(
            [cid for cid, d in zip(chunk_ids.tolist(), chunk_docs, strict=True) if wanted & set(d)],
            dtype=np.int64,
        )
        ctx.delta.delete_nodes(removed)
        ctx.delta.delete_docs(keys)
        ctx.report.chunks_removed += int(removed.size)
        return removed

    def _add_docs(
        self,
        ctx: UpdateContext,
        state: EngineState,
        docs: list[Document],
        removed_chunks: np.ndarray,
        removed_keys: np.ndarray,
        progress: ProgressFn | None,
    ) -> ChangeSet:
        cfg = self.config
        keys = ctx.delta.new_doc_keys(len(docs))
        texts: list[str] = []
        tokens: list[int] = []
        chunk_docs: list[int] = []
        n_chunks: list[int] = []
        with ctx.report.stage("chunk"):
            for key, doc in zip(keys.tolist(), docs, strict=True):
                chunks = chunk_text(doc.text, cfg.chunking)
                n_chunks.append(len(chunks))
                for c in chunks:
                    texts.append(c.text)
                    tokens.append(c.tokens)
                    chunk_docs.append(key)
        ids = ctx.delta.new_node_ids(len(texts))
        vectors = self._embed_chunks(ctx, state, texts, removed_chunks, progress)
        ctx.delta.add_nodes(
            ids=ids,
            kind=int(NodeKind.T),
            text=texts,
            tokens=np.asarray(tokens, dtype=np.int32),
            docs=[[k] for k in chunk_docs],
        )
        ctx.delta.add_vectors(ids, int(NodeKind.T), vectors)
        ctx.remember_vectors(ids, vectors)
        ctx.delta.add_docs(
            pa.table(
                {
                    "key": keys,
                    "doc_id": [d.doc_id for d in docs],
                    "title": [d.title for d in docs],
                    "source": [d.source for d in docs],
                    "sha256": [d.sha256 for d in docs],
                    "metadata": [_json(d.metadata) for d in docs],
                    "n_chars": np.asarray([len(d.text) for d in docs], dtype=np.int64),
                    "n_chunks": np.asarray(n_chunks, dtype=np.int32),
                    "version": np.full(len(docs), ctx.delta.version, np.int64),
                },
                schema=DOC_SCHEMA,
            )
        )
        ctx.report.chunks_added += len(texts)
        return ChangeSet(
            added_chunk_ids=ids,
            added_chunk_texts=texts,
            added_chunk_tokens=np.asarray(tokens, dtype=np.int32),
            added_chunk_docs=np.asarray(chunk_docs, dtype=np.int64),
            added_chunk_vectors=vectors,
            removed_chunk_ids=removed_chunks,
            removed_doc_keys=removed_keys,
            added_doc_keys=keys,
        )

    def _embed_chunks(
        self,
        ctx: UpdateContext,
        state: EngineState,
        texts: list[str],
        removed_chunks: np.ndarray,
        progress: ProgressFn | None,
    ) -> np.ndarray:
        """Embed each distinct text once; reuse vectors of identical committed chunks."""
        dim = self.embedder.dim
        out = np.empty((len(texts), dim), dtype=np.float32)
        if not texts:
            return out
        known = self._text_index(state)
        todo: dict[str, list[int]] = {}
        reuse_rows: list[int] = []
        reuse_ids: list[int] = []
        for i, text in enumerate(texts):
            key = _text_key(text)
            if key in known:
                reuse_rows.append(i)
                reuse_ids.append(known[key])
            else:
                todo.setdefault(text, []).append(i)
        if reuse_rows:
            out[reuse_rows] = state.snapshot.vectors.get(np.asarray(reuse_ids, dtype=np.int64))
        unique = list(todo)
        batch = 256
        for start in range(0, len(unique), batch):
            part = unique[start : start + batch]
            mat = ctx.embedder.embed(part, stage="embed_chunks")
            ctx.report.chunks_embedded += len(part)
            for text, row in zip(part, mat, strict=True):
                out[todo[text]] = row
            if progress:
                progress("embed", min(start + batch, len(unique)), len(unique))
        if reuse_rows:
            ctx.report.notes.append(f"reused {len(reuse_rows)} chunk vectors")
        return out

    def _text_index(self, state: EngineState) -> dict[str, int]:
        if state.text_index is None:
            nodes = state.snapshot.nodes
            chunk_ids = nodes.ids_of_kind(int(NodeKind.T))
            texts = nodes.text_of(chunk_ids)
            state.text_index = {
                _text_key(t): int(i) for t, i in zip(texts, chunk_ids.tolist(), strict=True)
            }
        return state.text_index

    def _commit(self, state: EngineState, ctx: UpdateContext, report: OperationReport) -> None:
        delta = ctx.delta
        with report.stage("vector_index"):
            add_ids, add_kinds, add_mat = delta.vectors()
            vectors = state.vectors.updated(add_ids, add_kinds, add_mat, delta.dead_nodes)
            extra: dict[str, Path] = {}
            cache = state.snapshot.manifest.get("vector_cache")
            cached_version = int(cache["version"]) if cache else -1
            stale = len(state.snapshot.vectors.since(cached_version)[0]) + len(add_ids)
            if stale >= max(2048, vectors.count() // 4):
                # Amortized: the usearch cache is rewritten when a quarter of the vectors are
                # newer than it, so opening stays fast and small inserts write little.
                path = self.store.root / "vcache" / f"usearch-v{delta.version:08d}.npz"
                path.parent.mkdir(exist_ok=True)
                vectors.save(path)
                extra["vector_cache"] = path
        with report.stage("commit"):
            counts = _counts_after(state.snapshot, delta)
            result = self.store.commit(delta, counts=counts, extra_files=extra)
        report.version = result.version
        report.bytes_written = result.bytes_written
        report.nodes_added = int(delta.nodes.num_rows)
        report.nodes_removed = int(delta.dead_nodes.size)
        report.edges_added = int(delta.edges.num_rows)
        with report.stage("reload"):
            self._state = self._load_state(self.store.load(verify=False), vectors)

    def compact(self) -> OperationReport:
        """Merge all segments into one per table and rewrite the vector cache."""
        report = OperationReport("compact")
        start = time.perf_counter()
        with self._write_lock, self.store.writer():
            state = self._fresh_state()
            before = self.store.size_bytes()
            path = self.store.root / "vcache" / f"usearch-v{state.version + 1:08d}.npz"
            path.parent.mkdir(exist_ok=True)
            state.vectors.save(path)
            result = self.store.rewrite(state.snapshot, extra_files={"vector_cache": path})
            report.version = result.version
            report.bytes_written = result.bytes_written
            report.notes.append(f"size {before} -> {self.store.size_bytes()} bytes")
            self._state = self._load_state(self.store.load(verify=False), state.vectors)
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
        **params: Any,
    ) -> list[QueryResult]:
        """Retrieve for many queries; their embeddings are computed in one call.

        Raises
        ------
        QueryError
            On an unknown mode, unknown or ill-typed mode parameters, a bad budget or top-k,
            or an empty query; checked before anything is embedded.
        """
        # Fail fast on bad input, before paying for the embedding.
        self._view(self._state, mode)
        self.parse_params(mode, params)
        _check_queries(texts)
        t0 = time.perf_counter()
        qvecs = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        embed_seconds = (time.perf_counter() - t0) / max(len(texts), 1)
        return self.query_vectors(
            texts, qvecs, mode, budget_tokens, top_k, embed_seconds=embed_seconds, **params
        )

    def query_vectors(
        self,
        texts: Sequence[str],
        vectors: np.ndarray,
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        embed_seconds: float = 0.0,
        **params: Any,
    ) -> list[QueryResult]:
        """Retrieve for queries whose embeddings were computed by the caller (micro-batching).

        ``vectors`` must come from this index's embedder (``float32[len(texts), dim]``).
        """
        state = self._state
        view = self._view(state, mode)
        mode_params = self.parse_params(mode, params)
        _check_queries(texts)
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.shape != (len(texts), self.embedder.dim):
            raise ValueError(
                f"expected query vectors of shape {(len(texts), self.embedder.dim)}, got {vectors.shape}"
            )
        budget = int(
            budget_tokens if budget_tokens is not None else self.config.search.budget_tokens
        )
        if budget < 0:
            raise QueryError(f"budget_tokens must be >= 0, got {budget}")
        k = int(top_k if top_k is not None else self.config.search.top_k)
        if k <= 0:
            raise QueryError(f"top_k must be > 0, got {k}")
        results = []
        for text, qvec in zip(texts, vectors, strict=True):
            qreport = OperationReport("query")
            info: dict[str, Any] = {}
            query = Query(text, qvec, budget, k, mode_params, MeteredLLM(self.llm, qreport), info)
            s0 = time.perf_counter()
            hits = view.search(mode, query)
            search_seconds = time.perf_counter() - s0
            report = {
                "mode": mode,
                "version": state.version,
                "nodes": len(hits),
                "tokens": int(sum(h.tokens for h in hits)),
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
        self, text: str, mode: str = "naive", budget_tokens: int | None = None, **params: Any
    ) -> QueryResult:
        """Retrieve, then answer with the configured LLM using one fixed prompt for all modes."""
        result = self.query(text, mode, budget_tokens, **params)
        report = OperationReport("answer")
        request: LLMRequest = answer_request(text, result.context)
        start = time.perf_counter()
        (response,) = MeteredLLM(self.llm, report).complete("answer", [request])
        result.answer = response.text.strip()
        result.report["answer_seconds"] = round(time.perf_counter() - start, 6)
        result.report["llm_calls"] += report.llm_calls
        result.report["prompt_tokens"] += report.prompt_tokens
        result.report["completion_tokens"] += report.completion_tokens
        return result

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
        state = self._state
        snap = state.snapshot
        kinds, counts = np.unique(snap.nodes.kind, return_counts=True)
        edge_kinds, edge_counts = np.unique(
            snap.edges.column("kind").to_numpy(), return_counts=True
        )
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
            "segments": {t: len(v) for t, v in snap.manifest["segments"].items()},
            "embedder": snap.manifest["embedder"],
            "llm": self.llm.name,
            "chunking": snap.config["chunking"],
            "hyperplanes": {k: v for k, v in snap.manifest["hyperplanes"].items() if k != "file"},
            "modes": sorted(state.views),
        }


def _check_queries(texts: Sequence[str]) -> None:
    if isinstance(texts, str):
        raise QueryError("expected a sequence of query strings, got one string")
    for t in texts:
        if not isinstance(t, str) or not t.strip():
            raise QueryError("query text must be a non-empty string")


def check_embedder(manifest: dict[str, Any], embedder: Embedder) -> None:
    """Opening an index with another embedder than the one that built it is an error."""
    want = manifest["embedder"]
    if want["name"] != embedder.name or int(want["dim"]) != int(embedder.dim):
        raise ConfigError(
            f"this index was built with embedder {want['name']!r} (dim {want['dim']}), "
            f"but {embedder.name!r} (dim {embedder.dim}) was given; open it with the same embedder"
        )


def _doc_lookup(snapshot: Snapshot) -> dict[str, tuple[int, str]]:
    docs = snapshot.docs
    return {
        d: (int(k), s)
        for d, k, s in zip(
            docs.column("doc_id").to_pylist(),
            docs.column("key").to_pylist(),
            docs.column("sha256").to_pylist(),
            strict=True,
        )
    }


def _json(obj: Any) -> str:
    import json

    return json.dumps(dict(obj), ensure_ascii=False, sort_keys=True, default=str)


def _counts_after(snapshot: Snapshot, delta: Any) -> dict[str, Any]:
    return {"documents_before": snapshot.docs.num_rows, "nodes_before": len(snapshot.nodes)}
