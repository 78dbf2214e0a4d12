"""Graph algorithms of the heterograph: importance, communities, and the helpers around them.

Pure functions over numpy arrays of node ids (int64, never reused) and edge lists. The hot
loops live in ``graphstrata.core`` (CSR, betweenness, k-core, K-means, kNN) or in C
libraries (igraph's Leiden); this module chooses what to run them on and keeps the choices
stable from one version to the next, so that an insert changes only what it touches
(docs/architecture.md, "Heterograph").
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from graphstrata.core import sets
from graphstrata.core.centrality import sampled_betweenness
from graphstrata.core.contraction import apply_contracted_labels, contract_communities, frontier
from graphstrata.core.graph import csr_from_edges
from graphstrata.core.ids import positions_in
from graphstrata.core.kcore import coreness
from graphstrata.core.matching import greedy_pairs
from graphstrata.core.sampling import consistent_sample

#: Rounds of :func:`leiden_local`: the touched nodes, then the neighbours of those that
#: moved (a frontier that stops widening is done earlier).
FRONTIER_ROUNDS = 2
#: Leiden iterations at most in a run over part of a graph (see :func:`leiden`); a
#: contracted run from a converged partition settles in a few.
LOCAL_MAX_ITERATIONS = 64
#: A whole-graph Leiden run stops at the first iteration that raises modularity by less
#: than this share of it. Iterating until no node moves took 19 iterations (2.2 s) on the
#: G2 of the 10k-chunk scale index (64k nodes) and 58 (80 s) on the 100k one (532k nodes),
#: for modularity 0.757124 and 0.640089; this rule stops after 8 and 7 (0.9 s and 10 s) at
#: 0.757061 and 0.639911 (a one-off script, not kept, one iteration at a time). The tail
#: of moves worth ~1e-6 each made the build's Leiden grow as N^1.5 (issue 17).
LEIDEN_MIN_GAIN = 1e-4
#: Leiden backends; ``igraph`` is the default (measured faster at equal modularity, see
#: benchmarks/results/heterograph.md).
LEIDEN_BACKENDS = ("igraph", "leidenalg")


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
        positions_in(sorted_ids, src), positions_in(sorted_ids, dst), w, int(sorted_ids.shape[0])
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
    strength: np.ndarray | None = None,
    resolution: float = 1.0,
) -> np.ndarray:
    """Leiden communities (modularity objective, seeded) of a graph on dense indices.

    Iterating to convergence (``n_iterations=-1``) matters for stability: from a converged
    partition, a small change moves few nodes (measured on HotpotQA: 0 of 81 communities
    changed by > 20% after perturbing 0.2% of the edges), while from a partition stopped
    after 2 iterations, Leiden keeps improving and 30 of 85 changed on the same graph.
    Converged means here that an iteration raised modularity by less than
    ``LEIDEN_MIN_GAIN`` of it (igraph's own -1 waits until no node moves: a tail of
    iterations whose number grew with the graph). A run over part of a larger graph
    (``strength`` given) iterates until its partition is unchanged, at most
    ``LOCAL_MAX_ITERATIONS`` times. igraph draws from Python's ``random``: a seeded
    generator is installed for the call and the default restored afterwards.

    Parameters
    ----------
    n:
        Number of nodes (dense indices ``0..n-1``).
    src, dst, weight:
        Undirected weighted edges on dense indices.
    seed:
        Seed of the optimisation: equal inputs give equal partitions.
    initial:
        One label per node: start from a previous partition (:func:`with_singletons`).
    backend:
        One of :data:`LEIDEN_BACKENDS`.
    n_iterations:
        Leiden iterations; negative: until no node moves.
    strength:
        Each node's weight in the null model (igraph only); default its strength in this
        graph, a self-loop counted twice. :func:`leiden_local` passes the strengths of a
        larger graph that this one is a part of.
    resolution:
        Modularity's resolution, as a share of the sum of ``strength`` (igraph normalizes
        it by that sum): a part of a larger graph passes its share of the larger graph's
        total, so that every move is scored as in the larger graph.

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

    weight = np.asarray(weight, np.float64)
    graph = ig.Graph(n=n, directed=False)
    if len(src):
        # The (e, 2) array directly: a Python list of pairs allocates one tracked object
        # per edge, and in a 100k-chunk write the 27k pairs of a contracted graph set off
        # the collector's full passes (30-45 ms per graph built, against 6 ms alone).
        graph.add_edges(np.column_stack([src, dst]).astype(np.int64, copy=False))
    graph.es["weight"] = weight.tolist()
    init = None if initial is None else np.asarray(initial, np.int64).tolist()
    if backend == "igraph":
        # Strengths given explicitly, a self-loop counted twice: igraph's default counts it
        # once, which undervalues the contracted communities of :func:`leiden_local`
        # (measured: modularity 0.05 instead of 0.72 on a planted partition).
        # A part of a larger graph (strengths given) can make igraph's "until nothing
        # moves" run forever: it reports a change each iteration while the partition stays
        # the same (seen on a 4-node contracted graph with a self-loop). Its iterations are
        # then run one at a time, until the partition is unchanged or LOCAL_MAX_ITERATIONS.
        # A whole graph's are run one at a time too, until one gains under LEIDEN_MIN_GAIN.
        bounded = strength is not None and n_iterations < 0
        if strength is None:
            strength = np.bincount(src, weight, n) + np.bincount(dst, weight, n)
        options = {
            "objective_function": "modularity",
            "weights": "weight",
            "node_weights": np.asarray(strength, np.float64).tolist(),
            "resolution": float(resolution),
        }
        ig.set_random_number_generator(random.Random(seed))
        try:
            if n_iterations >= 0:
                clusters = graph.community_leiden(
                    initial_membership=init, n_iterations=n_iterations, **options
                )
                return np.asarray(clusters.membership, np.int64)
            current = None if init is None else np.asarray(init, np.int64)
            quality = None
            for _ in range(LOCAL_MAX_ITERATIONS) if bounded else itertools.count():
                step = graph.community_leiden(
                    initial_membership=None if current is None else current.tolist(),
                    n_iterations=1,
                    **options,
                )
                found = np.asarray(step.membership, np.int64)
                if current is not None and same_partition(found, current):
                    break
                gain = None if quality is None else float(step.quality) - quality
                quality, current = float(step.quality), found
                if not bounded and gain is not None and gain <= LEIDEN_MIN_GAIN * abs(quality):
                    break
            return found
        finally:
            ig.set_random_number_generator(random)
    if backend == "leidenalg":
        import leidenalg

        if strength is not None or resolution != 1.0:
            raise ValueError("explicit strengths and resolution need the igraph backend")

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


@dataclass(frozen=True)
class LocalRegion:
    """How :func:`leiden_local` contracted the graph (for reports and tests)."""

    region_nodes: int  # nodes re-optimised one by one
    fixed_communities: int  # the rest of the communities next to them, one node each
    contracted_edges: int  # distinct edges of the contracted graph
    full: bool  # True: the whole graph was run (no previous partition, or a large change)


class EdgeSource(Protocol):
    """Where :func:`leiden_local` reads an undirected weighted graph's edges (on dense
    indices) from."""

    def all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(src, dst, weight)`` of every edge, in the graph's order (a whole-graph run)."""
        ...

    def incident(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(src, dst, weight)`` of at least the edges with an end among ``nodes``
        (ascending, unique), each once: the local run reads no other edge."""
        ...


@dataclass(frozen=True)
class EdgeArrays:
    """An :class:`EdgeSource` of edge arrays; :meth:`incident` gives them all (a pass over
    them finds the incident ones where they are used)."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray

    def all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.src, self.dst, self.weight

    def incident(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.all()


def leiden_local(
    n: int,
    edges: EdgeSource,
    seed: int,
    initial: np.ndarray | None,
    touched: np.ndarray,
    backend: str = "igraph",
    max_region_share: float = 0.5,
    strength: np.ndarray | None = None,
) -> tuple[np.ndarray, LocalRegion]:
    """Leiden re-optimising only the nodes a change touched, then the neighbours of those
    that moved (a dynamic frontier).

    The touched nodes are opened up (they move one by one, starting in their previous
    communities). The rest of each community they are in or next to becomes one node of a
    contracted graph, with its edges to the opened nodes summed; communities further away,
    the edges between two of these fixed communities and the edges inside one are left out
    (:func:`~graphstrata.core.contraction.contract_communities`). Node strengths and the
    resolution are those of the whole graph (:func:`leiden`'s ``strength`` and ``resolution``), so a
    move's modularity gain is the one a full run would score. A move can only reach a
    community next to the mover, so leaving the far ones out changes no decision of the
    first pass. Then the neighbours of the nodes that moved are opened and the run repeated
    (``FRONTIER_ROUNDS`` runs at most; none when nothing moved), as Dynamic-frontier Leiden
    (Sahu 2024) widens its frontier. What the local run cannot do is split the untouched
    rest of a community, or merge two communities other than through an opened node. Its
    cost is the change's neighbourhood, not the corpus: opening every neighbour of a touched hub entity
    at once opened 21k-27k nodes per insert at 100k chunks, the frontier 50-90 (issue 17;
    quality against a full run in ``benchmarks/results/scale.md``).

    Parameters
    ----------
    n, seed, backend:
        As :func:`leiden`.
    edges:
        The graph's undirected weighted edges (:func:`leiden`'s ``src``, ``dst``,
        ``weight``): read whole for a whole-graph run, else only those at the opened and
        moved nodes (``EdgeSource.incident``).
    initial:
        The previous partition extended to the new nodes (:func:`with_singletons`);
        ``None`` runs the whole graph.
    touched:
        Dense indices of the nodes whose edges changed (new nodes, ends of new edges,
        neighbours of deleted nodes); duplicates allowed.
    max_region_share:
        When the opened nodes are more than this share of the nodes, the whole graph is
        run instead (the contraction would save little); 0 always runs it whole. A
        backend other than igraph also runs the whole graph.
    strength:
        float64 per node: its strength in this graph (a self-loop counted twice), when the
        caller has it; default summed from the edges.

    Returns
    -------
    membership, region
        int64 community label per node, and what was run. With ``initial``, communities
        keep its labels (:func:`stable_labels`): a community no opened node was in or next
        to keeps its label and its members; without, labels are ``0..k-1``.
    """
    touched = np.asarray(touched, np.int64)
    # The contracted run needs explicit strengths, which only igraph's Leiden takes
    # (leidenalg is kept as a whole-graph comparison in benchmarks/quality/heterograph.py).
    if initial is None or n == 0 or backend != "igraph":
        src, dst, weight = edges.all()
        membership = leiden(n, src, dst, weight, seed, initial, backend)
        if initial is not None:
            membership = stable_labels(membership, np.asarray(initial, np.int64))
        return membership, LocalRegion(n, 0, int(src.size), True)
    initial = np.asarray(initial, np.int64)
    if strength is None:
        src, dst, weight = edges.all()
        weight = np.asarray(weight, np.float64)
        strength = np.bincount(np.asarray(src, np.int64), weight, n)
        strength += np.bincount(np.asarray(dst, np.int64), weight, n)
    strength = np.asarray(strength, np.float64)
    opened = np.zeros(n, bool)
    opened[touched] = True
    ever_opened = opened.copy()
    labels, infos = initial, []
    for _ in range(FRONTIER_ROUNDS):
        if max_region_share <= 0 or ever_opened.sum() > max_region_share * n:
            src, dst, weight = edges.all()
            membership = stable_labels(leiden(n, src, dst, weight, seed, initial, backend), initial)
            return membership, LocalRegion(n, 0, int(src.size), True)
        before = labels
        near = edges.incident(np.flatnonzero(opened))
        labels, info = _contracted_run(*near, strength, seed, labels, opened, backend)
        infos.append(info)
        # The frontier widens to the neighbours of the nodes that moved (dynamic frontier).
        moved = labels != before
        opened = frontier(*edges.incident(np.flatnonzero(moved))[:2], moved) & ~ever_opened
        if not opened.any():
            break
        opened |= moved
        ever_opened |= opened
    region = LocalRegion(
        int(ever_opened.sum()),
        max(i.fixed_communities for i in infos),
        max(i.contracted_edges for i in infos),
        False,
    )
    return labels, region


def _contracted_run(
    src: np.ndarray,
    dst: np.ndarray,
    weight: np.ndarray,
    strength: np.ndarray,
    seed: int,
    initial: np.ndarray,
    opened: np.ndarray,
    backend: str,
) -> tuple[np.ndarray, LocalRegion]:
    """One Leiden run over the ``opened`` nodes and the rest of the communities next to
    them, each contracted to one node (:func:`leiden_local`); labels stable w.r.t.
    ``initial``."""
    c = contract_communities(src, dst, weight, strength, initial, opened)
    m = int(c.region.size + c.fixed_labels.size)
    cross_pairs, inverse = sets.unique_inverse(c.cross_lo * m + c.cross_hi)
    looped = np.flatnonzero(c.loops)
    pairs = np.concatenate([cross_pairs, looped * m + looped])
    summed = np.concatenate(
        [np.bincount(inverse, weights=c.cross_w, minlength=cross_pairs.size), c.loops[looped]]
    )
    total = float(strength.sum())
    share = float(c.strength.sum()) / total if total > 0 else 1.0
    start = np.concatenate([initial[c.region], c.fixed_labels])
    contracted = leiden(
        m,
        pairs // m,
        pairs % m,
        summed,
        seed,
        start,
        backend,
        strength=c.strength,
        resolution=share,
    )
    # The opened nodes and the fixed communities are whole previous communities, so only
    # their labels can change: the stable relabelling of them alone equals that of every
    # node (the others keep their labels either way), without a pass over the graph. It is
    # made on the contracted nodes, each weighted by the nodes it stands for: the same
    # counts as over those nodes one by one.
    members = np.concatenate([np.ones(c.region.size, np.int64), c.fixed_members])
    new_label = stable_labels(contracted, start, int(initial.max()) + 1, members)
    labels = apply_contracted_labels(initial, c.node_map, new_label)
    region, fixed_labels = c.region, c.fixed_labels
    return labels, LocalRegion(int(region.size), int(fixed_labels.size), int(pairs.size), False)


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two labellings of the same nodes describe the same partition."""
    if a.size != b.size:
        return False
    pairs = pair_counts(a, b)[0].size
    return pairs == sets.unique(a).size == sets.unique(b).size


def stable_labels(
    membership: np.ndarray,
    previous: np.ndarray,
    first_fresh: int | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Relabel ``membership`` so that communities keep their ``previous`` labels.

    Each new community takes the previous label most of its nodes had, largest overlaps
    first, one community per label (``core.matching.greedy_pairs``); the others get labels
    from ``first_fresh`` up, in the order of their ``membership`` labels. A write that moves
    few nodes then changes few stored labels (the node state patch stays small).

    Parameters
    ----------
    membership : int64 array [n]
        New community per node (any labels).
    previous : int64 array [n]
        Each node's label before (new nodes: fresh singleton labels).
    first_fresh : int, optional
        The first label for communities that keep none; default ``previous.max() + 1``
        (a caller relabelling part of a partition passes the whole one's).
    weights : integer array [n], optional
        How many nodes each entry stands for (default 1): a contracted graph's nodes.

    Returns
    -------
    np.ndarray
        int64 [n], the same partition as ``membership``.
    """
    if membership.size == 0:
        return np.asarray(membership, np.int64)
    labels, olds, counts = pair_counts(membership, previous, weights)
    order = np.lexsort((olds, labels, -counts))
    taken = greedy_pairs(labels[order], olds[order])
    matched, kept_label = labels[order][taken], olds[order][taken]
    distinct = sets.unique(np.asarray(membership, np.int64))
    unmatched = sets.difference(distinct, matched)
    fresh = int(previous.max()) + 1 if first_fresh is None else int(first_fresh)
    keys = np.concatenate([matched, unmatched])
    values = np.concatenate([kept_label, fresh + np.arange(unmatched.size, dtype=np.int64)])
    sort = np.argsort(keys)
    return values[sort][np.searchsorted(keys[sort], membership)]


def with_singletons(labels: np.ndarray, top: int) -> np.ndarray:
    """``labels`` (of a previous partition, -1 for a node it did not hold) with each -1
    replaced by a fresh singleton label, in node order, from ``top + 1``.

    Parameters
    ----------
    labels : int64 array [n]
        A label per node, -1 where there is none.
    top : int
        The largest label in use (fresh labels must not reuse one).

    Returns
    -------
    np.ndarray
        A new int64 array: the start of a seeded Leiden run.
    """
    out = np.array(labels, dtype=np.int64)
    new = out < 0
    out[new] = np.arange(top + 1, top + 1 + int(new.sum()), dtype=np.int64)
    return out


def pair_counts(
    a: np.ndarray, b: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct ``(a[i], b[i])`` pairs, sorted, with how often each occurs.

    ``np.unique(..., axis=0)`` sorts rows as structured values, ~20x slower than one 1-D
    ``unique`` over ``rank(a) * span(b) + b``, or ``rank(a) * |b| + rank(b)`` where that
    would pass 2**62.

    Parameters
    ----------
    a, b : integer arrays [n]
    weights : integer array [n], optional
        What each pair counts for (default 1).

    Returns
    -------
    a, b, counts : int64 arrays [u]
    """
    if len(a) == 0:
        return (np.zeros(0, np.int64),) * 3  # type: ignore[return-value]
    w = None if weights is None else np.asarray(weights, np.float64)
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    combined = _pair_keys(a, b)
    if combined is not None:  # one sort of the combined keys
        ua, lo, span, key = combined
        keys, at = sets.unique_inverse(key)
        counts = np.bincount(at, w, keys.size)
        return ua[keys // span], keys % span + lo, counts.astype(np.int64)
    # sets.unique_inverse, not np.unique: NumPy 2.4 hashes (core.sets).
    ua, ia = sets.unique_inverse(a)
    ub, ib = sets.unique_inverse(b)
    keys, at = sets.unique_inverse(ia * ub.size + ib)
    counts = np.bincount(at, w, keys.size)
    return ua[keys // ub.size], ub[keys % ub.size], counts.astype(np.int64)


def _pair_keys(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int, int, np.ndarray] | None:
    """``(distinct a, min b, span of b, rank(a) * span + b - min b)``: one int64 key per pair
    that sorts as the pairs do; None where it would overflow (``a``, ``b`` non-empty)."""
    ua, ia = sets.unique_inverse(a)
    lo = int(b.min())
    span = int(b.max()) - lo + 1
    if ua.size * span >= 2**62:
        return None
    return ua, lo, span, ia * span + (b - lo)


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
    src, dst : int64 arrays [u]
    """
    # One sort of a combined key, not np.unique(axis=0): that sorts rows as structured
    # values, and took 19 ms per call under line_profiler on the edges at a write's hub
    # entities at 100k chunks (issue 17).
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if src.size == 0:
        return src, dst
    combined = _pair_keys(src, dst)
    if combined is None:  # the key would overflow: rank both sides
        a, b, _counts = pair_counts(src, dst)
        return a, b
    ua, lo, span, key = combined
    key = sets.unique(key)
    return ua[key // span], key % span + lo
