"""A symmetric CSR in two layers with dead nodes, so a growing graph is not copied per change.

The walk graph of the heterograph view changes by a few thousand entries per write, but at
100k chunks it holds 18.8M entries: rewriting it on every commit (``graph.advance_csr``:
drop the dead nodes, renumber every entry, merge the new edges) cost ~0.1 s of each
one-document write, the largest part that grew with the corpus (issue 17). A
``LayeredCSR`` keeps

- ``base``: the CSR of the last compaction, shared unchanged by the versions after it;
- ``extra``: the CSR of the edges added since, over every node (rows past the base's are
  nodes added since);
- ``alive``: the nodes that still exist. An entry to a dead node is skipped where it is
  read (``core.ppr``), so a deletion writes nothing into the rows that pointed at it.

The adjacency it stands for is ``base + extra`` (equal entries sum, as in
``graph.merge_edges``) less every entry of or to a dead node; :func:`flatten` writes it as
one CSR over the alive nodes renumbered in order, which is also how the owner compacts it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from graphstrata.core.graph import advance_csr, csr_from_edges, row_entries

__all__ = [
    "LayeredCSR",
    "advanced_row_weights",
    "flatten",
    "incident_edges",
    "plain",
    "row",
    "row_weights",
]


class LayeredCSR(NamedTuple):
    """A symmetric CSR as base + extra layers over nodes that may be dead.

    Attributes
    ----------
    indptr, indices, weights:
        The base layer (``graph.csr_from_edges``), over nodes ``0..len(indptr)-2``.
    extra_indptr, extra_indices, extra_weights:
        The extra layer over every node ``0..n-1``.
    alive:
        bool [n]: the nodes that exist.
    """

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    extra_indptr: np.ndarray
    extra_indices: np.ndarray
    extra_weights: np.ndarray
    alive: np.ndarray

    @property
    def n(self) -> int:
        """Node count, dead nodes included."""
        return int(self.alive.shape[0])

    @property
    def extra(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(extra_indptr, extra_indices, extra_weights)``."""
        return self.extra_indptr, self.extra_indices, self.extra_weights

    @property
    def extra_entries(self) -> int:
        """Entries of the extra layer (dead ones included)."""
        return int(self.extra_indices.shape[0])

    @property
    def dead(self) -> int:
        """Dead nodes."""
        return int(self.alive.shape[0] - np.count_nonzero(self.alive))

    def walk_layers(
        self,
    ) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray] | None, np.ndarray | None]:
        """``(extra, alive)`` for ``core.ppr.shallow_ppr``, each None when it has nothing to
        add (no extra entry and no node past the base; no dead node). With both None the
        kernel takes its one-layer step, 15-20% faster at 100k chunks. O(n) (the dead
        count): tens of microseconds at 100k chunks, against tens of milliseconds a walk."""
        grown = self.n > self.indptr.shape[0] - 1
        extra = self.extra if self.extra_entries or grown else None
        alive = self.alive if self.dead else None
        return extra, alive


def plain(indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray) -> LayeredCSR:
    """A one-layer graph: ``indptr/indices/weights`` with no extra entry and no dead node."""
    n = int(indptr.shape[0] - 1)
    empty = csr_from_edges(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), n)
    return LayeredCSR(indptr, indices, weights, *empty, np.ones(n, dtype=bool))


def row(graph: LayeredCSR, v: int) -> tuple[np.ndarray, np.ndarray]:
    """The alive neighbours of ``v`` and the weights to them (both layers: a neighbour in
    both appears twice, its weights summing to the entry of the flattened graph)."""
    parts_u, parts_w = [], []
    for ptr, ix, w in ((graph.indptr, graph.indices, graph.weights), graph.extra):
        if v + 1 < ptr.shape[0]:
            a, b = int(ptr[v]), int(ptr[v + 1])
            parts_u.append(ix[a:b])
            parts_w.append(w[a:b])
    u = np.concatenate(parts_u).astype(np.int64, copy=False) if parts_u else np.zeros(0, np.int64)
    w = np.concatenate(parts_w) if parts_w else np.zeros(0, np.float32)
    keep = graph.alive[u]
    return u[keep], w[keep]


@njit(cache=True, nogil=True, parallel=True)
def _row_weights(
    indptr: np.ndarray,
    indices: np.ndarray,
    weights: np.ndarray,
    xptr: np.ndarray,
    xix: np.ndarray,
    xw: np.ndarray,
    alive: np.ndarray,
) -> np.ndarray:
    n = alive.shape[0]
    n_base = indptr.shape[0] - 1
    out = np.zeros(n, dtype=np.float64)
    for v in prange(n):
        if not alive[v]:
            continue
        total = 0.0
        if v < n_base:
            for j in range(indptr[v], indptr[v + 1]):
                if alive[indices[j]]:
                    total += weights[j]
        for j in range(xptr[v], xptr[v + 1]):
            if alive[xix[j]]:
                total += xw[j]
        out[v] = total
    return out


def row_weights(graph: LayeredCSR) -> np.ndarray:
    """float64 [n]: the weight of each alive node's row over alive neighbours (0 for a dead
    node): the normalizer of the walk's transition matrix."""
    return _row_weights(*graph)


def advanced_row_weights(
    before: LayeredCSR,
    weights_before: np.ndarray,
    died: np.ndarray,
    alive: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
) -> np.ndarray:
    """:func:`row_weights` of the graph after a change, from those before it, in O(change).

    Parameters
    ----------
    before:
        The graph before the change.
    weights_before:
        Its :func:`row_weights`.
    died:
        Nodes alive before and dead after.
    alive:
        bool [n'] of the graph after (``n' >= before.n``; nodes past ``before.n`` are new).
    src, dst, weight:
        The edges the change added, between alive nodes (each counts in both rows, a
        self-loop once, as ``graph.csr_from_edges`` stores it).

    Returns
    -------
    numpy.ndarray
        float64 [n']: each alive node's row weight over alive neighbours, 0 for a dead one.
        Equal to :func:`row_weights` of the graph after, up to float rounding.
    """
    out = np.zeros(alive.shape[0], dtype=np.float64)
    out[: weights_before.shape[0]] = weights_before
    died = np.asarray(died, np.int64)
    cols, ws = [], []
    for ptr, ix, wt in ((before.indptr, before.indices, before.weights), before.extra):
        at = row_entries(ptr, died)  # symmetric: a dead node's row names who lose it
        cols.append(ix[at])
        ws.append(wt[at])
    col, w = np.concatenate(cols), np.concatenate(ws).astype(np.float64)
    keep = alive[col]
    np.subtract.at(out, col[keep], w[keep])
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    weight = np.asarray(weight, np.float64)
    np.add.at(out, src, weight)
    loops = src == dst
    np.add.at(out, dst[~loops], weight[~loops])
    # A row whose every neighbour died is 0, not the rounding left by the subtractions.
    touched = col[keep]
    out[touched[out[touched] < 1e-9 * np.maximum(weights_before[touched], 1.0)]] = 0.0
    out[died] = 0.0
    return out


def flatten(
    graph: LayeredCSR, empty: Callable[[int, type], np.ndarray] = np.empty
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The graph as one CSR over its alive nodes, renumbered ``0..k-1`` in their order.

    The extra layer's edges (each stored in both rows: read once, from the row of its
    smaller end) are merged into the base with its dead nodes dropped
    (``graph.advance_csr``, whose ``empty`` allocates the output): one pass over the base,
    as a commit did before the layers.
    """
    n_base = int(graph.indptr.shape[0] - 1)
    xptr, xix, xw = graph.extra
    src = np.repeat(np.arange(graph.n, dtype=np.int64), np.diff(xptr))
    once = (src <= xix) & graph.alive[src] & graph.alive[xix]
    new_pos = np.cumsum(graph.alive) - 1
    return advance_csr(
        graph.indptr,
        graph.indices,
        graph.weights,
        graph.alive[:n_base],
        new_pos[src[once]],
        new_pos[xix[once]],
        xw[once],
        int(np.count_nonzero(graph.alive)),
        empty=empty,
    )


@njit(cache=True, nogil=True)
def _incident(
    graph: LayeredCSR, nodes: np.ndarray, member: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # One pass over the rows of ``nodes`` into buffers as long as those rows. An entry
    # u -> v is the edge once: from u's row when v is not a member, else from the row of
    # the smaller end (a self-loop is stored once, in its own row). The named tuple is
    # passed whole (numba types it field by field).
    indptr, indices, weights = graph.indptr, graph.indices, graph.weights
    xptr, xix, xw = graph.extra_indptr, graph.extra_indices, graph.extra_weights
    alive = graph.alive
    n_base = indptr.shape[0] - 1
    bound = 0
    for u in nodes:
        if u < n_base:
            bound += indptr[u + 1] - indptr[u]
        bound += xptr[u + 1] - xptr[u]
    src = np.empty(bound, dtype=np.int64)
    dst = np.empty(bound, dtype=np.int64)
    w = np.empty(bound, dtype=np.float64)
    k = 0
    for u in nodes:
        lo = indptr[u] if u < n_base else 0
        hi = indptr[u + 1] if u < n_base else 0
        for layer in range(2):
            ix, wt = (indices, weights) if layer == 0 else (xix, xw)
            if layer == 1:
                lo, hi = xptr[u], xptr[u + 1]
            for j in range(lo, hi):
                v = ix[j]
                if alive[v] and (not member[v] or u <= v):
                    src[k], dst[k], w[k] = u, v, wt[j]
                    k += 1
    return src[:k], dst[:k], w[:k]


def incident_edges(
    graph: LayeredCSR, nodes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges between alive nodes with an end among ``nodes``, each once.

    O(the rows of ``nodes``), not O(the graph): what a local Leiden run over a few opened
    nodes reads of a graph kept across versions (``engine.heterograph.g2``; issue 17).

    Parameters
    ----------
    graph:
        The graph (its adjacency is ``base + extra`` less every entry of a dead node).
    nodes : int64 array
        Alive nodes, ascending, unique.

    Returns
    -------
    src, dst : int64 arrays [k]
        The ends: ``src`` is among ``nodes``, and the smaller of the two where both are.
    weight : float64 array [k]
        The entry's weight. An edge held in both layers is returned twice, its weights
        summing to the flattened graph's entry (as :func:`row` gives it).
    """
    nodes = np.ascontiguousarray(nodes, np.int64).reshape(-1)
    member = np.zeros(graph.n, dtype=np.bool_)
    member[nodes] = True
    return _incident(graph, nodes, member)
