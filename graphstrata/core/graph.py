"""Symmetric CSR graphs from edge lists."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _merge_sorted(keys: np.ndarray, weights: np.ndarray, n_nodes: np.int64):
    """Sum weights of equal keys (sorted), split keys into (row, col), count rows."""
    m = keys.shape[0]
    out_keys = np.empty(m, dtype=np.int64)
    out_w = np.empty(m, dtype=np.float32)
    k = -1
    for i in range(m):
        if k >= 0 and keys[i] == out_keys[k]:
            out_w[k] += weights[i]
        else:
            k += 1
            out_keys[k] = keys[i]
            out_w[k] = weights[i]
    nnz = k + 1
    indptr = np.zeros(n_nodes + 1, dtype=np.int64)
    indices = np.empty(nnz, dtype=np.int64)
    for i in range(nnz):
        row = out_keys[i] // n_nodes
        indices[i] = out_keys[i] - row * n_nodes
        indptr[row + 1] += 1
    for r in range(n_nodes):
        indptr[r + 1] += indptr[r]
    return indptr, indices, out_w[:nnz].copy()


def _check_edges(src: np.ndarray, dst: np.ndarray, weight: np.ndarray, n_nodes: int):
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    weight = np.asarray(weight, dtype=np.float32)
    if src.ndim != 1 or src.shape != dst.shape or src.shape != weight.shape:
        raise ValueError(
            f"src, dst and weight must be 1-d of equal length, got {src.shape}, {dst.shape}, {weight.shape}"
        )
    if n_nodes < 0:
        raise ValueError(f"n_nodes must be >= 0, got {n_nodes}")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n_nodes):
        raise ValueError(f"edge endpoints must be in [0, {n_nodes})")
    return src, dst, weight


def csr_from_edges(
    src: np.ndarray, dst: np.ndarray, weight: np.ndarray, n_nodes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Undirected weighted edge list -> symmetric CSR.

    Each edge appears in both directions (a self-loop once); duplicate edges are merged by
    summing their weights; column indices are sorted within each row.

    Parameters
    ----------
    src, dst : int64 [e]
        Endpoints, dense node indices in ``[0, n_nodes)``.
    weight : float32 [e]
        Edge weights.
    n_nodes : int
        Number of nodes (rows of the CSR).

    Returns
    -------
    (indptr int64[n_nodes + 1], indices int64[nnz], weights float32[nnz])
    """
    src, dst, weight = _check_edges(src, dst, weight, n_nodes)
    loops = src == dst
    rows = np.concatenate([src, dst[~loops]])
    cols = np.concatenate([dst, src[~loops]])
    w = np.concatenate([weight, weight[~loops]])
    keys = rows * np.int64(max(n_nodes, 1)) + cols
    order = np.argsort(keys, kind="stable")
    return _merge_sorted(keys[order], w[order], np.int64(n_nodes))


def merge_edges(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    n_nodes: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge new undirected edges into an existing symmetric CSR (``n_nodes`` may grow)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    old_n = indptr.shape[0] - 1
    if n_nodes < old_n:
        raise ValueError(f"n_nodes may only grow: {old_n} -> {n_nodes}")
    rows = np.repeat(np.arange(old_n, dtype=np.int64), np.diff(indptr))
    src, dst, weight = _check_edges(src, dst, weight, n_nodes)
    loops = src == dst
    all_rows = np.concatenate([rows, src, dst[~loops]])
    all_cols = np.concatenate([np.asarray(indices, dtype=np.int64), dst, src[~loops]])
    all_w = np.concatenate([np.asarray(weights, dtype=np.float32), weight, weight[~loops]])
    keys = all_rows * np.int64(max(n_nodes, 1)) + all_cols
    order = np.argsort(keys, kind="stable")
    return _merge_sorted(keys[order], all_w[order], np.int64(n_nodes))
