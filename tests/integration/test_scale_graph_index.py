"""``benchmarks/scale/scale.py graph-index``: a real base made each way per size, its recall
measured against the exact top 10, and the table written."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.vectors import clustered

pytestmark = pytest.mark.integration


def test_each_way_is_made_timed_and_measured():
    from benchmarks.scale import scale_graph_index

    x = clustered(np.random.default_rng(4), 5000, 24, 20)
    rows = scale_graph_index.run(x, [4000, 2000], n_queries=50, load1=lambda: 0.5)
    assert [r["vectors"] for r in rows] == [2000, 4000]
    for r in rows:
        assert r["queries"] == 50 and r["exact_us_per_query"] > 0
        for way in scale_graph_index.WAYS:
            m = r[way]
            assert m["wall_s"] >= 0 and m["cpu_s"] >= 0
            assert 0.9 <= m["recall"] <= 1.0  # a clustered 24-d set: every way finds them
            assert m["distances"] > 0 and m["search_us"] > 0
    table = scale_graph_index.markdown(rows)
    assert sum(line.startswith("| 4000 |") for line in table) == 1
    assert scale_graph_index.markdown([]) == []
