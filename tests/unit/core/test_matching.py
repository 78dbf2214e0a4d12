"""``core.matching`` (``greedy_pairs``, ``linked_labels``, ``label_sizes``) against plain-Python
oracles (random and edge inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core.matching import greedy_pairs, label_sizes, linked_labels


def _oracle(a: np.ndarray, b: np.ndarray) -> list[bool]:
    used_a: set[int] = set()
    used_b: set[int] = set()
    out = []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        take = x not in used_a and y not in used_b
        if take:
            used_a.add(x)
            used_b.add(y)
        out.append(take)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_greedy_pairs_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    span = int(rng.choice([3, 40, 10**12]))  # many repeats, few, sparse large values
    a = rng.integers(-span, span, n)
    b = rng.integers(-span, span, n)
    assert greedy_pairs(a, b).tolist() == _oracle(a, b)


def test_greedy_pairs_edge_cases():
    empty = np.zeros(0, np.int64)
    assert greedy_pairs(empty, empty).tolist() == []
    assert greedy_pairs(np.array([7]), np.array([7])).tolist() == [True]
    # Duplicate pairs: only the first is taken; equal values on both sides are unrelated.
    assert greedy_pairs(np.array([1, 1, 2]), np.array([1, 1, 1])).tolist() == [
        True,
        False,
        False,
    ]
    assert greedy_pairs(np.array([1, 2, 2]), np.array([5, 5, 6])).tolist() == [
        True,
        False,
        True,
    ]
    with pytest.raises(ValueError, match="differ in length"):
        greedy_pairs(np.array([1, 2]), np.array([1]))


def _linked_oracle(a, b, eligible, seed_a, seed_b):
    """The closure by sets, round by round (the NumPy version ``linked_labels`` replaced)."""
    eligible = set(eligible.tolist())
    pairs = [(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True) if y >= 0]
    labels = set(seed_a.tolist()) & eligible
    keys = set(seed_b.tolist()) | {y for x, y in pairs if x in set(seed_a.tolist())}
    while True:
        more = {x for x, y in pairs if y in keys} & eligible
        more_keys = {y for x, y in pairs if x in labels | more}
        if more <= labels and more_keys <= keys:
            return sorted(labels), sorted(keys)
        labels |= more
        keys |= more_keys


@pytest.mark.parametrize("seed", range(12))
def test_linked_labels_equals_the_oracle(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 200))
    n_a, n_b = int(rng.integers(1, 40)), int(rng.integers(1, 40))
    a = rng.integers(0, n_a, n)
    b = rng.integers(-1, n_b, n)  # -1: no second label
    eligible = rng.integers(0, n_a + 5, int(rng.integers(0, n_a + 1)))
    seed_a = rng.integers(0, n_a + 5, int(rng.integers(0, 4)))  # may name unused labels
    seed_b = rng.integers(0, n_b + 5, int(rng.integers(0, 3)))
    got_a, got_b = linked_labels(a, b, eligible, seed_a, seed_b)
    want_a, want_b = _linked_oracle(a, b, eligible, seed_a, seed_b)
    assert got_a.tolist() == want_a and got_b.tolist() == want_b
    assert got_a.dtype == np.int64 and got_b.dtype == np.int64


def test_linked_labels_edge_cases():
    empty = np.zeros(0, np.int64)
    got = linked_labels(empty, empty, empty, empty, empty)
    assert [x.tolist() for x in got] == [[], []]
    # Seeds without items are kept (a seed of b), or dropped when not eligible (a seed of a).
    got = linked_labels(empty, empty, np.asarray([2]), np.asarray([2, 3]), np.asarray([5]))
    assert [x.tolist() for x in got] == [[2], [5]]
    # One item: its labels are linked.
    got = linked_labels(np.asarray([0]), np.asarray([0]), np.asarray([0]), empty, np.asarray([0]))
    assert [x.tolist() for x in got] == [[0], [0]]
    # A chain a0-b0-a1-b1-a2 with a1 not eligible: it stops at b0 (a1 does not link on).
    a, b = np.asarray([0, 1, 1, 2]), np.asarray([0, 0, 1, 1])
    got = linked_labels(a, b, np.asarray([0, 2]), np.asarray([0]), empty)
    assert [x.tolist() for x in got] == [[0], [0]]
    # ... but a seed of a links its items' b even when not eligible; duplicates and a
    # disconnected part (a3-b3) change nothing.
    a, b = np.asarray([0, 1, 1, 2, 2, 3]), np.asarray([0, 0, 1, 1, 1, 3])
    got = linked_labels(a, b, np.asarray([0, 2, 2]), np.asarray([1, 1]), empty)
    assert [x.tolist() for x in got] == [[0, 2], [0, 1]]
    with pytest.raises(ValueError):
        linked_labels(np.asarray([0]), np.asarray([0, 1]), empty, empty, empty)
    with pytest.raises(ValueError):
        linked_labels(np.asarray([-1]), np.asarray([0]), empty, empty, empty)


def test_label_sizes():
    assert label_sizes(np.asarray([2, -1, 2, 0]), 4).tolist() == [1, 0, 2, 0]
    assert label_sizes(np.zeros(0, np.int64), 0).tolist() == []
    with pytest.raises(ValueError):
        label_sizes(np.asarray([3]), 3)
