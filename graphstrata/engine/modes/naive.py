"""``naive``: vector top-k over chunks, packed under the budget (every table's baseline)."""

from __future__ import annotations

from graphstrata.engine.component import ComponentView, DocNames, Hit, Query
from graphstrata.engine.filtered import restricted_vectors
from graphstrata.engine.modes.packing import pack_hits, record_ranked, vector_candidates
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex


class NaiveView(ComponentView):
    """The engine's own mode: the ``top_k`` nearest chunks, greedy-packed under the budget.

    Parameters
    ----------
    snapshot, vectors, doc_names:
        The version searched, its vector index and its doc names.
    """

    def __init__(self, snapshot: Snapshot, vectors: VectorIndex, doc_names: DocNames):
        self.snapshot = snapshot
        self.vectors = vectors
        self.doc_names = doc_names

    def search(self, mode: str, query: Query) -> list[Hit]:
        """The packed nearest chunks (``mode`` is ``"naive"``)."""
        vectors = restricted_vectors(self.vectors, query, self.snapshot)
        ids, scores = vector_candidates(vectors, query.vector, [int(NodeKind.T)], query.top_k)
        record_ranked(query.report, ids)
        return pack_hits(self.snapshot, self.doc_names, ids, scores, query.budget_tokens)
