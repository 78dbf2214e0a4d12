"""Element groups: which communities keep their high-level elements after a write.

A group is the H and O nodes written for one community at one time, and the G2 nodes they
were written from (each G2 node belongs to one group at most: the newest written from it).
Both are per-node mappings (``ST_GROUP_OF`` over G2, ``ST_GROUP_NODE`` over H and O), so a
commit stores only the rows that changed. After Leiden, each community is paired with the
group it overlaps most (:func:`match_communities`); a write pairs only the communities whose
members changed and what overlaps them, so its cost follows the change, not the number of
communities. At 100k chunks (51k communities) the dicts of every community and the pairing
took 0.13 s (``group_by``), 0.08 s (pairing) and 0.04 s (reading the groups) of a
one-document insert with code 73c2a77 (``build/scratch/time_comm_old.py``; issue 17).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import contains
from graphstrata.core.matching import greedy_pairs, label_sizes, linked_labels
from graphstrata.engine.heterograph.graph import pair_counts
from graphstrata.engine.heterograph.schema import (
    G2_KINDS,
    ST_GROUP_NODE,
    ST_GROUP_NODE_IDS,
    ST_GROUP_NODE_KEYS,
    ST_GROUP_OF,
    H,
    O,
)
from graphstrata.engine.heterograph.work import EMPTY, Work


@dataclass(frozen=True)
class ElementGroups:
    """Element groups on one version's G2 nodes.

    Attributes
    ----------
    group_of:
        Group key of each G2 node of the version (aligned with its sorted ids; -1: none).
    node_ids, node_keys:
        Every H and O node of a group, sorted by id, and its group key.
    """

    group_of: np.ndarray
    node_ids: np.ndarray
    node_keys: np.ndarray

    @classmethod
    def committed(cls, work: Work, g2_ids: np.ndarray) -> ElementGroups:
        """The committed groups, on the G2 nodes ``g2_ids`` of the operation's result (new
        nodes belong to none; nodes the operation deletes are not in ``g2_ids``)."""
        group_of = work.node_state_on(ST_GROUP_OF, G2_KINDS, g2_ids)
        if group_of is None:
            group_of = np.full(g2_ids.size, -1, np.int64)
        nodes = work.node_state(ST_GROUP_NODE, (H, O))
        if nodes is None:  # written before the per-node mapping: two parallel arrays
            nids, nkeys = work.state(ST_GROUP_NODE_IDS), work.state(ST_GROUP_NODE_KEYS)
            if nids is None or nkeys is None:
                nodes = (EMPTY, EMPTY)
            else:
                order = np.argsort(nids, kind="stable")
                nodes = (nids[order].astype(np.int64), nkeys[order].astype(np.int64))
        return cls(group_of, *nodes)

    def nodes_of(self, keys: np.ndarray) -> np.ndarray:
        """The H and O ids of the groups ``keys`` (ascending)."""
        return self.node_ids[contains(sets.unique(keys), self.node_keys)]


@dataclass
class CommunityMatch:
    """How the communities a write changed relate to the groups that have elements.

    Attributes
    ----------
    kept:
        Community label -> the group key whose elements it keeps.
    regenerate:
        ``(community label, the group it replaces or None)`` for the communities that get
        new elements, by label.
    dropped:
        Keys of the groups no community keeps (their elements are deleted).
    matched:
        How many communities were paired (all eligible ones without ``changed``).
    """

    kept: dict[int, int]
    regenerate: list[tuple[int, int | None]]
    dropped: list[int]
    matched: int


def match_communities(
    membership: np.ndarray,
    group_of: np.ndarray,
    eligible: np.ndarray,
    element_keys: np.ndarray,
    change_share: float,
    stale: np.ndarray = EMPTY,
    changed: np.ndarray | None = None,
) -> CommunityMatch:
    """Pair each community with the element group it overlaps most (one-to-one, greedy).

    Pairs are taken most shared members first (ties by label, then key). A community keeps
    its group's elements when the Jaccard distance between its members and the group's is
    at most ``change_share`` and the group is not ``stale`` (written from text of a
    deleted document); otherwise (or with no group) its elements are regenerated. Groups
    nobody keeps are dropped.

    With ``changed``, only the communities and groups connected to the changed
    communities through shared members are paired
    (:func:`~graphstrata.core.matching.linked_labels`). A greedy pairing
    decides each connected part on its own, so these get the result a pairing of
    everything gives them; the rest keep the pairing they had, which a pairing of
    everything would only revise where an earlier write left a community without elements
    (an unusable LLM answer) or groups drifted apart from their communities.
    ``graphstrata maintain`` pairs everything.

    Parameters
    ----------
    membership : int64 array [n]
        Community label of each G2 node.
    group_of : int64 array [n]
        Group key of each G2 node (-1: none).
    eligible : int64 array
        Sorted labels of the communities that may have elements.
    element_keys : int64 array
        Keys of the groups that have elements (any order; the groups with members are read
        from ``group_of``, so passing every key is the same). A group without members is
        dropped.
    change_share:
        The largest Jaccard distance at which a community keeps its group's elements.
    stale : int64 array
        Groups that must be regenerated whatever the overlap.
    changed : int64 array, optional
        Sorted labels of the communities whose members changed; None: all.

    Returns
    -------
    CommunityMatch
    """
    membership = np.asarray(membership, np.int64)
    group_of = np.asarray(group_of, np.int64)
    element_keys = np.asarray(element_keys, np.int64)
    stale = sets.unique(np.asarray(stale, np.int64))
    n_keys = 1 + max((int(x.max()) for x in (group_of, element_keys, stale) if x.size), default=-1)
    key_sizes = label_sizes(group_of, n_keys)  # members per group: one count for all uses
    group_keys = sets.union(element_keys, np.flatnonzero(key_sizes))
    if changed is None:
        labels, keys = eligible, group_keys
    else:
        empty_groups = group_keys[key_sizes[group_keys] == 0]
        labels, keys = linked_labels(
            membership, group_of, eligible, changed, sets.union(stale, empty_groups)
        )
    sel = contains(labels, membership) & contains(keys, group_of)
    pl, pk, common = pair_counts(membership[sel], group_of[sel])
    rank = np.lexsort((pk, pl, -common))
    pl, pk, common = pl[rank], pk[rank], common[rank]
    taken = greedy_pairs(pl, pk)
    pl, pk, common = pl[taken], pk[taken], common[taken]
    n_labels = int(membership.max()) + 1 if membership.size else 0
    union = label_sizes(membership, n_labels)[pl] + key_sizes[pk] - common
    keep = ~contains(stale, pk) & (1.0 - common / np.maximum(union, 1) <= change_share)
    kept = dict(zip(pl[keep].tolist(), pk[keep].tolist(), strict=True))
    paired = dict(zip(pl.tolist(), pk.tolist(), strict=True))
    regenerate = [(label, paired.get(label)) for label in labels.tolist() if label not in kept]
    dropped = sets.difference(keys, pk[keep]).tolist()
    return CommunityMatch(kept, regenerate, dropped, int(labels.size))
