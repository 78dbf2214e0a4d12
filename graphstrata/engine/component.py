"""The contract between the engine and its retrieval structures (hierarchy, heterograph).

A component turns chunk changes into node/edge/vector changes of its own (``update``) and
serves the search modes it owns from a per-version view (``view``). The engine owns the
transaction: components only write into the ``Delta`` of the context, so a failure anywhere
aborts the whole operation with nothing committed (docs/architecture.md, "Write path" and
"Where things go").

Every new vector goes through ``UpdateContext.embed_nodes`` (one embedding path: dedupe,
reuse, batches), and every view cites documents through the one ``DocNames`` of its version.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from graphstrata.core import sets
from graphstrata.engine.allowed import Allowed, DocNodes
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.doc_records import ALLOWED_MEMO, DocRecords, LastFilters
from graphstrata.engine.extraction import YieldConfig, record_items, tally_answers
from graphstrata.engine.filters import Filter
from graphstrata.engine.graph_bases import NeighbourLists
from graphstrata.engine.interfaces import LLM, Embedder, LLMError, LLMRequest, LLMResponse
from graphstrata.engine.layered import LayeredDict
from graphstrata.engine.params import ModeParams
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.report import OperationReport
from graphstrata.engine.sparse.index import SparseParts
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.store.arrow_numpy import numpy_of
from graphstrata.engine.types import EMBEDDED_KINDS, NodeKind
from graphstrata.engine.vectors import VectorIndex
from graphstrata.engine.versioned import Versioned

#: ``progress(stage, done, total)``: called as long operations advance.
ProgressFn = Callable[[str, int, int], None]


class MeteredLLM:
    """Wraps an LLM: one ``complete`` per stage batch, with calls, tokens and what the answers
    held in the report (``engine.extraction``); a write's stages are held to ``floor``."""

    def __init__(self, llm: LLM, report: OperationReport, floor: YieldConfig | None = None):
        self.llm = llm
        self.report = report
        self.floor = floor

    @property
    def name(self) -> str:
        """The wrapped backend's name."""
        return self.llm.name

    def complete(self, stage: str, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """Answer one stage's whole batch; cached answers are counted apart from calls.

        Reasoning blocks (``<think>...</think>``) are removed from the answers and counted.

        Raises
        ------
        LLMError
            When the backend fails or returns another number of answers than prompts.
        """
        if not requests:
            return []
        with self.report.stage(f"llm:{stage}"):
            responses = self.llm.complete(list(requests))
        if len(responses) != len(requests):
            raise LLMError(
                f"{self.llm.name}: {len(requests)} prompts but {len(responses)} answers in stage {stage}"
            )
        self.report.add_llm(
            stage,
            calls=sum(1 for r in responses if not r.cached),
            prompt_tokens=sum(r.prompt_tokens for r in responses if not r.cached),
            completion_tokens=sum(r.completion_tokens for r in responses if not r.cached),
            cached=sum(1 for r in responses if r.cached),
        )
        return tally_answers(self.report.llm_yield, requests, responses)

    def record_yield(
        self,
        task: str,
        items: Sequence[int],
        answers: Sequence[str],
        usable: Sequence[bool] | None = None,
    ) -> None:
        """Record the items each input of ``task`` yielded and hold them to the floor
        (``engine.extraction.record_items``; ``usable``: which answers could be read).

        Raises
        ------
        ExtractionYieldError
            When the share of inputs that yielded an item is below the floor.
        """
        record_items(self.report.llm_yield, task, items, answers, self.floor, self.llm.name, usable)


class MeteredEmbedder:
    """Wraps an Embedder, counting embedded texts and checking shapes."""

    def __init__(self, embedder: Embedder, report: OperationReport):
        self.embedder = embedder
        self.report = report

    @property
    def dim(self) -> int:
        """The embedding dimension."""
        return self.embedder.dim

    def embed(self, texts: Sequence[str], stage: str = "embed") -> np.ndarray:
        """float32 ``[len(texts), dim]``, timed under ``stage`` and counted in ``embedded``.

        Components call ``UpdateContext.embed_nodes`` instead, which dedupes and reuses.
        """
        if len(texts) == 0:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        with self.report.stage(stage):
            mat = np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)
        if mat.shape != (len(texts), self.embedder.dim):
            raise ValueError(
                f"embedder returned shape {mat.shape} for {len(texts)} texts of dim {self.embedder.dim}"
            )
        self.report.embedded += len(texts)
        return mat


@dataclass
class ChangeSet:
    """The chunk-level change of one operation, as components see it.

    ``added_*`` describe the new T nodes (already in the delta, with vectors);
    ``removed_chunk_ids`` are T nodes of the committed snapshot that this operation deletes
    (already tombstoned in the delta).
    """

    added_chunk_ids: np.ndarray
    added_chunk_texts: list[str]
    added_chunk_tokens: np.ndarray
    added_chunk_docs: np.ndarray  # doc key of each new chunk
    added_chunk_vectors: np.ndarray
    removed_chunk_ids: np.ndarray
    removed_doc_keys: np.ndarray
    added_doc_keys: np.ndarray

    @classmethod
    def nothing(cls, dim: int) -> ChangeSet:
        """No chunk added or removed (a maintenance operation), vectors of ``dim``."""
        none = np.zeros(0, np.int64)
        return cls(none, [], none, none, np.zeros((0, dim), np.float32), none, none, none)

    @property
    def empty(self) -> bool:
        """True when the operation neither adds nor removes a chunk."""
        return self.added_chunk_ids.size == 0 and self.removed_chunk_ids.size == 0


#: Texts embedded per call to the embedder (bounds memory; progress is reported per batch).
EMBED_BATCH = 256


def text_key(text: str) -> str:
    """The key of a text in the reuse indexes: its SHA-1 (hex)."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class TextIndex:
    """``(kind, text_key(text)) -> id`` of a live node of one version that has a vector.

    Built lazily, one kind at a time, and held by the engine's per-version state, so the
    operations of one version share it instead of re-hashing every text each time. After a
    commit the kinds already built are advanced by the rows the delta changed
    (:meth:`advanced`), not re-hashed (issue 17: hashing every text was O(N) per write).

    Parameters
    ----------
    snapshot:
        The committed version whose nodes are indexed.
    """

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self._by_kind: dict[int, LayeredDict[str, int]] = {}
        # Every holder of a key held by more than one node of the kind (a repeated text),
        # so that removing the node a key maps to hands it to the next one. Rebuilding the
        # kind instead took 0.69 s for the 409k units of a 100k-chunk index, in any write
        # that deleted one of 319 repeated units (issue 17).
        self._holders: dict[int, dict[str, frozenset[int]]] = {}

    def of_kind(self, kind: int) -> Mapping[str, int]:
        """The index of one kind (built on first use); a repeated text maps to its last id."""
        kind = int(kind)
        if kind not in self._by_kind:
            nodes = self.snapshot.nodes
            ids = nodes.ids_of_kind(kind)
            ids = ids[self.snapshot.vectors.has(ids)]
            index: dict[str, int] = {}
            holders: dict[str, frozenset[int]] = {}
            for text, node in zip(nodes.text_of(ids), ids.tolist(), strict=True):
                key = text_key(text)
                if key in index:
                    holders[key] = holders.get(key, frozenset((index[key],))) | {node}
                index[key] = node
            self._by_kind[kind], self._holders[kind] = LayeredDict(index), holders
        return self._by_kind[kind]

    @property
    def built_kinds(self) -> list[int]:
        """The kinds indexed so far (the others are built on first use)."""
        return sorted(self._by_kind)

    def lookup(self, kinds: Sequence[int], key: str) -> int | None:
        """The id of a node of the first of ``kinds`` that holds the text, else None."""
        for kind in kinds:
            node = self.of_kind(kind).get(key)
            if node is not None:
                return node
        return None

    def advanced(
        self, snapshot: Snapshot, delta: Delta, maintenance: MaintenanceConfig
    ) -> TextIndex:
        """This index (of the previous version) moved to ``snapshot``, which ``delta`` committed
        (its mappings folded by ``maintenance.layered_dict``).

        The rows the delta replaced or deleted leave under their old texts; its live rows
        with a vector join under their new ones. Equal to a fresh index of ``snapshot``
        (tested); the previous version's index is left as it was.
        """
        out = TextIndex(snapshot)
        if not self._by_kind:
            return out
        old = self.snapshot.nodes
        rows = delta.nodes
        row_ids = numpy_of(rows.column("id"))
        leaving = sets.union(delta.dead_nodes, row_ids)
        leaving = leaving[old.contains(leaving)]
        leaving = leaving[self.snapshot.vectors.has(leaving)]
        old_rows = old.rows(leaving)
        new_nodes = snapshot.nodes
        joining = row_ids[new_nodes.contains(row_ids)]
        joining = np.sort(joining[snapshot.vectors.has(joining)])
        join_kinds = new_nodes.kind[new_nodes.rows(joining)]
        fold = maintenance.layered_dict
        for kind, index in self._by_kind.items():
            mine = old.kind[old_rows] == np.uint8(kind)
            gone = [
                (text_key(t), int(i)) for t, i in zip(old.texts_at(old_rows[mine]), leaving[mine])
            ]
            # Copy on write of the changes only (``LayeredDict``): not every text key per write.
            index, holders = index.changed(fold), dict(self._holders[kind])
            for key, node in gone:
                rest = holders.pop(key, frozenset((node,))) - {node}
                if len(rest) > 1:
                    holders[key] = rest
                if index.get(key) == node:
                    if rest:
                        index[key] = max(rest)  # the holder a fresh index maps it to
                    else:
                        del index[key]
            ids = joining[join_kinds == np.uint8(kind)]
            for text, node in zip(new_nodes.text_of(ids), ids.tolist(), strict=True):
                key = text_key(text)
                if key in index:
                    holders[key] = holders.get(key, frozenset((index[key],))) | {node}
                index[key] = max(node, index.get(key, node))
            out._by_kind[kind], out._holders[kind] = index, holders
        return out


@dataclass
class UpdateContext:
    """What a component may read and write during one operation.

    ``text_index`` is the per-version reuse index (``TextIndex``); the engine passes the
    one of its state, and a context made without it builds its own. ``vectors`` is the
    committed version's vector index, for stages that search the committed vectors without
    copying them (semantic edges above ``semantic_exact_below``); None reads the snapshot.
    ``views`` are the committed version's views by mode, whose read structures a component
    may reuse instead of rebuilding them (the heterograph reads the ``graph`` view's names).
    ``carried`` is what the write that committed that version left for the next write, by
    component name (``EngineState.carried``); a component puts what it leaves for the
    next write into ``carry`` (the state of the version this operation commits holds it;
    dropped with a failed operation).
    """

    snapshot: Snapshot
    delta: Delta
    config: IndexConfig
    embedder: MeteredEmbedder
    llm: MeteredLLM
    report: OperationReport
    hyperplanes: np.ndarray
    text_index: TextIndex | None = None
    vectors: VectorIndex | None = None
    views: Mapping[str, ComponentView] = field(default_factory=dict)
    carried: Mapping[str, Any] = field(default_factory=dict)
    carry: dict[str, Any] = field(default_factory=dict)
    #: Near neighbours of this operation's new vectors among themselves, when a stage found
    #: them anyway (the heterograph's semantic edges of a build): a new vector base made
    #: from its k-NN graph starts from them (``engine.graph_bases``).
    neighbour_lists: NeighbourLists | None = None
    _pending_vectors: dict[int, np.ndarray] = field(default_factory=dict)
    _pending_texts: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.text_index is None:
            self.text_index = TextIndex(self.snapshot)

    def embed_nodes(
        self,
        ids: np.ndarray,
        kind: int,
        texts: Sequence[str],
        stage: str = "embed",
        *,
        reuse_kinds: Sequence[int] | None = None,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """Vectors of new nodes, each distinct text embedded at most once, recorded in the delta.

        A text already embedded earlier in this operation, or held by a live committed node,
        reuses that vector (the embedder is deterministic, so the vector is the same); the
        others are embedded in batches of ``EMBED_BATCH``. For chunks (kind T) the report
        counts the texts embedded (``chunks_embedded``) and notes how many chunk vectors
        were reused.

        Parameters
        ----------
        ids:
            The new nodes' ids (int64), one per text.
        kind:
            Their node kind (one of ``EMBEDDED_KINDS``).
        texts:
            Their texts.
        stage:
            Report stage of the embedder calls.
        reuse_kinds:
            Kinds whose vectors may be reused, in order of preference; default ``(kind,)``.
            Summaries also reuse chunks: an extractive summary often repeats a child's text.
        progress:
            Called as ``progress("embed", done, total)`` after each batch.

        Returns
        -------
        numpy.ndarray
            float32 ``[len(texts), dim]``, row i the vector of ``ids[i]`` at the index's
            storage precision (``Delta.add_vectors``).
        """
        ids = np.asarray(ids, dtype=np.int64)
        if ids.shape[0] != len(texts):
            raise ValueError(f"embed_nodes: {ids.shape[0]} ids but {len(texts)} texts")
        if int(kind) not in EMBEDDED_KINDS:
            raise ValueError(f"embed_nodes: kind {int(kind)} carries no embedding")
        kinds = tuple(int(k) for k in (reuse_kinds if reuse_kinds is not None else (kind,)))
        out = np.empty((len(texts), self.embedder.dim), dtype=np.float32)
        if not texts:
            return out
        assert self.text_index is not None
        keys = [text_key(t) for t in texts]
        todo: dict[str, list[int]] = {}
        reuse_rows: list[int] = []
        reuse_ids: list[int] = []
        for i, key in enumerate(keys):
            pending = next(
                (self._pending_texts[(k, key)] for k in kinds if (k, key) in self._pending_texts),
                None,
            )
            if pending is not None:
                out[i] = pending
                continue
            node = self.text_index.lookup(kinds, key)
            if node is not None:
                reuse_rows.append(i)
                reuse_ids.append(node)
            else:
                todo.setdefault(key, []).append(i)
        if reuse_rows:
            out[reuse_rows] = self.snapshot.vectors.get(np.asarray(reuse_ids, dtype=np.int64))
        unique = list(todo)
        if progress and unique:  # the stage's start: rates count from here
            progress("embed", 0, len(unique))
        for start in range(0, len(unique), EMBED_BATCH):
            part = unique[start : start + EMBED_BATCH]
            mat = self.embedder.embed([texts[todo[k][0]] for k in part], stage=stage)
            for key, row in zip(part, mat, strict=True):
                out[todo[key]] = row
            if progress:
                progress("embed", min(start + EMBED_BATCH, len(unique)), len(unique))
        if int(kind) == int(NodeKind.T):
            self.report.chunks_embedded += len(unique)
            if reuse_rows:
                self.report.notes.append(f"reused {len(reuse_rows)} chunk vectors")
        # From here on this operation sees the vectors as stored, as every later one will.
        out = self.delta.add_vectors(ids, int(kind), out)
        for node_id, key, row in zip(ids.tolist(), keys, out, strict=True):
            self._pending_vectors[node_id] = row
            self._pending_texts[(int(kind), key)] = row
        return out

    def vectors_of(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """Vectors of nodes that are committed or were embedded earlier in this operation.

        Parameters
        ----------
        ids:
            Node ids.

        Returns
        -------
        numpy.ndarray
            float32 ``[len(ids), dim]``.
        """
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.shape[0], self.embedder.dim), dtype=np.float32)
        if ids.size == 0:
            return out
        pending = np.array([int(i) in self._pending_vectors for i in ids], dtype=bool)
        if np.any(~pending):
            out[~pending] = self.snapshot.vectors.get(ids[~pending])
        for j in np.nonzero(pending)[0]:
            out[j] = self._pending_vectors[int(ids[j])]
        return out


class DocNames:
    """doc key -> user ``doc_id`` of one version; the engine makes one per version.

    Built on first use (a Python pass over every document: O(N) at each write when it was
    eager), or advanced from the previous version's by a commit's documents (``advanced``),
    copying only the change (``LayeredDict``).

    Parameters
    ----------
    snapshot:
        The version whose documents are named.
    """

    def __init__(self, snapshot: Snapshot, names: LayeredDict[int, str] | None = None):
        self._snapshot = snapshot
        self._names = names
        self._records: DocRecords | None = None
        self._doc_nodes: DocNodes | None = None
        self._allowed: LastFilters[Allowed] = LastFilters(ALLOWED_MEMO)

    @property
    def records(self) -> DocRecords:
        """The version's documents as hits cite them and filters read them (built once)."""
        if self._records is None:
            self._records = DocRecords(self._snapshot.docs)
        return self._records

    def documents(self, lists: Sequence[Sequence[int]]) -> list[list[dict[str, Any]]]:
        """Per list of doc keys, ``{"doc_id", "title", "metadata"}`` of each, aligned with
        ``self(keys)`` (each document read once: ``DocRecords.cited``)."""
        found = self.records.cited(sorted({int(k) for keys in lists for k in keys}))
        return [[found[k] for k in keys if k in found] for keys in lists]

    def allowed(self, flt: Filter, exact_share: float, summary_docs_max: int = 0) -> Allowed:
        """The nodes of this version a parsed filter (``engine.filters``) allows (``Allowed``
        explains the arguments; memoized for the last filters)."""

        def make() -> Allowed:
            if self._doc_nodes is None:
                self._doc_nodes = DocNodes(self._snapshot.nodes)
            keys = self.records.allowed_keys(flt)
            nodes = self._snapshot.nodes
            return Allowed(nodes, self._doc_nodes, keys, exact_share, summary_docs_max)

        return self._allowed.get(repr((flt, exact_share, summary_docs_max)), make)

    def _mapping(self) -> LayeredDict[int, str]:
        names = self._names
        if names is None:
            docs = self._snapshot.docs
            keys = docs.column("key").to_pylist()
            ids = docs.column("doc_id").to_pylist()
            names = self._names = LayeredDict(dict(zip(keys, ids, strict=True)))
        return names

    def __call__(self, keys: Sequence[int]) -> list[str]:
        """The doc_ids of ``keys``, in order; keys of deleted documents are skipped."""
        names = self._mapping()
        return [names[k] for k in keys if k in names]

    def advanced(
        self, snapshot: Snapshot, delta: Delta, maintenance: MaintenanceConfig
    ) -> DocNames:
        """The names of ``snapshot``, which ``delta`` committed on this version: built from
        this one's when it exists (its dead documents out, its new ones in; folded by
        ``maintenance.layered_dict``), else lazily."""
        if self._names is None:
            return DocNames(snapshot)
        names = self._names.changed(maintenance.layered_dict)
        for key in delta.dead_docs.tolist():
            names.pop(int(key), None)
        docs = delta.docs
        keys = docs.column("key").to_pylist()
        for key, doc_id in zip(keys, docs.column("doc_id").to_pylist(), strict=True):
            names[int(key)] = doc_id
        return DocNames(snapshot, names)


@dataclass
class Hit:
    """One retrieved node, with its citation."""

    id: int
    kind: str
    layer: int
    text: str
    score: float
    tokens: int
    docs: list[str]
    #: ``{"doc_id", "title", "metadata"}`` of each of ``docs``, in the same order.
    documents: list[dict[str, Any]] = field(default_factory=list)
    #: Where the node's text lies in its documents (``engine/ingest/spans.py``): a chunk's
    #: ``{"doc_id", "page", "section", "start", "end"}`` per page and section it covers.
    spans: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (score rounded to 6 decimals)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "layer": self.layer,
            "text": self.text,
            "score": round(float(self.score), 6),
            "tokens": self.tokens,
            "docs": self.docs,
            "documents": self.documents,
            "spans": self.spans,
        }


@dataclass
class Query:
    """A query as a view receives it; the engine has embedded it already."""

    text: str
    vector: np.ndarray
    budget_tokens: int
    top_k: int
    params: ModeParams
    llm: MeteredLLM | None
    report: dict[str, Any]
    #: The nodes a metadata filter allows (``engine.filtered``); None: no filter.
    allowed: Allowed | None = None


class VersionState(Protocol):
    """What a component's view reads of one version's state (``engine.state.EngineState``,
    which owns every structure that outlives a version)."""

    @property
    def snapshot(self) -> Snapshot:
        """The committed version's tables."""
        ...

    @property
    def vectors(self) -> VectorIndex:
        """Its vector indexes."""
        ...

    @property
    def doc_names(self) -> DocNames:
        """Its doc key -> doc_id names."""
        ...

    @property
    def sparse(self) -> SparseParts:
        """Its BM25 collections (``SparseParts.index`` gives a view its index)."""
        ...

    @property
    def members(self) -> Mapping[str, Versioned]:
        """The components' own per-version state by name (:meth:`Component.state_members`)."""
        ...


class ComponentView(ABC):
    """Per-version, read-only search structures of a component, built from the version's
    state (:class:`VersionState`: its BM25 parts, vectors, doc names)."""

    @abstractmethod
    def search(self, mode: str, query: Query) -> list[Hit]:
        """The hits of ``query`` in ``mode`` (one of the component's modes), best first."""


class Component(ABC):
    """A retrieval structure kept in the index (hierarchy, heterograph)."""

    #: Stable name, used for manifest metadata and state keys.
    name: str = ""
    #: Search modes this component serves.
    modes: tuple[str, ...] = ()
    #: The typed parameters of each mode (``engine.params``); every mode has an entry.
    mode_params: ClassVar[dict[str, type[ModeParams]]] = {}
    #: Node kinds the views search by BM25 (``EngineState.sparse``): the engine keeps
    #: their postings in the index's sparse cache, so a new process maps them.
    sparse_kinds: ClassVar[tuple[int, ...]] = ()

    def enabled(self, config: IndexConfig) -> bool:
        """Whether an index with ``config`` keeps this component (default: always)."""
        return True

    def state_members(self, snapshot: Snapshot, config: IndexConfig) -> dict[str, Versioned]:
        """The per-version structures this component's views read, built from ``snapshot``
        and held by the engine's state (``VersionState.members``), which advances them with
        each commit; names must be unique across components. Default: none."""
        return {}

    def maintain(self, ctx: UpdateContext) -> bool:
        """Redo, over everything, the work that writes do locally or on a schedule.

        Written into ``ctx.delta`` like :meth:`update`; returns whether there was anything
        to do. Default: nothing (a component whose writes are exact needs no maintenance).
        """
        return False

    @abstractmethod
    def update(self, ctx: UpdateContext, change: ChangeSet) -> None:
        """Apply a chunk change (inserts and deletes of one operation, together)."""

    def advance(
        self, previous: ComponentView, state: VersionState, config: IndexConfig, delta: Delta
    ) -> ComponentView:
        """The view of the version a commit just made, which may reuse the previous view's
        structures (advanced from them, never changing them: readers pinned to the previous
        version still search it).

        The engine calls this after each of its own commits (``view`` on open, refresh and
        compaction). The default builds ``view(state, config)``: what advances with the
        commits lives in the state.

        Parameters
        ----------
        previous:
            This component's view of the version the commit was written on.
        state, config:
            As for ``view``, of the new version.
        delta:
            The committed ``Delta``.
        """
        return self.view(state, config)

    @abstractmethod
    def view(self, state: VersionState, config: IndexConfig) -> ComponentView:
        """Build the in-memory structures of one committed version (called once per version).

        Parameters
        ----------
        state:
            The committed version's state (its snapshot, vector index, doc names and BM25
            parts, shared by every view of the version; its views are being added).
        config:
            The index's configuration.
        """
