"""``core.matching.greedy_pairs`` against a plain-Python oracle (random and edge inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core.matching import greedy_pairs


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
