"""Positions of node ids in a version's ascending id array, and membership in it.

Every read structure of a version (the walk's CSR, Leiden's dense graph) maps node ids to
dense positions. ``np.searchsorted`` does that in O(m log n) with a cache miss per probe;
node ids are allocated in order and never reused, so they are dense enough that one
table of ``max - min + 1`` entries and a gather do it in O(n + m): measured 1.1 s of
searchsorted on the 50k-chunk heterograph's edges per commit (issue 17).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

#: The lookup table is used while its span is at most this many times the number of values
#: looked up: building it costs O(span), a binary search O(log n) per value. Measured on
#: 600k ids spanning 700k: 100 values 0.04 ms searched against 1.0 ms by table, 10k values
#: 2.4 ms against 0.9 ms, 1M values 237 ms against 7 ms (a crossover near span / 175).
TABLE_SPAN_FACTOR = 64
#: Ascending values are merged with the ids (one linear pass) when there are at least
#: ``len(ids) / MERGE_SHARE`` of them, else binary-searched: 530k ascending values in 532k
#: ids took 15 ms searched against 10 ms merged (6 ms of it the merge itself); 5k values
#: 0.3 ms searched against 0.5 ms merged (issue 17).
MERGE_SHARE = 16


@njit(cache=True, nogil=True)
def _merged_positions(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    # values ascending (duplicates allowed): one walk of both arrays.
    out = np.full(values.shape[0], -1, dtype=np.int64)
    j = 0
    n = sorted_ids.shape[0]
    for i in range(values.shape[0]):
        v = values[i]
        while j < n and sorted_ids[j] < v:
            j += 1
        if j == n:
            break
        if sorted_ids[j] == v:
            out[i] = j
    return out


#: The position table holds int32: below this many ids.
_INT32_POSITIONS = 2**31


def _use_table(span: int, n_values: int) -> bool:
    return span <= TABLE_SPAN_FACTOR * n_values


@njit(cache=True, nogil=True)
def _member(sorted_ids: np.ndarray, values: np.ndarray, lo: int, span: int) -> np.ndarray:
    present = np.zeros(span, dtype=np.bool_)
    for i in range(sorted_ids.shape[0]):
        present[sorted_ids[i] - lo] = True
    out = np.zeros(values.shape[0], dtype=np.bool_)
    for i in range(values.shape[0]):
        v = values[i] - lo
        if 0 <= v < span:
            out[i] = present[v]
    return out


@njit(cache=True, nogil=True)
def _table_positions(sorted_ids: np.ndarray, values: np.ndarray, lo: int, span: int) -> np.ndarray:
    # One compiled pass each over the ids and the values, through an int32 table: the
    # NumPy version (a filled int64 table, a clipped copy of the values, a gather) took
    # 10-11 ms for 924k random edge ends in 532k ids spanning 1.3M, the same loop over an
    # int64 table as long, this one 3.1 ms (fewer cache misses; issue 17).
    table = np.full(span, -1, dtype=np.int32)  # half the cache lines of int64
    for i in range(sorted_ids.shape[0]):
        table[sorted_ids[i] - lo] = i
    out = np.empty(values.shape[0], dtype=np.int64)
    for i in range(values.shape[0]):
        v = values[i] - lo
        out[i] = table[v] if 0 <= v < span else -1
    return out


def contains(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """bool per value: does it occur in ``sorted_ids`` (ascending, unique); see
    :func:`find_positions`.

    Where a table of the ids' span pays (``TABLE_SPAN_FACTOR``), one compiled pass over a
    bitmap of it: 900k edge ends against 40 entity ids spanning 650k took 16 ms through the
    position table (a filled int64 table, a clipped copy of the values, a gather) (issue 17).
    """
    sorted_ids = np.asarray(sorted_ids, np.int64)
    values = np.asarray(values, np.int64)
    if sorted_ids.size == 0 or values.size == 0:
        return np.zeros(values.shape, bool)
    lo = int(sorted_ids[0])
    span = int(sorted_ids[-1]) - lo + 1
    if not _use_table(span, values.size):
        return find_positions(sorted_ids, values) >= 0
    flat = np.ascontiguousarray(values).reshape(-1)
    return _member(np.ascontiguousarray(sorted_ids), flat, lo, span).reshape(values.shape)


def find_positions(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Position of each of ``values`` in ``sorted_ids``, -1 where it is absent.

    Parameters
    ----------
    sorted_ids : int64 array [n]
        Ascending, unique ids.
    values : integer array, any shape
        Ids to look up (any, duplicates allowed).

    Returns
    -------
    np.ndarray
        int64, the shape of ``values``: ``sorted_ids[out] == values`` where ``out >= 0``.
    """
    sorted_ids = np.asarray(sorted_ids, np.int64)
    values = np.asarray(values, np.int64)
    if sorted_ids.size == 0 or values.size == 0:
        return np.full(values.shape, -1, np.int64)
    lo, hi = int(sorted_ids[0]), int(sorted_ids[-1])
    span = hi - lo + 1
    # Ascending over the flattened values: compared along the first axis, a one-row 2-D
    # array of unsorted ids counted as ascending and took the merge (wrong positions).
    flat = values.reshape(-1)
    ascending = flat.size < 2 or bool(np.all(flat[1:] >= flat[:-1]))
    # Ascending values walk the ids in order, so a binary search per value stays in cache:
    # measured 1M sorted values in 1.15M ids 24-29 ms searched against 34-135 ms by table
    # (allocating the table dominates).
    if not ascending and _use_table(span, values.size) and sorted_ids.size < _INT32_POSITIONS:
        flat = np.ascontiguousarray(flat)
        return _table_positions(sorted_ids, flat, lo, span).reshape(values.shape)
    if ascending and values.size * MERGE_SHARE >= sorted_ids.size:
        return _merged_positions(sorted_ids, flat).reshape(values.shape)
    pos = np.minimum(np.searchsorted(sorted_ids, values), sorted_ids.size - 1).astype(np.int64)
    return np.where(sorted_ids[pos] == values, pos, -1)


def positions_in(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Position of each of ``values`` in ``sorted_ids``; every value must be present.

    Parameters
    ----------
    sorted_ids : int64 array [n]
        Ascending, unique ids.
    values : integer array [m]
        Ids that occur in ``sorted_ids`` (duplicates allowed).

    Returns
    -------
    np.ndarray
        int64 [m], ``sorted_ids[out] == values``.

    Raises
    ------
    KeyError
        For a value that is not in ``sorted_ids``.
    """
    values = np.asarray(values, np.int64)
    out = find_positions(sorted_ids, values)
    if values.size and int(out.min()) < 0:
        raise KeyError(f"ids not present: {values[out < 0][:10].tolist()}")
    return out


class EdgesWithin(NamedTuple):
    """The edges of :func:`edges_within` on positions.

    Attributes
    ----------
    src, dst : int64 [k]
        Positions of both ends of each edge whose ends are both present, in edge order.
    cut : int64 [c]
        Position of the present end of each edge with exactly one end present, in edge
        order (duplicates kept).
    degree : int64 [n]
        How many of the kept edges each position is an end of (a self-loop counts twice).
    """

    src: np.ndarray
    dst: np.ndarray
    cut: np.ndarray
    degree: np.ndarray


@njit(cache=True, nogil=True)
def _edges_on_positions(
    a_of: np.ndarray, b_of: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # a_of, b_of: position of each edge end, -1 where absent.
    ps = np.empty(a_of.shape[0], dtype=np.int64)
    pd = np.empty(a_of.shape[0], dtype=np.int64)
    cut = np.empty(a_of.shape[0], dtype=np.int64)
    degree = np.zeros(n, dtype=np.int64)
    k = 0
    c = 0
    for e in range(a_of.shape[0]):
        a, b = a_of[e], b_of[e]
        if a >= 0 and b >= 0:
            ps[k], pd[k] = a, b
            degree[a] += 1
            degree[b] += 1
            k += 1
        elif a >= 0 or b >= 0:
            cut[c] = max(a, b)
            c += 1
    return ps[:k], pd[:k], cut[:c], degree


def edges_within(sorted_ids: np.ndarray, src: np.ndarray, dst: np.ndarray) -> EdgesWithin:
    """The edges between ids of ``sorted_ids``, on their positions.

    The ends are looked up (:func:`find_positions`), then one compiled pass keeps the
    edges and counts the degrees: what a dead-end filter (two membership tests), a gather,
    two position lookups and two weighted bincounts did for Leiden's 924k edges in 12.6 ms
    of a one-document write at 100k chunks under line_profiler (issue 17).

    Parameters
    ----------
    sorted_ids : int64 array [n]
        Ascending, unique ids.
    src, dst : integer arrays [m]
        Edge ends (any ids).

    Returns
    -------
    EdgesWithin
    """
    sorted_ids = np.ascontiguousarray(sorted_ids, np.int64)
    src = np.ascontiguousarray(src, np.int64).reshape(-1)
    dst = np.ascontiguousarray(dst, np.int64).reshape(-1)
    if src.shape != dst.shape:
        raise ValueError(f"src and dst differ in length: {src.size} and {dst.size}")
    a_of, b_of = find_positions(sorted_ids, src), find_positions(sorted_ids, dst)
    return EdgesWithin(*_edges_on_positions(a_of, b_of, int(sorted_ids.size)))
