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
    values : integer array [m]
        Ids to look up (any, duplicates allowed).

    Returns
    -------
    np.ndarray
        int64 [m]: ``sorted_ids[out] == values`` where ``out >= 0``.
    """
    sorted_ids = np.asarray(sorted_ids, np.int64)
    values = np.asarray(values, np.int64)
    if sorted_ids.size == 0 or values.size == 0:
        return np.full(values.shape, -1, np.int64)
    lo, hi = int(sorted_ids[0]), int(sorted_ids[-1])
    span = hi - lo + 1
    ascending = values.size < 2 or bool(np.all(values[1:] >= values[:-1]))
    # Ascending values walk the ids in order, so a binary search per value stays in cache:
    # measured 1M sorted values in 1.15M ids 24-29 ms searched against 34-135 ms by table
    # (allocating the table dominates).
    if not ascending and _use_table(span, values.size) and sorted_ids.size < _INT32_POSITIONS:
        flat = np.ascontiguousarray(values).reshape(-1)
        return _table_positions(sorted_ids, flat, lo, span).reshape(values.shape)
    if ascending and values.size * MERGE_SHARE >= sorted_ids.size:
        return _merged_positions(sorted_ids, values.reshape(-1)).reshape(values.shape)
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
    ends : int64 [b]
        How many kept edges the blocks up to each one hold (``ends[-1] == k``).
    """

    src: np.ndarray
    dst: np.ndarray
    cut: np.ndarray
    degree: np.ndarray
    ends: np.ndarray


@njit(cache=True, nogil=True, inline="always")
def _keep(
    a: int,
    b: int,
    ps: np.ndarray,
    pd: np.ndarray,
    cut: np.ndarray,
    degree: np.ndarray,
    k: int,
    c: int,
) -> tuple[int, int]:
    # One edge whose ends are at positions a, b (-1: absent): kept, cut, or dropped.
    if a >= 0 and b >= 0:
        ps[k], pd[k] = a, b
        degree[a] += 1
        degree[b] += 1
        return k + 1, c
    if a >= 0 or b >= 0:
        cut[c] = max(a, b)
        return k, c + 1
    return k, c


@njit(cache=True, nogil=True)
def _edges_in_blocks(
    old_src: np.ndarray,
    old_dst: np.ndarray,
    old_ends: np.ndarray,
    new_position: np.ndarray,
    a_of: np.ndarray,
    b_of: np.ndarray,
    ends: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # Block by block: the old edges (on old positions, carried by new_position), then the
    # edges whose ends are at positions a_of, b_of (-1: absent).
    total = old_src.shape[0] + a_of.shape[0]
    ps = np.empty(total, dtype=np.int64)
    pd = np.empty(total, dtype=np.int64)
    cut = np.empty(total, dtype=np.int64)
    degree = np.zeros(n, dtype=np.int64)
    out_ends = np.empty(ends.shape[0], dtype=np.int64)
    k = 0
    c = 0
    o = 0
    e = 0
    for blk in range(ends.shape[0]):
        while o < old_ends[blk]:
            a, b = new_position[old_src[o]], new_position[old_dst[o]]
            k, c = _keep(a, b, ps, pd, cut, degree, k, c)
            o += 1
        while e < ends[blk]:
            k, c = _keep(a_of[e], b_of[e], ps, pd, cut, degree, k, c)
            e += 1
        out_ends[blk] = k
    return ps[:k], pd[:k], cut[:c], degree, out_ends


def _block_ends(ends: np.ndarray | None, size: int, name: str) -> np.ndarray:
    out = np.asarray([size] if ends is None else ends, np.int64).reshape(-1)
    if out.size and (int(out[0]) < 0 or np.any(np.diff(out) < 0) or int(out[-1]) != size):
        raise ValueError(f"{name} must ascend to the number of edges ({size})")
    return out


def edges_within(
    sorted_ids: np.ndarray, src: np.ndarray, dst: np.ndarray, ends: np.ndarray | None = None
) -> EdgesWithin:
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
    ends : int64 array [b], optional
        The edges as consecutive blocks: where each ends (ascending, the last ``m``);
        default one block.

    Returns
    -------
    EdgesWithin
    """
    sorted_ids = np.ascontiguousarray(sorted_ids, np.int64)
    src = np.ascontiguousarray(src, np.int64).reshape(-1)
    dst = np.ascontiguousarray(dst, np.int64).reshape(-1)
    if src.shape != dst.shape:
        raise ValueError(f"src and dst differ in length: {src.size} and {dst.size}")
    blocks = _block_ends(ends, src.size, "ends")
    a_of, b_of = find_positions(sorted_ids, src), find_positions(sorted_ids, dst)
    none = np.zeros(0, np.int64)
    return EdgesWithin(
        *_edges_in_blocks(
            none, none, np.zeros(blocks.size, np.int64), none, a_of, b_of, blocks, sorted_ids.size
        )
    )


def edges_carried(
    old: EdgesWithin,
    new_position: np.ndarray,
    sorted_ids: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    ends: np.ndarray,
) -> EdgesWithin:
    """:func:`edges_within` of ``sorted_ids`` over ``old``'s edges followed, block by
    block, by the edges ``src -> dst``, where ``old`` holds the edges on the positions of
    an earlier id list and ``new_position`` maps those to ``sorted_ids`` (-1: gone).

    Equal to ``edges_within(sorted_ids, ...)`` of the edges ``old`` was made from with the
    new ones put after each block (tested). The old edges are carried in one pass over
    them, without looking their ids up again (issue 17).

    Parameters
    ----------
    old:
        The earlier edges (its ``src``, ``dst`` and ``ends`` are read; its blocks are
        those of ``ends``, one per block here).
    new_position : int64 array
        The position in ``sorted_ids`` of each earlier position, -1 where that id is gone.
    sorted_ids : int64 array [n]
        Ascending, unique ids.
    src, dst : integer arrays [m]
        The new edges (ids), block after block.
    ends : int64 array [b]
        Where each block of the new edges ends (as many blocks as ``old.ends``).
    """
    sorted_ids = np.ascontiguousarray(sorted_ids, np.int64)
    src = np.ascontiguousarray(src, np.int64).reshape(-1)
    dst = np.ascontiguousarray(dst, np.int64).reshape(-1)
    blocks = _block_ends(ends, src.size, "ends")
    if blocks.size != old.ends.size:
        raise ValueError(f"{blocks.size} blocks of new edges for {old.ends.size} old ones")
    a_of, b_of = find_positions(sorted_ids, src), find_positions(sorted_ids, dst)
    return EdgesWithin(
        *_edges_in_blocks(
            old.src,
            old.dst,
            old.ends,
            np.ascontiguousarray(new_position, np.int64),
            a_of,
            b_of,
            blocks,
            sorted_ids.size,
        )
    )
