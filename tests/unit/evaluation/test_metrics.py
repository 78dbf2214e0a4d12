"""Evidence-token recall, rank measures and paired bootstrap intervals on hand-computed
cases (``evaluate(..., baseline=)`` on the sample corpus: test_evaluation.py)."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.engine.component import Hit
from graphstrata.evaluation import (
    ChunkMap,
    QAItem,
    aggregate,
    compare_modes,
    evidence_token_recall,
    paired_bootstrap,
    rank_scores,
)


def hit(id: int, text: str) -> Hit:
    return Hit(id=id, kind="T", layer=0, text=text, score=1.0, tokens=5, docs=[])


def item(facts=(), docs=()) -> QAItem:
    return QAItem(id="q", question="?", gold_doc_ids=tuple(docs), gold_facts=tuple(facts))


def test_evidence_recall_counts_content_word_stems_across_nodes():
    # Content words of the fact: asaph, hall, work(ed), carpent(er), peter, bogart -> 6 stems
    # ("for" and "a" are stop words). The context holds asaph, hall, carpenters, bogart,
    # spread over two nodes: 4 of 6.
    fact = "Asaph Hall worked for Peter Bogart as a carpenter."
    hits = [hit(1, "Young Asaph Hall was among the carpenters"), hit(2, "of Mr. Bogart.")]
    assert evidence_token_recall(hits, [fact]) == pytest.approx(4 / 6)
    # Two facts: the mean of their shares (the second, "Plymouth Hollow", is not there).
    assert evidence_token_recall(hits, [fact, "Plymouth Hollow"]) == pytest.approx(
        (4 / 6 + 0.0) / 2
    )
    # Duplicates count once; a fact of stop words only is left out; no fact -> None.
    assert evidence_token_recall(hits, [fact, fact, "of the"]) == pytest.approx(4 / 6)
    assert evidence_token_recall(hits, []) is None
    assert evidence_token_recall(hits, ["to be or not"]) is None
    assert evidence_token_recall([], [fact]) == 0.0


# Documents: a (chunks 1, 2), b (chunk 3), c (chunk 4). Fact "alpha beta" is in chunk 1,
# "gamma delta" in chunk 3.
CHUNKS = {
    "a": [(1, "alpha beta here."), (2, "nothing at all.")],
    "b": [(3, "gamma delta there.")],
    "c": [(4, "other text.")],
}


def test_rank_scores_by_hand():
    chunk_map = ChunkMap(CHUNKS)
    q = item(facts=["alpha beta", "gamma delta"], docs=["a", "b"])
    # 99 is a summary (no chunk): it takes no place among the chunks.
    out = rank_scores([4, 99, 2, 3, 1], q, chunk_map)
    # chunks in order: 4, 2, 3, 1 -> top-2 {4, 2}: no fact, doc a; top-5: both facts, a, b
    assert out["passage_recall@2"] == 0.0 and out["hits@2"] == 0.0
    assert out["doc_recall@2"] == 0.5
    assert out["passage_recall@5"] == 1.0 and out["hits@5"] == 1.0
    assert out["doc_recall@5"] == 1.0 and out["doc_recall@10"] == 1.0
    assert out["mrr@10"] == pytest.approx(1 / 3)  # chunk 3 is third
    first = rank_scores([1, 4], q, chunk_map)
    assert first["mrr@10"] == 1.0 and first["passage_recall@2"] == 0.5 and first["hits@2"] == 1.0
    assert rank_scores([4, 2], q, chunk_map)["mrr@10"] == 0.0


def test_rank_scores_without_list_or_located_facts():
    chunk_map = ChunkMap(CHUNKS)
    assert set(rank_scores(None, item(facts=["alpha beta"]), chunk_map).values()) == {None}
    paraphrased = rank_scores([1, 3], item(facts=["said in other words"], docs=["b"]), chunk_map)
    assert paraphrased["mrr@10"] is None and paraphrased["passage_recall@2"] is None
    assert paraphrased["doc_recall@2"] == 1.0
    assert set(rank_scores([1], item(), chunk_map).values()) == {None}


def test_aggregate_averages_rank_keys_only_when_scored():
    rows = [{"mrr@10": 1.0}, {"mrr@10": 0.5}, {"mrr@10": None}]
    agg = aggregate(rows)
    assert agg["mrr@10"] == 0.75 and agg["mrr@10_n"] == 2
    assert "mrr@10" not in aggregate([{"doc_recall": 1.0}])


def test_paired_bootstrap_by_hand():
    # Every difference is the same: the interval is that point.
    ci = paired_bootstrap([0.5, 1.0, 0.0], [0.25, 0.75, -0.25])
    assert ci == {"diff": pytest.approx(0.25), "lo": pytest.approx(0.25), "hi": 0.25, "n": 3}
    # None pairs are left out; nothing paired -> None.
    assert paired_bootstrap([1.0, None], [0.0, 1.0])["n"] == 1
    assert paired_bootstrap([None], [1.0]) is None
    # The interval is the percentile interval of the resampled means, with a fixed seed.
    a, b = [1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0]
    ci = paired_bootstrap(a, b, resamples=500, seed=3)
    diff = np.array(a) - np.array(b)
    draws = np.random.default_rng(3).integers(0, 4, size=(500, 4))
    lo, hi = np.percentile(diff[draws].mean(axis=1), [2.5, 97.5])
    assert ci["diff"] == 0.5 and ci["lo"] == pytest.approx(lo) and ci["hi"] == pytest.approx(hi)
    assert ci == paired_bootstrap(a, b, resamples=500, seed=3)  # reproducible
    assert 0.0 <= ci["lo"] < 0.5 < ci["hi"] <= 1.0
    with pytest.raises(ValueError, match="aligned"):
        paired_bootstrap([1.0], [])
    with pytest.raises(ValueError, match="level"):
        paired_bootstrap([1.0], [1.0], level=1.0)


def test_compare_modes_pairs_questions_by_id():
    scores = {
        "base": [{"id": "x", "m": 0.0}, {"id": "y", "m": 1.0}],
        "new": [{"id": "y", "m": 1.0}, {"id": "x", "m": 1.0}, {"id": "z", "m": 1.0}],
    }
    out = compare_modes(scores, "base", ["m"])
    assert list(out) == ["new"] and out["new"]["m"]["diff"] == 0.5 and out["new"]["m"]["n"] == 2
    with pytest.raises(ValueError, match="baseline"):
        compare_modes(scores, "nope", ["m"])
