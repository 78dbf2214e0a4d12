"""Hierarchy search: ``collapsed``, ``detailed`` and ``summarized`` (EraRAG Algorithm 2, §III-D).

EraRAG ranks chunks and summaries by vector similarity alone. Here each mode fuses the dense
candidates with BM25 candidates over the same kinds (the version's ``SparseIndex`` indexes
chunks and summaries, per-kind statistics, advanced per commit), exactly as ``hybrid`` does
over chunks (``engine.modes.hybrid.fused_candidates``, ``FusionConfig``), and packs with
``pack_distinct_hits``, so a summary that repeats a packed chunk (extractive summaries often
do) or a chunk that a packed summary already holds does not spend the budget twice:

* ``collapsed``: fused chunks and summaries of every layer, packed under the budget;
* ``detailed`` / ``summarized``: a share p (``bias_share``) of the budget from fused chunks /
  summaries first, the rest from the other side (duplicates of the first part skipped).

``FusionConfig.method = "dense"`` gives EraRAG's dense-only ranking back (with the
duplicate test; ``max_overlap > 1`` turns that off too). (docs/architecture.md, "Search
modes and parameters".)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphstrata.engine.component import ComponentView, DocNames, Hit, Query
from graphstrata.engine.config import FusionConfig, HierarchyConfig, IndexConfig
from graphstrata.engine.filtered import restricted_sparse, restricted_vectors
from graphstrata.engine.modes.hybrid import fused_candidates, fusion_config
from graphstrata.engine.modes.packing import pack_distinct_hits
from graphstrata.engine.params import params_from
from graphstrata.engine.sparse.index import SparseIndex
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex

_T = int(NodeKind.T)
_L = int(NodeKind.L)
#: The kinds the hierarchy modes search by BM25: chunks and summaries.
SPARSE_KINDS = (_T, _L)

#: Parameters of ``collapsed``: the query fields of ``FusionConfig``.
CollapsedParams = params_from(
    "CollapsedParams", FusionConfig, doc="Parameters of ``collapsed``: the fusion fields."
)
#: Parameters of ``detailed`` and ``summarized``: ``bias_share`` and the fusion fields.
HierarchyParams = params_from(
    "HierarchyParams",
    HierarchyConfig,
    FusionConfig,
    doc="Parameters of ``detailed`` and ``summarized`` (EraRAG's biased search, fused).",
)


class HierarchyView(ComponentView):
    """Per-version search over chunks and summaries (``collapsed``, ``detailed``,
    ``summarized``).

    Parameters
    ----------
    snapshot, vectors, config, doc_names:
        The version searched, its vector index, the index's config (its ``fusion`` and
        ``hierarchy`` sections are read at query time) and the doc names.
    sparse:
        The version's BM25 index over chunks and summaries (``EngineState.sparse``).
    """

    def __init__(
        self,
        snapshot: Snapshot,
        vectors: VectorIndex,
        config: IndexConfig,
        doc_names: DocNames,
        sparse: SparseIndex,
    ):
        self.snapshot = snapshot
        self.vectors = vectors
        self.config = config
        self.doc_names = doc_names
        self.sparse = sparse

    def search(self, mode: str, query: Query) -> list[Hit]:
        """``collapsed``: fused chunks and summaries packed; the others: see ``_biased``."""
        fusion = fusion_config(query.params, self.config.fusion, hierarchy=True)
        info: dict[str, Any] = {"method": fusion.method, "duplicates": 0}
        query.report["fusion"] = info
        if mode == "collapsed":
            hits, _ = self._packed(query, [_T, _L], query.budget_tokens, fusion, info)
            return hits
        if mode in ("detailed", "summarized"):
            return self._biased(mode, query, fusion, info)
        raise ValueError(f"hierarchy does not serve mode {mode!r}")

    def _biased(
        self, mode: str, query: Query, fusion: FusionConfig, info: dict[str, Any]
    ) -> list[Hit]:
        """p·budget from the favoured side first, the rest of the budget from the other."""
        p = float(query.params.over(self.config.hierarchy).bias_share)
        first, second = ([_T], [_L]) if mode == "detailed" else ([_L], [_T])
        share = int(p * query.budget_tokens)
        hits, used = self._packed(query, first, share, fusion, info)
        rest, _ = self._packed(query, second, query.budget_tokens - used, fusion, info, hits)
        query.report["share"] = {"p": p, "first_budget": share, "first_tokens": used}
        return hits + rest

    def _packed(
        self,
        query: Query,
        kinds: Sequence[int],
        budget: int,
        fusion: FusionConfig,
        info: dict[str, Any],
        before: Sequence[Hit] = (),
    ) -> tuple[list[Hit], int]:
        """Fused candidates of ``kinds`` packed under ``budget``: (hits, tokens used)."""
        # A metadata filter: a summary is a candidate when all its documents match
        # (``engine.filtered``); the matching chunks of the others are searched anyway.
        vectors = restricted_vectors(self.vectors, query, self.snapshot)
        sparse = restricted_sparse(self.sparse, query)
        ids, scores = fused_candidates(self.snapshot, vectors, sparse, query, kinds, fusion, info)
        hits, duplicates = pack_distinct_hits(
            self.snapshot,
            self.doc_names,
            ids,
            scores,
            budget,
            fusion.max_overlap,
            fusion.shingle_words,
            before,
        )
        info["duplicates"] += duplicates
        return hits, sum(h.tokens for h in hits)
