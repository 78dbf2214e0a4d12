"""``SparseIndex``: scores equal to bm25s', incremental inserts/deletes equal to a fresh build."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.core import bm25
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.index import Engine
from graphstrata.engine.modes.bm25 import SparseComponent, make_tokenizer
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.sparse import index as sparse_index
from graphstrata.engine.sparse import postings
from graphstrata.engine.sparse.index import (
    STOPWORDS_EN,
    KindIndex,
    SparseIndex,
    SparseParts,
    analyze,
)
from graphstrata.engine.sparse.segments import Segment
from graphstrata.engine.types import NodeKind
from tests.helpers.maintenance import maintenance
from tests.helpers.sparse import (
    QUERIES,
    WORDS,
    Oracle,
    all_scores,
    assert_same_as_fresh,
    fresh_ranking,
    random_texts,
)

#: The default fold policies of the postings.
DEFAULT = MaintenanceConfig()


def test_stop_words_are_bm25s_english_list():
    from bm25s.stopwords import STOPWORDS_EN as bm25s_list

    assert frozenset(bm25s_list) == STOPWORDS_EN


def test_analyze_equals_the_bm25s_tokenizer(sample_docs):
    rng = random.Random(1)
    texts = random_texts(rng, 200) + [d["text"] for d in sample_docs]
    texts.append("The Observatories are RUNNING in 2023 a; naïve_über x1 ÉCOLE")
    tok = make_tokenizer()
    expected = tok.tokenize(texts, return_as="string", show_progress=False)
    got = [analyze(t) for t in texts]
    # bm25s gives a text without terms one empty token
    assert [g or [""] for g in got] == [list(e) for e in expected]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_equal_bm25s_on_random_corpora(seed):
    rng = random.Random(seed)
    texts = random_texts(rng, 60)
    ids = np.arange(100, 100 + len(texts), dtype=np.int64)
    index = KindIndex.build(ids, texts)
    oracle = Oracle(texts)
    for query in QUERIES + random_texts(rng, 10):
        want = oracle.scores(query)
        np.testing.assert_allclose(all_scores(index, query, ids), want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("seed", [3, 4])
def test_search_equals_bm25s_retrieve(seed):
    rng = random.Random(seed)
    texts = random_texts(rng, 80)
    index = KindIndex.build(np.arange(len(texts), dtype=np.int64), texts)
    oracle = Oracle(texts)
    for query in QUERIES + random_texts(rng, 10):
        for k in (5, 20, 1000):
            rows, scores = oracle.retrieve(query, k)
            ids, got = index.search(query, k)
            np.testing.assert_allclose(got, scores, rtol=2e-6)  # the same scores, best first
            if k == 1000:  # every match: the same documents with the same scores
                want = dict(zip(rows, scores, strict=True))
                assert set(ids.tolist()) == set(want)
                np.testing.assert_allclose([want[i] for i in ids.tolist()], got, rtol=2e-6)


def test_a_repeated_query_term_counts_each_time():
    index = KindIndex.build(np.array([1, 2]), ["lens maker", "maker ferry ferry"])
    ids, once = index.search("maker", 5)
    ids2, twice = index.search("maker makers", 5)  # one stem, two occurrences
    assert ids.tolist() == ids2.tolist()
    np.testing.assert_allclose(twice, 2 * once, rtol=1e-6)
    assert index.search("zebra zebra", 5)[0].size == 0


def test_search_orders_best_first_ties_by_id_and_keeps_k():
    texts = ["lens maker", "ferry", "lens maker", "lens lens maker", ""]
    index = KindIndex.build(np.array([9, 3, 4, 7, 8]), texts)
    ids, scores = index.search("lens maker", k=10)
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    assert np.all(np.diff(scores) <= 0)
    assert ids.tolist()[-2:] == [4, 9]  # equal texts tie: ascending id
    assert 3 not in ids.tolist() and 8 not in ids.tolist()  # zero scores are left out
    assert index.search("lens", k=1)[0].size == 1
    assert index.search("lens", k=0)[0].size == 0
    assert index.search("the of", k=5)[0].size == 0
    empty = KindIndex.build(np.zeros(0, np.int64), [])
    assert empty.search("lens", k=5)[0].size == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_top_k_equals_the_head_of_the_full_ranking_with_ties(seed):
    # Few distinct texts make many exact score ties right at the k-th place.
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(WORDS[:6], k=rng.randint(1, 3))) for _ in range(300)]
    ids = np.array(rng.sample(range(10_000), len(texts)), dtype=np.int64)
    index = KindIndex.build(ids, texts)
    for query in ["lens optics", "meridian", "lens lenses observatory optics"]:
        full_ids, full_scores = index.search(query, k=10**9)
        order = np.lexsort((full_ids, -full_scores.astype(np.float64)))
        np.testing.assert_array_equal(order, np.arange(full_ids.size))
        for k in [1, 2, 7, 50, full_ids.size - 1, full_ids.size, full_ids.size + 5]:
            k_ids, k_scores = index.search(query, k=k)
            np.testing.assert_array_equal(k_ids, full_ids[:k])
            np.testing.assert_array_equal(k_scores, full_scores[:k])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("max_segments", [2, 16])
def test_inserts_and_deletes_equal_a_fresh_build(seed, max_segments):
    policy = maintenance(postings_segments={"minimum": max_segments})
    rng = random.Random(seed)
    next_id = 0
    live: dict[int, str] = {}
    first = random_texts(rng, 30)
    for t in first:
        live[next_id] = t
        next_id += 1
    index = KindIndex.build(np.array(sorted(live)), [live[i] for i in sorted(live)])
    queries = QUERIES + random_texts(rng, 4)
    versions = [(index, dict(live))]
    for _ in range(12):
        dead = rng.sample(sorted(live), k=min(len(live), rng.randint(0, 8)))
        for i in dead:
            del live[i]
        add_ids, add_texts = [], []
        for t in random_texts(rng, rng.randint(0, 8)):
            add_ids.append(next_id)
            add_texts.append(t)
            next_id += 1
        # rewritten rows: some with the same text (left alone), some with a new one
        for i in rng.sample(sorted(live), k=min(len(live), 3)):
            text = live[i] if rng.random() < 0.5 else " ".join(random_texts(rng, 2))
            add_ids.append(i)
            add_texts.append(text)
        index = index.changed(
            np.array(dead, np.int64), np.array(add_ids, np.int64), add_texts, policy
        )
        live.update(zip(add_ids, add_texts, strict=True))
        assert_same_as_fresh(index, live, queries)
        assert len(index.segments) <= max_segments
        dead_share = 1 - index.n_live / max(index.alive.size, 1)
        assert dead_share <= policy.postings_dead.share + 1e-9
        versions.append((index, dict(live)))
    # older versions were not modified by the later ones
    for old, old_live in versions[::4]:
        assert_same_as_fresh(old, old_live, queries[:3])


def test_rewrite_with_the_same_text_is_not_retokenized(monkeypatch):
    index = KindIndex.build(np.array([1, 2]), ["lens maker", "ferry"])
    calls = []
    real = postings.analyze
    monkeypatch.setattr(postings, "analyze", lambda t: calls.append(t) or real(t))
    same = index.changed(np.zeros(0, np.int64), np.array([1]), ["lens maker"], DEFAULT)
    assert calls == [] and len(same.segments) == 1
    other = index.changed(np.zeros(0, np.int64), np.array([1, 5]), ["fjord", "harvest"], DEFAULT)
    assert calls == ["fjord", "harvest"]
    assert other.search("lens", 5)[0].size == 0
    assert other.search("fjord", 5)[0].tolist() == [1]


def test_sparse_index_over_kinds_uses_per_kind_statistics():
    texts = ["lens maker", "ferry lens", "lens", "observatory lens lens", "ferry"]
    kinds = [1, 1, 8, 8, 8]
    index = SparseIndex.from_texts([10, 11, 20, 21, 22], kinds, texts)
    t_only = Oracle(texts[:2]).scores("lens")
    l_only = Oracle(texts[2:]).scores("lens")
    ids, scores = index.search("lens", [1, 8], k=10)
    by_id = dict(zip(ids.tolist(), scores.tolist(), strict=True))
    np.testing.assert_allclose([by_id[10], by_id[11]], t_only, rtol=2e-6)
    np.testing.assert_allclose([by_id[20], by_id[21]], l_only[:2], rtol=2e-6)
    assert np.all(np.diff(scores) <= 0)
    assert set(index.search("lens", [8], k=10)[0].tolist()) == {20, 21}
    assert index.search("lens", [1, 8], k=2)[0].size == 2
    with pytest.raises(ValueError, match="kind"):
        index.search("lens", [int(NodeKind.S)], k=3)


def _engine(tmp_path, hashing_embedder) -> Engine:
    config = IndexConfig()
    config.hierarchy.enabled = False
    config.heterograph.enabled = False
    return Engine.create(
        tmp_path / "idx", config, hashing_embedder, ExtractiveLLM(), components=[SparseComponent()]
    )


def test_engine_advances_the_built_index_after_each_commit(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    engine = _engine(tmp_path, hashing_embedder)
    engine.insert(sample_docs[:20])
    query = "Meridian Optics lens gratings observatory"
    view = engine.state.views["bm25"]
    assert not view.sparse.built(int(NodeKind.T))  # lazy until the first query
    engine.query(query, mode="bm25")
    part = view.sparse.part(int(NodeKind.T))

    def no_rebuild(*args):
        raise AssertionError("the chunk postings were rebuilt instead of advanced")

    monkeypatch.setattr(sparse_index, "_build_part", no_rebuild)
    engine.insert(sample_docs[20:])
    advanced = engine.state.views["bm25"].sparse
    assert advanced.built(int(NodeKind.T))  # advanced at the commit, not rebuilt lazily
    new_part = advanced.part(int(NodeKind.T))
    # 40 chunks, then 20 more: the new segment is at least half the first, so they are
    # joined (``segments.joined_tail``)
    assert new_part.vocab is part.vocab and len(new_part.segments) == 1
    ids, scores = advanced.search(query, [int(NodeKind.T)], 50)
    want_ids, want_scores = fresh_ranking(engine, query)
    assert ids.tolist() == want_ids
    np.testing.assert_allclose(scores, want_scores, rtol=1e-6)
    engine.delete([d["doc_id"] for d in sample_docs[:5]])
    ids, scores = engine.state.views["bm25"].sparse.search(query, [int(NodeKind.T)], 50)
    want_ids, want_scores = fresh_ranking(engine, query)
    assert ids.tolist() == want_ids
    np.testing.assert_allclose(scores, want_scores, rtol=1e-6)
    # an updated document replaces its chunks
    doc = dict(sample_docs[10], text="The quokkaberry harvest began in Brekkvik.")
    engine.insert([doc])
    hits = engine.query("quokkaberry", mode="bm25").nodes
    assert [h.docs for h in hits] == [[doc["doc_id"]]]
    ids, _ = engine.state.views["bm25"].sparse.search(query, [int(NodeKind.T)], 50)
    assert ids.tolist() == fresh_ranking(engine, query)[0]


def test_views_of_one_version_share_the_postings(tmp_path, hashing_embedder, sample_docs):
    engine = _engine(tmp_path, hashing_embedder)
    engine.insert(sample_docs[:5])
    parts = engine.state.sparse
    a = parts.index([int(NodeKind.T)])
    b = parts.index([int(NodeKind.T), int(NodeKind.L)])
    assert a.part(int(NodeKind.T)) is b.part(int(NodeKind.T))


def test_advance_without_a_delta_reads_the_change_from_the_snapshots(
    tmp_path, hashing_embedder, sample_docs
):
    engine = _engine(tmp_path, hashing_embedder)
    engine.insert(sample_docs[:10])
    before = SparseParts(engine.state.snapshot, DEFAULT, [int(NodeKind.T)])
    before.get(int(NodeKind.T))
    engine.insert(sample_docs[10:15])
    engine.delete([sample_docs[0]["doc_id"]])
    # two commits later, no delta
    after = before.advanced(engine.state.snapshot, None, DEFAULT).index([int(NodeKind.T)])
    query = "observatory spectrograph lens"
    ids, scores = after.search(query, [int(NodeKind.T)], 50)
    want_ids, want_scores = fresh_ranking(engine, query)
    assert ids.tolist() == want_ids
    np.testing.assert_allclose(scores, want_scores, rtol=1e-6)


def test_term_scores_split_the_score_by_query_term():
    texts = ["lens maker lens", "ferry lens", "lens", "observatory lens ferry", "ferry maker"]
    kinds = [1, 1, 8, 8, 8]
    ids = np.asarray([10, 11, 20, 21, 22])
    index = SparseIndex.from_texts(ids.tolist(), kinds, texts)
    query = "The lens maker and the ferry, the lens maker"  # repeated terms
    asked = np.asarray([22, 10, 99, 21, 11])  # 99: not indexed
    rows = index.term_scores(query, asked)
    np.testing.assert_allclose(rows.sum(0), index.score(query, asked), rtol=2e-6)
    assert rows.shape[1] == asked.size and np.all(rows[:, 2] == 0)
    # one row per distinct term: each is the BM25 (bm25s) of that term alone, times its count
    t_oracle, l_oracle = Oracle(texts[:2]), Oracle(texts[2:])
    for term, times, row in zip(("lens", "maker", "ferry"), (2, 2, 1), rows, strict=True):
        t_sc, l_sc = t_oracle.scores(term), l_oracle.scores(term)
        want = [l_sc[2], t_sc[0], 0.0, l_sc[1], t_sc[1]]
        np.testing.assert_allclose(row, times * np.asarray(want), rtol=2e-6, atol=1e-9)
    assert index.term_scores("the of", asked).shape == (0, asked.size)
    assert not index.term_scores("lens", np.asarray([99, 98])).any()
    # kinds: only the ids of those kinds are scored
    only_1 = index.term_scores(query, asked, kinds=[1])
    np.testing.assert_array_equal(only_1[:, [1, 4]], rows[:, [1, 4]])
    assert not only_1[:, [0, 2, 3]].any()
    # a repeated id gets its scores in each of its columns
    twice = index.term_scores(query, np.asarray([21, 10, 21]))
    np.testing.assert_array_equal(twice[:, 0], twice[:, 2])
    np.testing.assert_allclose(twice.sum(0), index.score(query, np.asarray([21, 10, 21])))


@pytest.mark.parametrize("seed", [0, 1])
def test_pruned_top_k_equals_the_full_ranking_over_segments_and_tombstones(seed, monkeypatch):
    # Zipf-like texts: "lens" in most documents, rare words in few, so MaxScore prunes; a
    # few segments and tombstones; the top k of a pruned search must be the head of the
    # full ranking, and score_ids must give each id the very score the search gave it.
    rng = random.Random(seed)
    weights = [1.0 / (r + 1) for r in range(len(WORDS))]
    texts = [" ".join(rng.choices(WORDS, weights, k=rng.randint(3, 12))) for _ in range(900)]
    # Parts each under half the one before, so that they stay three segments.
    index = KindIndex.build(np.arange(600, dtype=np.int64), texts[:600])
    for lo, hi in ((600, 850), (850, 900)):
        ids = np.arange(lo, hi, dtype=np.int64)
        index = index.changed(np.zeros(0, np.int64), ids, texts[lo:hi], DEFAULT)
    index = index.changed(np.arange(0, 900, 7, dtype=np.int64), np.zeros(0, np.int64), [], DEFAULT)
    assert len(index.segments) == 3 and index.n_live < index.alive.size
    calls = []
    real = postings.top_candidates

    def spy(segments, tids, weights, bounds, norm, alive, k):
        out = real(segments, tids, weights, bounds, norm, alive, k)
        calls.append((k, out[0].size, out[2]))
        return out

    monkeypatch.setattr(postings, "top_candidates", spy)
    monkeypatch.setattr(bm25, "PRUNE_MIN_LEFT", 0)  # a small collection: test from the start
    for query in ["lens meridian", "brekkvik lens the", "sundra halvorsen lens lenses optics"]:
        full_ids, full_scores = index.search(query, k=10**9)
        for k in (1, 3, 10):
            k_ids, k_scores = index.search(query, k=k)
            np.testing.assert_array_equal(k_ids, full_ids[:k])
            np.testing.assert_array_equal(k_scores, full_scores[:k])
            found, by_lookup = index.score_ids(query, k_ids)
            assert found.all()
            np.testing.assert_array_equal(by_lookup.astype(np.float32), k_scores)
            # every live id, most of them outside the pruned search's candidates, and dead
            # or unknown ids: the scores of the full ranking, 0 where it has none
            asked = np.arange(-3, 905, dtype=np.int64)
            found, every = index.score_ids(query, asked)
            want = dict(zip(full_ids.tolist(), full_scores.tolist(), strict=True))
            assert found.tolist() == np.isin(asked, index.live_ids()).tolist()
            np.testing.assert_array_equal(
                every.astype(np.float32), [want.get(i, 0.0) for i in asked.tolist()]
            )
    pruned = [size for k, size, cut in calls if k <= 10 and cut]
    assert pruned and max(pruned) < index.n_live // 2  # "lens", in most texts, was pruned


def test_postings_saved_with_int64_lengths_load_as_uint16_and_score_the_same():
    # Cache files written before lengths were uint16 hold int64 lengths.
    rng = random.Random(4)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for _ in range(60)]
    texts.append(" ".join(["lens"] * 70_000))  # saturates at core.bm25.MAX_LENGTH
    part = KindIndex.build(np.arange(len(texts), dtype=np.int64), texts)
    assert part.slot_len.dtype == np.uint16 and int(part.slot_len[-1]) == bm25.MAX_LENGTH
    arrays = part.to_arrays()
    old = dict(arrays, slot_len=arrays["slot_len"].astype(np.int64))
    loaded = KindIndex.from_arrays(old)
    assert loaded.slot_len.dtype == np.uint16 and loaded.total_len == part.total_len
    for query in ("lens optics", "fjord ferry harvest", "running 2023"):
        want_ids, want_scores = part.search(query, 10)
        got_ids, got_scores = loaded.search(query, 10)
        np.testing.assert_array_equal(got_ids, want_ids)
        np.testing.assert_array_equal(got_scores, want_scores)


def _max_tf_oracle(seg: Segment, term: int) -> int:
    tfs = seg.postings(term)[1]
    return int(tfs.max()) if tfs.size else 0


@pytest.mark.parametrize("n_texts", [0, 1, 2, 40, 300])
def test_each_segments_term_max_is_the_largest_tf_of_the_terms_postings(n_texts):
    rng = random.Random(n_texts)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(0, 30))) for _ in range(n_texts)]
    part = KindIndex.build(np.arange(n_texts, dtype=np.int64), texts)
    more = [" ".join(rng.choices(WORDS, k=rng.randint(1, 9)) + ["zebra"] * 3) for _ in range(5)]
    grown = part.changed(np.arange(0, n_texts, 9), np.arange(n_texts, n_texts + 5), more, DEFAULT)
    if n_texts >= 40:  # a segment per change (small ones are compacted at once)
        assert len(grown.segments) == 2
    for index in (part, grown):
        n_terms = len(index.vocab)
        for seg in index.segments:
            assert seg.term_max is not None and seg.term_max.dtype == np.int32
            for term in range(n_terms + 2):  # and terms newer than the segment
                assert seg.max_tf(term) == _max_tf_oracle(seg, term)


def test_postings_saved_without_term_max_load_with_it_and_score_the_same():
    # Cache files written before ``term_max`` was kept lack it.
    rng = random.Random(5)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(1, 20))) for _ in range(80)]
    part = KindIndex.build(np.arange(len(texts), dtype=np.int64), texts)
    arrays = part.to_arrays()
    old = {k: v for k, v in arrays.items() if k != "term_max"}
    loaded = KindIndex.from_arrays(old)
    assert loaded.segments[0].term_max is None  # found per term on first use
    for term in range(len(part.vocab) + 1):
        assert loaded.segments[0].max_tf(term) == part.segments[0].max_tf(term)
    # saved again (as the cache is when it is rewritten), it is kept
    again = KindIndex.from_arrays(loaded.to_arrays())
    np.testing.assert_array_equal(again.segments[0].term_max, part.segments[0].term_max)
    for query in ("lens optics", "fjord ferry harvest", "running 2023"):
        want_ids, want_scores = part.search(query, 10)
        got_ids, got_scores = loaded.search(query, 10)
        np.testing.assert_array_equal(got_ids, want_ids)
        np.testing.assert_array_equal(got_scores, want_scores)


def test_many_small_writes_keep_few_segments_and_the_same_scores():
    """Each write's segment is joined with the ones before it while it is at least half
    their size (``segments.joined_tail``): 40 writes of 1-3 texts onto 200 keep at most
    ``log2(n) + 1`` segments, the first (the build) untouched, sizes halving at least at
    each step, the least slot length carried from version to version, and every search
    equals a fresh build's."""
    rng = random.Random(5)
    live = dict(enumerate(random_texts(rng, 200)))
    index = KindIndex.build(np.arange(200, dtype=np.int64), list(live.values()))
    build_segment = index.segments[0]
    index.search(QUERIES[0], 3)  # the bounds' least length is now known, and carried
    next_id = 200
    for _ in range(40):
        texts = random_texts(rng, rng.randint(1, 3))
        ids = np.arange(next_id, next_id + len(texts), dtype=np.int64)
        next_id += len(texts)
        index = index.changed(np.zeros(0, np.int64), ids, texts, DEFAULT)
        live.update(zip(ids.tolist(), texts, strict=True))
        sizes = [seg.n for seg in index.segments]
        assert len(sizes) <= int(np.log2(index.alive.size)) + 1
        assert all(2 * b < a for a, b in itertools.pairwise(sizes)), sizes
        assert index.segments[0] is build_segment
        assert index.__dict__["_min_len"] == int(index.slot_len.min())
    assert_same_as_fresh(index, live, QUERIES + random_texts(rng, 4))
