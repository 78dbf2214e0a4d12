"""Merging a few new edges into a large CSR entry by entry (``core.graph.merge_edges``).

A CSR of the new edges alone has a row pointer per node; for a handful of edges against a
million rows, building it costs more than merging them one by one in a single pass over
the rows (issue 17).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["merge_entries", "sorted_entries"]


def sorted_entries(
    src: np.ndarray, dst: np.ndarray, weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The directed entries of undirected edges, as ``core.graph.csr_from_edges`` builds
    its rows: a self-loop once, sorted by row then column, equal ones summed in edge order.

    Parameters
    ----------
    src, dst : int64 [e]
        Edge ends.
    weight : float32 [e]
        Edge weights.

    Returns
    -------
    rows, cols : int64 [u]
    vals : float32 [u]
    """
    mirror = src != dst
    rows = np.concatenate([src, dst[mirror]])
    cols = np.concatenate([dst, src[mirror]])
    vals = np.concatenate([weight, weight[mirror]])
    edge = np.concatenate([np.arange(src.shape[0]), np.flatnonzero(mirror)])
    order = np.lexsort((edge, cols, rows))
    return _sum_equal_entries(rows[order], cols[order], vals[order])


@njit(cache=True, nogil=True)
def _sum_equal_entries(
    rows: np.ndarray, cols: np.ndarray, vals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Sorted entries with equal (row, col) summed in their order, as core.graph's
    # _sort_merge_row does (the same float32 sums).
    k = -1
    out_r = np.empty_like(rows)
    out_c = np.empty_like(cols)
    out_v = np.empty_like(vals)
    for i in range(rows.shape[0]):
        if k >= 0 and rows[i] == out_r[k] and cols[i] == out_c[k]:
            out_v[k] += vals[i]
        else:
            k += 1
            out_r[k], out_c[k], out_v[k] = rows[i], cols[i], vals[i]
    return out_r[: k + 1], out_c[: k + 1], out_v[: k + 1]


@njit(cache=True, nogil=True)
def merge_entries(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    n_old: int,
    rows: np.ndarray,
    cols: np.ndarray,
    vals: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The CSR with the entries of :func:`sorted_entries` merged in, in one pass over the
    rows; an entry already in the CSR sums (old + new, as ``core.graph.merge_edges``).

    Parameters
    ----------
    indptr, indices, weights : int64 [n_old + 1], int64 [nnz], float32 [nnz]
        The CSR; rows sorted and duplicate-free.
    n_old : int
        Its rows.
    rows, cols, vals : int64 [u], int64 [u], float32 [u]
        Sorted, distinct entries.
    n : int
        Rows of the result (>= n_old).

    Returns
    -------
    indptr, indices, weights : int64 [n + 1], int64 [nnz'], float32 [nnz']
    """
    e = rows.shape[0]
    present = 0
    for j in range(e):
        r = rows[j]
        if r < n_old:
            a, b = indptr[r], indptr[r + 1]
            at = a + np.searchsorted(indices[a:b], cols[j])
            if at < b and indices[at] == cols[j]:
                present += 1
    nnz = indices.shape[0] + e - present
    out_ptr = np.empty(n + 1, dtype=np.int64)
    out_ix = np.empty(nnz, dtype=np.int64)
    out_w = np.empty(nnz, dtype=np.float32)
    o = 0
    j = 0
    for i in range(n):
        out_ptr[i] = o
        a, b = (indptr[i], indptr[i + 1]) if i < n_old else (0, 0)
        while j < e and rows[j] == i:
            if a < b and indices[a] < cols[j]:
                out_ix[o], out_w[o] = indices[a], weights[a]
                a += 1
            elif a < b and indices[a] == cols[j]:
                out_ix[o], out_w[o] = indices[a], weights[a] + vals[j]
                a += 1
                j += 1
            else:
                out_ix[o], out_w[o] = cols[j], vals[j]
                j += 1
            o += 1
        for t in range(a, b):
            out_ix[o], out_w[o] = indices[t], weights[t]
            o += 1
    out_ptr[n] = o
    return out_ptr, out_ix, out_w
