"""A filter pushed into the search: the vector and BM25 searches restricted to the nodes it
allows (``engine.allowed``).

``FilteredVectors`` and ``FilteredSparse`` are the version's vector and BM25 indexes with
every result outside the allowed nodes left out *inside* the search: a candidate of a
non-matching document never takes a slot of the top k, so a filter never returns fewer
results than the matching documents hold. A view swaps them in for its own
(``restricted_vectors``, ``restricted_sparse``) and searches as usual. BM25 keeps the whole
collection's statistics (a filter selects, it does not re-weight terms, as Lucene's filters
do). The vector search picks its method by selectivity (``SearchConfig.filter_exact_share``):
few allowed vectors are scored exactly by one product over their rows; many are searched in
the ANN index asking for k over the allowed share, widened until k allowed are found.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import contains as sorted_contains
from graphstrata.engine.allowed import Allowed
from graphstrata.engine.exact_vectors import ExactVectors
from graphstrata.engine.sparse.analysis import SparseQuery
from graphstrata.engine.sparse.index import SparseIndex
from graphstrata.engine.store import Snapshot
from graphstrata.engine.vectors import VectorIndex

if TYPE_CHECKING:
    from graphstrata.engine.component import Query

__all__ = [
    "FilteredSparse",
    "FilteredVectors",
    "restricted_sparse",
    "restricted_vectors",
]


class FilteredVectors(VectorIndex):
    """A version's ``VectorIndex`` whose searches return allowed nodes only (module
    docstring); it shares the index's parts, copying nothing.

    Parameters
    ----------
    inner:
        The version's vector index.
    allowed:
        The nodes the filter allows.
    snapshot:
        The version (the allowed vectors' rows for an exact search).
    """

    def __init__(self, inner: VectorIndex, allowed: Allowed, snapshot: Snapshot):
        vars(self).update(vars(inner))  # the same bases, fresh and dead parts
        self._allowed, self._snapshot = allowed, snapshot
        #: How the last search over each set of kinds ran (``exact`` or ``ann``).
        self.methods: dict[tuple[int, ...], str] = {}

    def search(
        self, queries: np.ndarray, kinds: Sequence[int], k: int
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Top-k allowed nodes of ``kinds`` per query, as ``VectorIndex.search``."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        nq = queries.shape[0]
        within = self._allowed.ids(kinds)
        within = within[self._snapshot.vectors.has(within)]
        total = VectorIndex.count(self, kinds)
        empty = [np.zeros(0, np.int64)] * nq, [np.zeros(0, np.float32)] * nq
        if within.size == 0 or k <= 0:
            return empty
        key = tuple(sorted(int(x) for x in kinds))
        if within.size <= self._allowed.exact_share * total:
            self.methods[key] = "exact"
            found = ExactVectors(within, self._snapshot.vectors.get(within)).search(queries, k)
            cos = (1.0 - found.distances).astype(np.float32)
            return [found.keys[q] for q in range(nq)], [cos[q] for q in range(nq)]
        self.methods[key] = "ann"
        # Ask for k over the allowed share, then widen for the queries still short of k.
        kk = min(total, math.ceil(k * total / within.size))
        out_ids: list[np.ndarray] = [np.zeros(0, np.int64)] * nq
        out_sims: list[np.ndarray] = [np.zeros(0, np.float32)] * nq
        todo = np.arange(nq)
        while todo.size:
            got_ids, got_sims = VectorIndex.search(self, queries[todo], kinds, kk)
            short = []
            for j, q in enumerate(todo.tolist()):
                keep = sorted_contains(within, got_ids[j])
                out_ids[q], out_sims[q] = got_ids[j][keep][:k], got_sims[j][keep][:k]
                if out_ids[q].size < min(k, within.size) and kk < total:
                    short.append(q)
            todo = np.asarray(short, np.int64)
            kk = min(total, kk * self.maintenance.vector_widen)
        return out_ids, out_sims


class FilteredSparse(SparseIndex):
    """A version's ``SparseIndex`` whose searches return allowed nodes only: the postings of
    other nodes are scanned but never enter the top k (``KindIndex.search``'s ``within``).

    Parameters
    ----------
    inner:
        The version's sparse index.
    allowed:
        The nodes the filter allows.
    """

    def __init__(self, inner: SparseIndex, allowed: Allowed):
        super().__init__(inner.parts, inner.kinds, inner.k1, inner.b)
        self._allowed = allowed

    def search_kind(
        self, text: SparseQuery, kind: int, k: int, within: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``SparseIndex.search_kind`` over the allowed nodes of ``kind`` (and of
        ``within``, when given)."""
        allowed = self._allowed.ids([kind])
        within = allowed if within is None else sets.intersection(allowed, within)
        if within.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        return SparseIndex.search_kind(self, text, kind, k, within)


def restricted_vectors(vectors: VectorIndex, query: Query, snapshot: Snapshot) -> VectorIndex:
    """``vectors`` as ``query``'s filter restricts them (``vectors`` when it has none)."""
    if query.allowed is None:
        return vectors
    return FilteredVectors(vectors, query.allowed, snapshot)


def restricted_sparse(sparse: SparseIndex, query: Query) -> SparseIndex:
    """``sparse`` as ``query``'s filter restricts it (``sparse`` when it has none)."""
    return sparse if query.allowed is None else FilteredSparse(sparse, query.allowed)
