"""``benchmarks/scale/scale.py remake``: a real base copied, read out and made anew per kind, the
made base holding exactly the live vectors, and the table written."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.engine.store.tables import VectorSegment, VectorTable
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex
from tests.helpers.maintenance import maintenance
from tests.helpers.vectors import clustered

pytestmark = pytest.mark.integration


def test_each_hnsw_kind_is_copied_and_made_anew_with_its_live_vectors(monkeypatch):
    from benchmarks.scale import scale_remake

    policy = maintenance(vector_exact_below=500)
    rng = np.random.default_rng(2)
    n = 1500
    ids = np.arange(1, n + 1, dtype=np.int64)
    kinds = np.where(ids <= 1200, int(NodeKind.S), int(NodeKind.T)).astype(np.uint8)
    table = VectorTable(24, [VectorSegment(ids, kinds, clustered(rng, n, 24, 10), 1)], ids)
    vi = VectorIndex.build(table, maintenance=policy)
    vi = vi.updated(ids[:0], kinds[:0], np.zeros((0, 24), np.float32), ids[:40], 2)
    assert vi.removed[int(NodeKind.S)].size == 40  # dead, still in the base
    rows = scale_remake.run(vi, max_vectors=1250, load1=lambda: 0.5)
    assert [r["kind"] for r in rows] == ["S"]  # T below vector_exact_below
    row = rows[0]
    assert row["vectors"] == 1200 and row["removal_limit"] == 150
    assert row["copy_s"] >= 0 and row["read_s"] >= 0 and row["remade_wall_s"] >= 0
    assert row["ms_per_dead"] == round(1000 * row["remade_wall_s"] / 150, 2)
    table_md = scale_remake.markdown([{"index": "all 10000", **row}])
    assert sum(line.startswith("| all 10000 | S | 1200 | 150 |") for line in table_md) == 1
    assert scale_remake.markdown([]) == []
