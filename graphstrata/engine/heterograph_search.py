"""``graph`` search over the heterograph (NodeRAG §2.5, Appendix C.4).

Per committed version the view builds, once: the CSR of the heterograph's edges (node ids
mapped to dense positions of the sorted node table), a dict from normalized entity and title
names to their nodes, and the entity → attribute and title → element links. A query then

1. extracts its entities (LLM task ``query_entities``; rules for the extractive backend)
   and matches them exactly against entity and title names (dict lookups, no name scan);
2. takes the vector top-k over S, A and H;
3. runs shallow PPR (α = 0.5, t = 2) from both entry sets, touching only their t-hop
   neighbourhood, and keeps the top nodes of each kind as cross nodes (10 per kind, 30
   relationships, as in NodeRAG's code);
4. keeps the retrievable kinds T, S, A, H, R: an entity contributes its attributes and a
   title its element, N and O text is never returned;
5. ranks by PPR score (entry points carry the restart mass, so they lead unless a node
   reached from several entry points gathers more: that is what cross nodes are for) and
   packs greedily under ``budget_tokens``.

Query parameters (``index.query(..., mode="graph", **params)``) are ``GraphParams``: each
overrides the ``HeterographConfig`` field of the same name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from graphstrata.core.budget import pack
from graphstrata.core.graph import csr_from_edges
from graphstrata.core.ppr import shallow_ppr, top_k_by_kind
from graphstrata.engine.component import ComponentView, Hit, Query
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.heterograph_graph import HETERO_EDGE_KINDS
from graphstrata.engine.heterograph_parse import normalize_name, parse_query_entities
from graphstrata.engine.params import ModeParams, QueryError, range_check
from graphstrata.engine.prompts import query_entities_request
from graphstrata.engine.search import DocNames, make_hits, vector_candidates
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import EdgeKind, NodeKind
from graphstrata.engine.vectors import VectorIndex

#: Kinds whose text a graph search may return (NodeRAG's filter; L belongs to the hierarchy).
RETRIEVABLE = np.asarray(
    [int(NodeKind.T), int(NodeKind.S), int(NodeKind.A), int(NodeKind.H), int(NodeKind.R)],
    dtype=np.uint8,
)
#: Vector entry points are searched among these kinds.
VECTOR_ENTRY_KINDS = (int(NodeKind.S), int(NodeKind.A), int(NodeKind.H))
_N, _O = int(NodeKind.N), int(NodeKind.O)
HETERO_KINDS = (NodeKind.T, NodeKind.S, NodeKind.N, NodeKind.R, NodeKind.A, NodeKind.H, NodeKind.O)


@dataclass(frozen=True)
class GraphParams(ModeParams):
    """Parameters of ``graph`` (NodeRAG search); each unset one takes the config's value.

    Parameters
    ----------
    entry_top_k:
        Vector entry points taken over S, A and H (default 10, NodeRAG's code).
    cross_top_k:
        Cross nodes kept per kind after PPR (default 10).
    relation_top_k:
        Relationship cross nodes kept (default 30).
    ppr_alpha:
        Restart probability of the shallow PPR, in [0, 1] (default 0.5, NodeRAG §2.5).
    ppr_iters:
        PPR steps t (default 2).
    exact_match_weight:
        Personalization weight of an exact entity/title match entry point (default 1.0).
    vector_match_weight:
        Personalization weight of a vector entry point (default 1.0).
    rank:
        ``score`` (PPR score order, the default) or ``entries_first`` (entry points before
        cross nodes, each by score).
    """

    modes: ClassVar[tuple[str, ...]] = ("graph",)
    entry_top_k: int | None = None
    cross_top_k: int | None = None
    relation_top_k: int | None = None
    ppr_alpha: float | None = None
    ppr_iters: int | None = None
    exact_match_weight: float | None = None
    vector_match_weight: float | None = None
    rank: Literal["score", "entries_first"] | None = None

    def check(self) -> None:
        for name in ("entry_top_k", "cross_top_k", "relation_top_k", "ppr_iters"):
            range_check("graph", name, getattr(self, name), 0, 1_000_000)
        range_check("graph", "ppr_alpha", self.ppr_alpha, 0.0, 1.0)
        for name in ("exact_match_weight", "vector_match_weight"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise QueryError(f"graph: {name} must be >= 0, got {value}")


def _sorted_links(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A link table sorted by source position, for range lookups by ``searchsorted``."""
    order = np.argsort(src, kind="stable")
    return src[order], dst[order]


def _follow(
    sorted_src: np.ndarray, dst: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(targets, origins)``: every link leaving ``positions``, with the position it left."""
    lo = np.searchsorted(sorted_src, positions, side="left")
    hi = np.searchsorted(sorted_src, positions, side="right")
    counts = hi - lo
    if counts.sum() == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty
    idx = np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)])
    return dst[idx].astype(np.int64), np.repeat(positions, counts).astype(np.int64)


class HeterographView(ComponentView):
    """Per-version search structures of the heterograph."""

    def __init__(self, snapshot: Snapshot, vectors: VectorIndex, config: IndexConfig):
        self.snapshot = snapshot
        self.vectors = vectors
        self.cfg = config.heterograph
        self.doc_names = DocNames(snapshot)
        nodes = snapshot.nodes
        self.ids = nodes.ids
        self.kinds = nodes.kind
        n = int(self.ids.shape[0])
        table = snapshot.edges
        if table.num_rows:
            kind = table.column("kind").to_numpy()
            sel = np.isin(kind, np.asarray(HETERO_EDGE_KINDS, dtype=np.uint8))
            src = np.searchsorted(self.ids, table.column("src").to_numpy()[sel])
            dst = np.searchsorted(self.ids, table.column("dst").to_numpy()[sel])
            weight = table.column("weight").to_numpy()[sel].astype(np.float32)
            kind = kind[sel]
        else:
            src = dst = np.zeros(0, np.int64)
            weight = np.zeros(0, np.float32)
            kind = np.zeros(0, np.uint8)
        self.indptr, self.indices, self.weights = csr_from_edges(
            src.astype(np.int64), dst.astype(np.int64), weight, n
        )
        self.n_edges = int(src.shape[0])
        self.names = self._name_index()
        attr = kind == int(EdgeKind.ENTITY_ATTRIBUTE)  # N -> A
        self._attr_src, self._attr_dst = _sorted_links(src[attr], dst[attr])
        title = kind == int(EdgeKind.ELEMENT_TITLE)  # H -> O, looked up from O
        self._title_src, self._title_dst = _sorted_links(dst[title], src[title])

    def _name_index(self) -> dict[str, np.ndarray]:
        """Normalized entity/title name -> dense positions (built once per version)."""
        index: dict[str, list[int]] = {}
        pos = np.nonzero(np.isin(self.kinds, np.asarray([_N, _O], dtype=np.uint8)))[0]
        texts = self.snapshot.nodes.texts
        for p in pos.tolist():
            key = normalize_name(texts[p])
            if key:
                index.setdefault(key, []).append(p)
        return {k: np.asarray(v, dtype=np.int64) for k, v in index.items()}

    # ------------------------------------------------------------------ search
    def search(self, mode: str, query: Query) -> list[Hit]:
        params = query.params
        assert isinstance(params, GraphParams)
        cfg = self.cfg
        names = self._query_entities(query)
        matched = [self.names[k] for k in (normalize_name(n) for n in names) if k in self.names]
        exact = np.unique(np.concatenate(matched)) if matched else np.zeros(0, np.int64)
        entry_k = int(params.resolve("entry_top_k", cfg.entry_top_k))
        vec_ids, _ = vector_candidates(self.vectors, query, VECTOR_ENTRY_KINDS, entry_k)
        vec = self._positions(vec_ids)
        seeds, seed_weights = self._seeds(
            exact,
            vec,
            float(params.resolve("exact_match_weight", cfg.exact_match_weight)),
            float(params.resolve("vector_match_weight", cfg.vector_match_weight)),
        )
        info: dict[str, Any] = {
            "query_entities": len(names),
            "matched_entities": len(matched),
            "entry_nodes": int(seeds.size),
        }
        hits = self._retrieve(seeds, seed_weights, query, info)
        query.report.update(info)
        return hits

    def _positions(self, ids: np.ndarray) -> np.ndarray:
        """Dense positions of the live ``ids`` (others dropped)."""
        if ids.size == 0 or self.ids.size == 0:
            return np.zeros(0, np.int64)
        pos = np.minimum(np.searchsorted(self.ids, ids), self.ids.size - 1)
        return pos[self.ids[pos] == ids].astype(np.int64)

    def _query_entities(self, query: Query) -> list[str]:
        if query.llm is None:
            return []
        (answer,) = query.llm.complete("query_entities", [query_entities_request(query.text)])
        return parse_query_entities(answer.text)

    @staticmethod
    def _seeds(
        exact: np.ndarray, vec: np.ndarray, w_exact: float, w_vec: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Entry points and their personalization weights (a node in both sets gets both)."""
        seeds = np.concatenate([exact, vec]).astype(np.int64)
        weights = np.concatenate(
            [np.full(exact.size, w_exact, np.float64), np.full(vec.size, w_vec, np.float64)]
        )
        if seeds.size == 0:
            return seeds, weights
        uniq, inverse = np.unique(seeds, return_inverse=True)
        merged = np.zeros(uniq.size, np.float64)
        np.add.at(merged, inverse, weights)
        keep = merged > 0
        return uniq[keep], merged[keep]

    def cross_nodes(
        self, seeds: np.ndarray, seed_weights: np.ndarray, params: GraphParams
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Shallow PPR from the seeds; returns (touched, scores, cross nodes)."""
        cfg = self.cfg
        if seeds.size == 0:
            empty = np.zeros(0, np.int64)
            return empty, np.zeros(0, np.float64), empty
        touched, scores = shallow_ppr(
            self.indptr,
            self.indices,
            self.weights,
            seeds,
            seed_weights,
            alpha=float(params.resolve("ppr_alpha", cfg.ppr_alpha)),
            iters=int(params.resolve("ppr_iters", cfg.ppr_iters)),
        )
        k = int(params.resolve("cross_top_k", cfg.cross_top_k))
        k_per_kind = {int(kind): k for kind in HETERO_KINDS}  # L nodes never are cross nodes
        k_per_kind[int(NodeKind.R)] = int(params.resolve("relation_top_k", cfg.relation_top_k))
        cross = top_k_by_kind(touched, scores, self.kinds[touched], k_per_kind)
        return np.asarray(touched), np.asarray(scores, np.float64), np.asarray(cross, np.int64)

    def _retrieve(
        self, seeds: np.ndarray, seed_weights: np.ndarray, query: Query, info: dict[str, Any]
    ) -> list[Hit]:
        params = query.params
        assert isinstance(params, GraphParams)
        touched, scores, cross = self.cross_nodes(seeds, seed_weights, params)
        info["touched_nodes"] = int(touched.size)
        info["cross_nodes"] = int(cross.size)
        if seeds.size == 0:
            return []
        score = np.zeros(self.ids.shape[0], np.float64)
        score[touched] = scores
        picked = np.unique(np.concatenate([seeds, cross]))
        kinds = self.kinds[picked]
        # An entity contributes its attributes and a title its element, each at its own
        # score or its entity's / title's, whichever is higher.
        via_n, from_n = _follow(self._attr_src, self._attr_dst, picked[kinds == _N])
        via_o, from_o = _follow(self._title_src, self._title_dst, picked[kinds == _O])
        linked = np.concatenate([via_n, via_o])
        np.maximum.at(score, linked, score[np.concatenate([from_n, from_o])])
        candidates = np.unique(np.concatenate([picked, linked]))
        candidates = candidates[np.isin(self.kinds[candidates], RETRIEVABLE)]
        info["retrievable_candidates"] = int(candidates.size)
        if candidates.size == 0:
            return []
        rank = params.resolve("rank", "score")
        if rank == "entries_first":  # entry points (and what they map to), then cross nodes
            entry = np.isin(candidates, seeds) | np.isin(
                candidates, linked[np.isin(np.concatenate([from_n, from_o]), seeds)]
            )
            order = np.lexsort((-score[candidates], ~entry))
        elif rank == "score":
            order = np.argsort(-score[candidates], kind="stable")
        else:
            raise ValueError(f"unknown rank {rank!r}; expected 'score' or 'entries_first'")
        ranked = candidates[order]
        tokens = self.snapshot.nodes.tokens[ranked]
        chosen = pack(score[ranked], tokens, int(query.budget_tokens))
        return make_hits(
            self.snapshot, self.doc_names, self.ids[ranked[chosen]], score[ranked[chosen]]
        )
