"""Exact k nearest neighbours by inner product: blocked GEMM, then ``argpartition``.

Exact because the callers (the heterograph's semantic edges, docs/architecture.md,
"Heterograph") ask for the neighbours of the few nodes an operation adds: one
``queries × base`` GEMM per block, no index to build. Above
``HeterographConfig.semantic_exact_below`` nodes the heterograph switches to the
approximate search of ``core.ann``; :func:`best_per_query` merges candidate lists of both.
"""

from __future__ import annotations

import numpy as np

__all__ = ["best_per_query", "nearest_neighbours", "nearest_neighbours_scored"]


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
    src, dst, _ = nearest_neighbours_scored(queries, query_ids, base, base_ids, m, block_rows)
    return src, dst


def nearest_neighbours_scored(
    queries: np.ndarray,
    query_ids: np.ndarray,
    base: np.ndarray,
    base_ids: np.ndarray,
    m: int,
    block_rows: int = 512,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`nearest_neighbours` with the inner product of each pair (float32 ``sim``).

    Returns
    -------
    src, dst : int64 arrays [e]
    sim : float32 array [e]
    """
    empty = np.zeros(0, np.int64)
    if queries.shape[0] == 0 or base.shape[0] == 0 or m <= 0:
        return empty, empty, np.zeros(0, np.float32)
    srcs: list[np.ndarray] = []
    dsts: list[np.ndarray] = []
    sims_out: list[np.ndarray] = []
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
        top_sims = np.take_along_axis(sims, top, axis=1)
        valid = np.isfinite(top_sims).ravel()
        srcs.append(np.repeat(qids, kk)[valid])
        dsts.append(base_ids[top].ravel()[valid])
        sims_out.append(top_sims.ravel()[valid])
    if not srcs:
        return empty, empty, np.zeros(0, np.float32)
    return (
        np.concatenate(srcs).astype(np.int64),
        np.concatenate(dsts).astype(np.int64),
        np.concatenate(sims_out).astype(np.float32),
    )


def best_per_query(
    src: np.ndarray, dst: np.ndarray, sim: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``m`` most similar candidates of each query, from candidate lists merged together.

    Parameters
    ----------
    src, dst : int64 arrays [e]
        Candidate pairs (query id, neighbour id); a pair listed twice is kept once.
    sim : float array [e]
        Their inner products.
    m : int
        Candidates kept per query (none when ``m <= 0``).

    Returns
    -------
    src, dst : int64 arrays
        Grouped by ascending query id; within a query by descending similarity, ties by
        ascending neighbour id (deterministic).
    sim : float32 array
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    sim = np.asarray(sim, dtype=np.float32)
    if not (src.shape == dst.shape == sim.shape):
        raise ValueError("best_per_query: src, dst and sim differ in length")
    if src.size == 0 or m <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    order = np.lexsort((dst, -sim, src))
    src, dst, sim = src[order], dst[order], sim[order]
    # Drop repeated pairs (the same neighbour found by two candidate lists).
    keep = np.ones(src.size, bool)
    pair_order = np.lexsort((dst, src))
    ps, pd = src[pair_order], dst[pair_order]
    repeat = np.zeros(src.size, bool)
    repeat[1:] = (ps[1:] == ps[:-1]) & (pd[1:] == pd[:-1])
    # Of two equal pairs keep the one sorted first (the higher similarity).
    keep[pair_order[repeat]] = False
    src, dst, sim = src[keep], dst[keep], sim[keep]
    starts = np.r_[0, np.nonzero(src[1:] != src[:-1])[0] + 1]
    rank = np.arange(src.size) - np.repeat(starts, np.diff(np.r_[starts, src.size]))
    sel = rank < m
    return src[sel], dst[sel], sim[sel]
