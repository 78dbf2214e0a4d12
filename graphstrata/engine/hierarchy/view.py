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

import numpy as np

from graphstrata.engine.component import ComponentView, DocNames, Hit, Query
from graphstrata.engine.config import FusionConfig, HierarchyConfig, IndexConfig
from graphstrata.engine.hierarchy.keys import ItemKeys
from graphstrata.engine.modes.hybrid import fused_candidates, fusion_config
from graphstrata.engine.modes.packing import pack_distinct_hits
from graphstrata.engine.params import params_from
from graphstrata.engine.sparse.index import SparseIndex
from graphstrata.engine.store import Delta, Snapshot
from graphstrata.engine.types import NodeKind
from graphstrata.engine.vectors import VectorIndex

_T = int(NodeKind.T)
_L = int(NodeKind.L)

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
    """

    sparse: SparseIndex

    def __init__(
        self, snapshot: Snapshot, vectors: VectorIndex, config: IndexConfig, doc_names: DocNames
    ):
        self.snapshot = snapshot
        self.vectors = vectors
        self.config = config
        self.doc_names = doc_names
        self.sparse = SparseIndex(snapshot, [_T, _L])
        # Not read state: the writer's memo of item keys, handed from version to version
        # (``keys.ItemKeys``; ids' keys never change, so every version may share it).
        self._item_keys: ItemKeys | None = None

    def item_keys(self, hyperplanes: np.ndarray, direction: np.ndarray) -> ItemKeys:
        """The writers' memo of item keys for ``hyperplanes`` and ``direction`` (made on
        first use; shared with the views of the following versions)."""
        keys = self._item_keys
        if keys is None or not keys.matches(hyperplanes, direction):
            keys = self._item_keys = ItemKeys(hyperplanes, direction)
        return keys

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
        ids, scores = fused_candidates(
            self.snapshot, self.vectors, self.sparse, query, kinds, fusion, info
        )
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

    def carry_over(self, previous: ComponentView, delta: Delta) -> None:
        """Advance the previous version's chunk and summary postings by ``delta``."""
        if isinstance(previous, HierarchyView):
            self.sparse = previous.sparse.advanced(self.snapshot, delta)
            self._item_keys = previous._item_keys
