"""Stage 5, enrichment: embeddings, K-means clusters with H→member links, semantic edges.

* The new S, A and H are embedded (T come from the engine) through
  ``UpdateContext.embed_nodes``, the one embedding path of the engine.
* H is linked to the S/A/H members of its community that share its K-means cluster
  (NodeRAG's Algorithm 2). K-means is refit when K doubles; in between, new nodes are
  assigned to the nearest centroid. Elements a community keeps are linked to the members
  this operation added to it.
* Each new embedded node is linked to its ``semantic_neighbours`` nearest embedded T/S/A/H
  nodes by an exact blocked GEMM (weight 1 per edge; a duplicate of an existing edge adds 1).

(docs/architecture.md, "Heterograph".)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphstrata.core.kmeans import kmeans_assign, kmeans_fit
from graphstrata.core.knn import nearest_neighbours
from graphstrata.engine.component import ChangeSet, UpdateContext
from graphstrata.engine.heterograph.communities import Communities
from graphstrata.engine.heterograph.graph import cluster_count
from graphstrata.engine.heterograph.schema import (
    BUILD_EMBEDDED,
    CLUSTER_KINDS,
    HETERO_EMBEDDED,
    ST_KMEANS,
    ST_KMEANS_CENTROIDS,
    A,
    H,
    S,
)
from graphstrata.engine.heterograph.work import EMPTY, Work
from graphstrata.engine.types import EdgeKind, NodeKind


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
    """

    centroids: np.ndarray
    ids: np.ndarray
    labels: np.ndarray
    stats: dict[str, Any]


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


def _labels(ctx: UpdateContext, work: Work, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """``(centroids, labels, refit)`` of ``ids``: refit, or assign the new ones."""
    centroids = work.state(ST_KMEANS_CENTROIDS)
    prev = work.aligned_state(ST_KMEANS, CLUSTER_KINDS)
    k = cluster_count(int(ids.size))
    if centroids is None or prev is None or k >= 2 * centroids.shape[0]:
        # First build, or the corpus grew 4x since the last fit: refit (amortized).
        centroids, labels = kmeans_fit(ctx.vectors_of(ids), k, int(work.config.seed))
        return centroids, labels, True
    prev_ids, prev_labels = prev
    labels = np.empty(ids.size, np.int64)
    pos = np.minimum(np.searchsorted(prev_ids, ids), max(prev_ids.size - 1, 0))
    known = prev_ids[pos] == ids if prev_ids.size else np.zeros(ids.size, bool)
    labels[known] = prev_labels[pos[known]]
    labels[~known] = kmeans_assign(ctx.vectors_of(ids[~known]), centroids)
    return centroids, labels, False


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
    centroids, labels, refit = _labels(ctx, work, ids)
    cluster = dict(zip(ids.tolist(), labels.tolist(), strict=True))
    community = dict(zip(comm.g2_ids.tolist(), comm.membership.tolist(), strict=True))
    h_src: list[int] = []
    h_dst: list[int] = []
    for label, h_ids in comm.new_elements.items():
        members = [int(m) for m in comm.content.get(label, EMPTY)] + h_ids
        by_cluster: dict[int, list[int]] = {}
        for m in members:
            by_cluster.setdefault(cluster[m], []).append(m)
        for h in h_ids:
            for m in by_cluster.get(cluster[h], []):
                if m != h and (work.new_kind.get(m) != H or m > h):
                    h_src.append(h)
                    h_dst.append(m)
    # Kept communities: link their elements to the members this operation added.
    new_members = [m for m, kd in work.new_kind.items() if kd in (S, A) and m in community]
    kept_h: dict[int, list[int]] = {}
    for label, key in comm.kept.items():
        kept_h[label] = [int(h) for h in comm.group_nodes.get(key, EMPTY) if int(h) in cluster]
    for m in new_members:
        for h in kept_h.get(community[m], []):
            if cluster[h] == cluster[m]:
                h_src.append(h)
                h_dst.append(m)
    work.edges.add(int(EdgeKind.ELEMENT_MEMBER), h_src, h_dst)
    stats = {"k": int(centroids.shape[0]), "refit": refit, "member_edges": len(h_src)}
    return Clusters(centroids, ids, labels, stats)


def semantic_edges(ctx: UpdateContext, work: Work, change: ChangeSet, embedded: np.ndarray) -> None:
    """Each new embedded node to its M nearest embedded T/S/A/H nodes (exact GEMM).

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
    """
    new_ids = np.asarray(
        sorted(set(embedded.tolist()) | set(change.added_chunk_ids.tolist())), dtype=np.int64
    )
    m = int(work.config.semantic_neighbours)
    if new_ids.size == 0 or m <= 0:
        return
    dead = work.dead_array()
    base_ids, base_parts = [], []
    vt = work.snapshot.vectors
    for kind in HETERO_EMBEDDED:
        ids, mat = vt.of_kind(kind)
        if ids.size and dead.size:
            keep = ~np.isin(ids, dead)
            ids, mat = ids[keep], mat[keep]
        base_ids.append(ids)
        base_parts.append(mat)
    new_vecs = ctx.vectors_of(new_ids)
    base_ids.append(new_ids)
    base_parts.append(new_vecs)
    src, dst = nearest_neighbours(
        new_vecs, new_ids, np.concatenate(base_parts), np.concatenate(base_ids), m
    )
    work.edges.add(int(EdgeKind.SEMANTIC), src, dst)
