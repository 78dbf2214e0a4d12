"""``benchmarks/quality/approximations.py``: each variant's settings reach the index it builds, the
semantic edges of two real indexes are compared as unordered pairs, and the table scores
every variant against the exact run."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.bindings.embed.models import HashingEmbedder

pytestmark = pytest.mark.integration


def _docs(n: int) -> list[dict]:
    from benchmarks.scale.synthetic_corpus import SyntheticCorpus

    corpus = SyntheticCorpus()
    return [corpus.document(i) for i in range(n)]


def test_variants_build_with_their_settings_and_share_their_edges(tmp_path):
    from benchmarks.quality import approximations

    docs = _docs(12)
    built = {}
    for name in ("local, approximate", "local, exact"):
        local, exact_below = approximations.VARIANTS[name]
        index, info = approximations.build_incrementally(
            tmp_path / name.replace(", ", "-"),
            docs,
            local,
            exact_below,
            0.5,
            3,
            HashingEmbedder(64),
        )
        cfg = index.engine.config.heterograph
        assert (cfg.local_leiden, cfg.semantic_exact_below) == (local, exact_below)
        assert info["inserts"] == 3 and info["semantic_edges_s"] >= 0.0
        built[name] = approximations.semantic_pairs(index)
    approx, exact = built["local, approximate"], built["local, exact"]
    assert exact.size and np.all(np.diff(exact) > 0)  # distinct unordered pairs, sorted
    share = approximations._shared_share(approx, exact)
    assert share == round(float(np.isin(exact, approx).mean()), 4)
    assert approximations._shared_share(exact, exact) == 1.0


def test_pairs_are_unordered_and_the_share_counts_the_exact_runs_pairs():
    from benchmarks.quality import approximations

    class Edges:
        def __init__(self, src, dst):
            self.pair = (np.asarray(src, np.int64), np.asarray(dst, np.int64))

        def kind_edges(self, kind):
            return self.pair

    class Fake:
        def __init__(self, src, dst):
            snapshot = type("S", (), {"edge_table": Edges(src, dst)})()
            self.engine = type("E", (), {"state": type("T", (), {"snapshot": snapshot})()})()

    a = approximations.semantic_pairs(Fake([1, 2, 5], [2, 1, 3]))  # 1-2 twice, 3-5 once
    b = approximations.semantic_pairs(Fake([2, 7], [1, 8]))
    assert a.tolist() == [(1 << 32) | 2, (3 << 32) | 5]
    assert approximations._shared_share(b, a) == 0.5  # of a's two pairs, b has 1-2
    assert approximations._shared_share(a, np.zeros(0, np.int64)) == 1.0


def test_the_table_scores_each_variant_against_the_exact_run():
    from benchmarks.quality import approximations

    def variant(fact, doc):
        return {
            "recall": {
                "graph": {"fact_recall_text": fact, "doc_recall": doc},
                "naive": {"fact_recall_text": 0.3, "doc_recall": 0.5},
            },
            "leiden": {
                "modularity_local": 0.8,
                "communities_local": 10,
                "modularity_full_from_scratch": 0.81,
                "communities_full_from_scratch": 9,
            },
            "communities_s": 1.0,
            "semantic_edges_s": 2.0,
            "insert_s": 3.0,
        }

    run = {"dataset": "set", "first": 0.9, "steps": 10}
    run["local, approximate"] = variant(0.594, 0.70)  # 0.6 point below on fact recall
    run["local, exact"] = variant(0.600, 0.704)
    run["whole, approximate"] = variant(0.600, 0.70)
    run["whole, exact"] = variant(0.600, 0.70)
    run["local, approximate"]["semantic_edge_recall"] = 0.99
    text = approximations.markdown([run], "cmd", "1 / 1 / 1")
    assert "| set (0.9, 10) | local, approximate | 0.594 (-0.6) | 0.700 (+0.0) |" in text
    assert "0.99 |" in text
    assert "set local, approximate: worst -0.6 points (outside the tolerance)" in text
    assert "set local, exact: worst +0.0 points (within the tolerance)" in text
