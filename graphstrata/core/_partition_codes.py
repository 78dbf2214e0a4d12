"""Sorting items by code and indexing their distinct codes (:mod:`graphstrata.core.partition`).

Narrow codes (up to ~22 bits) get a direct ``code -> distinct index`` table, so a Hamming
probe is one load; wider codes get a multi-index: the code cut into substrings of about
``log2(#codes)`` bits, each bucketing the distinct codes by its value (two codes within
distance ``s*(t+1) - 1`` agree up to ``t`` bits on one of ``s`` substrings). See
docs/architecture.md, "Kernels".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from graphstrata.core._partition_types import DIRECT_MAX_BITS, CodeIndex


@njit(cache=True, nogil=True)
def _counting_sort(
    codes: np.ndarray, max_code: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # Stable counting sort over a narrow code range -> order, distinct-code index per
    # item, distinct codes, run starts.
    m = codes.shape[0]
    cnt = np.zeros(max_code + 2, dtype=np.int64)
    for i in range(m):
        cnt[np.int64(codes[i]) + 1] += 1
    g = 0
    for c in range(max_code + 1):
        if cnt[c + 1] > 0:
            g += 1
    ucodes = np.empty(g, dtype=np.uint64)
    ustart = np.empty(g + 1, dtype=np.int64)
    k = 0
    acc = 0
    for c in range(max_code + 1):
        n = cnt[c + 1]
        if n > 0:
            ucodes[k] = np.uint64(c)
            ustart[k] = acc
            cnt[c + 1] = k  # reuse as code -> k
            acc += n
            k += 1
    ustart[g] = acc
    pos = ustart[:g].copy()
    order = np.empty(m, dtype=np.int64)
    code_k = np.empty(m, dtype=np.int64)
    for i in range(m):
        kk = cnt[np.int64(codes[i]) + 1]
        code_k[i] = kk
        order[pos[kk]] = i
        pos[kk] += 1
    return order, code_k, ucodes, ustart


@njit(cache=True, nogil=True)
def _runs_from_sorted(
    codes: np.ndarray, order: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # order sorts codes (not stably): restore index order inside each run and derive
    # each item's distinct-code index, the distinct codes and the run starts.
    m = order.shape[0]
    g = 0
    for j in range(m):
        if j == 0 or codes[order[j]] != codes[order[j - 1]]:
            g += 1
    ucodes = np.empty(g, dtype=np.uint64)
    ustart = np.empty(g + 1, dtype=np.int64)
    code_k = np.empty(m, dtype=np.int64)
    k = -1
    for j in range(m):
        c = codes[order[j]]
        if j == 0 or c != codes[order[j - 1]]:
            k += 1
            ucodes[k] = c
            ustart[k] = j
        code_k[order[j]] = k
    ustart[g] = m
    for k in range(g):
        a, b = ustart[k], ustart[k + 1]
        if b - a > 1:
            order[a:b] = np.sort(order[a:b])
    return code_k, ucodes, ustart


#: Runs up to this long are ordered by insertion sort in place (most runs: a million items
#: over 16-bit codes are ~15 per code); longer ones by a merge sort of a copy.
_INSERTION_RUN = 32


@njit(cache=True, nogil=True)
def _tiebreak_runs(order: np.ndarray, ustart: np.ndarray, sorted_tiebreak: np.ndarray) -> None:
    # Inside each equal-code run, order items by tiebreak (stable: index breaks ties; the
    # runs arrive in index order). ``sorted_tiebreak`` is ``tiebreak[order]``, gathered by
    # the caller in one independent pass (here each load would wait on the sort).
    keys = np.empty(_INSERTION_RUN, dtype=np.float64)
    items = np.empty(_INSERTION_RUN, dtype=np.int64)
    for k in range(ustart.shape[0] - 1):
        a, b = ustart[k], ustart[k + 1]
        n = b - a
        if n <= 1:
            continue
        if n <= _INSERTION_RUN:
            for j in range(n):
                item = order[a + j]
                key = sorted_tiebreak[a + j]
                i = j - 1
                while i >= 0 and keys[i] > key:
                    keys[i + 1] = keys[i]
                    items[i + 1] = items[i]
                    i -= 1
                keys[i + 1] = key
                items[i + 1] = item
            for j in range(n):
                order[a + j] = items[j]
            continue
        run = order[a:b].copy()
        perm = np.argsort(sorted_tiebreak[a:b], kind="mergesort")
        for j in range(n):
            order[a + j] = run[perm[j]]


@njit(cache=True, nogil=True)
def _build_substring_index(
    ucodes: np.ndarray, widths: np.ndarray, shifts: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    # For each substring j: the distinct codes bucketed by their substring value
    # (bitems[j, bstart[j, v]:bstart[j, v + 1]]).
    ns = widths.shape[0]
    g = ucodes.shape[0]
    wmax = 0
    for j in range(ns):
        wmax = max(wmax, widths[j])
    bstart = np.zeros((ns, (1 << wmax) + 1), dtype=np.int32)
    bitems = np.empty((ns, g), dtype=np.int32)
    for j in range(ns):
        mask = (np.uint64(1) << np.uint64(widths[j])) - np.uint64(1)
        sh = np.uint64(shifts[j])
        for k in range(g):
            v = np.int64((ucodes[k] >> sh) & mask)
            bstart[j, v + 1] += 1
        for b in range(1 << wmax):
            bstart[j, b + 1] += bstart[j, b]
        fill = bstart[j, :].copy()
        for k in range(g):
            v = np.int64((ucodes[k] >> sh) & mask)
            bitems[j, fill[v]] = k
            fill[v] += 1
    return bstart, bitems


class SortedCodes(NamedTuple):
    """Items sorted by (code, tiebreak, index) and the index of their distinct codes."""

    order: np.ndarray  # int64 [m]: position -> item
    code_k: np.ndarray  # int64 [m]: distinct-code index of each item
    code_index: CodeIndex  # what the kernels read (by position)

    @property
    def ucodes(self) -> np.ndarray:
        """Distinct codes, ascending (uint64 [g])."""
        return self.code_index.ucodes

    @property
    def widths(self) -> np.ndarray:
        """Substring widths of the multi-index (empty in direct mode)."""
        return self.code_index.widths


def sort_codes(codes: np.ndarray, tiebreak: np.ndarray | None) -> SortedCodes:
    """Sort ``codes`` (uint64 [m], m >= 1) and index their distinct codes.

    Parameters
    ----------
    codes : uint64 array [m]
        LSH codes, ``m >= 1``.
    tiebreak : float64 array [m] or None
        Order inside equal-code runs (default: item index).

    Returns
    -------
    SortedCodes
        The sort order, each item's distinct-code index and the :class:`CodeIndex`.
    """
    m = codes.shape[0]
    max_code = int(codes.max())
    nbits = int(np.bitwise_or.reduce(codes)).bit_length()
    if max_code < 2 * m + 65536:  # counting sort: O(m + max_code) beats O(m log m)
        order, code_k, ucodes, ustart = _counting_sort(codes, max_code)
    else:
        order = np.argsort(codes).astype(np.int64)
        code_k, ucodes, ustart = _runs_from_sorted(codes, order)
    if tiebreak is not None:
        _tiebreak_runs(order, ustart, tiebreak[order])
    g = ucodes.shape[0]
    ck = np.repeat(np.arange(g, dtype=np.int64), np.diff(ustart))
    lg = max(1, math.ceil(math.log2(g + 1)))
    e32 = np.zeros(0, dtype=np.int32)
    e64 = np.zeros(0, dtype=np.int64)
    e2 = np.zeros((0, 0), dtype=np.int32)
    if nbits <= min(max(16, lg + 3), DIRECT_MAX_BITS):
        direct = np.full(1 << nbits, -1, dtype=np.int32)
        direct[ucodes.astype(np.int64)] = np.arange(g, dtype=np.int32)
        index = CodeIndex(ck, ucodes, ustart, nbits, direct, e64, e64, e2, e2)
        return SortedCodes(order, code_k, index)
    # multi-index: substrings of about log2(g) + 1 bits keep buckets near one code each
    w = min(max(lg + 1, 8), 20)
    ns = math.ceil(nbits / w)
    widths = np.array(
        [nbits // ns + (1 if j < nbits % ns else 0) for j in range(ns)], dtype=np.int64
    )
    shifts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(widths)[:-1]])
    shifts = shifts.astype(np.int64)
    bstart, bitems = _build_substring_index(ucodes, widths, shifts)
    index = CodeIndex(ck, ucodes, ustart, nbits, e32, widths, shifts, bstart, bitems)
    return SortedCodes(order, code_k, index)
