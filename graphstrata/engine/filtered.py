"""A filter pushed into the search: the nodes it allows, and the searches restricted to them.

``Allowed`` turns the documents a filter keeps into the nodes a query may return or pass
through, by one rule per kind (decision 0025): a node whose text draws on several
documents (a summary L, an attribute A, a high-level element H, a relationship R) is allowed
only when *every* document it cites matches, so no text of a non-matching document is
returned; a chunk T or a unit S has one document; an entity N or a title O (names, never
returned as text) is allowed when *any* document it occurs in matches, so the graph walk
passes through a shared entity from one matching document to another.

``FilteredVectors`` and ``FilteredSparse`` are the version's vector and BM25 indexes with
every result outside the allowed nodes left out *inside* the search: a candidate of a
non-matching document never takes a slot of the top k, so a filter never returns fewer
results than the matching documents hold. A view swaps them in for its own
(``restricted_vectors``, ``restricted_sparse``) and searches as usual. BM25 keeps the whole collection's statistics (a
filter selects, it does not re-weight terms, as Lucene's filters do). The vector search
picks its method by selectivity (``SearchConfig.filter_exact_share``): few allowed vectors
are scored exactly by one product over their rows; many are searched in the ANN index
asking for more than k (k over the allowed share, widened until k allowed are found).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from graphstrata.core.ids import contains as sorted_contains
from graphstrata.engine.exact_vectors import ExactVectors
from graphstrata.engine.sparse.index import SparseIndex
from graphstrata.engine.store import NodeTable, Snapshot
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex

if TYPE_CHECKING:
    from graphstrata.engine.component import Query

__all__ = [
    "ANY_DOC_KINDS",
    "Allowed",
    "DocNodes",
    "FilteredSparse",
    "FilteredVectors",
    "restricted_sparse",
    "restricted_vectors",
]

#: Kinds allowed when any of their documents matches (names the walk passes through); every
#: other kind needs all its documents to match.
ANY_DOC_KINDS = (int(NodeKind.N), int(NodeKind.O))


class DocNodes:
    """doc key -> the node rows citing it, for one version's node table (built once, on the
    first filtered query of the version: one sort of every node's doc keys).

    Parameters
    ----------
    nodes:
        The version's live nodes.
    """

    def __init__(self, nodes: NodeTable):
        n = len(nodes)
        keys, parent = nodes.doc_lists_at(np.arange(n, dtype=np.int64))
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.rows = parent[order]
        #: Documents each node cites.
        self.cited = np.bincount(parent, minlength=n).astype(np.int64)

    def citing(self, doc_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ascending node rows citing some of ``doc_keys``, how many of them each cites)."""
        lo = np.searchsorted(self.keys, doc_keys, side="left")
        hi = np.searchsorted(self.keys, doc_keys, side="right")
        sizes = hi - lo
        total = int(sizes.sum())
        if total == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        # The concatenated ranges [lo, hi) without a Python loop.
        starts = np.repeat(lo - np.cumsum(sizes) + sizes, sizes)
        at = starts + np.arange(total)
        return np.unique(self.rows[at], return_counts=True)


class Allowed:
    """The nodes one filter allows in one version (module docstring).

    Parameters
    ----------
    nodes:
        The version's live nodes.
    doc_nodes:
        Its doc key -> node rows index.
    doc_keys:
        The ascending keys of the documents the filter keeps.
    exact_share:
        At most this share of the vectors searched allowed: they are scored exactly
        (``SearchConfig.filter_exact_share``).
    """

    def __init__(
        self, nodes: NodeTable, doc_nodes: DocNodes, doc_keys: np.ndarray, exact_share: float
    ):
        self.doc_keys = doc_keys
        self.exact_share = float(exact_share)
        rows, counts = doc_nodes.citing(doc_keys)
        kinds = nodes.kind[rows]
        any_rule = np.isin(kinds, np.asarray(ANY_DOC_KINDS, np.uint8))
        keep = any_rule | (counts == doc_nodes.cited[rows])
        #: Ascending positions (rows of the node table) of the allowed nodes.
        self.rows = rows[keep]
        self._kinds = kinds[keep]
        self._ids = nodes.ids[self.rows]
        self._n = len(nodes)
        self._by_kinds: dict[tuple[int, ...], np.ndarray] = {}
        self._mask: np.ndarray | None = None

    @property
    def documents(self) -> int:
        """How many documents the filter keeps."""
        return int(self.doc_keys.size)

    def ids(self, kinds: Sequence[int]) -> np.ndarray:
        """Ascending ids of the allowed nodes of ``kinds``."""
        key = tuple(sorted({int(k) for k in kinds}))
        found = self._by_kinds.get(key)
        if found is None:
            found = self._ids[np.isin(self._kinds, np.asarray(key, np.uint8))]
            self._by_kinds[key] = found
        return found

    def mask(self) -> np.ndarray:
        """bool per position of the node table: is the node allowed."""
        if self._mask is None:
            mask = np.zeros(self._n, bool)
            mask[self.rows] = True
            self._mask = mask
        return self._mask

    def report(self) -> dict[str, Any]:
        """What the query report says of the filter."""
        return {"documents": self.documents, "nodes": int(self.rows.size)}


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
        self, text: str, kind: int, k: int, within: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``SparseIndex.search_kind`` over the allowed nodes of ``kind`` (and of
        ``within``, when given)."""
        allowed = self._allowed.ids([kind])
        within = allowed if within is None else np.intersect1d(allowed, within)
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
