"""core.sampling: bottom-k samples by seeded hash (oracle: a full sort of the hashes)."""

from __future__ import annotations

import numpy as np

from graphstrata.core.sampling import consistent_sample, splitmix64


def test_consistent_sample_is_stable_when_nodes_are_added():
    ids = np.arange(1000, 3000, dtype=np.int64)
    picked = set(ids[consistent_sample(ids, 10, seed=7)].tolist())
    grown = np.concatenate([ids, np.arange(5000, 5020, dtype=np.int64)])
    again = set(grown[consistent_sample(grown, 10, seed=7)].tolist())
    assert len(picked) == 10 and len(picked & again) >= 9
    assert picked != set(ids[consistent_sample(ids, 10, seed=8)].tolist())
    assert consistent_sample(ids[:4], 10, seed=7).tolist() == [0, 1, 2, 3]


def test_sample_is_the_k_smallest_hashes_in_position_order():
    rng = np.random.default_rng(0)
    ids = rng.choice(10**9, 500, replace=False).astype(np.int64)
    got = consistent_sample(ids, 25, seed=3)
    want = np.sort(np.argsort(splitmix64(ids, 3), kind="stable")[:25])
    assert got.dtype == np.int64 and got.tolist() == want.tolist()


def test_hash_is_deterministic_and_mixes():
    ids = np.arange(1000, dtype=np.int64)
    h = splitmix64(ids, 1)
    assert h.dtype == np.uint64 and np.array_equal(h, splitmix64(ids, 1))
    assert np.unique(h).size == ids.size
    assert not np.array_equal(h, splitmix64(ids, 2))


def test_empty_and_one_id():
    assert consistent_sample(np.zeros(0, np.int64), 3, seed=0).tolist() == []
    assert consistent_sample(np.asarray([42], np.int64), 1, seed=0).tolist() == [0]
    assert consistent_sample(np.asarray([42, 43], np.int64), 0, seed=0).tolist() == []
