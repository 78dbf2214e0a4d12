"""Element groups: which communities keep their high-level elements after a write.

A group is the H and O nodes written for one community at one time, and the G2 nodes they
were written from (each G2 node belongs to one group at most: the newest written from it).
Both are per-node mappings (``ST_GROUP_OF`` over G2, ``ST_GROUP_NODE`` over H and O), so a
commit stores only the rows that changed. After Leiden, each community is paired with the
group it overlaps most (:func:`match_pairs`); a write pairs only the communities whose
members changed and what overlaps them, so its cost follows the change, not the number of
communities. At 100k chunks (51k communities) the dicts of every community and the pairing
took 0.13 s (``group_by``), 0.08 s (pairing) and 0.04 s (reading the groups) of a
one-document insert with code 73c2a77 (a one-off script, not kept; issue 17).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphstrata.core import sets
from graphstrata.core.ids import contains
from graphstrata.core.matching import greedy_pairs, linked_labels
from graphstrata.core.communities import pair_counts
from graphstrata.engine.heterograph.schema import (
    G2_KINDS,
    ST_GROUP_NODE,
    ST_GROUP_NODE_IDS,
    ST_GROUP_NODE_KEYS,
    ST_GROUP_OF,
    H,
    O,
)
from graphstrata.engine.heterograph.build.work import EMPTY, Work


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
    def committed(
        cls, work: Work, g2_ids: np.ndarray, group_of: np.ndarray | None = None
    ) -> ElementGroups:
        """The committed groups, on the G2 nodes ``g2_ids`` of the operation's result (new
        nodes belong to none; nodes the operation deletes are not in ``g2_ids``); their
        ``group_of`` read from the state unless given (``G2Step.group_of``)."""
        if group_of is None:
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


#: Distinct ``(community label, group key)`` pairs of the G2 nodes that have a group, and
#: how many nodes each holds (sorted by label, then key): all the pairing reads of them.
#: At 100k chunks 473k nodes make 330 pairs (``g2`` keeps them across writes).
Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]


def pairs_of(membership: np.ndarray, group_of: np.ndarray) -> Pairs:
    """The :data:`Pairs` of per-node labels and groups (-1: no group)."""
    membership = np.asarray(membership, np.int64)
    group_of = np.asarray(group_of, np.int64)
    has = group_of >= 0
    return pair_counts(membership[has], group_of[has])


def moved_pairs(
    pairs: Pairs,
    out_labels: np.ndarray,
    out_keys: np.ndarray,
    in_labels: np.ndarray,
    in_keys: np.ndarray,
) -> Pairs:
    """``pairs`` after nodes left ``(out_labels[i], out_keys[i])`` and joined ``(in_labels[i],
    in_keys[i])`` (a key of -1: no group, not counted): the cost of the change, not of the
    graph.

    Raises
    ------
    ValueError
        When a node leaves a pair that does not hold it.
    """
    parts = [
        (pairs[0], pairs[1], np.asarray(pairs[2], np.float64)),
        (out_labels, out_keys, np.full(np.shape(out_labels), -1.0)),
        (in_labels, in_keys, np.ones(np.shape(in_labels))),
    ]
    labels, keys, n = (np.concatenate([np.asarray(p[j]) for p in parts]) for j in range(3))
    has = keys >= 0
    labels, keys, n = pair_counts(labels[has].astype(np.int64), keys[has].astype(np.int64), n[has])
    if n.size and int(n.min()) < 0:
        raise ValueError("a node left a (label, key) pair that did not hold it")
    held = n > 0
    return labels[held], keys[held], n[held]


def match_pairs(
    pairs: Pairs,
    community_sizes: np.ndarray,
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
    (:func:`~graphstrata.core.matching.linked_labels`, over the pairs: a node's labels are
    its pair's). A greedy pairing
    decides each connected part on its own, so these get the result a pairing of
    everything gives them; the rest keep the pairing they had, which a pairing of
    everything would only revise where an earlier write left a community without elements
    (an unusable LLM answer) or groups drifted apart from their communities.
    ``graphstrata maintain`` pairs everything.

    Parameters
    ----------
    pairs:
        The :data:`Pairs` of the communities after the write and the committed groups.
    community_sizes : int64 array
        Members of each community label (every G2 node, with a group or not).
    eligible : int64 array
        Sorted labels of the communities that may have elements.
    element_keys : int64 array
        Keys of the groups that have elements (any order; the groups with members are read
        from ``pairs``, so passing every key is the same). A group without members is
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
    pair_label, pair_key, pair_n = (np.asarray(x, np.int64) for x in pairs)
    element_keys = np.asarray(element_keys, np.int64)
    stale = sets.unique(np.asarray(stale, np.int64))
    n_keys = 1 + max((int(x.max()) for x in (pair_key, element_keys, stale) if x.size), default=-1)
    key_sizes = np.bincount(pair_key, pair_n, n_keys).astype(np.int64)  # members per group
    group_keys = sets.union(element_keys, np.flatnonzero(key_sizes))
    if changed is None:
        labels, keys = eligible, group_keys
    else:
        empty_groups = group_keys[key_sizes[group_keys] == 0]
        labels, keys = linked_labels(
            pair_label, pair_key, eligible, changed, sets.union(stale, empty_groups)
        )
    sel = contains(labels, pair_label) & contains(keys, pair_key)
    pl, pk, common = pair_label[sel], pair_key[sel], pair_n[sel]
    rank = np.lexsort((pk, pl, -common))
    pl, pk, common = pl[rank], pk[rank], common[rank]
    taken = greedy_pairs(pl, pk)
    pl, pk, common = pl[taken], pk[taken], common[taken]
    union = np.asarray(community_sizes, np.int64)[pl] + key_sizes[pk] - common
    keep = ~contains(stale, pk) & (1.0 - common / np.maximum(union, 1) <= change_share)
    kept = dict(zip(pl[keep].tolist(), pk[keep].tolist(), strict=True))
    paired = dict(zip(pl.tolist(), pk.tolist(), strict=True))
    regenerate = [(label, paired.get(label)) for label in labels.tolist() if label not in kept]
    dropped = sets.difference(keys, pk[keep]).tolist()
    return CommunityMatch(kept, regenerate, dropped, int(labels.size))
