"""Shallow personalized PageRank by sparse push, and per-kind top-k selection."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numba import njit


@njit(cache=True)
def _reduce_sorted(nodes: np.ndarray, vals: np.ndarray):
    """Sum values of equal (sorted) node ids."""
    m = nodes.shape[0]
    out_n = np.empty(m, dtype=np.int64)
    out_v = np.empty(m, dtype=np.float64)
    k = -1
    for i in range(m):
        if k >= 0 and nodes[i] == out_n[k]:
            out_v[k] += vals[i]
        else:
            k += 1
            out_n[k] = nodes[i]
            out_v[k] = vals[i]
    return out_n[: k + 1].copy(), out_v[: k + 1].copy()


@njit(cache=True)
def _push(indptr, indices, weights, nodes, vals, p_nodes, p_vals, alpha):
    """One step π' = α·p + (1−α)·Pᵀπ over the support of π; returns (pairs, edges touched)."""
    total = p_nodes.shape[0]
    for i in range(nodes.shape[0]):
        u = nodes[i]
        total += indptr[u + 1] - indptr[u]
    out_n = np.empty(total, dtype=np.int64)
    out_v = np.empty(total, dtype=np.float64)
    k = 0
    touched = 0
    for i in range(nodes.shape[0]):
        u = nodes[i]
        start, end = indptr[u], indptr[u + 1]
        wsum = 0.0
        for j in range(start, end):
            wsum += weights[j]
        touched += end - start
        if wsum <= 0.0:
            continue  # a node without out-weight keeps no mass (it leaks, as in Pᵀπ)
        scale = (1.0 - alpha) * vals[i] / wsum
        for j in range(start, end):
            out_n[k] = indices[j]
            out_v[k] = scale * weights[j]
            k += 1
    for i in range(p_nodes.shape[0]):
        out_n[k] = p_nodes[i]
        out_v[k] = alpha * p_vals[i]
        k += 1
    return out_n[:k], out_v[:k], touched


def _seed_vector(seeds: np.ndarray, seed_weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = seed_weights > 0
    seeds, seed_weights = seeds[keep], seed_weights[keep]
    if seeds.size == 0:
        return seeds, seed_weights
    order = np.argsort(seeds, kind="stable")
    nodes, vals = _reduce_sorted(seeds[order], seed_weights[order])
    return nodes, vals / vals.sum()


def shallow_ppr_stats(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    seeds: np.ndarray,
    seed_weights: np.ndarray | None = None,
    alpha: float = 0.5,
    iters: int = 2,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Like :func:`shallow_ppr`, also returning the number of CSR entries read."""
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    seeds = np.asarray(seeds, dtype=np.int64)
    if seed_weights is None:
        seed_weights = np.ones(seeds.shape[0], dtype=np.float64)
    seed_weights = np.asarray(seed_weights, dtype=np.float64)
    n = indptr.shape[0] - 1
    if seeds.shape != seed_weights.shape or seeds.ndim != 1:
        raise ValueError("seeds and seed_weights must be 1-d of equal length")
    if indices.shape != weights.shape:
        raise ValueError("indices and weights must have equal length")
    if seeds.size and (seeds.min() < 0 or seeds.max() >= n):
        raise ValueError(f"seeds must be node indices in [0, {n})")
    if np.any(seed_weights < 0) or not np.all(np.isfinite(seed_weights)):
        raise ValueError("seed weights must be finite and >= 0")
    if not 0.0 <= alpha <= 1.0 or iters < 0:
        raise ValueError("need 0 <= alpha <= 1 and iters >= 0")
    p_nodes, p_vals = _seed_vector(seeds, seed_weights)
    if p_nodes.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float64), 0
    nodes, vals = p_nodes, p_vals
    touched = 0
    for _ in range(iters):
        out_n, out_v, t = _push(indptr, indices, weights, nodes, vals, p_nodes, p_vals, alpha)
        touched += t
        order = np.argsort(out_n, kind="stable")
        nodes, vals = _reduce_sorted(out_n[order], out_v[order])
    return nodes, vals, touched


def shallow_ppr(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    seeds: np.ndarray,
    seed_weights: np.ndarray | None = None,
    alpha: float = 0.5,
    iters: int = 2,
) -> tuple[np.ndarray, np.ndarray]:
    """Personalized PageRank after ``iters`` steps of π ← α·p + (1−α)·Pᵀπ (NodeRAG).

    π₀ = p, the seed weights normalized to sum 1 (duplicate seeds add; zero-weight seeds are
    dropped); P is the row-normalized weighted adjacency. Computed by sparse push from the
    seeds: only the ``iters``-hop neighbourhood is read, never the whole graph.

    Returns
    -------
    (nodes int64[t], scores float64[t])
        The touched nodes (sorted by id) and their scores; empty when no seed has weight.
    """
    nodes, scores, _ = shallow_ppr_stats(
        indptr, indices, weights, seeds, seed_weights, alpha, iters
    )
    return nodes, scores


def top_k_by_kind(
    nodes: np.ndarray,
    scores: np.ndarray,
    kinds: np.ndarray,
    k_per_kind: int | Mapping[int, int],
) -> np.ndarray:
    """The top ``k`` nodes of each kind by score, without sorting everything.

    ``k_per_kind`` is one k for every kind, or a mapping kind -> k (kinds absent from the
    mapping are dropped). Ties are broken by position in the input. Returns the selected
    nodes sorted by descending score.
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    scores = np.asarray(scores, dtype=np.float64)
    kinds = np.asarray(kinds)
    if not (nodes.shape == scores.shape == kinds.shape) or nodes.ndim != 1:
        raise ValueError("nodes, scores and kinds must be 1-d of equal length")
    picked: list[np.ndarray] = []
    for kind in np.unique(kinds):
        k = k_per_kind if isinstance(k_per_kind, int) else k_per_kind.get(int(kind), 0)
        if k <= 0:
            continue
        idx = np.flatnonzero(kinds == kind)
        if idx.size > k:
            part = np.argpartition(-scores[idx], k - 1)[:k]
            # argpartition is not stable: re-take ties at the cut by position.
            cut = scores[idx][part].min()
            above = idx[scores[idx] > cut]
            at_cut = idx[scores[idx] == cut][: k - above.size]
            idx = np.concatenate([above, at_cut])
        picked.append(idx)
    if not picked:
        return np.zeros(0, dtype=np.int64)
    sel = np.concatenate(picked)
    order = np.lexsort((sel, -scores[sel]))
    return nodes[sel[order]]
