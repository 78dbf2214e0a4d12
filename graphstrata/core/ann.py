"""Approximate k nearest neighbours by inner product through usearch's HNSW.

The exact kernel (``core.knn``) costs ``queries × base`` dot products: the heterograph's
semantic edges of a full build (every node a query) are then quadratic. An HNSW graph is
built in ``O(n log n)`` and answers a query in ``O(log n)``, at a recall below 1 that
``tests/unit/test_semantic_edges.py`` bounds from below (docs/architecture.md, "Kernels").
"""

from __future__ import annotations

import numpy as np
from usearch.index import Index as UsearchIndex

__all__ = ["approximate_neighbours", "hnsw_index", "match_arrays"]

#: HNSW graph degree and build-time expansion (usearch's defaults, pinned so an index does
#: not change with the library's version).
CONNECTIVITY = 16
EXPANSION_ADD = 128


def hnsw_index(dim: int, dtype: str = "f32", expansion_search: int = 128) -> UsearchIndex:
    """An empty inner-product HNSW index.

    Parameters
    ----------
    dim : int
        Vector dimension.
    dtype : str
        usearch's storage type; explicit because its default depends on the CPU's features.
    expansion_search : int
        Query-time expansion (ef): higher is closer to exact and slower.
    """
    return UsearchIndex(
        ndim=dim,
        metric="ip",
        dtype=dtype,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=expansion_search,
    )


def match_arrays(matches: object, nq: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(keys int64 [nq, k], similarity float32 [nq, k], valid bool [nq, k])`` of a search.

    usearch pads a batch with sentinels where it found fewer than ``k`` matches; ``valid``
    marks the real ones (its ``counts``). Similarity is ``1 - distance`` (metric ``ip``).
    """
    keys = np.asarray(matches.keys).reshape(nq, -1).astype(np.int64)  # type: ignore[attr-defined]
    dist = np.asarray(matches.distances).reshape(nq, -1)  # type: ignore[attr-defined]
    counts = (
        np.asarray(matches.counts).reshape(nq)  # type: ignore[attr-defined]
        if hasattr(matches, "counts")
        else np.full(nq, keys.shape[1])
    )
    valid = np.arange(keys.shape[1])[None, :] < counts[:, None]
    return keys[:, :k], (1.0 - dist[:, :k]).astype(np.float32), valid[:, :k]


def approximate_neighbours(
    queries: np.ndarray,
    query_ids: np.ndarray,
    base: np.ndarray,
    base_ids: np.ndarray,
    m: int,
    expansion_search: int = 128,
    threads: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Approximate top-``m`` inner-product neighbours of each query among ``base`` rows.

    The approximate counterpart of ``core.knn.nearest_neighbours_scored``: one HNSW index
    over ``base`` (built here, ``O(b log b)``), one search per query.

    Parameters
    ----------
    queries : float array [q, d]
    query_ids : int64 array [q]
        Node id of each query row; a query is never its own neighbour (matched by id).
    base : float array [b, d]
    base_ids : int64 array [b]
        Distinct, non-negative node ids of the base rows.
    m : int
        Neighbours per query; fewer when the base has fewer other rows, none when ``m <= 0``.
    expansion_search : int
        The search's expansion (ef); it is raised to ``m + 1`` when smaller.
    threads : int
        usearch worker threads (0: every core).

    Returns
    -------
    src, dst : int64 arrays [e]
        One row per (query id, neighbour id), grouped by query in query order.
    sim : float32 array [e]
        The inner product of each pair.
    """
    empty = np.zeros(0, np.int64)
    if queries.shape[0] == 0 or base.shape[0] == 0 or m <= 0:
        return empty, empty, np.zeros(0, np.float32)
    if queries.shape[1] != base.shape[1]:
        raise ValueError(f"queries have dim {queries.shape[1]}, base {base.shape[1]}")
    query_ids = np.asarray(query_ids, dtype=np.int64)
    base_ids = np.asarray(base_ids, dtype=np.int64)
    if base_ids.size and int(base_ids.min()) < 0:
        raise ValueError("approximate_neighbours needs non-negative base ids (usearch keys)")
    index = hnsw_index(base.shape[1], "f32", max(int(expansion_search), m + 1))
    index.add(base_ids, np.ascontiguousarray(base, dtype=np.float32), threads=threads)
    # One extra match per query, for the query itself when it is in the base.
    k = min(m + 1, base.shape[0])
    nq = queries.shape[0]
    matches = index.search(np.ascontiguousarray(queries, dtype=np.float32), k, threads=threads)
    keys, sim, valid = match_arrays(matches, nq, k)
    valid &= keys != query_ids[:, None]
    # Keep the first m valid matches of each row (usearch sorts them by distance).
    valid &= np.cumsum(valid, axis=1) <= m
    src = np.repeat(query_ids, k).reshape(nq, k)
    return src[valid], keys[valid], sim[valid]
