"""``benchmarks/scale/scale.py hnsw``: one real usearch index grown step by step per storage type;
every step inserted, searched, and reported in the table."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.integration


def test_each_step_is_inserted_and_measured_for_both_storage_types():
    from benchmarks.scale import scale_hnsw

    rng = np.random.default_rng(3)
    x = rng.standard_normal((650, 32)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    rows = scale_hnsw.run(x, step=200, n_queries=20, load1=lambda: 0.5)
    # 650 vectors in steps of 200: three whole steps, the 50 left over are not inserted.
    assert [r["vectors"] for r in rows] == [200, 400, 600]
    for r in rows:
        for dtype in scale_hnsw.DTYPES:
            assert r[f"{dtype}_us_per_vector"] > 0
            assert r[f"{dtype}_memory_bytes"] > 0
        assert r["distances_per_query"] > 0
    # The model scales the first step's cost by the growth of the distances computed.
    first = rows[0]
    assert first["log_model_us_per_vector"] == first["f16_us_per_vector"]
    growth = rows[-1]["distances_per_query"] / first["distances_per_query"]
    assert rows[-1]["log_model_us_per_vector"] == pytest.approx(
        first["f16_us_per_vector"] * growth, abs=0.1
    )
    table = scale_hnsw.markdown(rows)
    assert sum(line.startswith("| 600 |") for line in table) == 1
    assert scale_hnsw.markdown([]) == []
