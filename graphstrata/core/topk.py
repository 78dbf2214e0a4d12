"""Per-kind top-k of the nodes a walk reached (NodeRAG's cross nodes), by bounded heaps.

Compiled with ``nogil=True`` like ``core.ppr``: the server's query threads run it side by side.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
from numba import njit

__all__ = ["top_k_by_kind"]


@njit(cache=True, nogil=True, inline="always")
def _worse(ka: float, pa: int, kb: float, pb: int) -> bool:
    # Rank order of the selection: higher key first, then earlier position.
    return ka < kb or (ka == kb and pa > pb)


@njit(cache=True, nogil=True)
def _sift_up(hk: np.ndarray, hp: np.ndarray, lo: int, j: int) -> None:
    # Heap hk/hp[lo:lo + n] with the worst entry at the root.
    while j > 0:
        p = (j - 1) // 2
        if not _worse(hk[lo + j], hp[lo + j], hk[lo + p], hp[lo + p]):
            break
        hk[lo + j], hk[lo + p] = hk[lo + p], hk[lo + j]
        hp[lo + j], hp[lo + p] = hp[lo + p], hp[lo + j]
        j = p


@njit(cache=True, nogil=True)
def _sift_down(hk: np.ndarray, hp: np.ndarray, lo: int, n: int, j: int) -> None:
    while True:
        c = 2 * j + 1
        if c >= n:
            break
        if c + 1 < n and _worse(hk[lo + c + 1], hp[lo + c + 1], hk[lo + c], hp[lo + c]):
            c += 1
        if not _worse(hk[lo + c], hp[lo + c], hk[lo + j], hp[lo + j]):
            break
        hk[lo + j], hk[lo + c] = hk[lo + c], hk[lo + j]
        hp[lo + j], hp[lo + c] = hp[lo + c], hp[lo + j]
        j = c


@njit(cache=True, nogil=True)
def _top_k_positions(
    scores: np.ndarray, kinds: np.ndarray, offset: int, k_of: np.ndarray
) -> np.ndarray:
    # Positions of the k_of[kind - offset] best scores of each kind (NaN as -inf; ties:
    # earlier position), ordered by descending score, ties by position. One pass with a
    # bounded heap per kind (worst entry at the root): O(t log k), no full sort.
    t = scores.shape[0]
    n_kinds = k_of.shape[0]
    count = np.zeros(n_kinds, dtype=np.int64)
    for i in range(t):
        count[np.int64(kinds[i]) - offset] += 1
    start = np.zeros(n_kinds + 1, dtype=np.int64)  # heap of kind c: [start[c], start[c + 1])
    for c in range(n_kinds):
        start[c + 1] = start[c] + max(0, min(k_of[c], count[c]))
    hk = np.empty(start[n_kinds], dtype=np.float64)
    hp = np.empty(start[n_kinds], dtype=np.int64)
    fill = np.zeros(n_kinds, dtype=np.int64)
    for i in range(t):
        kd = np.int64(kinds[i]) - offset
        lo = start[kd]
        kc = start[kd + 1] - lo
        if kc == 0:
            continue
        x = scores[i]
        if np.isnan(x):
            x = -np.inf
        n = fill[kd]
        if n < kc:
            hk[lo + n] = x
            hp[lo + n] = i
            fill[kd] = n + 1
            _sift_up(hk, hp, lo, n)
        elif x > hk[lo]:  # i comes after every position in the heap: ties lose
            hk[lo] = x
            hp[lo] = i
            _sift_down(hk, hp, lo, kc, 0)
    sel = np.sort(hp)  # every heap is full (kc <= count): sel holds the selection
    neg = np.empty(sel.shape[0], dtype=np.float64)
    for j in range(sel.shape[0]):
        x = scores[sel[j]]
        neg[j] = np.inf if np.isnan(x) else -x
    order = np.argsort(neg, kind="mergesort")  # stable: ties keep position order
    return sel[order]


def _kind_table(
    kinds: np.ndarray, k_per_kind: int | dict[int, int]
) -> tuple[np.ndarray, int, np.ndarray]:
    # (kind index array, offset, k of each kind index): kinds - offset index k_of.
    kmin, kmax = int(kinds.min()), int(kinds.max())
    if kmax - kmin < 1 << 16:  # a small range (uint8 kinds in practice): no remapping
        kind_ix, offset = kinds, kmin
        values = None
        n_kinds = kmax - kmin + 1
    else:
        values, inverse = np.unique(kinds.astype(np.int64), return_inverse=True)
        kind_ix, offset = inverse.astype(np.int64).reshape(-1), 0
        n_kinds = values.shape[0]
    if not isinstance(k_per_kind, dict):
        return kind_ix, offset, np.full(n_kinds, k_per_kind, dtype=np.int64)
    k_of = np.zeros(n_kinds, dtype=np.int64)
    for kind, k in k_per_kind.items():
        if values is None:
            if kmin <= kind <= kmax:
                k_of[kind - kmin] = k
        else:
            j = int(np.searchsorted(values, kind))
            if j < n_kinds and values[j] == kind:
                k_of[j] = k
    return kind_ix, offset, k_of


def top_k_by_kind(
    nodes: np.ndarray,
    scores: np.ndarray,
    kinds: np.ndarray,
    k_per_kind: int | Mapping[int, int],
) -> np.ndarray:
    """The ``k`` best-scored nodes of each kind, without sorting everything.

    One pass keeps a bounded heap of the ``k`` best per kind (O(t log k)); only the
    selected nodes are sorted. Ties at a kind's cut keep the earlier input position, so
    the result is deterministic. NaN scores rank last (as ``-inf``). The selection runs in
    one compiled kernel that releases the GIL.

    Parameters
    ----------
    nodes : int64 array [t]
    scores : float array [t]
    kinds : uint8 array [t]
        Kind of each node (any integer dtype).
    k_per_kind : int or mapping kind -> int
        One ``k`` for every kind, or a ``k`` per kind (kinds not in the mapping are dropped).

    Returns
    -------
    int64 array
        Selected nodes by descending score (ties: earlier input position first).
    """
    nodes = np.asarray(nodes)
    scores = np.asarray(scores, dtype=np.float64)
    kinds = np.asarray(kinds)
    if nodes.ndim != 1 or not (nodes.shape == scores.shape == kinds.shape):
        raise ValueError("nodes, scores and kinds must be 1-d of equal length")
    if kinds.size and not np.issubdtype(kinds.dtype, np.integer):
        raise ValueError(f"kinds must be integers, got {kinds.dtype}")
    wanted: int | dict[int, int]
    if isinstance(k_per_kind, numbers.Integral):
        wanted = int(k_per_kind)
        if wanted < 0:
            raise ValueError(f"k must be >= 0, got {k_per_kind}")
    elif isinstance(k_per_kind, Mapping):
        wanted = {int(kd): int(kk) for kd, kk in k_per_kind.items()}
        if any(kk < 0 for kk in wanted.values()):
            raise ValueError("k per kind must be >= 0")
    else:
        raise ValueError("k_per_kind must be an int or a mapping kind -> int")
    if nodes.size == 0:
        return np.zeros(0, dtype=np.int64)
    kind_ix, offset, k_of = _kind_table(kinds, wanted)
    pos = _top_k_positions(scores, kind_ix, offset, k_of)
    return nodes[pos].astype(np.int64)
