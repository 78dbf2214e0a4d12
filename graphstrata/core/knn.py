"""Exact k nearest neighbours by inner product: blocked GEMM, then ``argpartition``.

Exact rather than approximate because the callers (the heterograph's semantic edges,
docs/architecture.md, "Heterograph") ask for the neighbours of the few nodes an operation
adds, among every embedded node: one ``queries × base`` GEMM per block, no index to build.
"""

from __future__ import annotations

import numpy as np

__all__ = ["nearest_neighbours"]


def nearest_neighbours(
    queries: np.ndarray,
    query_ids: np.ndarray,
    base: np.ndarray,
    base_ids: np.ndarray,
    m: int,
    block_rows: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``m`` inner-product neighbours of each query row among ``base`` rows.

    Parameters
    ----------
    queries : float array [q, d]
    query_ids : int64 array [q]
        Node id of each query row.
    base : float array [b, d]
    base_ids : int64 array [b]
        Node id of each base row (distinct). A query whose id is in ``base_ids`` is never
        its own neighbour (matched by id, not by vector: a duplicate vector under another id
        is a neighbour like any other).
    m : int
        Neighbours per query; fewer when the base has fewer other rows, none when ``m <= 0``.
    block_rows : int
        Queries per GEMM, so memory stays at ``block_rows × b``.

    Returns
    -------
    src, dst : int64 arrays [e]
        The edge list, one row per (query id, neighbour id), grouped by query in query
        order; the neighbours of one query come in no particular order.
    """
    if queries.shape[0] == 0 or base.shape[0] == 0 or m <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    srcs: list[np.ndarray] = []
    dsts: list[np.ndarray] = []
    base = np.ascontiguousarray(base, dtype=np.float32)
    order = np.argsort(base_ids)
    sorted_base = base_ids[order]
    for start in range(0, queries.shape[0], block_rows):
        q = np.ascontiguousarray(queries[start : start + block_rows], dtype=np.float32)
        qids = query_ids[start : start + block_rows]
        sims = q @ base.T
        # Mask self-similarity where a query is also in the base.
        pos = np.searchsorted(sorted_base, qids)
        pos_c = np.minimum(pos, sorted_base.size - 1)
        hit = sorted_base[pos_c] == qids
        rows = np.nonzero(hit)[0]
        sims[rows, order[pos_c[hit]]] = -np.inf
        kk = min(m, base.shape[0] - (1 if hit.any() else 0))
        if kk <= 0:
            continue
        top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        valid = np.isfinite(np.take_along_axis(sims, top, axis=1))
        srcs.append(np.repeat(qids, kk)[valid.ravel()])
        dsts.append(base_ids[top].ravel()[valid.ravel()])
    if not srcs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(srcs).astype(np.int64), np.concatenate(dsts).astype(np.int64)
