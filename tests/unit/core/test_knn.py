"""core.knn: exact inner-product neighbours (oracle: brute force)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.core.knn import nearest_neighbours


def test_nearest_neighbours_equal_brute_force_and_skip_self():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((300, 16)).astype(np.float32)
    base /= np.linalg.norm(base, axis=1, keepdims=True)
    base_ids = np.arange(100, 400, dtype=np.int64)
    new = base[-40:]
    new_ids = base_ids[-40:]
    src, dst = nearest_neighbours(new, new_ids, base, base_ids, m=5, block_rows=7)
    assert src.size == 40 * 5 and not np.any(src == dst)
    sims = new @ base.T
    sims[np.arange(40), np.arange(260, 300)] = -np.inf
    want = np.argsort(-sims, axis=1)[:, :5]
    for i, node in enumerate(new_ids.tolist()):
        assert set(dst[src == node].tolist()) == set(base_ids[want[i]].tolist())
    empty = nearest_neighbours(new[:0], new_ids[:0], base, base_ids, m=5)
    assert empty[0].size == 0


@pytest.mark.parametrize("block_rows", [1, 3, 512])
def test_queries_outside_the_base_and_unsorted_base_ids(block_rows: int) -> None:
    rng = np.random.default_rng(1)
    base = rng.standard_normal((50, 8)).astype(np.float32)
    base_ids = rng.permutation(np.arange(1000, 1050)).astype(np.int64)
    queries = rng.standard_normal((9, 8)).astype(np.float32)
    query_ids = np.arange(9, dtype=np.int64)
    src, dst = nearest_neighbours(queries, query_ids, base, base_ids, m=4, block_rows=block_rows)
    assert src.dtype == np.int64 and dst.dtype == np.int64
    assert src.tolist() == np.repeat(query_ids, 4).tolist()  # grouped by query, in order
    want = np.argsort(-(queries @ base.T), axis=1)[:, :4]
    for i in range(9):
        assert set(dst[src == i].tolist()) == set(base_ids[want[i]].tolist())


def test_m_larger_than_the_base_returns_every_other_row():
    base = np.eye(4, dtype=np.float32)
    ids = np.asarray([7, 8, 9, 10], np.int64)
    src, dst = nearest_neighbours(base[:1], ids[:1], base, ids, m=10)
    assert sorted(dst.tolist()) == [8, 9, 10] and set(src.tolist()) == {7}


def test_empty_inputs_and_non_positive_m():
    base = np.ones((3, 2), np.float32)
    ids = np.arange(3, dtype=np.int64)
    for q, qi, b, bi, m in [
        (base[:0], ids[:0], base, ids, 3),
        (base, ids, base[:0], ids[:0], 3),
        (base, ids, base, ids, 0),
        (base, ids, base, ids, -1),
    ]:
        src, dst = nearest_neighbours(q, qi, b, bi, m)
        assert src.shape == dst.shape == (0,) and src.dtype == np.int64


def test_one_point_that_is_its_own_base_has_no_neighbour():
    x = np.ones((1, 3), np.float32)
    src, dst = nearest_neighbours(x, np.asarray([5]), x, np.asarray([5]), m=2)
    assert src.size == dst.size == 0


def test_duplicate_vectors_under_other_ids_are_neighbours():
    x = np.repeat(np.asarray([[0.6, 0.8]], np.float32), 4, axis=0)
    ids = np.asarray([1, 2, 3, 4], np.int64)
    src, dst = nearest_neighbours(x, ids, x, ids, m=3)
    for node in ids.tolist():
        assert sorted(dst[src == node].tolist()) == sorted(set(ids.tolist()) - {node})
