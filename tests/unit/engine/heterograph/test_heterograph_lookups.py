"""``heterograph.lookups`` against the dicts the write path used to build (the oracles)."""

import numpy as np
import pytest

from graphstrata.engine.heterograph.build.lookups import (
    MentionTable,
    RelationPairs,
    mention_keys,
)


def edges_at_of(src, dst):
    """The entity -> relationship edges at given ends, filtered from edge arrays (what
    ``Work.snap_edges.at`` gives the engine)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)

    def at(ids, end):
        sel = np.isin((src, dst)[end], ids)
        return src[sel], dst[sel]

    return at


def _pairs_oracle(src, dst):
    endpoints: dict[int, list[int]] = {}
    for n, r in zip(src.tolist(), dst.tolist(), strict=True):
        endpoints.setdefault(r, []).append(n)
    out = {}
    for r, ends in sorted(endpoints.items()):
        if len(ends) == 2:
            out[tuple(sorted(ends))] = r
    return out


@pytest.mark.parametrize("seed", range(5))
def test_relation_pairs_equal_the_dict(seed):
    rng = np.random.default_rng(seed)
    n_rel = int(rng.integers(0, 60))
    ends = rng.integers(1, 4, n_rel)  # relationships with 1, 2 or 3 endpoints
    dst = np.repeat(np.arange(1000, 1000 + n_rel), ends)
    src = rng.integers(0, 40, dst.size)  # repeated endpoints and shared pairs included
    perm = rng.permutation(dst.size)
    src, dst = src[perm], dst[perm]
    oracle = _pairs_oracle(src, dst)
    table = RelationPairs(edges_at_of(src, dst))
    for a in range(41):
        for b in range(a, 41):
            assert table.get((a, b)) == oracle.get((a, b)), (a, b)
    table[(3, 5000)] = 7
    assert table.get((3, 5000)) == 7
    # Prefetched for some entities first (as a write does), then asked about every pair:
    # the same answers; an entity above every committed endpoint has none.
    table = RelationPairs(edges_at_of(src, dst))
    table.prefetch(rng.choice(41, 5))
    for a in range(41):
        for b in range(a, 41):
            assert table.get((a, b)) == oracle.get((a, b)), (a, b)
    assert table.get((3, 10**6)) is None


def test_relation_pairs_empty():
    empty = np.zeros(0, np.int64)
    assert RelationPairs(edges_at_of(empty, empty)).get((0, 1)) is None


def test_mention_table_reads_pops_and_writes_back():
    units = np.asarray([10, 11, 12, 13, 14])
    rels = np.asarray([7, 5, 7, 9, 5])
    hashes = np.asarray([1, 2, 3, 4, 5])
    table = MentionTable(units, rels, hashes)
    assert table.get(7) == [(10, 1), (12, 3)]
    assert table.get(8) is None and table.get(8, []) == []
    assert table.pop(5, []) == [(11, 2), (14, 5)]
    assert table.get(5) is None and table.pop(5, []) == []
    table[9] = [(20, 6)]
    table[6] = [(21, 8), (22, 9)]
    alive = lambda rids: rids != 7  # noqa: E731 (relationship 7 died in the operation)
    rows = {tuple(r) for r in table.arrays(alive).tolist()}
    assert rows == {(20, 9, 6), (21, 6, 8), (22, 6, 9)}
    empty = MentionTable(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert empty.arrays(alive).shape == (0, 3) and empty.pop(1, []) == []


def test_mention_keys_round_trip_through_the_node_state_mappings():
    # Rows of a relationship in any order, a unit asserting two lines of one relationship.
    units = np.asarray([10, 11, 12, 13, 14, 10])
    rels = np.asarray([7, 5, 7, 9, 5, 7])
    hashes = np.asarray([1, 2, 3, 4, 5, 6])
    keys = mention_keys(rels)
    assert np.unique(keys).size == keys.size and (keys < 0).all()
    # As a node-state mapping stores them: sorted by key.
    order = np.argsort(keys)
    table = MentionTable.of_keys(keys[order], units[order], hashes[order])
    assert table.get(7) == [(10, 1), (12, 3), (10, 6)]
    assert table.get(5) == [(11, 2), (14, 5)] and table.get(9) == [(13, 4)]
    # A relationship whose rows stay keeps its keys when another one's change.
    again = mention_keys(np.asarray([7, 5, 7, 9, 7, 5, 8]))
    assert set(again[[0, 2, 4]].tolist()) == set(keys[[0, 2, 5]].tolist())
    assert mention_keys(np.zeros(0, np.int64)).size == 0
    with pytest.raises(ValueError, match="mention keys"):
        mention_keys(np.asarray([1 << 40]))
