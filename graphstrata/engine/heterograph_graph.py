"""Graph algorithms of the heterograph: importance, communities, clusters, semantic neighbours.

Pure functions over numpy arrays of node ids (int64, never reused) and edge lists. The hot
loops live in ``graphstrata.core`` (CSR, betweenness, k-core) or in C libraries (igraph's
Leiden, BLAS for K-means and the neighbour GEMM); this module chooses what to
run them on and keeps the choices stable from one version to the next, so that an insert
changes only what it touches.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import igraph as ig
import numpy as np
import scipy.sparse as sp

from graphstrata.core.centrality import sampled_betweenness
from graphstrata.core.graph import csr_from_edges
from graphstrata.core.kcore import coreness
from graphstrata.engine.types import EdgeKind

#: Edge kinds of the heterograph (search builds its CSR from these).
HETERO_EDGE_KINDS: tuple[int, ...] = (
    int(EdgeKind.CHUNK_UNIT),
    int(EdgeKind.UNIT_ENTITY),
    int(EdgeKind.UNIT_RELATION),
    int(EdgeKind.ENTITY_RELATION),
    int(EdgeKind.ENTITY_ATTRIBUTE),
    int(EdgeKind.ELEMENT_MEMBER),
    int(EdgeKind.ELEMENT_TITLE),
    int(EdgeKind.SEMANTIC),
)
#: Leiden backends; ``igraph`` is the default (measured faster at equal modularity, see
#: benchmarks/results/heterograph.md).
LEIDEN_BACKENDS = ("igraph", "leidenalg")


def dense_index(sorted_ids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Positions of ``ids`` in ``sorted_ids`` (all must be present)."""
    return np.searchsorted(sorted_ids, np.asarray(ids, dtype=np.int64)).astype(np.int64)


def dense_csr(
    sorted_ids: np.ndarray, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Symmetric CSR over ``sorted_ids`` (duplicates merged by weight sum)."""
    w = np.ones(len(src), np.float32) if weight is None else np.asarray(weight, np.float32)
    return csr_from_edges(
        dense_index(sorted_ids, src), dense_index(sorted_ids, dst), w, int(sorted_ids.shape[0])
    )


# --------------------------------------------------------------------------- importance
def consistent_sample(ids: np.ndarray, k: int, seed: int) -> np.ndarray:
    """The ``k`` ids with the smallest seeded hash (positions into ``ids``).

    A bottom-k sample by hash is stable under inserts: adding nodes changes it only when a
    new id hashes below the current k-th, so betweenness (and hence the important entities)
    does not churn on every small insert, as it would with ``random.sample``.
    """
    if ids.size <= k:
        return np.arange(ids.size, dtype=np.int64)
    x = ids.astype(np.uint64) ^ np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    # splitmix64 finalizer: a cheap, well-mixed 64-bit hash.
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return np.sort(np.argpartition(x, k - 1)[:k]).astype(np.int64)


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

    ``initial`` (one label per node) starts the optimisation from a previous partition.
    Iterating until nothing moves (``n_iterations=-1``) matters for stability: from a
    converged partition, a small change moves few nodes (measured on HotpotQA: 0 of 81
    communities changed by > 20% after perturbing 0.2% of the edges), while from a partition
    stopped after 2 iterations, Leiden keeps improving and 30 of 85 changed on the same graph. igraph draws from Python's ``random``: a seeded generator is
    installed for the call and the default restored afterwards.
    """
    if n == 0:
        return np.zeros(0, np.int64)
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
    """Labels of ``node_ids`` in the previous partition; new nodes get fresh singleton labels."""
    if prev_ids is None or prev_ids.size == 0:
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


# --------------------------------------------------------------------------- clusters
_BLOCK_ROWS = 65_536


def _nearest_centroid(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index of the nearest centroid (Euclidean) of each row, in row blocks."""
    half_norms = 0.5 * np.einsum("ij,ij->i", centroids, centroids)
    out = np.empty(vectors.shape[0], np.int64)
    for start in range(0, vectors.shape[0], _BLOCK_ROWS):
        block = vectors[start : start + _BLOCK_ROWS]
        out[start : start + block.shape[0]] = np.argmax(block @ centroids.T - half_norms, axis=1)
    return out


def _kmeans_pp(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ centres of ``x`` (one trial per centre)."""
    sq = np.einsum("ij,ij->i", x, x)
    centroids = np.empty((k, x.shape[1]), np.float32)
    centroids[0] = x[rng.integers(x.shape[0])]
    d2 = np.maximum(sq - 2.0 * (x @ centroids[0]) + centroids[0] @ centroids[0], 0)
    for j in range(1, k):
        total = float(d2.sum())
        pick = (
            int(rng.choice(x.shape[0], p=d2 / total))
            if total > 0
            else int(rng.integers(x.shape[0]))
        )
        centroids[j] = x[pick]
        np.minimum(
            d2, np.maximum(sq - 2.0 * (x @ centroids[j]) + centroids[j] @ centroids[j], 0), out=d2
        )
    return centroids


def kmeans_fit(
    vectors: np.ndarray, k: int, seed: int, max_iter: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded K-means: k-means++ on a sample of ``64 k`` rows, then Lloyd iterations by GEMM.

    Returns ``(centroids float32[k, d], labels int64[n])``. Written on numpy rather than
    scikit-learn: its Lloyd loop and k-means++ trials took 56 s / 108 s (KMeans /
    MiniBatchKMeans) for 37k x 384 vectors, K = 194, on the 2-core test machine under load,
    where one assignment GEMM takes 0.35 s. The clusters only decide which members a
    high-level element links to, so a few Lloyd iterations suffice.
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = x.shape[0]
    k = max(1, min(int(k), n))
    rng = np.random.default_rng(seed)
    sample = x if n <= 64 * k else x[np.sort(rng.choice(n, 64 * k, replace=False))]
    centroids = _kmeans_pp(sample, k, rng)
    labels = _nearest_centroid(x, centroids)
    for _ in range(max_iter):
        counts = np.bincount(labels, minlength=k)
        onehot = sp.csr_matrix((np.ones(n, np.float32), (labels, np.arange(n))), shape=(k, n))
        present = counts > 0  # empty clusters keep their centre
        centroids[present] = np.asarray(onehot @ x)[present] / counts[present, None]
        new = _nearest_centroid(x, centroids)
        if np.array_equal(new, labels):
            break
        labels = new
    return centroids, labels


def kmeans_assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Nearest centroid (Euclidean) of each vector."""
    if vectors.shape[0] == 0:
        return np.zeros(0, np.int64)
    return _nearest_centroid(np.asarray(vectors, dtype=np.float32), centroids)


def cluster_count(n_nodes: int) -> int:
    """NodeRAG's K = ceil(sqrt(|S ∪ A ∪ H|))."""
    return max(1, math.ceil(math.sqrt(max(n_nodes, 1))))


# --------------------------------------------------------------------------- neighbours
def nearest_neighbours(
    queries: np.ndarray,
    query_ids: np.ndarray,
    base: np.ndarray,
    base_ids: np.ndarray,
    m: int,
    block_rows: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``m`` inner-product neighbours of each query row among ``base`` rows.

    Blocked GEMM (``block_rows`` queries at a time, so memory stays at block × |base|)
    followed by ``argpartition``; a node is never its own neighbour. Returns the edge list
    ``(src ids, dst ids)``, one row per (query, neighbour).
    """
    if queries.shape[0] == 0 or base.shape[0] == 0 or m <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    srcs: list[np.ndarray] = []
    dsts: list[np.ndarray] = []
    base = np.ascontiguousarray(base, dtype=np.float32)
    order = np.argsort(base_ids)
    sorted_base = base_ids[order]
    for start in range(0, queries.shape[0], block_rows):
        q = np.ascontiguousarray(queries[start : start + block_rows], dtype=np.float32)
        qids = query_ids[start : start + block_rows]
        sims = q @ base.T
        # Mask self-similarity where a query is also in the base.
        pos = np.searchsorted(sorted_base, qids)
        pos_c = np.minimum(pos, sorted_base.size - 1)
        hit = sorted_base[pos_c] == qids
        rows = np.nonzero(hit)[0]
        sims[rows, order[pos_c[hit]]] = -np.inf
        kk = min(m, base.shape[0] - (1 if hit.any() else 0))
        if kk <= 0:
            continue
        top = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        valid = np.isfinite(np.take_along_axis(sims, top, axis=1))
        srcs.append(np.repeat(qids, kk)[valid.ravel()])
        dsts.append(base_ids[top].ravel()[valid.ravel()])
    if not srcs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(srcs).astype(np.int64), np.concatenate(dsts).astype(np.int64)


def group_by(labels: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """``{label: values with that label}`` (values keep their order)."""
    if labels.size == 0:
        return {}
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    cuts = np.nonzero(np.diff(sorted_labels))[0] + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [labels.size]])
    return {int(sorted_labels[s]): values[order[s:e]] for s, e in zip(starts, ends, strict=True)}


def unique_pairs(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (src, dst) pairs."""
    if src.size == 0:
        return src, dst
    pairs = np.unique(np.column_stack([src, dst]), axis=0)
    return pairs[:, 0], pairs[:, 1]


def members_of(labels: Sequence[int], groups: dict[int, np.ndarray]) -> np.ndarray:
    """Union of the members of some groups."""
    parts = [groups[g] for g in labels if g in groups]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
