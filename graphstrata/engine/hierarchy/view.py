"""Hierarchy search: ``collapsed``, ``detailed`` and ``summarized`` (EraRAG Algorithm 2, §III-D).

EraRAG ranks chunks and summaries by vector similarity alone. Here each mode fuses the dense
candidates with BM25 candidates over the same kinds (the version's ``SparseIndex`` indexes
chunks and summaries, per-kind statistics, advanced per commit), exactly as ``hybrid`` does
over chunks (``engine.modes.hybrid.fused_candidates``, ``FusionConfig``), and packs with
``pack_distinct_hits``, so a summary that repeats a packed chunk (extractive summaries often
do) or a chunk that a packed summary already holds does not spend the budget twice:

* ``collapsed``: fused chunks and summaries of every layer, packed under the budget;
* ``detailed`` / ``summarized``: EraRAG's biased search over collapsed's one fused ranking:
  a share p (``bias_share``) of the budget goes first to the favoured side's candidates that
  *compete* (chunks for ``detailed``; for ``summarized``, summaries that score at least as
  well as every candidate below them in the tree, at least one of them found,
  ``core.fusion.competing``), then the rest
  of the budget to every other candidate in fused order, both kinds (duplicates of the first
  part skipped). EraRAG fills the rest from the other side alone and ranks each side on its
  own; that spent 30-70 % of the budget on summaries, which hold a third to a half of the
  evidence per token that chunks do, and put ``summarized`` 5-17 points of fact recall below
  BM25 alone (decision 0035). A summary that its own member outscores adds nothing the member
  does not say better for this query; one that outscores the members found keeps its
  place at the front, and one whose members were not found competes on its fused score
  in the rest, like any candidate.

``FusionConfig.method = "dense"`` gives EraRAG's dense-only ranking back (with the
duplicate test; ``max_overlap > 1`` turns that off too). (docs/architecture.md, "Search
modes and parameters".)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from graphstrata.core.fusion import competing
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
            ids, scores = self._fused(query, [_T, _L], fusion, info)
            hits, dups = self._pack(ids, scores, query.budget_tokens, fusion)
            info["duplicates"] = int(dups.size)
            return hits
        if mode in ("detailed", "summarized"):
            return self._biased(mode, query, fusion, info)
        raise ValueError(f"hierarchy does not serve mode {mode!r}")

    def _biased(
        self, mode: str, query: Query, fusion: FusionConfig, info: dict[str, Any]
    ) -> list[Hit]:
        """p·budget from the favoured side's competing candidates first, the rest from all."""
        params = query.params.over(self.config.hierarchy)
        p = float(params.bias_share)
        favoured = _T if mode == "detailed" else _L
        share = int(p * query.budget_tokens)
        ids, scores = self._fused(query, [_T, _L], fusion, info)
        nodes = self.snapshot.nodes
        rows = nodes.rows(ids)
        first = nodes.kind[rows] == favoured
        if params.compete and favoured == _L:  # a chunk has nothing below it: it competes
            first &= competing(ids, scores, self._ancestors(rows))
        hits, dups = self._pack(ids[first], scores[first], share, fusion)
        used = sum(h.tokens for h in hits)
        # what the first part packed or found repeated is not a candidate of the rest
        done = np.concatenate([np.asarray([h.id for h in hits], np.int64), dups])
        rest_mask = ~np.isin(ids, done)
        rest, more = self._pack(
            ids[rest_mask], scores[rest_mask], query.budget_tokens - used, fusion, hits
        )
        info["duplicates"] = int(dups.size + more.size)
        query.report["share"] = {
            "p": p,
            "first_budget": share,
            "first_tokens": used,
            "competing": int(first.sum()),
        }
        return hits + rest

    def _ancestors(self, rows: np.ndarray) -> np.ndarray:
        """[n, max_layers]: the parent, grandparent, ... of the nodes at ``rows`` (-1 pads)."""
        nodes = self.snapshot.nodes
        depth = int(self.config.hierarchy.max_layers)
        out = np.full((rows.size, depth), -1, np.int64)
        current = nodes.parent[rows].astype(np.int64)
        for level in range(depth):
            live = current >= 0
            if not live.any():
                break
            out[:, level] = current
            up = np.full_like(current, -1)
            up[live] = nodes.parent[nodes.rows(current[live])]
            current = up
        return out

    def _fused(
        self, query: Query, kinds: Sequence[int], fusion: FusionConfig, info: dict[str, Any]
    ) -> tuple[np.ndarray, np.ndarray]:
        """The fused candidates of ``kinds`` (``engine.modes.hybrid.fused_candidates``)."""
        # A metadata filter: a summary is a candidate when all its documents match
        # (``engine.filtered``); the matching chunks of the others are searched anyway.
        vectors = restricted_vectors(self.vectors, query, self.snapshot)
        sparse = restricted_sparse(self.sparse, query)
        return fused_candidates(self.snapshot, vectors, sparse, query, kinds, fusion, info)

    def _pack(
        self,
        ids: np.ndarray,
        scores: np.ndarray,
        budget: int,
        fusion: FusionConfig,
        before: Sequence[Hit] = (),
    ) -> tuple[list[Hit], np.ndarray]:
        """Candidates packed under ``budget`` (``pack_distinct_hits``): (hits, duplicate ids)."""
        return pack_distinct_hits(
            self.snapshot,
            self.doc_names,
            ids,
            scores,
            budget,
            fusion.max_overlap,
            fusion.shingle_words,
            before,
        )
