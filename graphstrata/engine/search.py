"""Search helpers shared by every mode, and the naive baseline (vector top-k over chunks)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphstrata.core.budget import pack
from graphstrata.engine.component import ComponentView, Hit, Query
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex


class DocNames:
    """doc key -> user doc_id, built once per version."""

    def __init__(self, snapshot: Snapshot):
        keys = snapshot.docs.column("key").to_pylist()
        names = snapshot.docs.column("doc_id").to_pylist()
        self._names = dict(zip(keys, names, strict=True))

    def __call__(self, keys: Sequence[int]) -> list[str]:
        return [self._names[k] for k in keys if k in self._names]


def make_hits(
    snapshot: Snapshot, doc_names: DocNames, ids: np.ndarray, scores: np.ndarray
) -> list[Hit]:
    """Hits for ``ids`` in the given order (no packing)."""
    if len(ids) == 0:
        return []
    nodes = snapshot.nodes
    rows = nodes.rows(ids)
    texts = nodes.texts
    docs = nodes.docs
    return [
        Hit(
            id=int(ids[i]),
            kind=NodeKind(int(nodes.kind[r])).letter,
            layer=int(nodes.layer[r]),
            text=texts[r],
            score=float(scores[i]),
            tokens=int(nodes.tokens[r]),
            docs=doc_names(docs[r]),
        )
        for i, r in enumerate(rows)
    ]


def pack_hits(
    snapshot: Snapshot, doc_names: DocNames, ids: np.ndarray, scores: np.ndarray, budget: int
) -> list[Hit]:
    """Greedy-pack ranked nodes under ``budget`` tokens (``core.budget.pack``)."""
    ids = np.asarray(ids, dtype=np.int64)
    if ids.size == 0:
        return []
    tokens = snapshot.nodes.tokens[snapshot.nodes.rows(ids)]
    chosen = pack(np.asarray(scores, dtype=np.float64), tokens, int(budget))
    return make_hits(snapshot, doc_names, ids[chosen], np.asarray(scores)[chosen])


def vector_candidates(
    vectors: VectorIndex, query: Query, kinds: Sequence[int], k: int
) -> tuple[np.ndarray, np.ndarray]:
    ids, scores = vectors.search(query.vector[None, :], kinds, k)
    return ids[0], scores[0]


class NaiveView(ComponentView):
    """``naive``: vector top-k over chunks, packed under the budget (every table's baseline)."""

    def __init__(self, snapshot: Snapshot, vectors: VectorIndex, doc_names: DocNames):
        self.snapshot = snapshot
        self.vectors = vectors
        self.doc_names = doc_names

    def search(self, mode: str, query: Query) -> list[Hit]:
        ids, scores = vector_candidates(self.vectors, query, [int(NodeKind.T)], query.top_k)
        return pack_hits(self.snapshot, self.doc_names, ids, scores, query.budget_tokens)
