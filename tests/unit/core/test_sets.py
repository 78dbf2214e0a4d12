"""``core.sets`` against NumPy's set functions (the oracle) on random and edge inputs."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core import sets

CASES = [
    (np.zeros(0, np.int64), np.zeros(0, np.int64)),
    (np.array([5], np.int64), np.zeros(0, np.int64)),
    (np.zeros(0, np.int64), np.array([5], np.int64)),
    (np.array([3, 3, 3], np.int64), np.array([3], np.int64)),
    (np.array([-1, 7, -1, 2], np.int64), np.array([2, 9, 9], np.int64)),
    (np.array([2**62, 1, 2**62], np.int64), np.array([1, 0], np.int64)),
    (np.array([4, 1], np.uint8), np.array([1, 200], np.uint8)),
]


def _random_cases():
    rng = np.random.default_rng(3)
    out = []
    for n, m, span in [(1, 1, 2), (50, 7, 10), (1000, 300, 400), (5000, 5000, 10**12)]:
        out.append((rng.integers(-span, span, n), rng.integers(-span, span, m)))
    # past sets._TABLE_UNIQUE_MIN and dense: unique marks a table over the span
    out.append((rng.integers(-900, 900, 3000), rng.integers(-900, 900, 2000)))
    out.append((rng.integers(0, 256, 5000).astype(np.uint8), np.arange(7, dtype=np.uint8)))
    out.append((rng.integers(10**6, 10**6 + 50, 4000).astype(np.int32), np.zeros(0, np.int32)))
    return out


@pytest.mark.parametrize("a,b", CASES + _random_cases())
def test_each_operation_equals_numpy(a, b):
    np.testing.assert_array_equal(sets.unique(a), np.unique(a, return_counts=True)[0])
    np.testing.assert_array_equal(sets.union(a, b), np.union1d(a, b))
    np.testing.assert_array_equal(sets.intersection(a, b), np.intersect1d(a, b))
    np.testing.assert_array_equal(sets.difference(a, b), np.setdiff1d(a, b))
    assert sets.unique(a).dtype == a.dtype


def test_unique_flattens_and_accepts_lists():
    np.testing.assert_array_equal(sets.unique(np.array([[3, 1], [1, 2]])), [1, 2, 3])
    np.testing.assert_array_equal(sets.unique([2, 2, 0]), [0, 2])
    np.testing.assert_array_equal(sets.union([1], [0, 1]), [0, 1])


def test_strings_sort_too():
    a = np.array(["b", "a", "b"])
    np.testing.assert_array_equal(sets.unique(a), ["a", "b"])
    np.testing.assert_array_equal(sets.difference(a, np.array(["a"])), ["b"])


@pytest.mark.parametrize("a,b", CASES + _random_cases())
def test_unique_with_inverse_and_first_equal_numpy(a, b):
    for values in (a, b, np.concatenate([a, b])):
        uniq, inverse = sets.unique_inverse(values)
        want, want_inverse = np.unique(values, return_inverse=True)
        np.testing.assert_array_equal(uniq, want)
        np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))
        assert inverse.dtype == np.int64 and uniq.dtype == values.dtype
        uniq, first = sets.unique_first(values)
        want, want_first = np.unique(values, return_index=True)
        np.testing.assert_array_equal(uniq, want)
        np.testing.assert_array_equal(first, want_first)


def test_unique_with_inverse_of_floats_sorts():
    uniq, inverse = sets.unique_inverse(np.array([0.5, -1.0, 0.5]))
    np.testing.assert_array_equal(uniq, [-1.0, 0.5])
    np.testing.assert_array_equal(inverse, [1, 0, 1])


def _mapping_changes_oracle(ids, values, pids, pvals):
    pos = np.minimum(np.searchsorted(pids, ids), max(pids.size - 1, 0))
    same = (pids[pos] == ids) & (pvals[pos] == values) if pids.size else np.zeros(ids.size, bool)
    return ~same, ~np.isin(pids, ids)


@pytest.mark.parametrize("seed", range(8))
def test_mapping_changes_equals_search_and_isin(seed):
    rng = np.random.default_rng(seed)
    universe = np.arange(int(rng.integers(1, 400)), dtype=np.int64)
    ids = np.sort(rng.choice(universe, int(rng.integers(0, universe.size + 1)), replace=False))
    pids = np.sort(rng.choice(universe, int(rng.integers(0, universe.size + 1)), replace=False))
    values = rng.integers(0, 3, ids.size).astype(np.int64)
    pvals = rng.integers(0, 3, pids.size).astype(np.int64)
    changed, gone = sets.mapping_changes(ids, values, pids, pvals)
    want_changed, want_gone = _mapping_changes_oracle(ids, values, pids, pvals)
    np.testing.assert_array_equal(changed, want_changed)
    np.testing.assert_array_equal(gone, want_gone)


def test_mapping_changes_edge_cases():
    none = np.zeros(0, np.int64)
    one = np.array([5], np.int64)
    assert sets.mapping_changes(none, none, none, none)[0].size == 0
    assert sets.mapping_changes(one, one, none, none)[0].tolist() == [True]
    assert sets.mapping_changes(none, none, one, one)[1].tolist() == [True]
    assert sets.mapping_changes(one, one, one, one)[0].tolist() == [False]
    assert sets.mapping_changes(one, one + 1, one, one)[0].tolist() == [True]
    # disjoint ranges, both sides
    a, b = np.array([1, 2], np.int64), np.array([3, 4], np.int64)
    changed, gone = sets.mapping_changes(a, a, b, b)
    assert changed.tolist() == [True, True] and gone.tolist() == [True, True]
