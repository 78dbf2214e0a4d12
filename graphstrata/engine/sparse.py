"""``bm25``: the sparse baseline, BM25 over the same chunks (T nodes) as ``naive``.

Every retrieval table reports dense (``naive``), sparse (``bm25``) and graph rows side by
side, so the sparse row must be an honest, standard BM25 and not a strawman:

* **Scoring**: ``bm25s`` (Lucene's BM25 variant) with its defaults k1 = 1.5, b = 0.75, the
  values most BM25 baselines in the RAG literature use.
* **Tokenization**: lower-cased, split on the regex ``\\b\\w\\w+\\b`` (words of two or more
  word characters; numbers and years such as ``2023`` are kept), English stop words removed
  (bm25s' list: Lucene's 33 English stop words), every word stemmed with the Snowball
  English stemmer (PyStemmer). The
  query goes through the same tokenizer; query words absent from the chunks are dropped.
* **Candidates**: the ``top_k`` best-scoring chunks with a positive score (a chunk that
  shares no term with the query is never returned), packed greedily under the token
  budget with ``engine.search.pack_hits`` exactly like ``naive``.

The component keeps no state on disk (``update`` does nothing): the index is rebuilt in
memory from the live chunk texts once per committed version, lazily on the first ``bm25``
query of that version, so inserts and opens never pay for it (~1 s per 10k chunks on one
core). The query embedding the engine computes is not used.
"""

from __future__ import annotations

import threading
from typing import ClassVar

import bm25s
import numpy as np
import Stemmer
from bm25s.tokenization import Tokenizer

from graphstrata.engine.component import (
    ChangeSet,
    Component,
    ComponentView,
    Hit,
    Query,
    UpdateContext,
)
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.params import ModeParams, NoParams
from graphstrata.engine.search import DocNames, pack_hits
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex

#: BM25 term-frequency saturation and length normalization (bm25s / Lucene defaults).
BM25_K1 = 1.5
BM25_B = 0.75
#: Words of at least two word characters (scikit-learn's and bm25s' default pattern).
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
STOPWORDS = "en"
STEMMER_LANGUAGE = "english"


def make_tokenizer() -> Tokenizer:
    """The tokenizer used for both the chunks and the queries (see the module docstring)."""
    stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
    return Tokenizer(
        lower=True, splitter=TOKEN_PATTERN, stopwords=STOPWORDS, stemmer=stemmer.stemWord
    )


class BM25Chunks:
    """A BM25 index over a list of chunk texts; ``search`` returns (row indices, scores)."""

    def __init__(self, texts: list[str]):
        self.size = len(texts)
        self.tokenizer = make_tokenizer()
        self.retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B)
        if self.size == 0:
            return
        corpus_tokens = self.tokenizer.tokenize(
            texts, update_vocab=True, return_as="ids", show_progress=False
        )
        # bm25s gives token-less texts an empty-string token; a query must never match it.
        self._empty_token = self.tokenizer.get_vocab_dict().get("")
        self.retriever.index(corpus_tokens, show_progress=False)

    def query_tokens(self, text: str) -> list[int]:
        if self.size == 0:
            return []
        (ids,) = self.tokenizer.tokenize(
            [text], update_vocab=False, return_as="ids", show_progress=False
        )
        return [t for t in ids if t != self._empty_token]

    def search(self, text: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and scores of the ``k`` best chunks with a positive score, best first."""
        tokens = self.query_tokens(text)
        k = min(int(k), self.size)
        if not tokens or k <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        rows, scores = self.retriever.retrieve([tokens], k=k, show_progress=False, n_threads=1)
        rows, scores = np.asarray(rows[0], np.int64), np.asarray(scores[0], np.float32)
        keep = scores > 0
        return rows[keep], scores[keep]


class SparseView(ComponentView):
    """BM25 over the live chunks of one version, built on its first query."""

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self.doc_names = DocNames(snapshot)
        self._lock = threading.Lock()
        self._index: BM25Chunks | None = None
        self._chunk_ids = np.zeros(0, np.int64)

    def _built(self) -> BM25Chunks:
        with self._lock:
            if self._index is None:
                nodes = self.snapshot.nodes
                self._chunk_ids = nodes.ids_of_kind(int(NodeKind.T))
                self._index = BM25Chunks(nodes.text_of(self._chunk_ids))
            return self._index

    def search(self, mode: str, query: Query) -> list[Hit]:
        if mode != "bm25":
            raise ValueError(f"the sparse component serves 'bm25', not {mode!r}")
        index = self._built()
        rows, scores = index.search(query.text, query.top_k)
        return pack_hits(
            self.snapshot, self.doc_names, self._chunk_ids[rows], scores, query.budget_tokens
        )


class SparseComponent(Component):
    """The ``bm25`` baseline: no stored state, an in-memory BM25 index per version."""

    name = "sparse"
    modes = ("bm25",)
    mode_params: ClassVar[dict[str, type[ModeParams]]] = {"bm25": NoParams}

    def update(self, ctx: UpdateContext, change: ChangeSet) -> None:
        """Nothing to store: the view reads the live chunk texts of each version."""

    def view(self, snapshot: Snapshot, vectors: VectorIndex, config: IndexConfig) -> SparseView:
        return SparseView(snapshot)
