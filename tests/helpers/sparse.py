"""Random texts, the bm25s oracle, and the BM25 index compared with one built afresh."""

from __future__ import annotations

import random

import numpy as np

from graphstrata.engine.index import Engine
from graphstrata.engine.modes.bm25 import make_tokenizer
from graphstrata.engine.sparse.index import (
    KindIndex,
    SparseIndex,
)
from graphstrata.engine.types import NodeKind

WORDS = [
    "lens",
    "lenses",
    "optics",
    "meridian",
    "observatory",
    "observatories",
    "spectrograph",
    "ferry",
    "fjord",
    "harvest",
    "running",
    "runs",
    "ran",
    "grating",
    "gratings",
    "2023",
    "1999",
    "the",
    "and",
    "of",
    "a",
    "to",
    "in",
    "brekkvik",
    "sundra",
    "halvorsen",
    "telescope",
    "mirror",
    "polished",
    "polishing",
    "x",
    "q9",
    "über",
    "café",
    "naïve",
]


def random_texts(rng: random.Random, n: int) -> list[str]:
    """``n`` texts of 0 to 30 words drawn from ``WORDS`` (some upper-cased)."""
    texts = []
    for _ in range(n):
        length = rng.choice([0, 1, 2, 5, 12, 30])
        words = [rng.choice(WORDS) for _ in range(length)]
        texts.append(" ".join(w.upper() if rng.random() < 0.1 else w for w in words))
    return texts


class Oracle:
    """bm25s over ``texts`` with the engine's tokenizer and BM25 parameters."""

    def __init__(self, texts: list[str]):
        import bm25s

        self.tokenizer = make_tokenizer()
        self.retriever = bm25s.BM25(k1=1.5, b=0.75)
        tokens = self.tokenizer.tokenize(
            texts, update_vocab=True, return_as="ids", show_progress=False
        )
        self.empty = self.tokenizer.get_vocab_dict().get("")
        self.retriever.index(tokens, show_progress=False)
        self.n = len(texts)

    def scores(self, query: str) -> np.ndarray:
        (ids,) = self.tokenizer.tokenize(
            [query], update_vocab=False, return_as="ids", show_progress=False
        )
        ids = [t for t in ids if t != self.empty]  # repeats kept: bm25s' retrieve sums them
        if not ids:
            return np.zeros(self.n)
        return np.asarray(self.retriever.get_scores_from_ids(ids), np.float64)

    def retrieve(self, query: str, k: int) -> tuple[list[int], list[float]]:
        """bm25s' own top-k (rows, scores) with a positive score."""
        (ids,) = self.tokenizer.tokenize(
            [query], update_vocab=False, return_as="ids", show_progress=False
        )
        ids = [t for t in ids if t != self.empty]
        if not ids:
            return [], []
        rows, scores = self.retriever.retrieve([ids], k=min(k, self.n), show_progress=False)
        keep = scores[0] > 0
        return rows[0][keep].tolist(), scores[0][keep].tolist()


QUERIES = [
    "lens",
    "lens lenses LENS",
    "polishes lensing",  # Snowball: 'lens' -> 'len' but 'lensing' -> 'lens'
    "harvest harvest HARVEST fjord",  # repeats count each time
    "observatories running spectrographs",
    "the and of",
    "2023 ferry fjord",
    "zebra",
    "über café",
    "meridian optics polishing telescope mirror grating brekkvik",
]


def assert_same_as_fresh(advanced: KindIndex, live: dict[int, str], queries: list[str]) -> None:
    """``advanced`` (carried across writes) equals an index built afresh over ``live``, and
    its scores equal bm25s' on ``queries``."""
    ids = np.array(sorted(live), dtype=np.int64)
    texts = [live[i] for i in ids.tolist()]
    fresh = KindIndex.build(ids, texts)
    oracle = Oracle(texts) if texts else None
    assert advanced.n_live == fresh.n_live == len(ids)
    assert advanced.total_len == fresh.total_len
    np.testing.assert_array_equal(advanced.live_ids(), ids)
    # the live order carried from version to version equals the one computed afresh
    fresh_order = KindIndex._live_order.func(advanced)  # type: ignore[attr-defined]
    for got, want in zip(advanced._live_order, fresh_order, strict=True):
        np.testing.assert_array_equal(got, want)
    for query in queries:
        a_ids, a_scores = advanced.search(query, k=10**9)
        f_ids, f_scores = fresh.search(query, k=10**9)
        np.testing.assert_array_equal(a_ids, f_ids)
        np.testing.assert_allclose(a_scores, f_scores, rtol=1e-6)
        if oracle is not None:
            want = oracle.scores(query)
            np.testing.assert_allclose(all_scores(advanced, query, ids), want, rtol=2e-6, atol=1e-6)


def fresh_index(snapshot, kinds) -> SparseIndex:
    """A sparse index built from scratch over the live nodes of ``kinds`` (not the shared
    parts of the snapshot)."""
    nodes = snapshot.nodes
    ids = nodes.ids_of_kind(*kinds)
    kind_of = nodes.kind[nodes.rows(ids)]
    return SparseIndex.from_texts(ids, kind_of, nodes.text_of(ids))


def fresh_ranking(engine: Engine, query: str) -> tuple[list[int], list[float]]:
    """The top 50 chunks (ids, scores) for ``query`` of a BM25 index built afresh."""
    fresh = fresh_index(engine.state.snapshot, [int(NodeKind.T)])
    ids, scores = fresh.search(query, [int(NodeKind.T)], 50)
    return ids.tolist(), scores.tolist()


def all_scores(index: KindIndex, query: str, ids: np.ndarray) -> np.ndarray:
    """The index's score of each of ``ids`` (0 when not returned)."""
    got_ids, got = index.search(query, k=10**9)
    by_id = dict(zip(got_ids.tolist(), got.tolist(), strict=True))
    return np.array([by_id.get(int(i), 0.0) for i in ids])
