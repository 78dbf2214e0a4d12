"""Set operations on 1-d arrays, by sorting.

NumPy 2.4's ``np.unique`` (without ``return_*``), and with it ``np.union1d``,
``np.setdiff1d``, ``np.intersect1d`` and the sorting path of ``np.isin``, finds distinct
values through a hash table, which is far slower than a sort on integer arrays: measured on
this machine, 1M random int64 ids took 750-930 ms against 11 ms for ``np.sort`` and a
neighbour comparison (100k: 12.5 ms against 1.3 ms). On a million-chunk index each
hierarchy write ran a dozen of them (issue 17). These functions give the same results (sorted,
distinct) by sorting; ``tests/unit/test_layering.py`` keeps the package on them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphstrata.core.ids import TABLE_SPAN_FACTOR

__all__ = [
    "difference",
    "intersection",
    "mapping_changes",
    "union",
    "unique",
    "unique_first",
    "unique_inverse",
]

#: Below this many values :func:`unique` sorts: the span's min and max passes cost more.
_TABLE_UNIQUE_MIN = 1024

# The integer functions below use a table over ``max - min + 1`` values while that span is
# at most ``TABLE_SPAN_FACTOR`` times the number of values (the trade-off ``core.ids``
# measured for lookups); otherwise they sort.


def unique(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values of ``values`` (any shape; flattened), like ``np.unique``.

    Parameters
    ----------
    values : array
        Values of a sortable dtype without NaN.

    Returns
    -------
    np.ndarray
        1-d, ascending, distinct; same dtype.
    """
    flat = np.asarray(values).reshape(-1)
    table = _table_span(flat) if flat.size >= _TABLE_UNIQUE_MIN else None
    if table is not None:
        # Dense integers (labels, group keys, ids): one mark per value and a scan of the
        # span. 532k random values spanning 100k: 1.6 ms against 8.4 ms sorted (1.2M: 2.7).
        lo, span = table
        present = np.zeros(span, dtype=bool)
        present[flat - lo] = True
        return (np.flatnonzero(present) + lo).astype(flat.dtype, copy=False)
    out = np.sort(flat)
    if out.size < 2:
        return out
    keep = np.empty(out.size, dtype=bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


def union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sorted distinct values in ``a`` or ``b`` (``np.union1d``)."""
    return unique(np.concatenate([np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)]))


def _member(sorted_distinct: np.ndarray, values: np.ndarray) -> np.ndarray:
    """bool per value: does it occur in ``sorted_distinct``."""
    if sorted_distinct.size == 0 or values.size == 0:
        return np.zeros(values.shape, dtype=bool)
    pos = np.searchsorted(sorted_distinct, values)
    pos[pos == sorted_distinct.size] = 0
    return sorted_distinct[pos] == values


def intersection(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sorted distinct values in both ``a`` and ``b`` (``np.intersect1d``)."""
    ua = unique(a)
    return ua[_member(unique(b), ua)]


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sorted distinct values of ``a`` that are not in ``b`` (``np.setdiff1d``)."""
    ua = unique(a)
    return ua[~_member(unique(b), ua)]


def _table_span(values: np.ndarray) -> tuple[int, int] | None:
    """``(min, span)`` when ``values`` are integers narrow enough for a table, else None."""
    if values.size == 0 or not np.issubdtype(values.dtype, np.integer):
        return None
    lo, hi = int(values.min()), int(values.max())
    span = hi - lo + 1
    return (lo, span) if span <= TABLE_SPAN_FACTOR * values.size else None


@njit(cache=True, nogil=True)
def _first_by_table(offset: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    # Distinct offsets in ascending order and the first position of each.
    first = np.full(span, -1, dtype=np.int64)
    for i in range(offset.shape[0]):
        if first[offset[i]] < 0:
            first[offset[i]] = i
    g = 0
    for v in range(span):
        if first[v] >= 0:
            g += 1
    values = np.empty(g, dtype=np.int64)
    firsts = np.empty(g, dtype=np.int64)
    k = 0
    for v in range(span):
        if first[v] >= 0:
            values[k] = v
            firsts[k] = first[v]
            k += 1
    return values, firsts


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for a 1-d array, by table for integers.

    Returns
    -------
    (np.ndarray, np.ndarray)
        The sorted distinct values and, per value, its int64 position among them.
    """
    values = np.asarray(values).reshape(-1)
    table = _table_span(values)
    if table is None:
        # A sort, not np.unique: NumPy 2.4 finds distinct values by hashing (see the
        # module docstring): 9 ms per contracted Leiden run of a 100k-chunk write.
        if values.size == 0:
            return values.copy(), np.zeros(0, np.int64)
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        first = np.empty(values.size, dtype=bool)
        first[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
        inverse = np.empty(values.size, dtype=np.int64)
        inverse[order] = np.cumsum(first) - 1
        return ordered[first], inverse
    lo, span = table
    offset = values.astype(np.int64) - lo
    present = np.zeros(span, dtype=bool)
    present[offset] = True
    distinct = np.flatnonzero(present)
    rank = np.zeros(span, dtype=np.int64)
    rank[distinct] = np.arange(distinct.size, dtype=np.int64)
    return (distinct + lo).astype(values.dtype), rank[offset]


def unique_first(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_index=True)`` for a 1-d array, by table for integers.

    Returns
    -------
    (np.ndarray, np.ndarray)
        The sorted distinct values and the int64 position of each one's first occurrence.
    """
    values = np.asarray(values).reshape(-1)
    table = _table_span(values)
    if table is None:
        uniq, first = np.unique(values, return_index=True)
        return uniq, first.astype(np.int64)
    lo, span = table
    distinct, first = _first_by_table(values.astype(np.int64) - lo, span)
    return (distinct + lo).astype(values.dtype), first


@njit(cache=True, nogil=True)
def _mapping_changes(
    ids: np.ndarray, values: np.ndarray, pids: np.ndarray, pvals: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    # One merge of the two ascending id lists.
    changed = np.ones(ids.shape[0], dtype=np.bool_)
    gone = np.ones(pids.shape[0], dtype=np.bool_)
    i, j = 0, 0
    while i < ids.shape[0] and j < pids.shape[0]:
        if ids[i] < pids[j]:
            i += 1
        elif ids[i] > pids[j]:
            j += 1
        else:
            changed[i] = values[i] != pvals[j]
            gone[j] = False
            i += 1
            j += 1
    return changed, gone


def mapping_changes(
    ids: np.ndarray, values: np.ndarray, previous_ids: np.ndarray, previous_values: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Where a mapping ``id -> value`` differs from a previous one (both ids ascending,
    distinct), in one merge of the two id lists.

    Parameters
    ----------
    ids, values : int64 arrays [n]
        The new mapping.
    previous_ids, previous_values : int64 arrays [m]
        The previous mapping.

    Returns
    -------
    changed : bool array [n]
        The new ids that are new or map to another value.
    gone : bool array [m]
        The previous ids that are not in the new mapping.
    """
    return _mapping_changes(
        np.ascontiguousarray(ids, np.int64),
        np.ascontiguousarray(values, np.int64),
        np.ascontiguousarray(previous_ids, np.int64),
        np.ascontiguousarray(previous_values, np.int64),
    )
