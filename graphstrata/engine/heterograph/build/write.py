"""The last stage: one operation's heterograph changes and state, into the delta."""

from __future__ import annotations

from typing import Any

import numpy as np

from graphstrata.engine.heterograph.build.communities import Communities
from graphstrata.engine.heterograph.build.enrich import Clusters
from graphstrata.engine.heterograph.build.lookups import MentionTable, mention_keys
from graphstrata.engine.heterograph.schema import (
    NAME,
    ST_GROUP_NODE,
    ST_GROUP_OF,
    ST_KMEANS,
    ST_KMEANS_CENTROIDS,
    ST_LEIDEN,
    ST_MENTION_LINE,
    ST_MENTION_UNIT,
)
from graphstrata.engine.heterograph.build.work import Work
from graphstrata.engine.store import Delta
from graphstrata.engine.tokens import count_tokens_batch


def write(delta: Delta, work: Work, removed_chunk_ids: np.ndarray) -> None:
    """Deletions, new and rewritten node rows, and new edges (none with a dead end).

    Parameters
    ----------
    delta:
        The operation's delta.
    work:
        What the stages recorded.
    removed_chunk_ids:
        Already deleted by the engine (not deleted again).
    """
    nodes = work.nodes
    dead = work.dead_array()
    delta.delete_nodes(dead[~np.isin(dead, removed_chunk_ids)])
    fresh = sorted(i for i in work.new_kind if i not in work.dead)
    if fresh:
        texts = [work.text[i] for i in fresh]
        delta.add_nodes(
            ids=np.asarray(fresh, dtype=np.int64),
            kind=np.asarray([work.new_kind[i] for i in fresh], dtype=np.uint8),
            text=texts,
            tokens=count_tokens_batch(texts),
            docs=[work.docs.get(i, []) for i in fresh],
        )
    replaced = sorted(i for i in work.replaced if i not in work.dead)
    if replaced:
        rows = nodes.take(replaced)
        old_texts = nodes.text_of(replaced)
        texts = [work.text.get(i, o) for i, o in zip(replaced, old_texts, strict=True)]
        delta.replace_rows(
            rows,
            text=texts,
            # Only rewritten texts are counted again (``Work.tokens_of``): an entity whose
            # documents changed keeps its text, and a write rewrites the rows of the hub
            # entities it touches (4.2 ms of tokenizing per write at 100k chunks under
            # line_profiler, issue 17).
            tokens=work.tokens_of(replaced),
            docs=[
                work.docs.get(i, d) for i, d in zip(replaced, nodes.docs_of(replaced), strict=True)
            ],
        )
    for kind, parts in work.edges.parts.items():
        src = np.concatenate([p[0] for p in parts])
        dst = np.concatenate([p[1] for p in parts])
        keep = ~(np.isin(src, dead) | np.isin(dst, dead))
        delta.add_edges(src[keep], dst[keep], kind, 1.0)


def write_state(
    delta: Delta,
    work: Work,
    mentions: MentionTable,
    comm: Communities,
    clusters: Clusters | None,
    last_update: dict[str, Any],
) -> None:
    """The state arrays of the new version, and the component metadata.

    Parameters
    ----------
    delta:
        The operation's delta.
    work:
        Which relationships are alive (mentions of dead ones are not kept).
    mentions:
        Who asserts which line of a multi-line relationship (``Names.mentions``).
    comm, clusters:
        The communities and clusters stages' results.
    last_update:
        The operation's counters, kept in the metadata.
    """
    snap = work.snapshot
    changes = comm.changes
    groups = comm.groups
    for name, values, known in (
        (ST_LEIDEN, comm.membership, changes.labels if changes else None),
        (ST_GROUP_OF, groups.group_of, changes.groups if changes else None),
    ):
        delta.put_node_state(NAME, name, comm.g2_ids, values, snap.node_state(NAME, name), known)
    delta.put_node_state(
        NAME,
        ST_GROUP_NODE,
        groups.node_ids,
        groups.node_keys,
        snap.node_state(NAME, ST_GROUP_NODE),
    )
    if clusters is not None:
        if clusters.stats.get("refit", True):  # assigning new nodes leaves the centroids
            delta.put_state(NAME, ST_KMEANS_CENTROIDS, clusters.centroids)
        delta.put_node_state(
            NAME,
            ST_KMEANS,
            clusters.ids,
            clusters.labels,
            snap.node_state(NAME, ST_KMEANS),
            clusters.changes,
        )
    dead = work.dead_array()
    new_ids = np.fromiter(work.new_kind, np.int64, count=len(work.new_kind))
    m = mentions.arrays(
        lambda rids: ~np.isin(rids, dead) & (np.isin(rids, new_ids) | work.nodes.contains(rids))
    )
    keys = mention_keys(m[:, 1])
    for name, column in ((ST_MENTION_UNIT, 0), (ST_MENTION_LINE, 2)):
        delta.put_node_state(NAME, name, keys, m[:, column], snap.node_state(NAME, name))
    delta.set_component_meta(
        NAME, {"next_group_key": comm.next_group_key, "last_update": last_update}
    )
