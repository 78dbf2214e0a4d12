"""A kind's vectors searched exactly by one matrix product, shaped like usearch's results.

``engine.vectors`` searches a kind's fresh vectors this way, and a base below
``MaintenanceConfig.vector_exact_below`` vectors too (its vectors read out of it once, ``read_out``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from usearch.index import Index as UsearchIndex


@dataclass(frozen=True)
class Matches:
    """Search results shaped like usearch's (``keys``, ``distances``, ``counts``)."""

    keys: np.ndarray
    distances: np.ndarray
    counts: np.ndarray


class ExactVectors:
    """Vectors searched exactly by one matrix product, with usearch's ``len``,
    ``contains`` and ``search`` (a kind's fresh vectors, or a small base's).

    Parameters
    ----------
    ids : int64 array [n]
        The vectors' keys.
    rows : float32 array [n, dim]
        Unit-normalized vectors (inner product = cosine).
    """

    def __init__(self, ids: np.ndarray, rows: np.ndarray):
        self.ids, self.rows = ids, rows

    def __len__(self) -> int:
        return int(self.ids.size)

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """bool per id: is it one of these vectors' keys."""
        return np.isin(ids, self.ids)

    def search(self, queries: np.ndarray, k: int, exact: bool = True, threads: int = 0) -> Matches:
        """The exact top ``k`` of each query, most similar first (ties by row); ``exact``
        and ``threads`` are usearch's parameters, accepted and unused."""
        sims = queries @ self.rows.T
        k = min(k, self.ids.size)
        # The k best of up to 16k rows (the ``vector_fresh`` cap), then only those sorted (ties by row).
        if k < self.ids.size:
            top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        else:
            top = np.broadcast_to(np.arange(k), sims.shape).copy()
        cand = np.take_along_axis(sims, top, axis=1)
        top = np.take_along_axis(top, np.lexsort((top, -cand), axis=-1), axis=1)
        best = np.take_along_axis(sims, top, axis=1)
        return Matches(self.ids[top], 1.0 - best, np.full(queries.shape[0], k))


def read_out(base: UsearchIndex) -> tuple[np.ndarray, np.ndarray]:
    """The keys of ``base`` and their vectors, float32 ``[n, dim]`` (an f16 base's stored
    values widened)."""
    keys = np.asarray(base.keys, np.int64)
    if not keys.size:
        return keys, np.zeros((0, base.ndim), np.float32)
    rows = np.ascontiguousarray(base.get(keys), dtype=np.float32).reshape(-1, base.ndim)
    return keys, rows


def widened(a: np.ndarray, width: int) -> np.ndarray:
    """``a`` [n, <= width] padded on the right to ``width`` columns with zeros (False)."""
    out = np.zeros((a.shape[0], width), a.dtype)
    out[:, : a.shape[1]] = a
    return out
