"""``bm25``: the sparse baseline, BM25 over the same chunks (T nodes) as ``naive``.

Every retrieval table reports dense (``naive``), sparse (``bm25``) and graph rows side by
side, so the sparse row must be an honest, standard BM25 and not a strawman:

* **Scoring**: Lucene's BM25 variant with k1 = 1.5, b = 0.75 (the ``bm25s`` defaults, the
  values most BM25 baselines in the RAG literature use), computed by the engine's
  ``SparseIndex`` (``engine/sparse/index.py``), whose scores are tested equal to
  ``bm25s``' over the same texts.
* **Tokenization**: lower-cased, split on the regex ``\\b\\w\\w+\\b`` (words of two or more
  word characters; numbers and years such as ``2023`` are kept), English stop words removed
  (bm25s' list: Lucene's 33 English stop words), every word stemmed with the Snowball
  English stemmer (PyStemmer). The query goes through the same tokenizer and is read as
  ``bm25s`` reads it: a query word that occurs in no chunk is dropped (even if its stem
  does), a repeated one counts each time.
* **Candidates**: the ``top_k`` best-scoring chunks with a positive score (a chunk that
  shares no term with the query is never returned), packed greedily under the token
  budget with ``engine.modes.packing.pack_hits`` exactly like ``naive``.

The component keeps no state on disk (``update`` does nothing). The chunk postings of a
version are built in memory on its first sparse query (~1 s per 10k chunks on one core) and
shared with every other view of the version; after a commit the engine advances them from
the committed delta (``EngineState.advanced``: ``SparseParts.advanced``), tokenizing only
the new texts. The query
embedding the engine computes is not used (docs/architecture.md, "Search modes and
parameters").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from graphstrata.engine.component import (
    ChangeSet,
    Component,
    ComponentView,
    DocNames,
    Hit,
    Query,
    UpdateContext,
    VersionState,
)
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.filtered import restricted_sparse
from graphstrata.engine.modes.packing import pack_hits, record_ranked
from graphstrata.engine.params import ModeParams, NoParams
from graphstrata.engine.sparse.index import (
    BM25_B,
    BM25_K1,
    STEMMER_LANGUAGE,
    TOKEN_PATTERN,
    KindIndex,
    SparseIndex,
)
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind

if TYPE_CHECKING:
    from bm25s.tokenization import Tokenizer

__all__ = [
    "BM25_B",
    "BM25_K1",
    "STOPWORDS",
    "TOKEN_PATTERN",
    "BM25Chunks",
    "SparseComponent",
    "SparseView",
    "make_tokenizer",
]

STOPWORDS = "en"
_T = int(NodeKind.T)


def make_tokenizer() -> Tokenizer:
    """The ``bm25s`` tokenizer with the engine's settings (the reference
    ``sparse_index.analyze`` is tested against; importing ``bm25s`` takes seconds, so only
    this function does)."""
    import Stemmer
    from bm25s.tokenization import Tokenizer

    stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
    return Tokenizer(
        lower=True, splitter=TOKEN_PATTERN, stopwords=STOPWORDS, stemmer=stemmer.stemWord
    )


class BM25Chunks:
    """A BM25 index over a list of texts; ``search`` returns (row indices, scores).

    Parameters
    ----------
    texts:
        The texts, indexed in order (a row of ``search`` is a position here).
    """

    def __init__(self, texts: Sequence[str]):
        self.size = len(texts)
        self._index = KindIndex.build(np.arange(self.size, dtype=np.int64), list(texts))

    def search(self, text: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Rows and scores of the ``k`` best texts with a positive score, best first."""
        return self._index.search(text, min(int(k), self.size))


class SparseView(ComponentView):
    """BM25 over the live chunks of one version (the chunk postings of ``SparseIndex``).

    Parameters
    ----------
    snapshot, doc_names:
        The version searched and its doc names.
    sparse:
        The version's sparse index over chunks (``EngineState.sparse``: built on first use).
    """

    def __init__(self, snapshot: Snapshot, doc_names: DocNames, sparse: SparseIndex):
        self.snapshot = snapshot
        self.doc_names = doc_names
        self.sparse = sparse

    def search(self, mode: str, query: Query) -> list[Hit]:
        """The packed best-scoring chunks (``mode`` must be ``"bm25"``)."""
        if mode != "bm25":
            raise ValueError(f"the sparse component serves 'bm25', not {mode!r}")
        ids, scores = restricted_sparse(self.sparse, query).search(query.text, [_T], query.top_k)
        record_ranked(query.report, ids)
        return pack_hits(self.snapshot, self.doc_names, ids, scores, query.budget_tokens)


class SparseComponent(Component):
    """The ``bm25`` baseline: no stored state, an in-memory BM25 index per version."""

    name = "sparse"
    modes = ("bm25",)
    sparse_kinds = (_T,)
    mode_params: ClassVar[dict[str, type[ModeParams]]] = {"bm25": NoParams}

    def update(self, ctx: UpdateContext, change: ChangeSet) -> None:
        """Nothing to store: the view reads the live chunk texts of each version."""

    def view(self, state: VersionState, config: IndexConfig) -> SparseView:
        """The BM25 view of one version (the vectors are not used)."""
        return SparseView(state.snapshot, state.doc_names, state.sparse.index([_T]))
