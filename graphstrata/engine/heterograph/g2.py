"""G2 (units, entities, relationships, attributes) on positions, for Leiden.

The communities stage needs, for the graph after the operation: the sorted live G2 ids,
the G2 edges on their positions with the degrees, the committed partition and element
groups on them, and which nodes are content (S, A). Read from the committed version, that
is a dozen passes over the 532k G2 nodes and 924k edges at 100k chunks: every kind's edges
concatenated and looked up, two per-node states looked up, the live ids of two sets of
kinds selected (~25 ms of each write under line_profiler; issue 17).

A write's communities stage ends holding all of it for the version it commits
(:class:`G2Frame`), so the commit hands it to the next version's ``graph`` view, and the
next write carries it over: the positions of the surviving nodes shift down past the
deleted ones, the new nodes (whose ids are above every committed id) come last, and the
edges are carried in one compiled pass (:func:`~graphstrata.core.ids.edges_carried`)
with the new ones put after their kind's edges, the order the committed edges have. A
version reached otherwise (opened, compacted) has no frame, and G2 is read as before;
tests check that both give the same arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphstrata.core.ids import EdgesWithin, contains, edges_carried, edges_within, find_positions
from graphstrata.engine.heterograph.schema import (
    G2_EDGES,
    G2_KINDS,
    ST_GROUP_OF,
    ST_LEIDEN,
    A,
    S,
)
from graphstrata.engine.heterograph.work import EMPTY, Work

#: ``Delta.memo`` key of the frame a write leaves for the next version.
G2_MEMO = "heterograph/g2"


@dataclass(frozen=True)
class G2Frame:
    """One version's G2 on positions, as the write that committed it left it.

    Attributes
    ----------
    ids:
        The sorted live G2 ids.
    is_content:
        Per position: an S or A node.
    edges:
        The G2 edges on positions, one block per kind of ``G2_EDGES``.
    membership:
        The Leiden label of each position (what the version stores as ``ST_LEIDEN``).
    group_of:
        The element group of each position (``ST_GROUP_OF``; -1: none).
    """

    ids: np.ndarray
    is_content: np.ndarray
    edges: EdgesWithin
    membership: np.ndarray
    group_of: np.ndarray


@dataclass(frozen=True)
class G2:
    """G2 after the operation, with what the committed version holds for its nodes.

    Attributes
    ----------
    ids, is_content, edges:
        As in :class:`G2Frame`, after the operation.
    labels:
        The committed Leiden label of each node (-1: a new node), or None without a
        committed partition.
    dead_labels:
        The committed labels of the G2 nodes the operation deletes.
    group_of:
        The committed element group of each node (-1: none).
    """

    ids: np.ndarray
    is_content: np.ndarray
    edges: EdgesWithin
    labels: np.ndarray | None
    dead_labels: np.ndarray
    group_of: np.ndarray


def _new_edges(work: Work) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This operation's G2 edges, kind after kind, and where each kind's end."""
    parts = [work.edges.of(kind) for kind in G2_EDGES]
    ends = np.cumsum([p[0].size for p in parts]).astype(np.int64)
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), ends


def g2_after(work: Work, frame: G2Frame | None) -> G2:
    """G2 after the operation ``work`` records, carried from ``frame`` (the committed
    version's, or None: read from the version)."""
    committed = work.nodes.ids_of_kind(*G2_KINDS)
    new_ids = np.sort(np.asarray([i for i, k in work.new_kind.items() if k in G2_KINDS], np.int64))
    usable = (
        frame is not None
        and frame.ids.size == committed.size
        and (
            not committed.size or (frame.ids[0] == committed[0] and frame.ids[-1] == committed[-1])
        )
        and (not new_ids.size or not committed.size or new_ids[0] > committed[-1])
    )
    if frame is None or not usable:
        return _read(work)
    dead = work.dead_array()
    new_ids = new_ids[~contains(dead, new_ids)] if dead.size else new_ids
    dead_at = find_positions(frame.ids, dead) if dead.size else EMPTY
    dead_at = dead_at[dead_at >= 0]
    alive = np.ones(frame.ids.size, bool)
    alive[dead_at] = False
    new_position = np.cumsum(alive) - 1
    new_position[~alive] = -1
    ids = np.concatenate([frame.ids[alive], new_ids])
    new_kind = work.new_kind
    fresh_content = np.asarray([new_kind[i] in (S, A) for i in new_ids.tolist()], bool)
    src, dst, ends = _new_edges(work)
    fill = np.full(new_ids.size, -1, np.int64)
    return G2(
        ids=ids,
        is_content=np.concatenate([frame.is_content[alive], fresh_content]),
        edges=edges_carried(frame.edges, new_position, ids, src, dst, ends),
        labels=np.concatenate([frame.membership[alive], fill]),
        dead_labels=frame.membership[dead_at],
        group_of=np.concatenate([frame.group_of[alive], fill]),
    )


def _read(work: Work) -> G2:
    """G2 after the operation, read from the committed version."""
    ids = work.live_ids(*G2_KINDS)
    parts = [p for kind in G2_EDGES for p in (work.committed_edges(kind), work.edges.of(kind))]
    ends = np.cumsum([p[0].size for p in parts]).astype(np.int64)[1::2]  # kind by kind
    edges = edges_within(
        ids, np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), ends
    )
    labels = work.node_state_on(ST_LEIDEN, G2_KINDS, ids)
    dead_labels = EMPTY
    if labels is not None:
        found = work.node_state_on(ST_LEIDEN, G2_KINDS, work.dead_array())
        dead_labels = EMPTY if found is None else found[found >= 0]
    group_of = work.node_state_on(ST_GROUP_OF, G2_KINDS, ids)
    return G2(
        ids=ids,
        is_content=contains(work.live_ids(S, A), ids),
        edges=edges,
        labels=labels,
        dead_labels=dead_labels,
        group_of=np.full(ids.size, -1, np.int64) if group_of is None else group_of,
    )
