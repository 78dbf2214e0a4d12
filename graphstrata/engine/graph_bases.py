"""Vector bases made from their k-NN graph instead of by usearch's inserts.

``graph_base`` makes a usearch index of a kind's vectors from their k-NN graph
(``core.nndescent``), pruned to a search graph (``core.search_graph``) and written in
usearch's own layout (``core.ann.hnsw_from_graph``). ``engine.vectors`` uses it for a new
base of at least ``MaintenanceConfig.vector_graph_build_min`` vectors.

A build with the heterograph already has a k-NN graph of the same vectors: the semantic
edges' joint graph over every new T/S/A/H node (``heterograph.enrich.semantic_edges``).
Its lists (48 a row), restricted to one kind, are near neighbours of that kind, so the
kind's own NN-descent starts from them as well as from its random projection trees
(``NeighbourLists``). On the 10k-chunk synthetic build's vectors (a one-off script,
not kept, recall@16 of 1,000 rows, one run beside other work, load 3.5): S (40,922 rows,
a median of 8 same-kind neighbours in its 48) 14.4 s and recall 0.874 against 16.6 s and
0.848 from trees alone; T (10,012 rows, a median of 30) 2.1 s and 0.969 against 3.0 s and
0.918. The lists alone, without trees, did worse for S (0.836: 9% of its rows list
no other S row) and no better for T (0.965), so the trees stay. The lists are held from
the semantic edges to the commit: 48 int32 per new embedded node, 99 MB for the 514,667 of
the 100k-chunk build (its peak stayed 5.5 GB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from usearch.index import Index as UsearchIndex

from graphstrata.core.ann import BASE_DEGREE, hnsw_from_graph

#: The k-NN graph a base is made from: neighbours per row, candidates per NN-descent round
#: (``core.nndescent``; lists of 3m). On the 51,952 MiniLM vectors (a one-off script,
#: not kept, code 3e25972, one run each): lists of 2m with 32 candidates recall@10 0.992
#: (k-NN graph 4.0 s), 3m with 32 0.996 (6.8 s), 3m with 48 0.998 (7.9 s).
GRAPH_NEIGHBOURS = 16
GRAPH_MAX_CANDIDATES = 32
GRAPH_SEED = 0


@dataclass(frozen=True)
class NeighbourLists:
    """Approximate neighbours of a batch of new vectors among themselves.

    Attributes
    ----------
    ids : int64 array [n]
        The batch's node ids, ascending.
    rows : int32 array [n, w]
        Per id, its neighbours as positions in ``ids`` (``-1``: none), most similar first.
    """

    ids: np.ndarray
    rows: np.ndarray

    def within(self, kind_ids: np.ndarray) -> np.ndarray | None:
        """Each of ``kind_ids``' listed neighbours that are among ``kind_ids`` too, as
        positions in ``kind_ids`` (int32 [len(kind_ids), w], ``-1`` elsewhere); None when
        some id is not listed."""
        kind_ids = np.asarray(kind_ids, np.int64)
        if not self.ids.size or not kind_ids.size:
            return None
        pos = np.minimum(np.searchsorted(self.ids, kind_ids), self.ids.size - 1)
        if np.any(self.ids[pos] != kind_ids):
            return None
        local = np.full(self.ids.size, -1, np.int32)
        local[pos] = np.arange(kind_ids.size, dtype=np.int32)
        listed = self.rows[pos]
        return np.where(listed >= 0, local[np.maximum(listed, 0)], np.int32(-1))


def graph_base(
    ids: np.ndarray,
    matrix: np.ndarray,
    dtype: str,
    expansion_search: int,
    neighbours: NeighbourLists | None = None,
) -> UsearchIndex | None:
    """A usearch index of these vectors made from their k-NN graph (``core.search_graph``,
    loaded by ``core.ann.hnsw_from_graph``), or None when this usearch writes another
    layout or ``dtype`` is not written there.

    Parameters
    ----------
    ids : int64 array [n]
        The vectors' keys.
    matrix : float32 array [n, d]
        Unit-normalized rows.
    dtype : str
        The index's storage type.
    expansion_search : int
        Its query-time expansion.
    neighbours : NeighbourLists, optional
        Near neighbours known already, of a batch holding every one of ``ids``: those among
        ``ids`` join the trees' leaves as the descent's first lists.
    """
    # Build-time only: kept off the import of a process that only queries.
    from graphstrata.core.nndescent import knn_graph
    from graphstrata.core.search_graph import search_graph

    init = neighbours.within(ids) if neighbours is not None else None
    knn = knn_graph(
        matrix, GRAPH_NEIGHBOURS, GRAPH_SEED, max_candidates=GRAPH_MAX_CANDIDATES, init=init
    )
    graph = search_graph(matrix, knn, BASE_DEGREE)
    return hnsw_from_graph(
        ids, matrix, graph.neighbours, graph.counts, graph.entry, dtype, expansion_search
    )
