"""Samples of node ids that stay put when the graph grows."""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["consistent_sample", "mix64", "splitmix64"]


@njit(cache=True, nogil=True)
def mix64(x: np.uint64 | np.ndarray) -> np.uint64 | np.ndarray:
    """The splitmix64 finalizer of ``x`` (a uint64 scalar or array), usable inside kernels."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def splitmix64(ids: np.ndarray, seed: int) -> np.ndarray:
    """A cheap, well-mixed 64-bit hash of each id (the splitmix64 finalizer), seeded.

    Parameters
    ----------
    ids : integer array [n]
    seed : int
        XOR-ed into the ids before mixing (its low 64 bits).

    Returns
    -------
    uint64 array [n]
    """
    x = np.asarray(ids).astype(np.uint64) ^ np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    return np.asarray(mix64(x), dtype=np.uint64)


def consistent_sample(ids: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The ``k`` ids with the smallest seeded hash, as sorted positions into ``ids``.

    A bottom-k sample by hash is stable under inserts: adding ids changes it only when a
    new id hashes below the current k-th, so a statistic computed from the sample (sampled
    betweenness, say) does not churn on every small insert, as it would with
    ``random.sample``.

    Parameters
    ----------
    ids : integer array [n]
        Distinct ids.
    k : int
        Sample size; every position when ``n <= k``.
    seed : int

    Returns
    -------
    int64 array [min(k, n)]
        Positions into ``ids``, ascending.
    """
    if ids.size <= k:
        return np.arange(ids.size, dtype=np.int64)
    x = splitmix64(ids, seed)
    return np.sort(np.argpartition(x, k - 1)[:k]).astype(np.int64)
