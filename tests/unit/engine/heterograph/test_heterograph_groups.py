"""Community labels and element groups: ``stable_labels`` and ``match_pairs`` (through per-node labels)
against plain-Python oracles (the implementations they replaced), whole and restricted."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core.communities import stable_labels
from graphstrata.core.matching import label_sizes, linked_labels
from graphstrata.engine.heterograph.build.groups import match_pairs, pairs_of


def match_communities(membership, group_of, *args, **kwargs):
    """``match_pairs`` of per-node labels and groups: one of each per G2 node."""
    membership = np.asarray(membership, np.int64)
    sizes = label_sizes(membership, int(membership.max()) + 1 if membership.size else 0)
    return match_pairs(pairs_of(membership, group_of), sizes, *args, **kwargs)


def _stable_oracle(membership: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """stable_labels as first written: dicts and sets over every pair."""
    pairs: dict[tuple[int, int], int] = {}
    for c, old in zip(membership.tolist(), previous.tolist(), strict=True):
        pairs[(c, old)] = pairs.get((c, old), 0) + 1
    new_of: dict[int, int] = {}
    taken: set[int] = set()
    for (c, old), _ in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1])):
        if c not in new_of and old not in taken:
            new_of[c] = old
            taken.add(old)
    fresh = int(previous.max()) + 1
    for c in sorted(set(membership.tolist())):
        if c not in new_of:
            new_of[c] = fresh
            fresh += 1
    return np.asarray([new_of[c] for c in membership.tolist()], np.int64)


@pytest.mark.parametrize("seed", range(8))
def test_stable_labels_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 200))
    membership = rng.integers(0, int(rng.integers(1, 30)), n)
    previous = rng.integers(0, int(rng.integers(1, 30)), n)
    assert (
        stable_labels(membership, previous).tolist()
        == _stable_oracle(membership, previous).tolist()
    )


def test_stable_labels_of_whole_previous_communities_alone_equal_those_of_all():
    # leiden_local relabels only the nodes it moved, which are whole previous
    # communities: with the whole partition's first fresh label, that equals relabelling
    # every node (the others keep their labels).
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = 120
        previous = rng.integers(0, 25, n)
        moved_labels = rng.choice(25, size=int(rng.integers(0, 25)), replace=False)
        moved = np.isin(previous, moved_labels)
        membership = previous.copy()
        membership[moved] = 100 + rng.integers(0, 12, int(moved.sum()))
        part = previous.copy()
        if moved.any():
            part[moved] = stable_labels(
                membership[moved], previous[moved], first_fresh=int(previous.max()) + 1
            )
        assert part.tolist() == stable_labels(membership, previous).tolist()
    assert stable_labels(np.zeros(0, np.int64), np.zeros(0, np.int64)).size == 0


def _match_oracle(membership, group_of, eligible, group_keys, change_share, stale=()):
    """match_communities as first written: Python dicts over every community and group."""
    members: dict[int, list[int]] = {}
    for node, c in enumerate(membership.tolist()):
        if c in set(eligible.tolist()):
            members.setdefault(c, []).append(node)
    groups: dict[int, list[int]] = {int(k): [] for k in group_keys.tolist()}
    for node, k in enumerate(group_of.tolist()):
        if k >= 0:
            groups.setdefault(k, []).append(node)
    overlaps: dict[tuple[int, int], int] = {}
    for c, nodes in members.items():
        for node in nodes:
            k = int(group_of[node])
            if k >= 0:
                overlaps[(c, k)] = overlaps.get((c, k), 0) + 1
    kept, paired, used = {}, {}, set()
    for (c, k), common in sorted(overlaps.items(), key=lambda kv: (-kv[1], kv[0])):
        if c in paired or k in used:
            continue
        paired[c] = k
        used.add(k)
        union = len(members[c]) + len(groups[k]) - common
        if k not in stale and 1.0 - common / max(union, 1) <= change_share:
            kept[c] = k
    regenerate = [(c, paired.get(c)) for c in sorted(members) if c not in kept]
    return kept, regenerate, sorted(set(groups) - set(kept.values()))


def _random_state(rng):
    n = int(rng.integers(0, 150))
    membership = rng.integers(0, 20, n)
    # Groups mostly follow the communities, with drift; some nodes in none.
    group_of = np.where(rng.random(n) < 0.8, membership + 100, rng.integers(95, 125, n))
    group_of[rng.random(n) < 0.2] = -1
    member_keys = np.unique(group_of[group_of >= 0])
    # Some groups have elements but no member left.
    group_keys = np.union1d(member_keys, rng.integers(130, 140, int(rng.integers(0, 3))))
    labels, counts = np.unique(membership, return_counts=True)
    eligible = labels[counts >= 3]
    return membership, group_of, eligible, group_keys


def test_match_communities_keeps_small_changes_and_regenerates_large_ones():
    # Nodes 0-9 in group 0, 10-19 in group 1, 20-24 in group 2.
    group_of = np.concatenate([np.zeros(10), np.ones(10), np.full(5, 2), np.full(6, -1)])
    membership = np.full(31, 5)  # nodes 15-24: a community without elements
    membership[:11] = 7  # group 0 plus one joined: Jaccard distance 1/11 -> kept
    membership[11:15] = 8  # most of group 1 left: regenerated, replacing group 1
    membership[25:] = 9  # new
    eligible = np.asarray([7, 8, 9])
    match = match_communities(membership, group_of, eligible, np.arange(3), 0.2)
    assert match.kept == {7: 0}
    assert match.regenerate == [(8, 1), (9, None)]
    assert match.dropped == [1, 2]
    assert match.matched == 3


@pytest.mark.parametrize("seed", range(10))
def test_match_communities_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    membership, group_of, eligible, keys = _random_state(rng)
    stale = rng.choice(keys, size=min(keys.size, int(rng.integers(0, 3))), replace=False)
    match = match_communities(membership, group_of, eligible, keys, 0.4, stale=stale)
    expected = _match_oracle(membership, group_of, eligible, keys, 0.4, set(stale.tolist()))
    assert (match.kept, match.regenerate, match.dropped) == expected


@pytest.mark.parametrize("seed", range(10))
def test_a_match_restricted_to_the_changed_communities_equals_the_whole_one_there(seed):
    # The greedy pairing decides each part connected by shared members on its own, so
    # pairing only the closure of the changed communities gives what pairing everything
    # gives those communities and groups.
    rng = np.random.default_rng(100 + seed)
    membership, group_of, eligible, keys = _random_state(rng)
    changed = np.unique(rng.choice(membership, size=min(membership.size, 3)))
    empty_groups = np.setdiff1d(keys, group_of[group_of >= 0])
    labels, closure_keys = linked_labels(membership, group_of, eligible, changed, empty_groups)
    match = match_communities(membership, group_of, eligible, keys, 0.4, changed=changed)
    kept, regenerate, dropped = _match_oracle(membership, group_of, eligible, keys, 0.4)
    in_labels, in_keys = set(labels.tolist()), set(closure_keys.tolist())
    assert match.kept == {c: k for c, k in kept.items() if c in in_labels}
    assert match.regenerate == [(c, k) for c, k in regenerate if c in in_labels]
    assert match.dropped == [k for k in dropped if k in in_keys]
    assert match.matched == len(in_labels)
    # The closure: every group of a member of its communities is in it, and every
    # eligible community of a member of its groups.
    of_labels = np.isin(membership, labels)
    assert set(group_of[of_labels & (group_of >= 0)].tolist()) <= in_keys
    of_keys = np.isin(group_of, closure_keys)
    assert set(membership[of_keys].tolist()) & set(eligible.tolist()) <= in_labels
    assert set(np.intersect1d(changed, eligible).tolist()) <= in_labels
    assert set(empty_groups.tolist()) <= in_keys


def test_match_communities_edge_cases():
    empty = np.zeros(0, np.int64)
    match = match_communities(empty, empty, empty, empty, 0.2)
    assert (match.kept, match.regenerate, match.dropped, match.matched) == ({}, [], [], 0)
    # One node, one community below the size to have elements, one group: dropped.
    match = match_communities(np.asarray([4]), np.asarray([9]), empty, np.asarray([9]), 0.2)
    assert (match.kept, match.regenerate, match.dropped) == ({}, [], [9])
    # One community of three nodes, all in group 3.
    one = (np.asarray([1, 1, 1]), np.asarray([3, 3, 3]), np.asarray([1]), np.asarray([3]), 0.2)
    # Nothing changed: nothing is paired.
    match = match_communities(*one, changed=empty)
    assert (match.kept, match.regenerate, match.dropped, match.matched) == ({}, [], [], 0)
    # A stale group is regenerated even where nothing else changed.
    match = match_communities(*one, stale=np.asarray([3]), changed=empty)
    assert (match.kept, match.regenerate, match.dropped) == ({}, [(1, 3)], [3])


@pytest.mark.parametrize("seed", range(6))
def test_weighted_stable_labels_equal_those_of_the_entries_repeated(seed):
    # leiden_local relabels contracted nodes, each weighted by the nodes it stands for.
    rng = np.random.default_rng(40 + seed)
    n = int(rng.integers(1, 60))
    membership = rng.integers(0, 12, n)
    previous = rng.integers(0, 12, n)
    weights = rng.integers(1, 6, n)
    got = stable_labels(membership, previous, 50, weights)
    want = stable_labels(np.repeat(membership, weights), np.repeat(previous, weights), 50)
    assert np.repeat(got, weights).tolist() == want.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_pairs_moved_node_by_node_equal_the_pairs_counted_again(seed):
    """The pair table after nodes change community or group, some deleted, some new
    (no group yet), equals the table counted from the nodes afterwards."""
    from graphstrata.engine.heterograph.build.groups import moved_pairs, pairs_of

    rng = np.random.default_rng(seed)
    n = 300
    labels = rng.integers(0, 12, n)
    groups = np.where(rng.random(n) < 0.8, rng.integers(0, 6, n), -1)
    before = pairs_of(labels, groups)
    dead = rng.random(n) < 0.05
    moved = ~dead & (rng.random(n) < 0.2)
    new_labels = np.where(moved, rng.integers(0, 14, n), labels)
    new_groups = np.where(moved & (rng.random(n) < 0.5), rng.integers(-1, 8, n), groups)
    out = moved | dead
    after = moved_pairs(
        before,
        labels[out],
        groups[out],
        new_labels[moved],
        new_groups[moved],
    )
    extra = moved_pairs(after, [], [], [3, 3], [-1, 7])  # two new nodes, one with a group
    want = pairs_of(
        np.concatenate([new_labels[~dead], [3, 3]]), np.concatenate([new_groups[~dead], [-1, 7]])
    )
    for a, b in zip(extra, want, strict=True):
        np.testing.assert_array_equal(a, b)
    assert (after[2] > 0).all()
    with pytest.raises(ValueError, match="did not hold it"):
        moved_pairs(before, [99], [0], [], [])
    empty = pairs_of(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert all(a.size == 0 for a in moved_pairs(empty, [], [], [], []))
