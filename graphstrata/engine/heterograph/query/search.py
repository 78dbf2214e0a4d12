"""``graph`` search over the heterograph: NodeRAG's dual search (§2.5, Appendix C.4) with
BM25 entry points, HippoRAG 2's passages in the walk and a second hop (docs/architecture.md,
"Search modes and parameters").

Per committed version the view builds, once: the CSR of the heterograph's edges (node ids
mapped to dense positions of the sorted node table; semantic edges scaled by
``semantic_edge_weight``) plus *title links* between an entity and the chunks of the
document titled with its name (``title_edge_weight``); a dict from normalized entity,
element-title and document-title names to their nodes; the number of semantic units that
mention each entity; and the chunk -> unit, unit -> entity, entity -> attribute and title
-> element link tables. BM25 is the engine's ``SparseIndex`` (per-kind parts built lazily,
shared with the other sparse views of the version through the engine's state, which
advances them per commit). A query then

1. **exact entry points**: extracts its entities (LLM task ``query_entities``; rules for
   the extractive backend) and, with ``match_query_ngrams``, every capitalized word n-gram
   of the question that is a known name; looks them up among entity names, element titles
   and document titles (dict lookups, no name scan; a document title seeds its chunks).
   An entity weighs ``1 / ln(1 + units mentioning it)``: HippoRAG 2 divides an entity's
   weight by the passages that contain it, since a name every article mentions says little;
2. **dense entry points**: the vector top-``entry_top_k`` over S, A and H (NodeRAG) and,
   as many, over T (HippoRAG 2 seeds every passage by its dense score);
3. **sparse entry points**: the BM25 top-k of each kind of ``sparse_kinds``, k in proportion
   to the budget (``sparse_top_k`` at 2,000 tokens; ``ranking.sparse_entries``);
4. **seeds**: each group gets its share of the restart mass (``exact_match_weight``,
   ``vector_match_weight``, ``sparse_match_weight``, normalized to sum 1; a group's share
   is split evenly over its lists); inside a list a node weighs its min-max normalized
   score, so a chunk or unit found by both retrievers is seeded by its fused score;
5. **walk**: shallow PPR (``ppr_alpha``, ``ppr_iters``) from the seeds, touching only their
   t-hop neighbourhood (``core.ppr.shallow_ppr``), where a node passes its mass on only
   above ``ppr_epsilon`` per unit of its row weight (a hub reached with little mass stops
   it; decision 0039);
6. **second hop** (``bridge_weight``): the ``bridge_sources`` best chunks and units of the
   walk name the entities that lead on (mentioned by 2 to ``bridge_max_units`` units, not
   matched by the question); a second walk adds them to the seeds, so the article about the
   bridge entity competes with the first hop on one scale;
7. **rank**: every touched chunk and unit, and the seeds and cross nodes (top
   ``cross_top_k`` per kind, ``relation_top_k`` relationships) of the other retrievable
   kinds, an entity contributing its attributes and a title its element (N and O text is
   never returned), by PPR score / tokens ** ``token_exponent`` (a chunk holds several
   units' worth of facts for several units' worth of tokens);
8. **pack** (``ranking.pack_ranked``): chunks alone first into ``text_share`` of the budget, then
   everything; a unit whose chunk is packed is skipped and a chunk packed after its units
   replaces them (S text is inside T); attributes, elements and relationships together
   take at most ``structured_share`` of the budget.

Hits come back by descending ranking score. Query parameters (``index.query(...,
mode="graph", **params)``) are ``GraphParams``: the query fields of ``HeterographConfig``
(each overrides the field of its name; the search reads ``query.params.over(self.cfg)``),
then ``GraphOptions`` (``rank``, ``trace``); the defaults and the measurements behind them
are in ``HeterographConfig`` and ``benchmarks/results/graph_tuning.md``. ``trace=True`` adds
the entry points and the edges that carried the walk's mass to the report (``trace``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphstrata.core import sets
from graphstrata.core.graph import merge_edges
from graphstrata.core.ids import contains
from graphstrata.core.layered import LayeredCSR
from graphstrata.core.topk import top_k_by_kind
from graphstrata.engine.component import ComponentView, Hit, Query
from graphstrata.engine.config import HeterographConfig, IndexConfig
from graphstrata.engine.fields import setting
from graphstrata.engine.filtered import restricted_sparse, restricted_vectors
from graphstrata.engine.heterograph.parse import (
    normalize_name,
    parse_query_entities,
    query_name_candidates,
)
from graphstrata.engine.heterograph.query.ranking import (
    bridge_seeds,
    containers,
    coverage_ranked,
    kinds_of_letters,
    layered_walk,
    maximal_keys,
    merge_seeds,
    minmax,
    mixed_walks,
    pack_ranked,
    pair_kinds,
    reordered,
    seed_matches,
    sparse_entries,
    walk_distribution,
    walk_edges,
)
from graphstrata.engine.heterograph.schema import (
    HETERO_KINDS,
    HETERO_RETRIEVABLE,
    VECTOR_ENTRY_KINDS,
    N,
    O,
    S,
    T,
)
from graphstrata.engine.heterograph.state.links import SlotLinks, StructuralLinks
from graphstrata.engine.heterograph.state.names import NameIndex
from graphstrata.engine.heterograph.state.walk_graph import WalkEdges, walked_edges
from graphstrata.engine.modes import DocNames, make_hits, vector_candidates
from graphstrata.engine.modes.packing import record_ranked
from graphstrata.engine.params import params_from
from graphstrata.engine.prompts import query_entities_request
from graphstrata.engine.sparse.analysis import SparseQuery, WeightedTerms
from graphstrata.engine.sparse.index import SparseIndex
from graphstrata.engine.store import Snapshot
from graphstrata.engine.types import NodeKind, kind_table
from graphstrata.engine.vectors import VectorIndex

#: The retrievable kinds other than chunks and units (A, H, R): a search returns them as
#: seeds, cross nodes and what those lead to, and they take at most ``structured_share``.
STRUCTURED: tuple[int, ...] = tuple(k for k in HETERO_RETRIEVABLE if k not in (T, S))
STRUCTURED_TABLE = kind_table(STRUCTURED)
#: Kinds searched with BM25 for sparse entry points (the retrievable ones).
SPARSE_KINDS: tuple[int, ...] = tuple(int(k) for k in HETERO_RETRIEVABLE)
_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_F = np.zeros(0, np.float64)
#: Walk edges traced per node (``trace``): the few that carried most of its mass.
TRACE_EDGES = 3
#: Steps traced back from a returned node: the default walk has 2 (``ppr_iters``), so 2
#: reach its seeds.
TRACE_LEVELS = 2


@dataclass(frozen=True)
class GraphOptions:
    """Options of a ``graph`` query that no index records (query parameters only)."""

    rank: str = setting(
        "score",
        choices=("score", "entries_first"),
        query=True,
        doc="``score`` (ranking score order, the default) or ``entries_first`` (entry points, "
        "and what they map to, before the nodes the walk reached, each by score).",
    )
    trace: bool = setting(
        False,
        query=True,
        doc="Add ``trace`` to the report: the walk's entry points and the edges that carried "
        "its mass to the returned nodes (HeterographView.trace; default false: nothing is "
        "computed).",
    )


#: Parameters of ``graph``: the query fields of ``HeterographConfig``, then ``GraphOptions``.
GraphParams = params_from(
    "GraphParams",
    HeterographConfig,
    GraphOptions,
    doc="Parameters of ``graph`` (NodeRAG search); each unset one takes the config's value.",
)
#: The options of a query that sets none.
DEFAULT_OPTIONS = GraphOptions()


class HeterographView(ComponentView):
    """Per-version search structures of the heterograph.

    Parameters
    ----------
    snapshot:
        The committed version.
    vectors:
        Its vector index (vector entry points).
    config:
        The index configuration (``heterograph`` holds the search defaults).
    doc_names:
        The version's doc key -> doc_id names (one per version, from the engine).
    sparse:
        The version's BM25 index over the retrievable kinds (``EngineState.sparse``: its
        per-kind parts are shared with the other views of the version).
    """

    def __init__(
        self,
        snapshot: Snapshot,
        vectors: VectorIndex,
        config: IndexConfig,
        doc_names: DocNames,
        sparse: SparseIndex,
        names: NameIndex | None = None,
        stored: WalkEdges | None = None,
    ):
        self.snapshot = snapshot
        self.vectors = vectors
        self.cfg: HeterographConfig = config.heterograph
        self.doc_names = doc_names
        self.sparse = sparse
        #: Kinds whose BM25 top-k are entry points (``HeterographConfig.sparse_kinds``).
        self.sparse_kinds = kinds_of_letters(self.cfg.sparse_kinds, SPARSE_KINDS)
        nodes = snapshot.nodes
        self.ids = nodes.ids
        self.kinds = nodes.kind
        n = int(self.ids.shape[0])
        #: The stored edges the walk uses, and their CSR without title links (advanced by
        #: a commit).
        self.stored = stored if stored is not None else WalkEdges.build(snapshot, self.cfg)
        #: The typed links the search follows, on the walk's slots (``links``).
        self.links: StructuralLinks = self.stored.links
        # Slots are the positions until a write leaves a dead slot (then the walk's few
        # hundred thousand reached slots are mapped back: ~2 ms a query at 100k chunks).
        self._slots_are_positions = self.stored.csr.dead == 0 and self.stored.csr.n == n
        #: Names of entities, element titles and document titles (advanced by a commit).
        self.names = names if names is not None else NameIndex.build(snapshot)
        self._text_like = (self.kinds == np.uint8(T)) | (self.kinds == np.uint8(S))
        self._token_power: tuple[float, np.ndarray] | None = None
        t_src, t_dst = self._title_links()
        self.title_links = int(t_src.size)
        w_title = float(self.cfg.title_edge_weight)
        #: The walk's graph, on the stored CSR's slots (``WalkEdges``): the title links join
        #: its extra layer, so a version's links never copy the base.
        self.graph: LayeredCSR = self.stored.csr
        #: Row weights of ``graph`` (``WalkEdges.row_sums`` plus the title links).
        self.row_sums = self.stored.row_sums
        if w_title > 0 and t_src.size:
            slot = self.stored.slot_of_position
            self.row_sums = self.row_sums.copy()
            w32 = float(np.float32(w_title))  # the weight the CSR holds
            np.add.at(self.row_sums, slot[t_src], w32)
            np.add.at(self.row_sums, slot[t_dst], w32)
            extra = merge_edges(
                *self.graph.extra,
                slot[t_src],
                slot[t_dst],
                np.full(t_src.size, w_title, np.float32),
                self.graph.n,
            )
            self.graph = self.graph._replace(
                extra_indptr=extra[0], extra_indices=extra[1], extra_weights=extra[2]
            )

    # ------------------------------------------------------------------ structures
    def _slots(self, positions: np.ndarray) -> np.ndarray:
        """The walk's slots of ``positions``."""
        return positions if self._slots_are_positions else self.stored.slot_of_position[positions]

    def units_of(self, positions: np.ndarray) -> np.ndarray:
        """How many live units mention each of ``positions`` (int64)."""
        return self.links.units_of[self._slots(positions)]

    def chunk_of(self, positions: np.ndarray) -> np.ndarray:
        """The chunk position of each unit of ``positions`` (-1 for other kinds)."""
        chunk = self.links.chunk_of[self._slots(positions)]
        if self._slots_are_positions:
            return chunk
        return np.where(chunk >= 0, self.stored.position_of_slot[np.maximum(chunk, 0)], -1)

    def follow(self, links: SlotLinks, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(targets, origins)`` positions: every link of ``links`` leaving ``positions``
        to a live node, with the position it left."""
        if self._slots_are_positions:
            return links.follow(positions, None)
        targets, origins = links.follow(self.stored.slot_of_position[positions], self.graph.alive)
        position = self.stored.position_of_slot
        return position[targets], position[origins]

    def _title_links(self) -> tuple[np.ndarray, np.ndarray]:
        """(entity, chunk) pairs: an entity named like a document's title, and its chunks."""
        src: list[np.ndarray] = []
        dst: list[np.ndarray] = []
        titles = self.names.titles
        if not titles:
            return _EMPTY_I, _EMPTY_I
        kinds = self.kinds
        for key in sorted(self.names.shared):
            chunks = np.searchsorted(self.ids, titles[key]).astype(np.int64)
            positions = np.searchsorted(self.ids, self.names.names[key]).astype(np.int64)
            entities = positions[kinds[positions] == np.uint8(N)]
            if entities.size:
                src.append(np.repeat(entities, chunks.size))
                dst.append(np.tile(chunks, entities.size))
        if not src:
            return _EMPTY_I, _EMPTY_I
        return np.concatenate(src), np.concatenate(dst)

    # ------------------------------------------------------------------ search
    def search(self, mode: str, query: Query) -> list[Hit]:
        """``graph`` search: entry points, shallow PPR, chunks and structured nodes, packed.

        Adds ``query_entities``, ``matched_entities`` (of those), ``matched_names`` (further
        names found among the question's n-grams), ``exact_nodes``, ``vector_nodes``,
        ``sparse_nodes``, ``entry_nodes``, ``touched_nodes``, ``cross_nodes``,
        ``retrievable_candidates`` and ``text_nodes`` to ``query.report``.
        """
        cfg = query.params.over(self.cfg)
        options = query.params.over(DEFAULT_OPTIONS)
        names = self._query_entities(query)
        keys = list(dict.fromkeys(k for k in (normalize_name(n) for n in names) if k))
        matched = [k for k in keys if k in self.names]
        extra: list[str] = []
        if cfg.match_query_ngrams:
            known = [
                k for k in query_name_candidates(query.text) if k in self.names and k not in matched
            ]
            extra = [k for k in maximal_keys(known + matched) if k not in matched]
        exact, exact_w = self._exact_seeds(matched + extra)
        mask = query.allowed.mask() if query.allowed is not None else None
        if mask is not None:  # a metadata filter (``engine.filtered``: entry points allowed)
            exact, exact_w = exact[mask[exact]], exact_w[mask[exact]]
        vector = self._vector_lists(query, int(cfg.entry_top_k))
        k_sparse = sparse_entries(int(cfg.sparse_top_k), int(query.budget_tokens))
        terms = WeightedTerms.of(query.text)  # analyzed once: two kinds' lists, the coverage
        sparse = self._sparse_lists(terms, k_sparse, query)
        w_vec = float(cfg.vector_match_weight)
        w_sparse = float(cfg.sparse_match_weight)
        w_exact = float(cfg.exact_match_weight)
        labelled = [("exact", exact, exact_w, w_exact)]
        labelled += [("dense", p, w, w_vec / max(len(vector), 1)) for p, w in vector]
        labelled += [("sparse", p, w, w_sparse / max(len(sparse), 1)) for p, w in sparse]
        seeds, seed_weights = merge_seeds([g[1:] for g in labelled])
        info: dict[str, Any] = {
            "query_entities": len(names),
            "matched_entities": len(matched),
            "matched_names": len(extra),
            "exact_nodes": int(exact.size),
            "vector_nodes": int(sum(p.size for p, _ in vector)),
            "sparse_nodes": int(sum(p.size for p, _ in sparse)),
            "entry_nodes": int(seeds.size),
        }
        positions, chosen, walks = self._retrieve(
            seeds, seed_weights, query, terms, cfg, options.rank, info, exact, mask
        )
        if options.trace:
            info["trace"] = self.trace(positions, walks, labelled, cfg, mask)
        query.report.update(info)
        return make_hits(self.snapshot, self.doc_names, self.ids[positions], chosen)

    def _positions(self, ids: np.ndarray) -> np.ndarray:
        """Dense positions of the live ``ids`` (others dropped)."""
        return self._live_positions(ids)[0]

    def _live_positions(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Dense positions of the live ``ids`` (others dropped), and which ids are live."""
        if ids.size == 0 or self.ids.size == 0:
            return _EMPTY_I, np.zeros(ids.size, bool)
        pos = np.minimum(np.searchsorted(self.ids, ids), self.ids.size - 1)
        live = self.ids[pos] == ids
        return pos[live].astype(np.int64), live

    def _query_entities(self, query: Query) -> list[str]:
        if query.llm is None:
            return []
        (answer,) = query.llm.complete("query_entities", [query_entities_request(query.text)])
        return parse_query_entities(answer.text)

    def _exact_seeds(self, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Positions matched by ``keys`` and their weights: an entity weighs
        ``1 / ln(1 + units mentioning it)`` (at most 1 / ln 2), a title or a titled
        document's chunk 1 / ln 2 (the weight of an entity mentioned once)."""
        pos = [self.names.positions(k, self.ids) for k in keys]
        positions = np.concatenate(pos) if pos else _EMPTY_I
        if positions.size == 0:
            return _EMPTY_I, _EMPTY_F
        units = np.where(self.kinds[positions] == np.uint8(N), self.units_of(positions), 1)
        return positions, 1.0 / np.log1p(np.maximum(units, 1).astype(np.float64))

    def _vector_lists(self, query: Query, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Dense top-k over S/A/H and over T, as (positions, min-max normalized scores)."""
        if k <= 0:
            return []
        out = []
        vectors = restricted_vectors(self.vectors, query, self.snapshot)
        for kinds in (VECTOR_ENTRY_KINDS, (T,)):
            ids, scores = vector_candidates(vectors, query.vector, kinds, k)
            pos, live = self._live_positions(np.asarray(ids, np.int64))
            out.append((pos, minmax(np.asarray(scores, np.float64)[live])))
        return out

    def _sparse_lists(
        self, text: SparseQuery, k: int, query: Query | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """BM25 top-k of each retrievable kind, as (positions, min-max normalized scores)
        (restricted by ``query``'s filter)."""
        if k <= 0:
            return []
        out = []
        sparse = self.sparse if query is None else restricted_sparse(self.sparse, query)
        for kind in self.sparse_kinds:
            ids, scores = sparse.search(text, [kind], k)
            if ids.size:
                out.append((self._positions(ids), minmax(scores)))
        return out

    def walk(
        self,
        seeds: np.ndarray,
        seed_weights: np.ndarray,
        cfg: HeterographConfig,
        mask: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Shallow PPR from the seeds (``cfg.ppr_alpha``, ``cfg.ppr_iters``): (positions
        reached, their scores). ``mask`` (bool per position: a metadata filter) keeps the
        walk on the allowed nodes: the mass an edge would carry to another node is lost
        (the row weights stay the whole graph's, decision 0025)."""
        graph = self.restricted(mask)
        if mask is not None:
            keep = mask[seeds]
            seeds, seed_weights = seeds[keep], seed_weights[keep]
        if seeds.size == 0:
            return _EMPTY_I, _EMPTY_F
        same = self._slots_are_positions
        touched, scores = layered_walk(
            graph,
            self.row_sums,
            seeds if same else self.stored.slot_of_position[seeds],
            seed_weights,
            float(cfg.ppr_alpha),
            int(cfg.ppr_iters),
            float(cfg.ppr_epsilon),
        )
        positions = touched if same else self.stored.position_of_slot[touched]
        return positions, np.asarray(scores, np.float64)

    def restricted(self, mask: np.ndarray | None) -> LayeredCSR:
        """The walk's graph with only the positions of ``mask`` alive (a metadata filter;
        None: the whole graph)."""
        graph = self.graph
        if mask is None:
            return graph
        on_slots = mask if self._slots_are_positions else np.zeros(graph.n, bool)
        if not self._slots_are_positions:
            on_slots[self.stored.slot_of_position] = mask
        return graph._replace(alive=graph.alive & on_slots)

    def top_by_kind(
        self, touched: np.ndarray, scores: np.ndarray, cfg: HeterographConfig
    ) -> np.ndarray:
        """The cross nodes: the top ``cross_top_k`` of each kind (``relation_top_k`` R)."""
        if touched.size == 0:
            return _EMPTY_I
        k = int(cfg.cross_top_k)
        k_per_kind = {int(kind): k for kind in HETERO_KINDS}  # L nodes never are cross nodes
        k_per_kind[int(NodeKind.R)] = int(cfg.relation_top_k)
        return np.asarray(top_k_by_kind(touched, scores, self.kinds[touched], k_per_kind), np.int64)

    def cross_nodes(
        self, seeds: np.ndarray, seed_weights: np.ndarray, cfg: HeterographConfig
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Shallow PPR from the seeds, and the top nodes of each kind as cross nodes.

        Parameters
        ----------
        seeds, seed_weights:
            Entry points (dense positions) and their personalization weights.
        cfg:
            The settings read: ``ppr_alpha``, ``ppr_iters``, ``cross_top_k`` and
            ``relation_top_k`` (the view's ``cfg`` with a query's values in place).

        Returns
        -------
        touched, scores, cross
            Positions reached, their PPR scores, and the cross nodes (positions).
        """
        touched, scores = self.walk(seeds, seed_weights, cfg)
        return touched, scores, self.top_by_kind(touched, scores, cfg)

    def bridge_entities(
        self,
        sources: np.ndarray,
        strength: np.ndarray,
        exclude: np.ndarray,
        max_units: int = 1 << 30,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The entities that lead on from ``sources`` (chunks and units), as seeds
        (``ranking.bridge_seeds``).

        The bridge of a multi-hop question is named in the first hop's text (the designer in
        the bridge's article) and mentioned again elsewhere, but not everywhere.
        """
        return bridge_seeds(
            self.kinds,
            T,
            lambda p: self.follow(self.links.chunk_units, p),
            lambda p: self.follow(self.links.unit_entities, p),
            self.units_of,
            sources,
            strength,
            exclude,
            max_units,
        )

    def _ranked_text(
        self, touched: np.ndarray, scores: np.ndarray, gamma: float, limit: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best touched chunks and units by PPR score / tokens ** gamma, best first."""
        keep = self._text_like[touched] & (scores > 0)
        pos, sc = touched[keep], scores[keep]
        density = sc / self.token_power(gamma)[pos]
        if pos.size > limit:
            top = np.argpartition(-density, limit - 1)[:limit]
            pos, density = pos[top], density[top]
        order = np.argsort(-density, kind="stable")
        return pos[order], density[order]

    def _passages(self, ranked: np.ndarray) -> np.ndarray:
        """The chunks of ranked chunks and units (a unit stands for its chunk), each at its
        first place: the ``graph`` mode's ranked passages before packing."""
        chunk = self.chunk_of(ranked)
        passages = np.where(chunk >= 0, chunk, ranked)
        _, first = np.unique(passages, return_index=True)
        return passages[np.sort(first)]

    def token_power(self, gamma: float) -> np.ndarray:
        """``max(tokens, 1) ** gamma`` of every position (cached for the last gamma)."""
        cached = self._token_power
        if cached is None or cached[0] != gamma:
            tokens = np.maximum(self.snapshot.nodes.tokens, 1).astype(np.float64)
            cached = (gamma, np.power(tokens, gamma))
            self._token_power = cached
        return cached[1]

    def _retrieve(
        self,
        seeds: np.ndarray,
        seed_weights: np.ndarray,
        query: Query,
        terms: SparseQuery,
        cfg: HeterographConfig,
        rank: str,
        info: dict[str, Any],
        exact: np.ndarray = _EMPTY_I,
        mask: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray, float]]]:
        """(positions returned, their ranking scores, the walks run: (seeds, weights, share)),
        with the settings of ``cfg`` (the query's) and the order ``rank``; ``mask``: the
        positions a metadata filter allows (the walks stay on them); ``terms``: the query's
        BM25 terms (``WeightedTerms.of`` its text), for the term coverage."""
        touched, scores = self.walk(seeds, seed_weights, cfg, mask)
        walks = [(seeds, seed_weights, 1.0)]
        gamma = float(cfg.token_exponent)
        limit = int(cfg.max_candidates)
        score = np.zeros(self.ids.shape[0], np.float64)
        score[touched] = scores
        # The next hop: the entities of the best chunks and units seed a second walk. PPR is
        # linear in its seeds, so the walk from all seeds plus these equals the first walk
        # plus ``bridge_weight`` times a walk from these alone (each walk's seeds sum to 1).
        w_bridge = float(cfg.bridge_weight)
        n_sources = int(cfg.bridge_sources)
        info["bridge_nodes"] = 0
        if w_bridge > 0 and n_sources > 0 and touched.size:
            text, text_density = self._ranked_text(touched, scores, gamma, n_sources)
            entities, weights = self.bridge_entities(
                text,
                text_density,
                exact,
                int(cfg.bridge_max_units),
            )
            if mask is not None:  # only allowed entities lead on (and are traced)
                entities, weights = entities[mask[entities]], weights[mask[entities]]
            info["bridge_nodes"] = int(entities.size)
            if entities.size:
                walks.append((entities, weights, w_bridge))
                b_touched, b_scores = self.walk(entities, weights, cfg, mask)
                touched, scores = mixed_walks(score, touched, b_touched, b_scores, w_bridge)
        cross = self.top_by_kind(touched, scores, cfg)
        info["touched_nodes"] = int(touched.size)
        info["cross_nodes"] = int(cross.size)
        if seeds.size == 0:
            info["retrievable_candidates"] = info["text_nodes"] = 0
            return _EMPTY_I, _EMPTY_F, walks
        tokens_of = self.snapshot.nodes.tokens
        text, text_density = self._ranked_text(touched, scores, gamma, limit)
        record_ranked(info, self.ids[self._passages(text)])
        # Other kinds: the seeds and cross nodes; an entity contributes its attributes and a
        # title its element, each at its own score or its entity's / title's, whichever is
        # higher.
        picked = sets.unique(np.concatenate([seeds, cross]))
        kinds = self.kinds[picked]
        via_n, from_n = self.follow(self.links.entity_attributes, picked[kinds == N])
        via_o, from_o = self.follow(self.links.title_elements, picked[kinds == O])
        linked = np.concatenate([via_n, via_o])
        np.maximum.at(score, linked, score[np.concatenate([from_n, from_o])])
        other = sets.unique(np.concatenate([picked, linked]))
        other_kinds = self.kinds[other]
        other = other[
            STRUCTURED_TABLE[other_kinds]
            & (score[other] > 0)
            & (True if mask is None else mask[other])
        ]
        other_density = score[other] / self.token_power(gamma)[other]
        # What the question names leads: the attributes of its matched entities and the
        # elements of its matched titles (NodeRAG returns them with their entity / title).
        link_from = np.concatenate([from_n, from_o])
        named = linked[contains(sets.unique(exact), link_from)]
        if named.size and other.size:
            top = max(float(other_density.max()), float(text_density.max(initial=0.0)))
            lead = contains(sets.unique(named), other)
            other_density = np.where(lead, np.maximum(other_density, top), other_density)
        cand = np.concatenate([text, other])
        density = np.concatenate([text_density, other_density])
        info["retrievable_candidates"] = int(cand.size)
        if rank == "entries_first":  # entry points (and what they map to), then the rest
            seeded = sets.unique(seeds)
            entry = contains(seeded, cand) | contains(
                sets.unique(linked[contains(seeded, link_from)]), cand
            )
            order = np.lexsort((-density, ~entry))
        elif rank == "score":
            order = np.argsort(-density, kind="stable")
        else:
            raise ValueError(f"unknown rank {rank!r}; expected 'score' or 'entries_first'")
        cand, density = cand[order], density[order]
        budget = int(query.budget_tokens)
        inside = containers(cand, self.chunk_of(cand))  # a unit's chunk among the candidates
        if rank == "score" and cfg.term_decay < 1.0:  # query-term coverage
            takes = (cfg.structured_share > 0) | ~STRUCTURED_TABLE[self.kinds[cand]]
            order, density = coverage_ranked(
                cand, density, tokens_of[cand] * takes, inside,
                lambda p: self.sparse.term_scores(terms, self.ids[p], self.sparse_kinds),
                float(cfg.term_decay), budget,
            )  # fmt: skip
            cand, inside = cand[order], reordered(order, inside)
        packed = pack_ranked(
            cand, inside, tokens_of, self.kinds, T, STRUCTURED_TABLE, budget,
            float(cfg.structured_share), float(cfg.text_share),
        )  # fmt: skip
        order = packed[np.argsort(-density[packed], kind="stable")]
        positions, chosen = cand[order], density[order]
        info["text_nodes"] = int(np.count_nonzero(self.kinds[positions] == np.uint8(T)))
        return positions, chosen, walks

    def trace(
        self,
        returned: np.ndarray,
        walks: list[tuple[np.ndarray, np.ndarray, float]],
        groups: list[tuple[str, np.ndarray, np.ndarray, float]],
        cfg: HeterographConfig,
        mask: np.ndarray | None = None,
    ) -> dict[str, Any]:
        """Why the walk reached the returned nodes: its entry points and the edges it used.

        ``entry_points``: every seed (``id``, ``kind`` letter, ``match``: the entry groups
        that found it, ``exact`` / ``dense`` / ``sparse`` in ``groups`` or ``bridge`` for a
        seed of the second walk, and ``weight``: its share of the restart mass of both
        walks, summing to 1), heaviest first. ``walk_edges``: for each returned node the
        ``TRACE_EDGES`` edges that carried it most mass in the walk's last step, then, for
        their sources that are not seeds, theirs in the step before, up to ``TRACE_LEVELS``
        steps (``ranking.walk_edges``, exact for the mixture of both walks): ``src`` (where
        the mass came from), ``dst``, ``kind`` (the heaviest stored edge's ``EdgeKind``,
        ``ranking.TITLE_LINK`` = 0 for a title link), ``weight`` (the walk's), ``flow`` (the
        mass carried) and ``level``; numbers to 6 significant digits (a flow is never
        rounded to 0). Costs two to three more walks; only on request. ``mask``: the
        positions a metadata filter kept the walks on.
        """
        graph = self.restricted(mask)
        alpha = float(cfg.ppr_alpha)
        iters = int(cfg.ppr_iters)
        # The walks run on slots (``WalkEdges``); what is reported is on positions.
        slot, position = self.stored.slot_of_position, self.stored.position_of_slot
        on_slots = [(slot[seeds], w, share) for seeds, w, share in walks]
        restart = walk_distribution(graph, self.row_sums, on_slots, alpha, 0)
        levels = range(iters - 1, max(iters - 1 - TRACE_LEVELS, -1), -1)
        eps = float(cfg.ppr_epsilon)  # mass under the push threshold carried nothing
        earlier = [
            walk_distribution(graph, self.row_sums, on_slots, alpha, t, eps, passed=True)
            for t in levels
        ]
        seed_slots = np.flatnonzero(restart > 0)
        src, dst, w, flow, level = walk_edges(
            graph, self.row_sums, earlier, alpha, slot[returned], seed_slots, TRACE_EDGES
        )
        src, dst = position[src], position[dst]
        restart = restart[slot]
        seeds = np.flatnonzero(restart > 0)
        found = seed_matches([*groups, *(("bridge", *walk) for walk in walks[1:])])
        seeds = seeds[np.argsort(-restart[seeds], kind="stable")]
        entry = [
            {"id": int(self.ids[p]), "kind": NodeKind(int(self.kinds[p])).letter,
             "match": found.get(p, []), "weight": float(f"{restart[p]:.6g}")}
            for p in seeds.tolist()
        ]  # fmt: skip
        columns = (
            self.ids[src],
            self.ids[dst],
            pair_kinds(*walked_edges(self.snapshot, self.cfg), src, dst),
            w,
            flow,
        )
        edges = [
            {"src": int(a), "dst": int(b), "kind": int(k), "weight": float(f"{x:.6g}"),
             "flow": float(f"{f:.6g}"), "level": int(lv)}
            for a, b, k, x, f, lv in zip(*columns, level, strict=True)
        ]  # fmt: skip
        return {"entry_points": entry, "walk_edges": edges}
