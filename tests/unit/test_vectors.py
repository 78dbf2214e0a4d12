"""``VectorIndex``: two builds of the same vectors answer every query the same way."""

from __future__ import annotations

import numpy as np

from graphstrata.engine.store.tables import VectorSegment, VectorTable
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import EXACT_BELOW, VectorIndex


def _table(n: int, dim: int = 32, seed: int = 0) -> VectorTable:
    rng = np.random.default_rng(seed)
    mat = rng.standard_normal((n, dim)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    ids = np.arange(1, n + 1, dtype=np.int64)
    kinds = np.full(n, int(NodeKind.S), np.uint8)
    return VectorTable(dim, [VectorSegment(ids, kinds, mat, 1)], ids)


def test_two_builds_above_the_exact_threshold_answer_alike():
    # HNSW above EXACT_BELOW: a multi-threaded insert links the graph in a varying order.
    table = _table(EXACT_BELOW + 2000)
    queries = np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32)
    first = VectorIndex.build(table).search(queries, [int(NodeKind.S)], 10)
    second = VectorIndex.build(table).search(queries, [int(NodeKind.S)], 10)
    for a, b in zip(first[0], second[0], strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(first[1], second[1], strict=True):
        np.testing.assert_array_equal(a, b)
