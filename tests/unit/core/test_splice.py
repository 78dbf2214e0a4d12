"""``core.splice`` against NumPy's delete and insert (the oracle), on random inputs and
edge cases (empty, one element, everything dropped, insertions at both ends)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core.splice import splice_positions, spliced


def _oracle(old, drop, at, values):
    kept = np.delete(old, drop)
    out = np.empty(kept.size + len(values), old.dtype)
    mask = np.zeros(out.size, bool)
    mask[at] = True
    out[mask] = values
    out[~mask] = kept
    return out


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("dtype", [np.int64, np.uint8, np.int32, np.float64])
def test_spliced_equals_delete_and_insert(seed, dtype):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 80))
    old = rng.integers(0, 100, n).astype(dtype)  # duplicates allowed: positions matter
    drop = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False))
    k = int(rng.integers(0, 30))
    at = np.sort(rng.choice(n - drop.size + k, k, replace=False))
    values = rng.integers(0, 100, k).astype(dtype)
    got = spliced(old, drop, at, values)
    assert got.dtype == old.dtype
    np.testing.assert_array_equal(got, _oracle(old, drop, at, values))


@pytest.mark.parametrize("seed", range(10))
def test_splice_positions_merge_sorted_ids(seed):
    rng = np.random.default_rng(100 + seed)
    ids = np.unique(rng.integers(0, 300, int(rng.integers(0, 100))))
    pool = np.concatenate([ids, rng.integers(-10, 400, 5)])  # some leaving ids are absent
    leaving = np.unique(rng.choice(pool, int(rng.integers(0, 20)))) if pool.size else pool
    kept = np.setdiff1d(ids, leaving)
    arriving = np.setdiff1d(np.unique(rng.integers(-10, 400, int(rng.integers(0, 20)))), kept)
    drop, at = splice_positions(ids, leaving, arriving)
    np.testing.assert_array_equal(spliced(ids, drop, at, arriving), np.union1d(kept, arriving))


def test_edge_cases():
    none = np.zeros(0, np.int64)
    assert spliced(none, none, none, none).tolist() == []
    assert spliced(none, none, np.asarray([0]), np.asarray([7])).tolist() == [7]
    one = np.asarray([5])
    assert spliced(one, np.asarray([0]), none, none).tolist() == []
    assert spliced(one, none, np.asarray([0, 2]), np.asarray([1, 9])).tolist() == [1, 5, 9]
    # Everything dropped and replaced; a replaced id (dropped and inserted again).
    ids = np.asarray([1, 2, 3])
    assert spliced(ids, np.asarray([0, 1, 2]), np.asarray([0]), np.asarray([4])).tolist() == [4]
    drop, at = splice_positions(ids, np.asarray([2]), np.asarray([2]))
    assert spliced(ids, drop, at, np.asarray([2])).tolist() == [1, 2, 3]
    for bad in ([1, 0], [0, 0], [3], [-1]):
        with pytest.raises(ValueError):
            spliced(ids, np.asarray(bad), none, none)
    with pytest.raises(ValueError):
        spliced(ids, none, np.asarray([0]), none)
    with pytest.raises(ValueError):
        spliced(ids, none, np.asarray([4]), np.asarray([0]))
