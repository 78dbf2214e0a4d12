"""k-core numbers through igraph's C core (``Graph.coreness``); not reimplemented here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from graphstrata.core.graph import check_csr

if TYPE_CHECKING:
    import igraph as ig

__all__ = ["coreness", "igraph_from_csr"]


def igraph_from_csr(indptr: np.ndarray, indices: np.ndarray) -> ig.Graph:
    """Undirected igraph Graph of a symmetric CSR: one edge per upper-triangle entry.

    Self-loops (diagonal entries) are dropped; the CSR is assumed duplicate-free (as from
    :func:`graphstrata.core.graph.csr_from_edges`).

    Parameters
    ----------
    indptr : int64 array [n + 1]
    indices : int64 array [nnz]

    Returns
    -------
    igraph.Graph
        ``n`` vertices, one undirected edge per entry ``(u, v)`` with ``u < v``.
    """
    indptr, indices = check_csr(indptr, indices)
    n = indptr.shape[0] - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr).astype(np.int64))
    cols = indices
    upper = rows < cols  # each undirected edge once, no self-loops
    import igraph as ig  # build-time only: keeps igraph's import off the query path

    g = ig.Graph(n=n, directed=False)
    if upper.any():
        # add_edges takes the (e, 2) integer array directly (no Python list of tuples)
        g.add_edges(np.column_stack([rows[upper], cols[upper]]))
    return g


def coreness(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Core number of every node of a symmetric CSR graph (self-loops ignored).

    Parameters
    ----------
    indptr : int64 array [n + 1]
    indices : int64 array [nnz]
        Symmetric, duplicate-free adjacency; weights play no role.

    Returns
    -------
    int64 array [n]
        ``out[v]`` is the largest k such that v belongs to the k-core (0 for isolated nodes).
    """
    g = igraph_from_csr(indptr, indices)
    if g.vcount() == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(g.coreness(), dtype=np.int64)
