"""Graph algorithms of the heterograph: importance, communities, and the helpers around them.

Pure functions over numpy arrays of node ids (int64, never reused) and edge lists. The hot
loops live in ``graphstrata.core`` (CSR, betweenness, k-core, K-means, kNN) or in C
libraries (igraph's Leiden); this module chooses what to run them on and keeps the choices
stable from one version to the next, so that an insert changes only what it touches
(docs/architecture.md, "Heterograph").
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

import numpy as np

from graphstrata.core.centrality import sampled_betweenness
from graphstrata.core.graph import csr_from_edges
from graphstrata.core.kcore import coreness
from graphstrata.core.sampling import consistent_sample

#: Leiden backends; ``igraph`` is the default (measured faster at equal modularity, see
#: benchmarks/results/heterograph.md).
LEIDEN_BACKENDS = ("igraph", "leidenalg")


def _dense_index(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of ``ids`` in ``sorted_ids`` (all must be present).

    Parameters
    ----------
    sorted_ids : int64 array [n], ascending
    ids : integer array [m]

    Returns
    -------
    int64 array [m]
    """
    return np.searchsorted(sorted_ids, np.asarray(ids, dtype=np.int64)).astype(np.int64)


def dense_csr(
    sorted_ids: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric CSR over ``sorted_ids`` (duplicates merged by weight sum).

    Parameters
    ----------
    sorted_ids : int64 array [n], ascending
        The nodes; CSR rows are their positions.
    src, dst : integer arrays [e]
        Edges as node ids (each must be in ``sorted_ids``).
    weight : float array [e], optional
        Default 1 per edge.

    Returns
    -------
    indptr, indices, weights
        As :func:`graphstrata.core.graph.csr_from_edges`.
    """
    w = np.ones(len(src), np.float32) if weight is None else np.asarray(weight, np.float32)
    return csr_from_edges(
        _dense_index(sorted_ids, src), _dense_index(sorted_ids, dst), w, int(sorted_ids.shape[0])
    )


# --------------------------------------------------------------------------- importance
@dataclass
class Importance:
    """The important entities and how they were found (for reports and tests)."""

    entities: np.ndarray  # node ids
    k_core: int
    by_core: int
    by_betweenness: int
    n_nodes: int


def important_entities(
    node_ids: np.ndarray,
    is_entity: np.ndarray,
    support: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    n_sources: int,
    seed: int,
) -> Importance:
    """NodeRAG's Algorithm 1 on G1 (the S, N, R nodes and their decomposition edges).

    k-core with ``k = floor(ln|V| * sqrt(avg degree))`` union the entities whose sampled
    betweenness (``n_sources`` sources) exceeds ``mean * floor(log10|V|)``; like NodeRAG's
    code, only entities mentioned by at least two semantic units qualify.

    Parameters
    ----------
    node_ids:
        Sorted ids of every node of G1.
    is_entity, support:
        Per node: whether it is an entity; how many semantic units mention it.
    src, dst:
        Edges of G1 as node ids (duplicates allowed).
    n_sources:
        Betweenness sources, a bottom-k hash sample
        (:func:`graphstrata.core.sampling.consistent_sample`) so it is stable under inserts.
    seed:
        Seed of the sample.

    Returns
    -------
    Importance
        The important entities (ids, ascending) and the counters of how they were found.
    """
    n = int(node_ids.shape[0])
    if n == 0:
        return Importance(np.zeros(0, np.int64), 0, 0, 0, 0)
    indptr, indices, _ = dense_csr(node_ids, src, dst)
    avg_degree = float(indices.shape[0]) / n
    k = math.floor(math.log(n) * math.sqrt(avg_degree)) if avg_degree > 0 else 0
    eligible = is_entity & (support >= 2)
    core = np.asarray(coreness(indptr, indices))
    by_core = eligible & (core >= k) if k > 0 else np.zeros(n, bool)
    sources = consistent_sample(node_ids, n_sources, seed)
    bc = np.asarray(
        sampled_betweenness(indptr, indices, k=int(sources.size), seed=seed, sources=sources)
    )
    scale = math.floor(math.log10(n))
    by_bc = eligible & (bc > bc.mean() * scale)
    chosen = by_core | by_bc
    return Importance(
        entities=node_ids[chosen],
        k_core=k,
        by_core=int(by_core.sum()),
        by_betweenness=int(by_bc.sum()),
        n_nodes=n,
    )


# --------------------------------------------------------------------------- communities
def leiden(
    n: int,
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    seed: int,
    initial: np.ndarray | None = None,
    backend: str = "igraph",
    n_iterations: int = -1,
) -> np.ndarray:
    """Leiden communities (modularity objective, seeded) of a graph on dense indices.

    Iterating until nothing moves (``n_iterations=-1``) matters for stability: from a
    converged partition, a small change moves few nodes (measured on HotpotQA: 0 of 81
    communities changed by > 20% after perturbing 0.2% of the edges), while from a partition
    stopped after 2 iterations, Leiden keeps improving and 30 of 85 changed on the same
    graph. igraph draws from Python's ``random``: a seeded generator is installed for the
    call and the default restored afterwards.

    Parameters
    ----------
    n:
        Number of nodes (dense indices ``0..n-1``).
    src, dst, weight:
        Undirected weighted edges on dense indices.
    seed:
        Seed of the optimisation: equal inputs give equal partitions.
    initial:
        One label per node: start from a previous partition (:func:`initial_membership`).
    backend:
        One of :data:`LEIDEN_BACKENDS`.
    n_iterations:
        Leiden iterations; negative: until no node moves.

    Returns
    -------
    np.ndarray
        int64 community label of each node.

    Raises
    ------
    ValueError
        For an unknown backend.
    """
    if n == 0:
        return np.zeros(0, np.int64)
    import igraph as ig  # build-time only: keeps igraph's import off the query path

    graph = ig.Graph(n=n, edges=np.column_stack([src, dst]).tolist(), directed=False)
    graph.es["weight"] = np.asarray(weight, np.float64).tolist()
    init = None if initial is None else np.asarray(initial, np.int64).tolist()
    if backend == "igraph":
        ig.set_random_number_generator(random.Random(seed))
        try:
            clusters = graph.community_leiden(
                objective_function="modularity",
                weights="weight",
                initial_membership=init,
                n_iterations=n_iterations,
            )
        finally:
            ig.set_random_number_generator(random)
        return np.asarray(clusters.membership, np.int64)
    if backend == "leidenalg":
        import leidenalg

        part = leidenalg.find_partition(
            graph,
            leidenalg.ModularityVertexPartition,
            weights="weight",
            initial_membership=init,
            n_iterations=n_iterations,
            seed=seed,
        )
        return np.asarray(part.membership, np.int64)
    raise ValueError(f"unknown Leiden backend {backend!r}; expected one of {LEIDEN_BACKENDS}")


def initial_membership(
    node_ids: np.ndarray, prev_ids: np.ndarray | None, prev_labels: np.ndarray | None
) -> np.ndarray | None:
    """Labels of ``node_ids`` in the previous partition; new nodes get fresh singleton labels.

    Parameters
    ----------
    node_ids : int64 array [n], ascending
        The nodes now.
    prev_ids, prev_labels : int64 arrays [m], ids ascending
        The previous partition (``None`` or empty: there is none).

    Returns
    -------
    np.ndarray or None
        int64 label per node, or ``None`` without a previous partition.
    """
    if prev_ids is None or prev_labels is None or prev_ids.size == 0:
        return None
    pos = np.searchsorted(prev_ids, node_ids)
    pos_c = np.minimum(pos, prev_ids.size - 1)
    known = prev_ids[pos_c] == node_ids
    labels = np.empty(node_ids.shape[0], np.int64)
    labels[known] = prev_labels[pos_c[known]]
    start = int(prev_labels.max()) + 1 if prev_labels.size else 0
    labels[~known] = np.arange(start, start + int((~known).sum()), dtype=np.int64)
    return labels


@dataclass
class CommunityMatch:
    """How the new communities relate to the groups that already have elements."""

    kept: dict[int, int]  # community label -> group key kept as is
    regenerate: list[tuple[int, int | None]]  # (community label, group it replaces or None)
    dropped: list[int]  # group keys no community keeps


def match_communities(
    members: dict[int, np.ndarray],
    group_members: dict[int, np.ndarray],
    change_share: float,
    stale: set[int] | frozenset[int] = frozenset(),
) -> CommunityMatch:
    """Pair each community with the element group it overlaps most (one-to-one, greedy).

    A community keeps its group's elements when the Jaccard distance between its members
    and the members the elements were generated from is at most ``change_share`` and the
    group is not ``stale`` (written from text of a deleted document); otherwise (or with no
    group at all) its elements are regenerated. Groups nobody keeps are dropped.

    Parameters
    ----------
    members:
        Community label -> its members (node ids).
    group_members:
        Group key -> the members its elements were written from.
    change_share:
        The largest Jaccard distance at which a community keeps its group's elements.
    stale:
        Groups that must be regenerated whatever the overlap.

    Returns
    -------
    CommunityMatch
    """
    owner: dict[int, list[int]] = {}
    for key, ids in group_members.items():
        for node in ids.tolist():
            owner.setdefault(node, []).append(key)
    overlaps: Counter[tuple[int, int]] = Counter()
    for label, ids in members.items():
        for node in ids.tolist():
            for key in owner.get(node, ()):
                overlaps[(label, key)] += 1
    kept: dict[int, int] = {}
    paired: dict[int, int] = {}
    used: set[int] = set()
    for (label, key), common in sorted(overlaps.items(), key=lambda kv: (-kv[1], kv[0])):
        if label in paired or key in used:
            continue
        paired[label] = key
        used.add(key)
        union = members[label].size + group_members[key].size - common
        if key not in stale and 1.0 - common / max(union, 1) <= change_share:
            kept[label] = key
    regenerate = [(label, paired.get(label)) for label in sorted(members) if label not in kept]
    dropped = sorted(set(group_members) - set(kept.values()))
    return CommunityMatch(kept=kept, regenerate=regenerate, dropped=dropped)


# --------------------------------------------------------------------------- helpers
def cluster_count(n_nodes: int) -> int:
    """NodeRAG's K = ceil(sqrt(|S ∪ A ∪ H|)) (at least 1)."""
    return max(1, math.ceil(math.sqrt(max(n_nodes, 1))))


def group_by(labels: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """``{label: values with that label}`` (values keep their order).

    Parameters
    ----------
    labels : integer array [n]
    values : array [n]

    Returns
    -------
    dict[int, np.ndarray]
    """
    if labels.size == 0:
        return {}
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    cuts = np.nonzero(np.diff(sorted_labels))[0] + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [labels.size]])
    return {int(sorted_labels[s]): values[order[s:e]] for s, e in zip(starts, ends, strict=True)}


def unique_pairs(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ``(src, dst)`` pairs, sorted by ``src`` then ``dst``.

    Parameters
    ----------
    src, dst : integer arrays [e]

    Returns
    -------
    src, dst : arrays [u]
    """
    if src.size == 0:
        return src, dst
    pairs = np.unique(np.column_stack([src, dst]), axis=0)
    return pairs[:, 0], pairs[:, 1]
