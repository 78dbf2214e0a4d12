"""``benchmarks/scale/scale.py interleaved``: two real indexes of the synthetic corpus, a child
process each, taking turns write by write; the ratio is that of the medians reported."""

from __future__ import annotations

import statistics

import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.engine.config import IndexConfig

pytestmark = pytest.mark.integration


def test_sizes_take_turns_and_the_ratio_is_that_of_the_medians(tmp_path):
    from benchmarks.scale import scale_interleaved, synthetic_corpus

    corpus = synthetic_corpus.SyntheticCorpus()
    sizes = []
    for chunks in (16, 40):
        path = tmp_path / f"ix-{chunks}"
        index = Index.create(
            path, IndexConfig(), embedder=HashingEmbedder(synthetic_corpus.DIM), llm=ExtractiveLLM()
        )
        n_docs = max(2, round(chunks / synthetic_corpus.CHUNKS_PER_DOC))
        index.insert([corpus.document(i) for i in range(n_docs)])
        sizes.append((path, chunks))
    loads = iter([0.5, 0.7])
    out = scale_interleaved.measure_interleaved(
        "benchmarks.scale.scale", sizes, 3, lambda: next(loads)
    )
    assert (out["rounds"], out["load1_start"], out["load1_end"]) == (3, 0.5, 0.7)
    small, large = out["sizes"]["16"], out["sizes"]["40"]
    for row in (small, large):
        for op in ("insert", "delete"):
            assert len(row[f"{op}_s"]) == 3 and min(row[f"{op}_s"]) > 0
            assert row[f"{op}_p50_s"] == round(statistics.median(row[f"{op}_s"]), 4)
            assert row[f"{op}_iqr_s"][0] <= row[f"{op}_p50_s"] <= row[f"{op}_iqr_s"][1]
            assert row[f"{op}_stages_p50_s"]["commit"] > 0
    for op in ("insert", "delete"):
        assert out["ratio"][op] == round(large[f"{op}_p50_s"] / small[f"{op}_p50_s"], 2)
    # Every round inserted and deleted one new document: each index holds what it held.
    for path, chunks in sizes:
        docs = Index.open(
            path, embedder=HashingEmbedder(synthetic_corpus.DIM)
        ).engine.state.snapshot.docs
        assert docs.num_rows == max(2, round(chunks / synthetic_corpus.CHUNKS_PER_DOC))
    table = "\n".join(scale_interleaved.markdown([{**out, "code": "test"}]))
    assert "| test | 3 | 16 / 40 |" in table and f"{out['ratio']['delete']}x (" in table


def test_a_child_that_cannot_open_its_index_is_reported(tmp_path, monkeypatch):
    """The second size's index is missing: the error names it, and the first size's child
    (started) is stopped, not left waiting for its turn."""
    from benchmarks.scale import scale_interleaved, synthetic_corpus

    path = tmp_path / "ix"
    index = Index.create(path, IndexConfig(), embedder=HashingEmbedder(synthetic_corpus.DIM))
    index.insert([synthetic_corpus.SyntheticCorpus().document(i) for i in range(3)])
    started = []
    start = scale_interleaved._start
    monkeypatch.setattr(
        scale_interleaved, "_start", lambda *a: started.append(start(*a)) or started[-1]
    )
    with pytest.raises(RuntimeError, match=r"none.*did not start"):
        scale_interleaved.measure_interleaved(
            "benchmarks.scale.scale", [(path, 16), (tmp_path / "none", 20)], 1, float
        )
    assert len(started) == 1 and started[0].poll() == 0  # told to quit, and it did


def test_the_ratio_interval_resamples_whole_rounds():
    import numpy as np

    from benchmarks.scale import scale_interleaved

    rng = np.random.default_rng(5)
    small = (0.15 + 0.03 * rng.random(60)).tolist()
    # Each round's larger write is exactly twice its smaller one: every resample says 2.
    assert scale_interleaved.ratio_interval(small, [2 * t for t in small]) == pytest.approx(
        (2.0, 2.0)
    )
    large = (0.30 + 0.08 * rng.random(60)).tolist()
    low, high = scale_interleaved.ratio_interval(small, large)
    point = float(np.median(large) / np.median(small))
    assert low < point < high
    assert (low, high) == scale_interleaved.ratio_interval(small, large)  # seeded
    wide = scale_interleaved.ratio_interval(small, large, level=0.99)
    assert wide[0] <= low and high <= wide[1]
    # Fewer rounds, a wider interval.
    few = scale_interleaved.ratio_interval(small[:10], large[:10])
    assert few[1] - few[0] > high - low
    with pytest.raises(ValueError, match="one time per round"):
        scale_interleaved.ratio_interval(small, large[:-1])
    with pytest.raises(ValueError, match="level"):
        scale_interleaved.ratio_interval(small, large, level=1.0)
