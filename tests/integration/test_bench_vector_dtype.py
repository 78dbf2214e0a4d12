"""``benchmarks/scale/vector_dtype.py``: every contender is measured on the same held-out queries,
recall is counted against the exact float32 top k, and the report lists them all."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.integration


def test_contenders_are_scored_against_the_exact_top_k(tmp_path, monkeypatch):
    from benchmarks.scale import vector_dtype

    rng = np.random.default_rng(3)
    x = rng.standard_normal((900, 48)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    rows = vector_dtype.measure_set("gauss", x, n_queries=20, rounds=1)
    by = {r["contender"]: r for r in rows}
    assert set(by) == {
        "HNSW f32 ef 128",
        "HNSW f16 ef 128",
        "HNSW f16 ef 96",
        "HNSW f16 ef 64",
        "HNSW i8 ef 128",
        "exact f32 scan",
    }
    assert all(r["vectors"] == 880 for r in rows)
    assert by["exact f32 scan"]["recall"] == 1.0
    # 880 vectors at ef 128: the graph search is all but exhaustive for f32 and f16.
    assert by["HNSW f32 ef 128"]["recall"] >= 0.95 and by["HNSW f16 ef 128"]["recall"] >= 0.95
    assert by["HNSW f16 ef 128"]["bytes"] < by["HNSW f32 ef 128"]["bytes"]
    # one float16 index, searched at each expansion: built once
    f16 = [by[f"HNSW f16 ef {ef}"] for ef in (64, 96, 128)]
    assert len({(r["bytes"], r["build_ms_per_vector"]) for r in f16}) == 1
    # exact_top is the first k of a full sort by descending inner product.
    top = vector_dtype.exact_top(x[20:], x[:3], 5)
    sims = x[:3] @ x[20:].T
    np.testing.assert_array_equal(top, np.argsort(-sims, axis=1, kind="stable")[:, :5])

    monkeypatch.setattr(vector_dtype, "RESULTS", tmp_path)
    vector_dtype.write_report(
        {"command": "c", "code": "x", "date": "d", "queries": 20, "rounds": 1, "rows": rows}
    )
    table = (tmp_path / "vector_dtype.md").read_text()
    assert table.count("| gauss | 880 |") == 6
