"""Edge lists -> symmetric CSR adjacency; merging new edges into it and dropping nodes from it.

The search graph is undirected and weighted: every edge ``(u, v, w)`` is stored in both
rows ``u`` and ``v`` (a self-loop ``(u, u, w)`` once, in row ``u``), duplicate entries are
merged by summing their weights, and the column indices of each row are sorted. That is
exactly ``A = S + S.T - diag(S)`` with ``S`` the summed COO matrix of the edge list, as
scipy.sparse would build it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import get_num_threads, njit, prange

from graphstrata.core import sets
from graphstrata.core.csr_entries import merge_entries, sorted_entries

__all__ = ["advance_csr", "csr_from_edges", "merge_edges", "row_entries"]

_INSERTION_MAX = 32  # rows up to this length are sorted by insertion (no allocation)


@njit(cache=True, nogil=True)
def _scatter(
    src: np.ndarray, dst: np.ndarray, weight: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Directed entries of the symmetric matrix, grouped by row in input order.
    counts = np.zeros(n + 1, dtype=np.int64)
    for e in range(src.shape[0]):
        counts[src[e] + 1] += 1
        if src[e] != dst[e]:
            counts[dst[e] + 1] += 1
    for i in range(n):
        counts[i + 1] += counts[i]
    indptr = counts
    nnz = indptr[n]
    cols = np.empty(nnz, dtype=np.int64)
    vals = np.empty(nnz, dtype=np.float32)
    fill = indptr[:n].copy()
    for e in range(src.shape[0]):
        u, v, w = src[e], dst[e], weight[e]
        cols[fill[u]] = v
        vals[fill[u]] = w
        fill[u] += 1
        if u != v:
            cols[fill[v]] = u
            vals[fill[v]] = w
            fill[v] += 1
    return indptr, cols, vals


@njit(cache=True, nogil=True)
def _sort_merge_row(cols: np.ndarray, vals: np.ndarray, a: int, b: int) -> int:
    # Sort cols[a:b] (carrying vals) and merge equal columns by summing, in place; returns
    # the merged length. Stable, so equal columns are summed in input order.
    n = b - a
    if n <= 1:
        return n
    if n <= _INSERTION_MAX:
        for i in range(a + 1, b):
            c = cols[i]
            w = vals[i]
            j = i - 1
            while j >= a and cols[j] > c:
                cols[j + 1] = cols[j]
                vals[j + 1] = vals[j]
                j -= 1
            cols[j + 1] = c
            vals[j + 1] = w
    else:
        perm = np.argsort(cols[a:b], kind="mergesort")
        c2 = cols[a:b][perm]
        v2 = vals[a:b][perm]
        cols[a:b] = c2
        vals[a:b] = v2
    k = a
    for i in range(a + 1, b):
        if cols[i] == cols[k]:
            vals[k] += vals[i]
        else:
            k += 1
            cols[k] = cols[i]
            vals[k] = vals[i]
    return k - a + 1


@njit(cache=True, nogil=True)
def _sort_rows(
    indptr: np.ndarray, cols: np.ndarray, vals: np.ndarray, lengths: np.ndarray, lo: int, hi: int
) -> None:
    for i in range(lo, hi):
        lengths[i] = _sort_merge_row(cols, vals, indptr[i], indptr[i + 1])


@njit(cache=True, nogil=True)
def _compact_rows(
    indptr: np.ndarray,
    cols: np.ndarray,
    vals: np.ndarray,
    lengths: np.ndarray,
    out_ptr: np.ndarray,
    out_cols: np.ndarray,
    out_vals: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    for i in range(lo, hi):
        a = indptr[i]
        o = out_ptr[i]
        for j in range(lengths[i]):
            out_cols[o + j] = cols[a + j]
            out_vals[o + j] = vals[a + j]


@njit(cache=True, nogil=True, parallel=True)
def _sort_rows_par(
    indptr: np.ndarray, cols: np.ndarray, vals: np.ndarray, lengths: np.ndarray, n_chunks: int
) -> None:
    n = lengths.shape[0]
    step = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        _sort_rows(indptr, cols, vals, lengths, c * step, min(n, (c + 1) * step))


@njit(cache=True, nogil=True, parallel=True)
def _compact_rows_par(
    indptr: np.ndarray,
    cols: np.ndarray,
    vals: np.ndarray,
    lengths: np.ndarray,
    out_ptr: np.ndarray,
    out_cols: np.ndarray,
    out_vals: np.ndarray,
    n_chunks: int,
) -> None:
    n = lengths.shape[0]
    step = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        lo, hi = c * step, min(n, (c + 1) * step)
        _compact_rows(indptr, cols, vals, lengths, out_ptr, out_cols, out_vals, lo, hi)


def _finish(
    indptr: np.ndarray, cols: np.ndarray, vals: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Sort and merge every row, then compact. Rows are independent: large graphs use the
    # thread pool, small ones stay serial (waking the pool costs more than the work).
    lengths = np.empty(n, dtype=np.int64)
    chunks = _n_chunks(cols.shape[0])
    if chunks > 1:
        _sort_rows_par(indptr, cols, vals, lengths, chunks)
    else:
        _sort_rows(indptr, cols, vals, lengths, 0, n)
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_ptr[1:])
    out_cols = np.empty(out_ptr[n], dtype=np.int64)
    out_vals = np.empty(out_ptr[n], dtype=np.float32)
    if chunks > 1:
        _compact_rows_par(indptr, cols, vals, lengths, out_ptr, out_cols, out_vals, chunks)
    else:
        _compact_rows(indptr, cols, vals, lengths, out_ptr, out_cols, out_vals, 0, n)
    return out_ptr, out_cols, out_vals


_PARALLEL_MIN = 1 << 18  # entries; below this the serial path wins


def _n_chunks(work: int) -> int:
    if work < _PARALLEL_MIN:
        return 1
    return 4 * max(1, get_num_threads())  # a few chunks per thread balance skewed rows


@njit(cache=True, nogil=True)
def _count_union(
    ip1: np.ndarray,
    ix1: np.ndarray,
    n1: int,
    ip2: np.ndarray,
    ix2: np.ndarray,
    lengths: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    # Row-wise union sizes of two CSRs with sorted, duplicate-free rows (ip1 may have
    # fewer rows: rows >= n1 are empty there).
    for i in range(lo, hi):
        a, b = (ip1[i], ip1[i + 1]) if i < n1 else (0, 0)
        c, d = ip2[i], ip2[i + 1]
        cnt = 0
        while a < b and c < d:
            if ix1[a] < ix2[c]:
                a += 1
            elif ix1[a] > ix2[c]:
                c += 1
            else:
                a += 1
                c += 1
            cnt += 1
        lengths[i] = cnt + (b - a) + (d - c)


@njit(cache=True, nogil=True)
def _fill_union(
    ip1: np.ndarray,
    ix1: np.ndarray,
    w1: np.ndarray,
    n1: int,
    ip2: np.ndarray,
    ix2: np.ndarray,
    w2: np.ndarray,
    out_ptr: np.ndarray,
    out_ix: np.ndarray,
    out_w: np.ndarray,
    lo: int,
    hi: int,
) -> None:
    # Write the row-wise union; equal columns sum.
    for i in range(lo, hi):
        a, b = (ip1[i], ip1[i + 1]) if i < n1 else (0, 0)
        c, d = ip2[i], ip2[i + 1]
        o = out_ptr[i]
        while a < b or c < d:
            if c >= d or (a < b and ix1[a] < ix2[c]):
                out_ix[o] = ix1[a]
                out_w[o] = w1[a]
                a += 1
            elif a >= b or ix1[a] > ix2[c]:
                out_ix[o] = ix2[c]
                out_w[o] = w2[c]
                c += 1
            else:
                out_ix[o] = ix1[a]
                out_w[o] = w1[a] + w2[c]
                a += 1
                c += 1
            o += 1


@njit(cache=True, nogil=True, parallel=True)
def _union_par(
    ip1: np.ndarray,
    ix1: np.ndarray,
    w1: np.ndarray,
    n1: int,
    ip2: np.ndarray,
    ix2: np.ndarray,
    w2: np.ndarray,
    out_ptr: np.ndarray,
    out_ix: np.ndarray,
    out_w: np.ndarray,
    lengths: np.ndarray,
    phase: int,
    chunks: int,
) -> None:
    n = lengths.shape[0]
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        lo, hi = c * step, min(n, (c + 1) * step)
        if phase == 0:
            _count_union(ip1, ix1, n1, ip2, ix2, lengths, lo, hi)
        else:
            _fill_union(ip1, ix1, w1, n1, ip2, ix2, w2, out_ptr, out_ix, out_w, lo, hi)


def _merge_sorted(
    ip1: np.ndarray,
    ix1: np.ndarray,
    w1: np.ndarray,
    n1: int,
    ip2: np.ndarray,
    ix2: np.ndarray,
    w2: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.empty(n, dtype=np.int64)
    chunks = _n_chunks(ix1.shape[0] + ix2.shape[0])
    e64 = np.zeros(0, dtype=np.int64)
    e32 = np.zeros(0, dtype=np.float32)
    if chunks > 1:
        _union_par(ip1, ix1, w1, n1, ip2, ix2, w2, e64, e64, e32, lengths, 0, chunks)
    else:
        _count_union(ip1, ix1, n1, ip2, ix2, lengths, 0, n)
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_ptr[1:])
    out_ix = np.empty(out_ptr[n], dtype=np.int64)
    out_w = np.empty(out_ptr[n], dtype=np.float32)
    if chunks > 1:
        _union_par(ip1, ix1, w1, n1, ip2, ix2, w2, out_ptr, out_ix, out_w, lengths, 1, chunks)
    else:
        _fill_union(ip1, ix1, w1, n1, ip2, ix2, w2, out_ptr, out_ix, out_w, 0, n)
    return out_ptr, out_ix, out_w


def _check_edges(
    src: np.ndarray, dst: np.ndarray, weight: np.ndarray, n_nodes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    src = np.asarray(src)
    dst = np.asarray(dst)
    weight = np.asarray(weight)
    if src.ndim != 1 or dst.ndim != 1 or weight.ndim != 1:
        raise ValueError("src, dst and weight must be 1-d arrays")
    if not (src.shape[0] == dst.shape[0] == weight.shape[0]):
        raise ValueError(
            f"src, dst and weight must have equal lengths, got "
            f"{src.shape[0]}, {dst.shape[0]}, {weight.shape[0]}"
        )
    for name, a in (("src", src), ("dst", dst)):
        if a.size and not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"{name} must be an integer array, got {a.dtype}")
    if weight.size and not (
        np.issubdtype(weight.dtype, np.floating) or np.issubdtype(weight.dtype, np.integer)
    ):
        raise ValueError(f"weight must be numeric, got {weight.dtype}")
    n_nodes = int(n_nodes)
    if n_nodes < 0:
        raise ValueError(f"n_nodes must be >= 0, got {n_nodes}")
    src = np.ascontiguousarray(src, dtype=np.int64)
    dst = np.ascontiguousarray(dst, dtype=np.int64)
    weight = np.ascontiguousarray(weight, dtype=np.float32)
    if src.size:
        lo = min(int(src.min()), int(dst.min()))
        hi = max(int(src.max()), int(dst.max()))
        if lo < 0 or hi >= n_nodes:
            raise ValueError(f"edge endpoints must lie in [0, {n_nodes}), got [{lo}, {hi}]")
        if not np.all(np.isfinite(weight)):
            raise ValueError("weights must be finite")
    return src, dst, weight, n_nodes


def csr_from_edges(
    src: np.ndarray, dst: np.ndarray, weight: np.ndarray, n_nodes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Build the symmetric CSR adjacency of an undirected weighted edge list.

    Each edge is stored in both directions (a self-loop once), duplicate entries are merged
    by summing their weights (an edge given as both ``(u, v)`` and ``(v, u)`` merges too),
    and indices are sorted within each row. O(e + n) plus a per-row sort (rows in parallel
    for large inputs).

    Parameters
    ----------
    src, dst : int64 array [e]
        Endpoints, in ``[0, n_nodes)``.
    weight : float32 array [e]
        Edge weights (finite; float64 is rounded to float32).
    n_nodes : int
        Number of nodes (rows); nodes without edges get empty rows.

    Returns
    -------
    indptr : int64 array [n_nodes + 1]
    indices : int64 array [nnz]
    weights : float32 array [nnz]
    """
    src, dst, weight, n = _check_edges(src, dst, weight, n_nodes)
    indptr, cols, vals = _scatter(src, dst, weight, n)
    return _finish(indptr, cols, vals, n)


def _as_csr(
    indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A CSR as contiguous int64 / int64 / float32 arrays, checked for consistency."""
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    indices = np.ascontiguousarray(indices, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float32)
    if indptr.ndim != 1 or indptr.shape[0] < 1 or indices.ndim != 1 or weights.ndim != 1:
        raise ValueError("indptr, indices and weights must be 1-d, indptr non-empty")
    if indptr[0] != 0 or indptr[-1] != indices.shape[0] or indices.shape != weights.shape:
        raise ValueError("inconsistent CSR: need indptr[0] == 0 and indptr[-1] == len(indices)")
    return indptr, indices, weights


def merge_edges(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    n_nodes: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add undirected edges to an existing symmetric CSR (as from :func:`csr_from_edges`).

    The result equals ``csr_from_edges`` over the old edges plus the new ones (up to the
    order in which float32 weights are summed): new edges are mirrored and merged, and an
    entry present in both sums. Rows are merged pairwise (in parallel for large inputs), so
    the cost is O(nnz + e) with no global sort.

    Parameters
    ----------
    indptr, indices, weights : the existing CSR
        ``indptr`` int64 [n_old + 1]; rows sorted and duplicate-free.
    src, dst, weight : arrays [e]
        New edges, as in :func:`csr_from_edges`.
    n_nodes : int
        Node count of the result, ``>= n_old`` (new nodes get rows).

    Returns
    -------
    indptr : int64 array [n_nodes + 1]
    indices : int64 array [nnz']
    weights : float32 array [nnz']
    """
    indptr, indices, weights = _as_csr(indptr, indices, weights)
    n_old = indptr.shape[0] - 1
    if int(n_nodes) < n_old:
        raise ValueError(f"n_nodes ({n_nodes}) is smaller than the existing graph ({n_old})")
    src, dst, weight, n = _check_edges(src, dst, weight, n_nodes)
    if _FEW_EDGES_SHARE * src.shape[0] <= n:
        rows, cols, vals = sorted_entries(src, dst, weight)
        return merge_entries(indptr, indices, weights, n_old, rows, cols, vals, n)
    ip2, ix2, w2 = csr_from_edges(src, dst, weight, n)
    return _merge_sorted(indptr, indices, weights, n_old, ip2, ix2, w2, n)


#: :func:`merge_edges` merges edges fewer than this share of the rows entry by entry: a CSR
#: of the new edges alone has a row pointer per node, and building it (five passes over
#: ``n``) then merging it (two more) cost 13 ms of a one-document write at 100k chunks
#: (1.1M slots, ~1k new edges), against one pass for the entry-by-entry merge (issue 17).
_FEW_EDGES_SHARE = 16


@njit(cache=True, nogil=True)
def _advanced_row(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    new_pos: np.ndarray,
    u: int,
    ip2: np.ndarray,
    ix2: np.ndarray,
    w2: np.ndarray,
    r: int,
    out_ix: np.ndarray,
    out_w: np.ndarray,
    o: int,
    write: bool,
) -> int:
    # Old row u, renumbered and without dropped nodes (monotone: it stays sorted), merged
    # with new row r; equal columns sum. Returns the end of the output (o + its length).
    a, b = (indptr[u], indptr[u + 1]) if u >= 0 else (0, 0)
    c, d = ip2[r], ip2[r + 1]
    while a < b or c < d:
        va = -1
        if a < b:
            va = new_pos[indices[a]]
            if va < 0:
                a += 1
                continue
        if c >= d or (a < b and va < ix2[c]):
            if write:
                out_ix[o] = va
                out_w[o] = weights[a]
            a += 1
        elif a >= b or va > ix2[c]:
            if write:
                out_ix[o] = ix2[c]
                out_w[o] = w2[c]
            c += 1
        else:
            if write:
                out_ix[o] = va
                out_w[o] = weights[a] + w2[c]
            a += 1
            c += 1
        o += 1
    return o


@njit(cache=True, nogil=True, parallel=True)
def _advanced_lengths(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    new_pos: np.ndarray,
    old_of: np.ndarray,
    ip2: np.ndarray,
    ix2: np.ndarray,
    w2: np.ndarray,
    rows: np.ndarray,
    lengths: np.ndarray,
) -> None:
    # Rows in parallel (distinct rows: each writes its own length); the touched rows of a
    # write include hub entities of tens of thousands of entries (24 ms on one thread at
    # 100k chunks).
    for i in prange(rows.shape[0]):
        r = rows[i]
        lengths[r] = _advanced_row(
            indptr, indices, weights, new_pos, old_of[r], ip2, ix2, w2, r, ix2, w2, 0, False
        )


@njit(cache=True, nogil=True, parallel=True)
def _advanced_fill(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    new_pos: np.ndarray,
    old_of: np.ndarray,
    ip2: np.ndarray,
    ix2: np.ndarray,
    w2: np.ndarray,
    out_ptr: np.ndarray,
    out_ix: np.ndarray,
    out_w: np.ndarray,
    chunks: int,
) -> None:
    n = old_of.shape[0]
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        for r in range(c * step, min(n, (c + 1) * step)):
            _advanced_row(
                indptr, indices, weights, new_pos, old_of[r], ip2, ix2, w2, r, out_ix, out_w,
                out_ptr[r], True,
            )  # fmt: skip


def row_entries(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """int64: the entry positions of the rows ``rows`` of a CSR, row after row.

    Rows past the CSR (``>= len(indptr) - 1``) have none.
    """
    rows = np.asarray(rows, np.int64)
    rows = rows[rows < indptr.shape[0] - 1]
    return spans(indptr[rows], indptr[rows + 1])


def spans(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """int64: ``starts[0]..stops[0]-1``, then ``starts[1]..stops[1]-1``, ... (empty spans
    allowed), without a Python loop.

    Parameters
    ----------
    starts, stops : integer arrays [k]
        Half-open spans, ``starts <= stops``.
    """
    starts = np.asarray(starts, np.int64)
    lengths = np.asarray(stops, np.int64) - starts
    # Entry k of the output lies at its span's start plus its rank within the span.
    first = np.cumsum(lengths) - lengths
    return np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(starts - first, lengths)


def advance_csr(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    keep: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    n_nodes: int,
    empty: Callable[[int, type], np.ndarray] = np.empty,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Drop nodes from a CSR (renumbering the rest) and merge new edges, in one pass.

    Only the rows that lose an entry (neighbours of dropped nodes) or gain one are
    measured; every other row keeps its length, so the output is sized without a counting
    pass and written once (rows in parallel). At 100k chunks (18.8M entries) the two calls
    took 0.53 s of a one-document write (issue 17).

    Parameters
    ----------
    indptr, indices, weights : the CSR
        As from :func:`csr_from_edges`.
    keep : bool array [n]
        The nodes that stay, renumbered ``0..k-1`` in their old order.
    src, dst, weight : arrays [e]
        New edges on the new numbering, as in :func:`merge_edges`.
    n_nodes : int
        Node count of the result, ``>= k`` (nodes ``k..n_nodes-1`` are new).
    empty : callable
        ``empty(n, dtype)``: allocates the output ``indices`` and ``weights`` (default
        ``np.empty``; a caller may recycle the buffers of graphs it no longer holds).

    Returns
    -------
    indptr : int64 array [n_nodes + 1]
    indices : int64 array [nnz']
    weights : float32 array [nnz']
    """
    indptr, indices, weights = _as_csr(indptr, indices, weights)
    keep = np.asarray(keep, dtype=bool)
    if indptr.shape[0] != keep.shape[0] + 1:
        raise ValueError(f"keep has {keep.shape[0]} nodes, the CSR {indptr.shape[0] - 1}")
    kept = np.flatnonzero(keep)
    if int(n_nodes) < kept.size:
        raise ValueError(f"n_nodes ({n_nodes}) is smaller than the kept nodes ({kept.size})")
    src, dst, weight, n = _check_edges(src, dst, weight, n_nodes)
    ip2, ix2, w2 = csr_from_edges(src, dst, weight, n)
    new_pos = np.full(keep.shape[0], -1, dtype=np.int64)
    new_pos[kept] = np.arange(kept.size, dtype=np.int64)
    old_of = np.full(n, -1, dtype=np.int64)
    old_of[: kept.size] = kept
    lengths = np.zeros(n, dtype=np.int64)
    lengths[: kept.size] = np.diff(indptr)[kept]
    losing = new_pos[indices[row_entries(indptr, np.flatnonzero(~keep))]]
    rows = sets.unique(np.concatenate([losing[losing >= 0], np.flatnonzero(np.diff(ip2))]))
    _advanced_lengths(indptr, indices, weights, new_pos, old_of, ip2, ix2, w2, rows, lengths)
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=out_ptr[1:])
    out_ix = empty(int(out_ptr[n]), np.int64)
    out_w = empty(int(out_ptr[n]), np.float32)
    chunks = _n_chunks(indices.shape[0] + ix2.shape[0])
    _advanced_fill(
        indptr, indices, weights, new_pos, old_of, ip2, ix2, w2, out_ptr, out_ix, out_w, chunks
    )
    return out_ptr, out_ix, out_w


def check_csr(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate a CSR structure (shapes, integer dtypes, ``indptr`` ends).

    Parameters
    ----------
    indptr : integer array [n + 1]
    indices : integer array [nnz]

    Returns
    -------
    indptr : int64 array [n + 1]
    indices : int64 array [nnz]
        The inputs as int64 (no copy when they already are).
    """
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    if indptr.ndim != 1 or indptr.shape[0] < 1 or indices.ndim != 1:
        raise ValueError("indptr must be non-empty 1-d and indices 1-d")
    if not np.issubdtype(indptr.dtype, np.integer) or (
        indices.size and not np.issubdtype(indices.dtype, np.integer)
    ):
        raise ValueError("indptr and indices must be integer arrays")
    if int(indptr[0]) != 0 or int(indptr[-1]) != indices.shape[0]:
        raise ValueError("inconsistent CSR: need indptr[0] == 0 and indptr[-1] == len(indices)")
    return indptr.astype(np.int64, copy=False), indices.astype(np.int64, copy=False)
