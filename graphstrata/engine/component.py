"""The contract between the engine and its retrieval structures (hierarchy, heterograph).

A component turns chunk changes into node/edge/vector changes of its own (``update``) and
serves the search modes it owns from a per-version view (``view``). The engine owns the
transaction: components only write into the ``Delta`` of the context, so a failure anywhere
aborts the whole operation with nothing committed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from graphstrata.engine.config import IndexConfig
from graphstrata.engine.interfaces import LLM, Embedder, LLMError, LLMRequest, LLMResponse
from graphstrata.engine.params import ModeParams
from graphstrata.engine.report import OperationReport
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.vectors import VectorIndex


class MeteredLLM:
    """Wraps an LLM: one ``complete`` per stage batch, with calls and tokens in the report."""

    def __init__(self, llm: LLM, report: OperationReport):
        self.llm = llm
        self.report = report

    @property
    def name(self) -> str:
        return self.llm.name

    def complete(self, stage: str, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
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
        return responses


class MeteredEmbedder:
    """Wraps an Embedder, counting embedded texts and checking shapes."""

    def __init__(self, embedder: Embedder, report: OperationReport):
        self.embedder = embedder
        self.report = report

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def embed(self, texts: Sequence[str], stage: str = "embed") -> np.ndarray:
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

    @property
    def empty(self) -> bool:
        return self.added_chunk_ids.size == 0 and self.removed_chunk_ids.size == 0


@dataclass
class UpdateContext:
    """What a component may read and write during one operation."""

    snapshot: Snapshot
    delta: Delta
    config: IndexConfig
    embedder: MeteredEmbedder
    llm: MeteredLLM
    report: OperationReport
    hyperplanes: np.ndarray
    _pending_vectors: dict[int, np.ndarray] = field(default_factory=dict)

    def embed_nodes(
        self, ids: np.ndarray, kind: int, texts: Sequence[str], stage: str = "embed"
    ) -> np.ndarray:
        """Embed new nodes once and record their vectors in the delta."""
        mat = self.embedder.embed(texts, stage=stage)
        self.delta.add_vectors(ids, kind, mat)
        for i, node_id in enumerate(np.asarray(ids, dtype=np.int64)):
            self._pending_vectors[int(node_id)] = mat[i]
        return mat

    def remember_vectors(self, ids: np.ndarray, matrix: np.ndarray) -> None:
        for i, node_id in enumerate(np.asarray(ids, dtype=np.int64)):
            self._pending_vectors[int(node_id)] = matrix[i]

    def vectors_of(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """Vectors of nodes that are committed or added earlier in this operation."""
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "layer": self.layer,
            "text": self.text,
            "score": round(float(self.score), 6),
            "tokens": self.tokens,
            "docs": self.docs,
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


class ComponentView(ABC):
    """Per-version, read-only search structures of a component."""

    @abstractmethod
    def search(self, mode: str, query: Query) -> list[Hit]: ...


class Component(ABC):
    """A retrieval structure kept in the index (hierarchy, heterograph)."""

    #: Stable name, used for manifest metadata and state keys.
    name: str = ""
    #: Search modes this component serves.
    modes: tuple[str, ...] = ()
    #: The typed parameters of each mode (``engine.params``); every mode has an entry.
    mode_params: ClassVar[dict[str, type[ModeParams]]] = {}

    def enabled(self, config: IndexConfig) -> bool:
        return True

    @abstractmethod
    def update(self, ctx: UpdateContext, change: ChangeSet) -> None:
        """Apply a chunk change (inserts and deletes of one operation, together)."""

    @abstractmethod
    def view(self, snapshot: Snapshot, vectors: VectorIndex, config: IndexConfig) -> ComponentView:
        """Build the in-memory structures of one committed version (called once per version)."""
