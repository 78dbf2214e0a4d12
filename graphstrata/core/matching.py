"""Greedy one-to-one pairing of two label sets, in a given priority order.

The heterograph pairs new communities with previous labels (``stable_labels``) and with
element groups (``match_pairs``) the same way: candidate pairs come sorted by
priority (most shared members first), and a pair is taken when neither side is taken yet.
With a Python loop over the pairs and two sets, the two functions took 0.19 s (labels)
and 0.69 s (groups) to pair 51k communities of a synthetic 532k-node partition, as a build
or ``maintain`` does (a one-off script, not kept, issue 17); this kernel is one pass
over dense ranks.

:func:`linked_labels` finds which labels of two labellings of the same items are connected
through shared items (the part of the pairing a change can reach): one compiled pass per
round over the items, where the NumPy closure it replaced made two membership tests and two
sorts per round (8 ms of a one-document write at 100k chunks under line_profiler, issue 17).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphstrata.core import sets

__all__ = ["greedy_pairs", "label_sizes", "linked_labels"]


@njit(cache=True, nogil=True)
def _greedy_dense(a: np.ndarray, b: np.ndarray, n_a: int, n_b: int) -> np.ndarray:
    used_a = np.zeros(n_a, dtype=np.bool_)
    used_b = np.zeros(n_b, dtype=np.bool_)
    taken = np.zeros(a.size, dtype=np.bool_)
    for i in range(a.size):
        if used_a[a[i]] or used_b[b[i]]:
            continue
        used_a[a[i]] = True
        used_b[b[i]] = True
        taken[i] = True
    return taken


def greedy_pairs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Which pairs ``(a[i], b[i])`` a greedy one-to-one pairing takes, in order.

    Pair ``i`` is taken when no earlier taken pair holds ``a[i]`` or ``b[i]``.

    Parameters
    ----------
    a, b : integer arrays [p]
        The candidate pairs, highest priority first (any integer values; a value of ``a``
        and one of ``b`` are unrelated even when equal).

    Returns
    -------
    np.ndarray
        bool [p], True for the taken pairs.
    """
    a = np.asarray(a).reshape(-1)
    b = np.asarray(b).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"a and b differ in length: {a.size} and {b.size}")
    if a.size == 0:
        return np.zeros(0, dtype=bool)
    ua, ia = sets.unique_inverse(a)
    ub, ib = sets.unique_inverse(b)
    return _greedy_dense(ia, ib, int(ua.size), int(ub.size))


@njit(cache=True, nogil=True)
def _label_sizes(labels: np.ndarray, n: int) -> np.ndarray:
    sizes = np.zeros(n, dtype=np.int64)
    for i in range(labels.shape[0]):
        if labels[i] >= 0:
            sizes[labels[i]] += 1
    return sizes


def label_sizes(labels: np.ndarray, n: int) -> np.ndarray:
    """How many items carry each label ``0..n-1`` (negative labels: none).

    Parameters
    ----------
    labels : integer array [m]
        Label of each item, below ``n``; negative for an item without one.
    n : int
        Number of labels counted.

    Returns
    -------
    np.ndarray
        int64 [n].
    """
    labels = np.ascontiguousarray(labels, np.int64).reshape(-1)
    if labels.size and int(labels.max()) >= n:
        raise ValueError(f"a label is {int(labels.max())}, at least n = {n}")
    return _label_sizes(labels, int(n))


@njit(cache=True, nogil=True)
def _linked(
    a: np.ndarray, b: np.ndarray, eligible_a: np.ndarray, seed_a: np.ndarray, in_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    # in_b arrives holding the seeds of b; a seed of a adds the b of its items whether or
    # not it is eligible. Then rounds until nothing is added: each round adds the eligible
    # a of items whose b is in, and the b of items whose a is in. Only justified labels are
    # ever added, so the result is the least closed set holding the seeds, whatever the
    # order of the items.
    in_a = np.zeros(eligible_a.shape[0], dtype=np.bool_)
    for i in range(a.shape[0]):
        if seed_a[a[i]] and b[i] >= 0:
            in_b[b[i]] = True
    for label in range(in_a.shape[0]):
        in_a[label] = seed_a[label] and eligible_a[label]
    grew = True
    while grew:
        grew = False
        for i in range(a.shape[0]):
            x, y = a[i], b[i]
            if y < 0:
                continue
            if in_b[y] and eligible_a[x] and not in_a[x]:
                in_a[x] = True
                grew = True
            if in_a[x] and not in_b[y]:
                in_b[y] = True
                grew = True
    return in_a, in_b


def linked_labels(
    a: np.ndarray,
    b: np.ndarray,
    eligible_a: np.ndarray,
    seed_a: np.ndarray,
    seed_b: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Labels of two labellings of the same items connected to seeds through shared items.

    Starts from ``seed_a`` (its eligible labels) and ``seed_b`` plus the ``b`` labels of
    every item of ``seed_a`` (eligible or not), then adds the eligible ``a`` labels of the
    items of every ``b`` label in, and the ``b`` labels of the items of every ``a`` label in,
    until nothing is added.

    Parameters
    ----------
    a : int64 array [n]
        First label of each item (non-negative).
    b : int64 array [n]
        Second label of each item; negative for an item without one.
    eligible_a : int64 array
        The ``a`` labels that may be added (any order, duplicates allowed).
    seed_a, seed_b : int64 arrays
        The seeds (non-negative; any order, duplicates allowed; labels no item carries
        allowed).

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        Sorted int64 ``a`` labels and ``b`` labels of the closure.
    """
    a = np.ascontiguousarray(a, np.int64).reshape(-1)
    b = np.ascontiguousarray(b, np.int64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"a and b differ in length: {a.size} and {b.size}")
    eligible_a, seed_a, seed_b = (
        np.asarray(x, np.int64).reshape(-1) for x in (eligible_a, seed_a, seed_b)
    )
    if min((int(x.min()) for x in (a, eligible_a, seed_a, seed_b) if x.size), default=0) < 0:
        raise ValueError("a, eligible_a and the seeds must be non-negative")
    n_a = 1 + max((int(x.max()) for x in (a, eligible_a, seed_a) if x.size), default=-1)
    n_b = 1 + max((int(x.max()) for x in (b, seed_b) if x.size), default=-1)
    eligible = np.zeros(n_a, dtype=np.bool_)
    eligible[eligible_a] = True
    seeded_a = np.zeros(n_a, dtype=np.bool_)
    seeded_a[seed_a] = True
    in_b = np.zeros(n_b, dtype=np.bool_)
    in_b[seed_b] = True
    in_a, in_b = _linked(a, b, eligible, seeded_a, in_b)
    return np.flatnonzero(in_a).astype(np.int64), np.flatnonzero(in_b).astype(np.int64)
