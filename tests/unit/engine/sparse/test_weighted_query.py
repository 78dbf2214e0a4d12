"""BM25 queries given as weighted terms (``analysis.WeightedTerms``) and the feedback terms of
``hybrid``'s sparse pseudo-relevance feedback (``SparseIndex.feedback_terms``)."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from graphstrata.engine.sparse.analysis import (
    WeightedTerms,
    analyze,
    has_words,
    query_weights,
    query_words,
)
from graphstrata.engine.sparse.index import SparseIndex
from tests.helpers.sparse import QUERIES, Oracle, random_texts


def test_a_texts_terms_weigh_their_occurrences():
    # Snowball: "lens" -> "len", "lenses" -> "lens"
    assert query_weights("The lens maker, the LENS and the maker") == {"len": 2.0, "maker": 2.0}
    assert query_weights("the of") == {}
    assert not has_words("the of") and has_words("lens")
    q = WeightedTerms((("len", 0.5), ("ferri", 2.0)))
    assert query_weights(q) == {"len": 0.5, "ferri": 2.0}
    assert has_words(q) and not has_words(WeightedTerms(()))


def test_expanded_adds_new_terms_at_their_weight():
    q = WeightedTerms.expanded("lens maker lens", ["ferri", "len", "ferri", "boat"], 0.25)
    assert q.weights == (("len", 2.0), ("maker", 1.0), ("ferri", 0.25), ("boat", 0.25))


@pytest.mark.parametrize(
    "weights",
    [(("len", 1.0), ("len", 2.0)), (("len", 0.0),), (("len", -1.0),), (("len", math.nan),)],
)
def test_bad_weights_are_refused(weights):
    with pytest.raises(ValueError, match="WeightedTerms"):
        WeightedTerms(weights)


@pytest.mark.parametrize("seed", [0, 1])
def test_weighted_scores_are_the_weighted_sum_of_single_term_scores(seed):
    rng = random.Random(seed)
    texts = random_texts(rng, 60)
    ids = np.arange(len(texts), dtype=np.int64)
    index = SparseIndex.from_texts(ids, [1] * len(texts), texts)
    oracle = Oracle(texts)
    for query in QUERIES + random_texts(rng, 5):
        counts = query_weights(query)
        if not counts:
            continue
        w = {t: rng.choice([0.25, 1.0, 3.0]) * n for t, n in counts.items()}
        weighted = WeightedTerms(tuple(w.items()))
        # bm25s scores one word alone (a surface word of the term: a stem is not always its
        # own stem); a term's weight multiplies its part
        word = {analyze(x)[0]: x for x in query_words(query)}
        want = sum(w[t] * oracle.scores(word[t]) for t in w)
        np.testing.assert_allclose(index.score(weighted, ids), want, rtol=2e-6, atol=1e-6)
        got_ids, got = index.search(weighted, [1], 10)
        order = np.lexsort((ids, -want))[: got_ids.size]
        np.testing.assert_allclose(got, want[order], rtol=2e-6, atol=1e-6)
        rows = index.term_scores(weighted, ids)
        np.testing.assert_allclose(rows.sum(0), want, rtol=2e-6, atol=1e-6)
        # a text and the weighted terms of its counts are the same query, bit for bit
        same = WeightedTerms(tuple(counts.items()))
        np.testing.assert_array_equal(index.score(same, ids), index.score(query, ids))
        np.testing.assert_array_equal(
            index.search(same, [1], 10)[1], index.search(query, [1], 10)[1]
        )


def feedback_terms_oracle(texts_by_kind, kind_of, top, m, exclude):
    """The RM3-like feedback terms written plainly: sum over the top texts of tf / length *
    idf / rank, the idf over the texts of the candidate's kind."""
    weight: Counter = Counter()
    for rank, node in enumerate(top, start=1):
        kind, row = kind_of[node]
        corpus = [set(analyze(t)) for t in texts_by_kind[kind]]
        terms = analyze(texts_by_kind[kind][row])
        for term, tf in Counter(terms).items():
            df = sum(term in doc for doc in corpus)
            if term in exclude or df == 0:
                continue
            idf = math.log(1 + (len(corpus) - df + 0.5) / (df + 0.5))
            weight[term] += tf / len(terms) * idf / rank
    return sorted(weight, key=lambda t: (-weight[t], t))[:m]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_feedback_terms_equal_the_oracle(seed):
    rng = random.Random(seed)
    by_kind = {1: random_texts(rng, 40), 8: random_texts(rng, 15)}
    ids, kinds, texts, kind_of = [], [], [], {}
    for kind, group in by_kind.items():
        for row, text in enumerate(group):
            kind_of[1000 * kind + row] = (kind, row)
            ids.append(1000 * kind + row)
            kinds.append(kind)
            texts.append(text)
    index = SparseIndex.from_texts(ids, kinds, texts)
    text_of = dict(zip(ids, texts, strict=True))
    for _ in range(10):
        top = rng.sample(ids, rng.choice([1, 2, 3]))
        exclude = set(analyze(rng.choice(QUERIES)))
        for m in (0, 1, 3, 50):
            got = index.feedback_terms(np.asarray(top), [text_of[i] for i in top], m, exclude)
            want = feedback_terms_oracle(by_kind, kind_of, top, m, exclude)
            assert got == want


def test_feedback_terms_skip_unknown_ids_and_empty_texts():
    index = SparseIndex.from_texts([1, 2, 3], [1, 1, 1], ["lens maker", "ferry boat", "the"])
    assert index.feedback_terms(np.asarray([99, 3]), ["lens ferry", "the"], 5) == []
    # equal weights go by term; the excluded and the query's words never come back
    assert index.feedback_terms(np.asarray([2]), ["ferry boat"], 5) == ["boat", "ferri"]
    assert index.feedback_terms(np.asarray([2]), ["ferry boat"], 5, {"boat"}) == ["ferri"]
    with pytest.raises(ValueError, match="equal length"):
        index.feedback_terms(np.asarray([1, 2]), ["lens"], 3)


def test_idfs_equal_the_idf_of_each_term():
    rng = random.Random(5)
    texts = random_texts(rng, 30)
    index = SparseIndex.from_texts(list(range(30)), [1] * 30, texts)
    part = index.part(1)
    terms = [*sorted({t for text in texts for t in analyze(text)}), "zzzunknown", ""]
    got = part.idfs(terms)
    for term, x in zip(terms, got.tolist(), strict=True):
        tid = part.vocab.ids.get(term)
        want = None if tid is None else part._idf(tid)
        assert (want is None and math.isnan(x)) or x == pytest.approx(want, rel=1e-12)
    assert part.idfs([]).shape == (0,)


def test_the_idf_memo_stays_bounded_and_exact(monkeypatch):
    """``KindIndex._idf`` keeps the idfs it computed, up to ``IDF_MEMO_MAX`` terms (then it
    starts over): a stream of queries naming the whole vocabulary cannot grow it further,
    and every answer is the formula's."""
    from graphstrata.engine.sparse import postings

    monkeypatch.setattr(postings, "IDF_MEMO_MAX", 3)
    rng = random.Random(7)
    texts = random_texts(rng, 40)
    part = SparseIndex.from_texts(list(range(40)), [1] * 40, texts).part(1)
    n = float(part.n_live)
    for _ in range(2):
        for tid in [*range(len(part.vocab)), len(part.vocab) + 5]:
            df = float(part.df[tid]) if tid < part.df.size else 0.0
            want = math.log(1.0 + (n - df + 0.5) / (df + 0.5)) if df > 0 else None
            assert part._idf(tid) == want
            assert len(part._idf_memo) <= 3


def test_a_querys_reading_is_kept_per_collection_and_bounded(monkeypatch):
    """``KindIndex.read``: a thread's last query is read once in each collection (a ``graph``
    search reads it for two kinds' lists, then for the coverage), every reading is that
    collection's own, a new query starts over, and a query read in many versions keeps at
    most ``READ_MEMO_KINDS`` readings."""
    from graphstrata.engine.sparse import postings

    monkeypatch.setattr(postings, "READ_MEMO_KINDS", 2)
    index = SparseIndex.from_texts(
        [1, 2, 3, 4], [1, 1, 2, 2], ["lens maker lens", "ferry boat", "ferry lens", "quay"]
    )
    lenses, ferries = index.part(1), index.part(2)
    query = WeightedTerms.of("lens ferry quay maker")
    first = lenses.read(query)
    assert lenses.read(WeightedTerms.of("lens ferry quay maker")) is first  # an equal query
    assert list(first.weights) == ["len", "ferri", "maker"] and first.n_terms == 4
    assert first.rows.tolist() == [0, 1, 3]
    other = ferries.read(query)
    assert list(other.weights) == ["len", "ferri", "quay"] and other.rows.tolist() == [0, 1, 2]
    assert lenses.read(query) is first and ferries.read(query) is other
    assert lenses.read("lens") is not first and lenses.read(query) is not first
    # More collections than the memo holds: it starts over, and every reading stays right.
    more = [SparseIndex.from_texts([9], [1], ["lens quay"]).part(1) for _ in range(3)]
    for part in more:
        assert list(part.read(query).weights) == ["len", "quay"]
    assert len(postings._local.last_read[1]) <= 2
    idfs = [lenses._idf(lenses.vocab.ids[t]) for t in first.weights]
    assert lenses.read(query).idfs.tolist() == idfs


def test_score_ids_reuses_this_threads_last_search_of_the_query(monkeypatch):
    """``KindIndex.score_ids`` right after a complete ``search`` of the same query here reads
    the search's scores (no postings lookup); another query, or another collection, looks
    them up, and both ways give the same scores."""
    from graphstrata.engine.sparse import postings

    texts = ["lens maker lens", "ferry boat", "ferry lens", "quay"]
    part = SparseIndex.from_texts([1, 2, 3, 4], [1] * 4, texts).part(1)
    query = WeightedTerms.of("lens ferry")
    ids, scores = part.search(query, 10)
    looked = part.score_ids(query, ids)  # reference, possibly from the search
    lookups: list[int] = []
    real = postings.KindIndex._looked_up

    def counted(self, read, cand, k1, b):
        lookups.append(cand.size)
        return real(self, read, cand, k1, b)

    monkeypatch.setattr(postings.KindIndex, "_looked_up", counted)
    part.search(query, 10)
    found, again = part.score_ids(WeightedTerms.of("lens ferry"), ids)  # an equal query
    assert lookups == [] and found.all()
    assert again.tolist() == looked[1].tolist() == pytest.approx(scores.tolist())
    part.score_ids(WeightedTerms.of("lens quay"), ids)
    assert lookups == [ids.size]
