"""Stage 5, enrichment: embeddings, K-means clusters with H→member links, semantic edges.

* The new S, A and H are embedded (T come from the engine) through
  ``UpdateContext.embed_nodes``, the one embedding path of the engine.
* H is linked to the S/A/H members of its community that share its K-means cluster
  (NodeRAG's Algorithm 2). K-means is refit when K doubles; in between, new nodes are
  assigned to the nearest centroid. Elements a community keeps are linked to the members
  this operation added to it.
* Each new embedded node is linked to its ``semantic_neighbours`` nearest embedded T/S/A/H
  nodes (weight 1 per edge; a duplicate of an existing edge adds 1): exact (blocked GEMM)
  below ``semantic_exact_below`` embedded nodes, approximate above (the committed usearch
  index for committed neighbours, NN-descent among a large batch of new nodes).

(docs/architecture.md, "Heterograph".)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphstrata.core.ids import contains
from graphstrata.core.kmeans import kmeans_assign, kmeans_fit
from graphstrata.core.knn import best_per_query, nearest_neighbours, nearest_neighbours_scored
from graphstrata.core.nndescent import LIST_FACTOR, graph_edges, knn_graph
from graphstrata.engine.component import ChangeSet, UpdateContext
from graphstrata.engine.graph_bases import NeighbourLists
from graphstrata.engine.heterograph.build.communities import Communities
from graphstrata.core.communities import cluster_count
from graphstrata.engine.heterograph.schema import (
    BUILD_EMBEDDED,
    CLUSTER_KINDS,
    HETERO_EMBEDDED,
    NAME,
    ST_KMEANS,
    ST_KMEANS_CENTROIDS,
    A,
    S,
)
from graphstrata.engine.heterograph.build.work import EMPTY, Work
from graphstrata.engine.store import VectorTable
from graphstrata.engine.store.node_state import Changes
from graphstrata.engine.types import EdgeKind, NodeKind
from graphstrata.engine.vectors import VectorIndex


@dataclass
class Clusters:
    """K-means over the live S, A, H nodes after this operation.

    Attributes
    ----------
    centroids:
        float32 [K, dim].
    ids:
        Sorted ids of the clustered nodes.
    labels:
        Cluster of each of ``ids``.
    stats:
        Counters for the report: ``k``, ``refit``, ``member_edges``.
    changes:
        How ``labels`` differ from the committed ``ST_KMEANS`` (``node_state.Changes``):
        without a refit, the new nodes got one and the deleted ones left.
    """

    centroids: np.ndarray
    ids: np.ndarray
    labels: np.ndarray
    stats: dict[str, Any]
    changes: Changes | None = None


def embed_new_nodes(ctx: UpdateContext, work: Work) -> np.ndarray:
    """Embed the new S, A, H nodes (``ctx.embed_nodes``, one call per kind).

    Returns
    -------
    np.ndarray
        The embedded ids: S, then A, then H, each in id order.
    """
    embedded: list[int] = []
    for kind in BUILD_EMBEDDED:
        ids = sorted(i for i, k in work.new_kind.items() if k == kind)
        if not ids:
            continue
        ctx.embed_nodes(
            np.asarray(ids, dtype=np.int64),
            kind,
            [work.text[i] for i in ids],
            stage=f"embed_{NodeKind(kind).letter}",
        )
        embedded += ids
    return np.asarray(embedded, dtype=np.int64)


def _labels(
    ctx: UpdateContext, work: Work, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray, Changes | None]:
    """``(centroids, labels, changes)`` of ``ids``: refit (``changes`` None), or assign the
    new ones."""
    centroids = work.state(ST_KMEANS_CENTROIDS)
    labels = work.node_state_on(ST_KMEANS, CLUSTER_KINDS, ids)  # -1: not labelled yet
    k = cluster_count(int(ids.size))
    if centroids is None or labels is None or k >= 2 * centroids.shape[0]:
        # First build, or the corpus grew 4x since the last fit: refit (amortized).
        centroids, fitted = kmeans_fit(ctx.vectors_of(ids), k, int(work.config.seed))
        return centroids, fitted, None
    new = labels < 0
    labels[new] = kmeans_assign(ctx.vectors_of(ids[new]), centroids)
    stored = work.snapshot.node_state(NAME, ST_KMEANS)
    dead = work.dead_array()
    gone = dead[contains(stored[0], dead)] if stored is not None else EMPTY
    return centroids, labels, (new, gone, int(np.count_nonzero(new)))


def link_elements(ctx: UpdateContext, work: Work, comm: Communities) -> Clusters | None:
    """K-means over S/A/H; H → members sharing its community and its cluster.

    Parameters
    ----------
    ctx:
        ``vectors_of`` reads committed and new vectors.
    work:
        Receives the H→member edges.
    comm:
        The communities stage's result (new and kept elements, membership).

    Returns
    -------
    Clusters or None
        ``None`` when there is no S, A or H node.
    """
    ids = work.live_ids(*CLUSTER_KINDS)
    if ids.size == 0:
        return None
    centroids, labels, changes = _labels(ctx, work, ids)
    refit = changes is None

    def cluster_of(nodes: np.ndarray) -> np.ndarray:
        return labels[np.searchsorted(ids, nodes)]

    h_src: list[np.ndarray] = []
    h_dst: list[np.ndarray] = []
    for label, h_ids in comm.new_elements.items():
        members = np.concatenate([comm.content.get(label, EMPTY), np.asarray(h_ids, np.int64)])
        heads = np.asarray(h_ids, np.int64)
        # Every (h, member) pair of one cluster; an H pair once (the smaller id first).
        h, m = np.repeat(heads, members.size), np.tile(members, heads.size)
        same = cluster_of(h) == cluster_of(m)
        is_new_h = contains(np.sort(heads), m)
        keep = same & (m != h) & (~is_new_h | (m > h))
        h_src.append(h[keep])
        h_dst.append(m[keep])
    # Kept communities: link their elements to the members this operation added.
    new_members = np.fromiter((m for m, kd in work.new_kind.items() if kd in (S, A)), np.int64)
    new_members = new_members[contains(comm.g2_ids, new_members)]
    if new_members.size and comm.kept:
        community = comm.membership[np.searchsorted(comm.g2_ids, new_members)]
        kept_labels = np.asarray(sorted(comm.kept), np.int64)
        has = contains(kept_labels, community)
        key_of = np.asarray([comm.kept[c] for c in kept_labels.tolist()], np.int64)
        for m, key in zip(new_members[has], key_of[np.searchsorted(kept_labels, community[has])]):
            heads = comm.groups.nodes_of(np.asarray([key]))
            heads = heads[contains(ids, heads)]  # its H (titles are not clustered)
            heads = heads[cluster_of(heads) == cluster_of(np.asarray([m]))[0]]
            h_src.append(heads)
            h_dst.append(np.full(heads.size, m, np.int64))
    h_src_all = np.concatenate(h_src) if h_src else EMPTY
    h_dst_all = np.concatenate(h_dst) if h_dst else EMPTY
    work.edges.add(int(EdgeKind.ELEMENT_MEMBER), h_src_all, h_dst_all)
    stats = {"k": int(centroids.shape[0]), "refit": refit, "member_edges": int(h_src_all.size)}
    return Clusters(centroids, ids, labels, stats, changes)


def _committed_embedded(vt: VectorTable, dead: np.ndarray) -> np.ndarray:
    """The ids of the committed T/S/A/H vectors, less ``dead``: kind by kind, in segment
    order (the exact kernel's tie-breaking depends on the order); O(n)."""
    committed = np.concatenate([vt.ids[vt.kinds == k] for k in HETERO_EMBEDDED])
    return committed[~np.isin(committed, dead)] if dead.size else committed


def semantic_edges(
    ctx: UpdateContext,
    work: Work,
    change: ChangeSet,
    embedded: np.ndarray,
    index: VectorIndex | None = None,
) -> None:
    """Each new embedded node to its M nearest embedded T/S/A/H nodes.

    Below ``semantic_exact_below`` embedded nodes (committed and new) the neighbours are
    exact (one blocked GEMM over every vector). Above it they are approximate: the new
    nodes query ``index``, the committed version's usearch indexes (``O(new log n)``, no
    vector copied out of the store), and one another: exactly while they are fewer than
    the threshold, above it (a full build) through the k-NN graph of the new nodes
    (``core.nndescent``, ``O(new log new)``; a temporary HNSW index built and searched
    with every new node grew as ``N^1.47``, ``benchmarks/results/scale.md``).

    Parameters
    ----------
    ctx:
        ``vectors_of`` reads the new nodes' vectors.
    work:
        Receives the semantic edges.
    change:
        Its new chunks are new embedded nodes too.
    embedded:
        The S/A/H ids :func:`embed_new_nodes` embedded.
    index:
        The committed version's vector index. Without it an approximate operation finds the
        committed neighbours exactly (every committed vector copied: ``O(n)`` per insert).
    """
    new_ids = np.asarray(
        sorted(set(embedded.tolist()) | set(change.added_chunk_ids.tolist())), dtype=np.int64
    )
    m = int(work.config.semantic_neighbours)
    if new_ids.size == 0 or m <= 0:
        return
    dead = work.dead_array()
    vt = work.snapshot.vectors
    n_committed = vt.count(HETERO_EMBEDDED, without=dead)
    new_vecs = ctx.vectors_of(new_ids)
    threshold = int(work.config.semantic_exact_below)
    exact = n_committed + new_ids.size < threshold
    ctx.report.notes.append(
        f"heterograph: semantic edges {'exact' if exact else 'approximate'} for "
        f"{new_ids.size} new of {n_committed + new_ids.size} embedded nodes"
    )
    if exact:
        committed = _committed_embedded(vt, dead)
        base_ids = np.concatenate([committed, new_ids])
        base = np.concatenate([vt.get(committed), new_vecs])
        src, dst = nearest_neighbours(new_vecs, new_ids, base, base_ids, m)
        work.edges.add(int(EdgeKind.SEMANTIC), src, dst)
        return
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    if n_committed and index is not None:
        parts.append(index.neighbours(new_vecs, new_ids, HETERO_EMBEDDED, m, dead))
    elif n_committed:
        committed = _committed_embedded(vt, dead)
        parts.append(nearest_neighbours_scored(new_vecs, new_ids, vt.get(committed), committed, m))
    if new_ids.size < threshold:
        parts.append(nearest_neighbours_scored(new_vecs, new_ids, new_vecs, new_ids, m))
    else:
        # Every column of the descent's lists is kept: the vector bases of these nodes'
        # kinds start their own k-NN graphs from them (``engine.graph_bases``).
        graph = knn_graph(new_vecs, m, int(work.config.seed), keep=LIST_FACTOR * m)
        ctx.neighbour_lists = NeighbourLists(new_ids, graph.indices)
        parts.append(graph_edges(graph, new_ids, m))
    if len(parts) == 1 and new_ids.size >= threshold:
        # The k-NN graph alone (a build) is already in ``best_per_query``'s order (rows by
        # ascending id, as ``new_ids`` is sorted; most similar first, ties by ascending id):
        # merging it would only sort its 16 n edges again (7 s of the 100k-chunk build).
        src, dst = parts[0][0], parts[0][1]
    else:
        src, dst, _ = best_per_query(
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]),
            m,
        )
    work.edges.add(int(EdgeKind.SEMANTIC), src, dst)
