"""Contracting a partitioned graph around a few opened nodes, for local Leiden runs.

A local Leiden run (``engine.heterograph.graph.leiden_local``) re-optimises a handful of
opened nodes against the rest of the communities next to them, each of which becomes one
node of a small contracted graph. Building that graph is one pass over the nodes and one
over the edges; these kernels do each pass once, in compiled loops, where the NumPy version
made about fifteen whole-array passes (masks, gathers, bincounts) per run: 55 ms of a 100k-
chunk write, twice per write (issue 17). The contracted graph itself is tiny (only the
edges with an opened end, see :func:`contract_communities`); what it costs is one pass
over the whole edge list to find them, which stays O(E) until G2 is kept on positions
across versions.

The contracted nodes are numbered as :func:`contract_communities` documents: the opened
nodes first (ascending), then the fixed communities (ascending label).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = ["Contraction", "apply_contracted_labels", "contract_communities", "frontier"]


class Contraction(NamedTuple):
    """The contracted graph of :func:`contract_communities`.

    Attributes
    ----------
    node_map : int64 [n]
        Contracted node of each node; -1 for nodes outside (far communities).
    region : int64 [r]
        The opened nodes, ascending: contracted nodes ``0..r-1``.
    fixed_labels : int64 [f]
        Labels of the fixed communities, ascending: contracted nodes ``r..r+f-1``.
    fixed_members : int64 [f]
        How many (unopened) nodes each fixed community stands for.
    loops : float64 [r+f]
        Summed weight of each opened node's self-loop edges; 0 for the fixed communities
        (their internal weight is left out, see :func:`contract_communities`).
    cross_lo, cross_hi : int64 [c]
        Ends (lower first) of the edges between two contracted nodes of which at least one
        is opened, in edge order, duplicates not merged.
    cross_w : float64 [c]
        Their weights.
    strength : float64 [r+f]
        Summed strength of the nodes each contracted node stands for.
    """

    node_map: np.ndarray
    region: np.ndarray
    fixed_labels: np.ndarray
    fixed_members: np.ndarray
    loops: np.ndarray
    cross_lo: np.ndarray
    cross_hi: np.ndarray
    cross_w: np.ndarray
    strength: np.ndarray


@njit(cache=True, nogil=True)
def _label_counts(
    src: np.ndarray, dst: np.ndarray, labels: np.ndarray, opened: np.ndarray, n_labels: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # Members per label, opened members per label, the labels next to the opened nodes (an
    # opened node's own, and those of both ends of every edge touching one), and those
    # edges: the only ones the contracted graph is made of.
    size = np.zeros(n_labels, dtype=np.int64)
    opened_size = np.zeros(n_labels, dtype=np.int64)
    near = np.zeros(n_labels, dtype=np.bool_)
    for i in range(labels.shape[0]):
        size[labels[i]] += 1
        if opened[i]:
            opened_size[labels[i]] += 1
            near[labels[i]] = True
    touching = np.empty(src.shape[0], dtype=np.int64)
    t = 0
    for e in range(src.shape[0]):
        u, v = src[e], dst[e]
        if opened[u] or opened[v]:
            near[labels[u]] = True
            near[labels[v]] = True
            touching[t] = e
            t += 1
    return size, opened_size, near, touching[:t]


@njit(cache=True, nogil=True)
def _node_map(labels: np.ndarray, opened: np.ndarray, fixed_node: np.ndarray) -> np.ndarray:
    node_map = np.empty(labels.shape[0], dtype=np.int64)
    r = 0
    for i in range(labels.shape[0]):
        if opened[i]:
            node_map[i] = r
            r += 1
        else:
            node_map[i] = fixed_node[labels[i]]
    return node_map


@njit(cache=True, nogil=True)
def _contracted_edges(
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    node_map: np.ndarray,
    touching: np.ndarray,
    m: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    # Only the edges with an opened end (``touching``), in edge order.
    loops = np.zeros(m, dtype=np.float64)
    n_cross = 0
    for e in touching:
        if node_map[src[e]] != node_map[dst[e]]:
            n_cross += 1
    lo = np.empty(n_cross, dtype=np.int64)
    hi = np.empty(n_cross, dtype=np.int64)
    w = np.empty(n_cross, dtype=np.float64)
    c = 0
    for e in touching:
        a, b = node_map[src[e]], node_map[dst[e]]
        if a == b:
            loops[a] += weight[e]
        else:
            lo[c], hi[c], w[c] = min(a, b), max(a, b), weight[e]
            c += 1
    return loops, lo, hi, w


@njit(cache=True, nogil=True)
def _summed_by(node_map: np.ndarray, values: np.ndarray, m: int) -> np.ndarray:
    out = np.zeros(m, dtype=np.float64)
    for i in range(node_map.shape[0]):
        if node_map[i] >= 0:
            out[node_map[i]] += values[i]
    return out


def contract_communities(
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    strength: np.ndarray,
    labels: np.ndarray,
    opened: np.ndarray,
) -> Contraction:
    """The graph of the ``opened`` nodes and the rest of each community next to them.

    Every opened node stays a node; the unopened members of each community that holds an
    opened node or an end of an edge touching one become one node (a fixed community);
    every other node is left out. The edges with an opened end are kept (ends mapped; an
    opened node's own self-loops summed into its loop); every other edge is left out: those
    between two fixed communities and those inside one.

    Leaving out the edges between fixed communities keeps every move of an opened node
    scored exactly (all its edges are there, and the strengths are the whole graph's); what
    it gives up is merging two fixed communities with each other, which in a converged
    partition only the opened nodes' change could make worth it. Where a hub entity is
    opened, the fixed communities are its hundreds of neighbouring communities, and their
    pairwise edges were nearly all of the contracted graph: 27k of 27.2k edges over 297
    nodes in a 100k-chunk write, against 2.5k without them; the modularity after 26 writes
    is in ``benchmarks/results/scale.md`` (issue 17).

    A fixed community's internal weight (its self-loop) is left out because, with the node
    strengths given (igraph's ``node_weights``), it enters no move's gain: a node's own loop
    counts in every community it could be in. igraph's random choices follow the edge list,
    so a run may still take another path, better or worse by chance (10 of 12 random
    planted graphs gave the same partition, ``test_heterograph_graph.py``; 8 writes at 10k
    chunks left the same states). Then only the edges with an opened end are gathered,
    found in the pass that finds the communities next to the opened nodes, instead of a
    second pass over every edge.

    Parameters
    ----------
    src, dst : int64 [E]
        Undirected edges on dense indices ``0..n-1``.
    weight : float64 [E]
        Edge weights.
    strength : float64 [n]
        Each node's strength in the whole graph.
    labels : int64 [n]
        Community label of each node (non-negative).
    opened : bool [n]
        The nodes that stay nodes.

    Returns
    -------
    Contraction
        Contracted nodes: the opened ones (ascending), then the fixed communities
        (ascending label); a community whose members are all opened has no fixed node.
    """
    src = np.ascontiguousarray(src, np.int64)
    dst = np.ascontiguousarray(dst, np.int64)
    weight = np.ascontiguousarray(weight, np.float64)
    labels = np.ascontiguousarray(labels, np.int64)
    opened = np.ascontiguousarray(opened, np.bool_)
    n_labels = int(labels.max()) + 1 if labels.size else 0
    size, opened_size, near, touching = _label_counts(src, dst, labels, opened, n_labels)
    region = np.flatnonzero(opened).astype(np.int64)
    fixed_labels = np.flatnonzero(near & (size > opened_size)).astype(np.int64)
    fixed_node = np.full(n_labels, -1, np.int64)
    fixed_node[fixed_labels] = region.size + np.arange(fixed_labels.size, dtype=np.int64)
    node_map = _node_map(labels, opened, fixed_node)
    m = int(region.size + fixed_labels.size)
    loops, lo, hi, w = _contracted_edges(src, dst, weight, node_map, touching, m)
    return Contraction(
        node_map=node_map,
        region=region,
        fixed_labels=fixed_labels,
        fixed_members=size[fixed_labels] - opened_size[fixed_labels],
        loops=loops,
        cross_lo=lo,
        cross_hi=hi,
        cross_w=w,
        strength=_summed_by(node_map, np.ascontiguousarray(strength, np.float64), m),
    )


@njit(cache=True, nogil=True)
def _apply(labels: np.ndarray, node_map: np.ndarray, new_label: np.ndarray) -> np.ndarray:
    out = labels.copy()
    for i in range(labels.shape[0]):
        if node_map[i] >= 0:
            out[i] = new_label[node_map[i]]
    return out


def apply_contracted_labels(
    labels: np.ndarray, node_map: np.ndarray, new_label: np.ndarray
) -> np.ndarray:
    """``labels`` with each contracted node's members given its ``new_label``.

    Parameters
    ----------
    labels : int64 [n]
        Labels before the run.
    node_map : int64 [n]
        :attr:`Contraction.node_map`.
    new_label : int64 [m]
        Label of each contracted node after the run.

    Returns
    -------
    np.ndarray
        int64 [n]; nodes outside the contraction keep their label.
    """
    return _apply(
        np.ascontiguousarray(labels, np.int64),
        np.ascontiguousarray(node_map, np.int64),
        np.ascontiguousarray(new_label, np.int64),
    )


@njit(cache=True, nogil=True)
def _frontier(src: np.ndarray, dst: np.ndarray, moved: np.ndarray) -> np.ndarray:
    out = np.zeros(moved.shape[0], dtype=np.bool_)
    for e in range(src.shape[0]):
        u, v = src[e], dst[e]
        if moved[u] or moved[v]:
            out[u] = True
            out[v] = True
    return out


def frontier(src: np.ndarray, dst: np.ndarray, moved: np.ndarray) -> np.ndarray:
    """Both ends of every edge with an end in ``moved`` (bool [n]).

    Parameters
    ----------
    src, dst : int64 [E]
        Undirected edges on dense indices.
    moved : bool [n]
        The nodes whose neighbours are wanted.

    Returns
    -------
    np.ndarray
        bool [n]: the ``moved`` nodes that have an edge, and their neighbours.
    """
    return _frontier(
        np.ascontiguousarray(src, np.int64),
        np.ascontiguousarray(dst, np.int64),
        np.ascontiguousarray(moved, np.bool_),
    )
