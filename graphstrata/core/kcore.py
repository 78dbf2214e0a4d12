"""k-core numbers through igraph (C): ~100x faster than networkx; not reimplemented here."""

from __future__ import annotations

import igraph as ig
import numpy as np


def coreness(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Core number of every node of a symmetric CSR graph (self-loops ignored).

    Returns
    -------
    int64 [n]
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n = indptr.shape[0] - 1
    if n <= 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    upper = rows < indices  # each undirected edge once, no self-loops
    g = ig.Graph(n=n, edges=np.column_stack([rows[upper], indices[upper]]).tolist(), directed=False)
    return np.asarray(g.coreness(), dtype=np.int64)
