"""Typed configuration. Defaults come from the papers (EraRAG, NodeRAG).

Every config is a dataclass that round-trips through a plain dict, so the index manifest can
record exactly what built it. A field made with ``setting`` declares its range or choices
(checked by ``validate``, ``engine.fields``) and, with ``query=True``, that a query may
override it: the search modes' parameters are those fields (``engine.params.params_from``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from graphstrata.engine.extraction import YieldConfig
from graphstrata.engine.fields import check_fields, setting
from graphstrata.engine.prompts import PromptConfig

T = TypeVar("T")

#: The values of ``FusionConfig.method``.
FUSION_METHODS = ("rrf", "score", "dense", "sparse")
#: The largest count of a setting that does not multiply a query's work (a threshold such as
#: ``bridge_max_units``): beyond every index's size.
MAX_COUNT = 1_000_000
#: The most entry points, kept nodes or sources a graph query may ask for per kind. Each one
#: costs a vector or BM25 candidate and a seed of the walk; the defaults are 5 to 30 and no
#: tuning run went past 50, so 1,000 admits every useful value while a maximal request stays
#: cheap (issue 51: a 30-document index answered a graph query with all five at 1,000 in
#: about the time of the defaults, while 1,000,000 made each query allocate million-row
#: candidate arrays per kind).
MAX_QUERY_K = 1_000
#: The most steps of the shallow PPR. The walk's cost grows linearly with its steps (issue 51
#: measured 0.057 ms per step on a 30-document index, 0.4 ms on the probe's; 1,000,000 steps
#: held a search thread for minutes). With restart probability ``ppr_alpha`` the mass still
#: moving after t steps is (1 - alpha)^t: 100 steps leave 8e-31 of it at the default 0.5 and
#: 2.7e-5 at 0.1, so steps past 100 change no ranking worth having.
MAX_PPR_ITERS = 100
#: The most feedback documents of the fused modes' second dense round (default 1; measured
#: up to 2): each one is a vector read and averaged into the query.
MAX_FEEDBACK_DOCS = 100


class ConfigError(ValueError):
    """A configuration value is invalid or incompatible with the index."""


@dataclass
class ChunkingConfig:
    """Token-window chunking.

    The papers use 1,200-token chunks (EraRAG, overlap 100) and 1,048 (NodeRAG); those suit
    8k-context embedders. all-MiniLM-L6-v2 reads at most 256 word pieces and silently drops
    the rest, so the default is 200 cl100k tokens with 20 overlap (~230 word pieces).
    """

    chunk_tokens: int = setting(200, ge=8)
    overlap_tokens: int = 20
    encoding: str = "cl100k_base"

    def validate(self) -> None:
        """Raise ``ConfigError`` on an invalid value."""
        check_fields(self, "chunking", ConfigError)
        if not 0 <= self.overlap_tokens < self.chunk_tokens:
            raise ConfigError(
                f"overlap_tokens must be in [0, chunk_tokens), got {self.overlap_tokens}"
            )


@dataclass
class IngestConfig:
    """Limits on what a document may be. A violating batch is rejected whole."""

    #: Larger documents are refused with a clear error (split them first). 4 MiB of UTF-8 is
    #: ~1M tokens, i.e. ~5,000 chunks: ~3 minutes of CPU embedding for a single document.
    max_doc_bytes: int = 4 * 1024 * 1024
    max_doc_id_chars: int = 1024


@dataclass
class HierarchyConfig:
    """EraRAG hierarchy (paper §III-C; docs/architecture.md, "Hierarchy")."""

    enabled: bool = True
    #: Hyperplanes for the LSH codes; 16 suits 384-d embeddings (paper: 16-20).
    n_bits: int = setting(16, ge=1, le=64)
    seed: int = 20250625
    s_min: int = setting(8, ge=1)
    s_max: int = 12
    max_layers: int = 5
    summary_tokens: int = 100
    bias_share: float = setting(
        0.7,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Share p of the budget taken first from chunks (detailed) or summaries "
        "(summarized), in [0, 1].",
    )
    #: Insert policy: new items that fill whole segments among themselves form new segments
    #: and only the rest join their Hamming-nearest segment (True), or every new item joins its
    #: nearest segment as in the paper's Algorithm 3 (False). Measured on MultiHop-RAG
    #: (benchmarks/results/update.md): a 5% step costs 0.05-0.09 of a rebuild's tokens with
    #: True, 0.49-0.69 with False.
    group_new_first: bool = True
    #: Documents a summary cites at most (0: every document below it): those most of its
    #: members cite, ties by older document (smaller key). An upper summary of a large
    #: corpus sits above nearly every document (117k doc keys per top summary of the
    #: 1M-chunk scale index), and each write rewrites dozens of such rows, re-parented under
    #: a new summary (1.08 MB per one-document insert; 18M doc keys decoded when opening
    #: its write segments, 0.29 s; issue 17). LightRAG caps the sources of an entity at 300
    #: (``DEFAULT_MAX_SOURCE_IDS_PER_ENTITY``); GraphRAG's answer prompts list at most 5
    #: record ids per reference and "+more".
    summary_docs_max: int = setting(300, ge=0)

    def validate(self) -> None:
        """Raise ``ConfigError`` on an invalid value."""
        check_fields(self, "hierarchy", ConfigError)
        if self.s_min > self.s_max:
            raise ConfigError(f"need 1 <= s_min <= s_max, got [{self.s_min}, {self.s_max}]")


@dataclass
class HeterographConfig:
    """NodeRAG heterograph (paper §2, Appendix C; build defaults from its public code).

    The ``graph`` search defaults (from ``entry_top_k`` on) were chosen with
    ``benchmarks/quality/graph_tuning.py`` on HotpotQA (994 passages, 100 questions) and a
    150-document MultiHop-RAG subset (274 questions), then checked on all of MultiHop-RAG
    (609 documents, 500 questions), CPU defaults, 2,000-token budget; the numbers are in
    ``benchmarks/results/graph_tuning-*.md`` ("fact R" = gold facts verbatim in a retrieved
    node, "HP" / "MH150" / "MH" the three sets). Each field declared with ``query=True`` is
    also a ``graph`` query parameter (``GraphParams``); the ones the view builds its walk from
    (``semantic_edge_weight``, ``title_edge_weight``, ``sparse_kinds``) and
    ``max_candidates`` are not.
    """

    enabled: bool = True
    seed: int = 20250402
    #: Betweenness is sampled from this many sources (NodeRAG: networkx k=10).
    betweenness_sources: int = setting(10, ge=0)
    #: Semantic-neighbour edges per embedded node.
    semantic_neighbours: int = setting(16, ge=0)
    #: Below this many embedded T/S/A/H nodes (committed and new) semantic neighbours are
    #: exact (all pairs, deterministic); above, the new nodes query the committed usearch
    #: index and, when they are this many or more themselves (a build), one another through
    #: their k-NN graph (``core.nndescent``). Measured on 2 shared cores, hashing embeddings
    #: of the synthetic corpus (``benchmarks/scale/scale.py ann``, ``benchmarks/results/scale.md``):
    #: exact all pairs 64 s at 50k vectors and ~1,090 s at 200k (N^2); the k-NN graph
    #: 24.7 s and 118 s (recall@16 0.83 and 0.66), HNSW built and searched with every vector
    #: 74 s and 552 s (recall 0.83 and 0.72). The retrieval sets stay exact.
    semantic_exact_below: int = setting(50_000, ge=0)
    #: Regenerate a community's H/O only when its membership changed by more than this share.
    community_change_share: float = setting(0.2, ge=0, le=1)
    #: Re-select the important entities (k-core and betweenness over the whole G1) when G1
    #: has grown or shrunk by this share since the last selection; in between, the entities
    #: with attributes stay the important ones (their attributes are still refreshed when
    #: their facts change). 0: on every write, as a static build. A build from empty always
    #: selects, so the retrieval benchmarks' indexes are unchanged by it.
    importance_refresh_share: float = setting(0.05, ge=0, le=1)
    #: Re-run Leiden only over the nodes a write touched, then the neighbours of those that
    #: moved, the rest of their communities contracted and far communities left out
    #: (``heterograph.graph.leiden_local``; a change opening more than half of the graph runs
    #: it whole; ``graphstrata maintain`` runs it whole on demand). False: the whole graph on
    #: every write. Measured in ``benchmarks/results/scale.md`` (modularity after 26 writes
    #: within 0.0003 of a whole-graph re-run at 10k chunks, 0.00001 at 100k) and
    #: ``approximations.md`` (incrementally built shared sets: modularity within 0.003 of
    #: whole-graph runs, graph recall within 0.5 point or higher).
    local_leiden: bool = True
    attribute_tokens: int = setting(200, ge=1)
    element_tokens: int = setting(400, ge=1)
    decompose_tokens: int = setting(1024, ge=1)
    #: Vector entry points over S/A/H (NodeRAG: 10) and as many over T; 20 moved fact R by
    #: -0.5 (HP), +1.7 (MH150) points: kept at NodeRAG's value.
    entry_top_k: int = setting(
        10,
        ge=0,
        le=MAX_QUERY_K,
        query=True,
        doc="Vector entry points taken over S, A and H, and again over T (0: no vector entry).",
    )
    cross_top_k: int = setting(
        10, ge=0, le=MAX_QUERY_K, query=True, doc="Cross nodes kept per kind after PPR."
    )
    relation_top_k: int = setting(
        30, ge=0, le=MAX_QUERY_K, query=True, doc="Relationship cross nodes kept."
    )
    #: Restart probability and steps of the shallow PPR (NodeRAG: 0.5, 2; 0.3/0.7 and 1/3
    #: steps moved fact R by at most 1.3 points on HP and MH150).
    ppr_alpha: float = setting(
        0.5,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Restart probability of the shallow PPR, in [0, 1] (NodeRAG §2.5: 0.5).",
    )
    ppr_iters: int = setting(2, ge=0, le=MAX_PPR_ITERS, query=True, doc="PPR steps t (NodeRAG: 2).")
    #: Shares of the restart mass of the exact-match, vector and BM25 entry points. Exact
    #: 0.5 / vector 1 / BM25 2 measured best of the grid on MH150 (+1.8 to +2.1 points of
    #: fact R over 1/1/1) and equal on HP; without BM25 entry points fact R falls 0.981
    #: (HP) and 0.435 (MH150), without vector entry points 0.981 / 0.508.
    exact_match_weight: float = setting(
        0.5,
        ge=0.0,
        query=True,
        doc="Share of the restart mass given to the exact entity/title matches (>= 0).",
    )
    vector_match_weight: float = setting(
        1.0,
        ge=0.0,
        query=True,
        doc="Share of the restart mass given to the vector entry points (>= 0).",
    )
    sparse_match_weight: float = setting(
        2.0,
        ge=0.0,
        query=True,
        doc="Share of the restart mass given to the BM25 entry points (>= 0).",
    )
    #: BM25 entry points per kind of ``sparse_kinds``: 20 was as good as 50 on HP and MH150
    #: and better on MH (+2 points), and faster.
    sparse_top_k: int = setting(
        20,
        ge=0,
        le=MAX_QUERY_K,
        query=True,
        doc="BM25 entry points taken per kind of the index's ``sparse_kinds`` (0: none).",
    )
    #: Kinds with BM25 entry points: chunks and units. Adding A, H, R ("TSAHR") cost 4.2
    #: points of fact R on MH150 (their short texts match query words by accident).
    sparse_kinds: str = "TS"
    #: Share of the budget packed with chunks alone before anything else: 0 (rank all kinds
    #: on one scale); 0.25 cost 0.7 points on MH150 and nothing on HP.
    text_share: float = setting(
        0.0,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Share of the budget packed first with chunks (T) alone, in [0, 1] (0: none).",
    )
    #: Rank by PPR score / tokens ** 0.75: a chunk holds several units' worth of facts for
    #: several units' worth of tokens. Ranking by PPR score alone gave HP 0.988 but MH150
    #: 0.44-0.49 (chunks crowd out units); 0.5 and 1.0 were within a point of 0.75 on HP,
    #: MH150 and MH.
    token_exponent: float = setting(
        0.75,
        ge=0.0,
        le=2.0,
        query=True,
        doc="Nodes are ranked by PPR score / tokens ** token_exponent, in [0, 2] (0: by PPR "
        "score alone; 1: by score per token).",
    )
    #: Chunks and units kept for ranking (by density, after the walk).
    max_candidates: int = 400
    #: Most of the budget attributes, elements and relationships take together. They rarely
    #: hold a gold fact verbatim: 0.1 -> 0.05 gained 2.3 points of fact R on MH150 and 3.2
    #: on MH (0 gains a point more); 0.05 keeps room for the attribute of an entity the
    #: question names, which leads the structured nodes.
    structured_share: float = setting(
        0.05,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Most of the budget attributes, high-level elements and relationships may take "
        "together, in [0, 1].",
    )
    #: The second hop: share of the restart mass given, in a second walk, to the entities
    #: of the first walk's 5 best chunks and units (the bridge of a multi-hop question).
    #: 0.3 took HP from 0.972 to 0.988 fact R and 0.975 to 0.990 doc R, and cost MH150 0.7
    #: and MH 0.9 points (their questions name every article they need); 0.6 gained HP 0.7
    #: more and cost MH150 another 0.8.
    bridge_weight: float = setting(
        0.3,
        ge=0.0,
        query=True,
        doc="Share of the restart mass given, in a second walk, to the entities of the first "
        "walk's best chunks and units: the next hop of a multi-hop question (>= 0; 0: one "
        "walk).",
    )
    bridge_sources: int = setting(
        5,
        ge=0,
        le=MAX_QUERY_K,
        query=True,
        doc="How many of the first walk's best chunks and units name the bridge entities.",
    )
    #: A bridge entity is mentioned by at most this many units (16-128 changed fact R by
    #: less than a point: no cap).
    bridge_max_units: int = setting(
        1_000_000,
        ge=0,
        le=MAX_COUNT,
        query=True,
        doc="A bridge entity is mentioned by at most this many semantic units (a name every "
        "article mentions leads nowhere in particular).",
    )
    #: Weight of a semantic edge in the walk relative to a structural edge (0.2 and 0 were
    #: within a point on HP and MH150).
    semantic_edge_weight: float = 1.0
    #: Weight of an entity -> chunk link to the document titled with the entity's name (0
    #: and 3 within a point; the titles still seed exact matches).
    title_edge_weight: float = 1.0
    #: Also match the question's capitalized word n-grams against known names (entities,
    #: element titles, document titles). Off: on (row ``ngrams``) was within 0.3 point of off
    #: on HP, MH150 and MH (benchmarks/results/graph_tuning-*.md) and costs a name lookup per
    #: n-gram; a query can turn it on for names the entity rules split ("Haymo of Faversham").
    match_query_ngrams: bool = setting(
        False,
        query=True,
        doc="Also match every capitalized word n-gram of the question against the known names.",
    )

    def validate(self) -> None:
        """Raise ``ConfigError`` on a value of the wrong type or out of range (the checks of
        a query's ``graph`` parameters, ``engine.fields``)."""
        check_fields(self, "heterograph", ConfigError)


@dataclass
class SearchConfig:
    """Defaults for queries."""

    budget_tokens: int = 2000
    #: Candidates fetched from the vector index before packing under the budget.
    top_k: int = 50
    #: usearch's query-time expansion (ef): candidates kept while walking the HNSW graph;
    #: higher = closer to exact, slower (usearch's own default is 64; below ``top_k`` it
    #: searches as with ``top_k``: ef 32 and 48 gave the same recall to four digits over
    #: 49k vectors, a one-off script, not kept). 128 until this was measured: retrieval
    #: quality at 64 was within 0.001 of it on MultiHop-RAG (naive doc recall 0.629 against
    #: 0.630; its 8,144 chunks are searched by HNSW) and the same on HotpotQA (every column;
    #: there only the heterograph's entities and relationships exceed ``maintenance.vector_exact_below``), by
    #: ``benchmarks/quality/retrieval.py --budgets 2000 --no-sweep`` at each value
    #: (a one-off script, not kept); a dense list of the 1M scale index took 0.74 ms
    #: against 1.40 ms (a one-off script, not kept). The cost is dense recall: over 49k
    #: all-MiniLM-L6-v2 vectors in float16, the top 50 at ef 64 / 96 / 128 held 95.9 / 97.5 /
    #: 98.5% of the exact top 50 (benchmarks/results/vector_dtype.md) and 98.7 / 99.2 / 99.6%
    #: of the exact top 10, what a 2,000-token budget packs (a one-off script, not kept);
    #: on MultiHop-RAG it did not show in retrieval quality. Indexes keep the value they
    #: were created with; ``Index.open(path, search=SearchConfig(expansion_search=128))``
    #: searches one with another, without a rebuild.
    expansion_search: int = 64


@dataclass
class FusionConfig:
    """Fusing dense and BM25 candidates, and spending the budget on distinct evidence.

    Used by ``hybrid`` and the hierarchy modes (``collapsed``, ``detailed``,
    ``summarized``); the kernels are in ``core/fusion.py``. Every default is chosen by
    measurement on MultiHop-RAG (500 q) and HotpotQA (100 q) at 2,000 tokens, in
    benchmarks/results/retrieval.md ("Fusion choice"): fact recall (text) of ``hybrid``.
    """

    #: ``"score"``: convex combination of min-max normalized scores (Bruch et al. 2023),
    #: ``"rrf"``: reciprocal-rank fusion (Cormack et al. 2009), ``"dense"`` / ``"sparse"``: one
    #: list alone. Measured with every other default: score 0.520 / 0.965 (MultiHop /
    #: HotpotQA) vs the best RRF 0.491 / 0.943 (k=60, w=0.2) and RRF k=60 with equal weights
    #: 0.459 / 0.923. Before term coverage and feedback: score 0.497 / 0.948, RRF 0.492 /
    #: 0.943 at best.
    method: str = setting(
        "score",
        choices=FUSION_METHODS,
        query=True,
        doc="``rrf`` (reciprocal-rank fusion), ``score`` (min-max score fusion), ``dense`` or "
        "``sparse`` (one list alone).",
    )
    #: RRF's rank offset k: a list contributes ``weight / (rrf_k + rank)``, rank from 1.
    #: Cormack et al.'s 60; k = 10, 30, 100 measured within 0.6 points of it.
    rrf_k: int = setting(60, ge=0, query=True, doc="RRF's rank offset (>= 0).")
    #: Weight of the dense list; the BM25 list gets ``1 - dense_weight``. MiniLM is much
    #: weaker than BM25 on both sets (0.355 vs 0.481, 0.868 vs 0.938), so the best weights
    #: favour BM25. With every other default: 0.1: 0.519 / 0.943; 0.2: 0.520 / 0.965; 0.3:
    #: 0.524 / 0.958; 0.4: 0.520 / 0.938; 0.5: 0.504 / 0.943 (before term coverage and
    #: feedback: 0.2: 0.497 / 0.948; 0.3: 0.497 / 0.938; 0.5: 0.494 / 0.938).
    dense_weight: float = setting(
        0.2,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Weight of the dense list in [0, 1], the BM25 list gets the rest.",
    )
    #: Score every candidate of either list on both sides (its cosine and its BM25 score)
    #: before fusing, instead of counting it absent from the list that did not return it.
    #: Measured (w=0.5): score 0.504 / 0.943 with, 0.489 / 0.943 without (before term
    #: coverage and feedback: 0.494 / 0.938 and 0.480 / 0.928).
    complete_scores: bool = setting(
        True, query=True, doc="Score every candidate on both sides before fusing."
    )
    #: A candidate is dropped as a duplicate when at least this share of its word shingles
    #: already occurs in the texts packed before it (> 1 disables deduplication). At 0.8 it
    #: drops near-copies only (a summary made of packed sentences, a repeated text): 0.02
    #: (hybrid) to 0.30 (detailed) candidates per question; measured 0.520 / 0.965, the
    #: same as without deduplication or at 0.95, while 0.5 (0.520 / 0.950) also drops
    #: partial repeats that still held evidence; collapsed: 0.519 / 0.947 at 0.8 and
    #: without, 0.523 / 0.937 at 0.5 (retrieval.md sweep).
    max_overlap: float = setting(
        0.8,
        gt=0.0,
        query=True,
        doc="Share of a candidate's word shingles already packed that makes it a duplicate "
        "(> 0; above 1 keeps duplicates).",
    )
    #: Words per shingle of the duplicate test (5: a shared 5-word run is rarely chance).
    shingle_words: int = setting(5, ge=1)
    #: Query-term coverage (``core.fusion.coverage_order``, score fusion of complete lists
    #: only): each candidate ranked above that matches a query term multiplies that term's
    #: BM25 weight by this much for the rest (1 disables). Measured hybrid fact recall
    #: (MultiHop-RAG / HotpotQA, 2,000 tokens, benchmarks/quality/retrieval.py's sweep, with the
    #: feedback round): 1.0: 0.498 / 0.948; 0.95: 0.509 / 0.950; 0.9: 0.520 / 0.965; 0.85:
    #: 0.530 / 0.955; 0.8: 0.539 / 0.945; 0.7: 0.540 / 0.942 (without feedback, commit
    #: ff06e17: 1.0: 0.497 / 0.948; 0.9: 0.522 / 0.948; 0.8: 0.543 / 0.928). 0.9 keeps
    #: HotpotQA (bridge questions, whose second passage shares few query words) and takes
    #: most of the MultiHop-RAG gain (questions over several articles, whose words one
    #: article matches best); benchmarks/results/retrieval.md ("Fusion choice").
    term_decay: float = setting(
        0.9,
        gt=0.0,
        le=1.0,
        query=True,
        doc="Query-term coverage of score fusion, in (0, 1] (1: off).",
    )
    #: Dense pseudo-relevance feedback (Rocchio; ``core.fusion.feedback_vector``) of the
    #: fused methods (``score``, ``rrf``): the vectors of the best ``feedback_docs`` fused
    #: candidates are added to the query vector with weight ``feedback_weight``, a second
    #: dense top-k is searched with it, and the union of both dense lists and the BM25
    #: list is fused again under the updated vector (0 docs disables). A two-hop
    #: question's second passage is about something the first one names, so it is closer
    #: to query + first passage than to the query. Measured hybrid fact recall
    #: (MultiHop-RAG / HotpotQA, 2,000 tokens, the benchmark's sweep): off 0.522 / 0.948;
    #: one doc at weight 0.15: 0.520 / 0.960; 0.3: 0.520 / 0.965; 0.5: 0.515 / 0.965; two
    #: docs at 0.3: 0.513 / 0.958. The first search (a one-off script, not kept, the same
    #: indexes): 0.1: 0.518 / 0.953; 0.2: 0.519 / 0.960; 0.25: 0.520 / 0.965; 0.4: 0.516 /
    #: 0.965; plain Rocchio (the second dense list alone, not the union) at 0.3: 0.518 /
    #: 0.965. collapsed: 0.519 / 0.947 off, 0.514 / 0.955 on.
    feedback_docs: int = setting(
        1,
        ge=0,
        le=MAX_FEEDBACK_DOCS,
        query=True,
        doc="Best fused candidates whose vectors move the query vector for a second dense "
        "round (>= 0; 0: off).",
    )
    #: Weight of the feedback vectors' mean against the query vector (see ``feedback_docs``).
    feedback_weight: float = setting(
        0.3, ge=0.0, query=True, doc="Weight of those vectors against the query's (>= 0)."
    )
    #: Whether ``collapsed``, ``detailed`` and ``summarized`` take the feedback round too
    #: (``hybrid`` always does when ``feedback_docs`` > 0; a query's ``feedback_docs``
    #: parameter applies to every fused mode: it turns the round on for that query). Off: on collapsed it measured 0.514 / 0.955
    #: with against 0.519 / 0.947 without (no gain on balance), and it doubles the dense
    #: searches of modes that search two kinds (collapsed 9.9 -> 19.9 ms at 100k synthetic
    #: chunks, a one-off script, not kept, load 2.6).
    feedback_in_hierarchy: bool = False

    def validate(self) -> None:
        """Raise ``ConfigError`` on a value of the wrong type or out of range."""
        check_fields(self, "fusion", ConfigError)


@dataclass(frozen=True)
class FoldPolicy:
    """When an overlay (what versions added since a base) is folded into a new base.

    The one rule of every incremental mechanism: an overlay of ``overlay`` items over a
    base of ``base_size`` folds once it passes :meth:`limit` (``inclusive``: once it
    reaches it), the limit being ``share`` of the base, at least ``minimum`` and at most
    ``cap``. Folding costs O(base), so a share makes it amortized O(1) per item; the
    minimum keeps a small base from folding every few writes; the cap bounds what each
    search or write pays for the overlay.
    """

    #: Share of the base the overlay may hold.
    share: float = 0.0
    #: Items the overlay may always hold.
    minimum: int = 0
    #: Items the overlay may hold at most (None: no cap); at least ``minimum``.
    cap: int | None = None
    #: Fold when the overlay reaches the limit (True) or only when it exceeds it (False).
    inclusive: bool = False

    def limit(self, base_size: int) -> float:
        """The overlay size allowed over a base of ``base_size`` items:
        ``min(cap, max(minimum, share * base_size))``."""
        bound = max(float(self.minimum), self.share * base_size)
        return bound if self.cap is None else min(float(self.cap), bound)

    def should_fold(self, overlay: int, base_size: int = 0) -> bool:
        """Whether an overlay of ``overlay`` items over ``base_size`` folds now."""
        limit = self.limit(base_size)
        return overlay >= limit if self.inclusive else overlay > limit

    def validate(self, name: str) -> None:
        """Raise ``ConfigError`` on an invalid value (``name``: the policy's field)."""
        if not 0.0 <= self.share < float("inf"):
            raise ConfigError(f"maintenance.{name}.share must be finite and >= 0, got {self.share}")
        if self.minimum < 0:
            raise ConfigError(f"maintenance.{name}.minimum must be >= 0, got {self.minimum}")
        if self.cap is not None and self.cap < self.minimum:
            raise ConfigError(
                f"maintenance.{name}.cap must be >= minimum ({self.minimum}), got {self.cap}"
            )


@dataclass
class MaintenanceConfig:
    """When each incremental mechanism folds what writes added into its base, and the
    vector search tunables that go with the overlays (docs/architecture.md, "Write path").

    Every field is a named :class:`FoldPolicy` (or a count); the defaults are what the
    engine was measured with. Adding a policy is one field here plus the module that
    reads it. None of them changes what a query returns (a fold rebuilds the same
    content), only when a write pays for a fold and what a search pays for an overlay;
    ``vector_exact_below``, ``vector_oversample`` and ``vector_widen`` may change an HNSW
    search's neighbours slightly.
    """

    #: Vectors a kind keeps apart from its HNSW base (searched exactly by a matrix product)
    #: before they are merged into a new base (usearch's copy of the base and their inserts:
    #: one O(n) copy amortized over the writes before it): an eighth of the base, at least
    #: 4,096 and at most 16,384 (16k x 384 by one product is ~2 ms).
    vector_fresh: FoldPolicy = FoldPolicy(share=0.125, minimum=4096, cap=16384)
    #: Dead ids a vector base keeps (filtered out of its results) before it is made anew from
    #: its live vectors: 64, or one in eight of the base if more. Making a base costs O(n)
    #: inserts or an O(n log n) k-NN graph (1.0-2.1 ms per dead vector amortized,
    #: benchmarks/results/scale.md, remake table); evenly spread dead vectors leave a top-k
    #: search ~k/8 dead matches to skip, within ``vector_oversample``.
    vector_removed: FoldPolicy = FoldPolicy(share=0.125, minimum=64)
    #: Below this many vectors a kind is searched exactly (brute force is faster and exact).
    vector_exact_below: int = 4096
    #: A search asks a base for this many matches more than k (at most as many as it has
    #: dead ids) and asks again, ``vector_widen`` times as many each time up to k + all its
    #: dead ids, only for a query whose top matches held more dead ids than that. For an
    #: exact search that equals asking for k + all (tested); an HNSW search asked for
    #: another count may return slightly different neighbours (not measured).
    vector_oversample: int = 16
    vector_widen: int = 4
    #: A new vector base of at least this many vectors is made from its k-NN graph
    #: (``engine.graph_bases``: ``core.search_graph``, written for usearch by
    #: ``core.ann.hnsw_from_graph``) instead of by usearch's inserts. An f16 index of 384-d
    #: vectors leaves the 32 MiB last-level cache between 20k and 40k vectors, after which
    #: an insert's distances read DRAM and its cost climbs (153 us at 20k, 497 us at 100k:
    #: the HNSW table of benchmarks/results/scale.md). Recall@10 of 1,000 rows at ef 64,
    #: one run each: 51,952 MiniLM vectors of MultiHop-RAG sentences 10.2 s wall (19.4 s
    #: CPU on 2 threads), recall 0.9957, against 10.9 s CPU (one thread) and 0.9938
    #: inserted; ``scale.py graph-index`` (hashing vectors): 50k 10.1 s wall (19.7 s CPU),
    #: 0.812, against 12.7 s and 0.734; 400k 99.2 s (189.1 s CPU), 0.601, against 254.4 s
    #: and 0.524.
    vector_graph_build_min: int = 32768
    #: Entries a ``LayeredDict`` (names, titles, doc names, text holders) keeps in its top
    #: layer before a version folds it into a new base dict: a quarter of the base, at least
    #: 4,096 (a version then copies the keys it changed, not every name: 43k names, 16k
    #: titles and 19k doc titles copied per write at 100k chunks took ~11 ms).
    layered_dict: FoldPolicy = FoldPolicy(share=0.25, minimum=4096, inclusive=True)
    #: BM25 postings segments a kind keeps before it is compacted into one (the segments
    #: are joined as a binary counter, so they stay O(log n) anyway).
    postings_segments: FoldPolicy = FoldPolicy(minimum=16)
    #: Tombstoned BM25 slots a kind keeps (a share of its slots) before it is compacted.
    postings_dead: FoldPolicy = FoldPolicy(share=0.25)
    #: Entries of the walk graph CSR's extra layer (a share of the base's entries) before it
    #: is compacted: merging the extra layer on each commit is O(its entries). Three
    #: one-document insert/delete pairs at 100k chunks left 6.4-7.4k extra entries (1.2M
    #: allowed): a compaction every ~1,000 writes at that rate (extrapolated).
    walk_graph_extra: FoldPolicy = FoldPolicy(share=1 / 16)
    #: Dead slots of the walk graph CSR (a share of its slots) before it is compacted (each
    #: is a row the walk skips and an id the slot lookups keep; 355-394 per three pairs at
    #: 100k chunks, 80k allowed).
    walk_graph_dead: FoldPolicy = FoldPolicy(share=1 / 8)
    #: G2's extra layer: the walk graph's share, but always at least 4,096 entries (a small
    #: index's base is small: at the share alone it would be compacted every few writes).
    g2_extra: FoldPolicy = FoldPolicy(share=1 / 16, minimum=4096)
    #: G2's dead slots before it is compacted onto positions.
    g2_dead: FoldPolicy = FoldPolicy(share=1 / 8)
    #: Segments of one tier merged into one of the next (Lucene's ``segmentsPerTier`` is
    #: 10). At eight, a merge of one-document commits at a million chunks reads ~8 MB every
    #: eighth write (0.07-0.11 s of its commit); ninety versions leave at most 3 x 7
    #: segments per table instead of 90.
    store_merge_fanin: int = 8
    #: A run of segments holding more rows than this is not merged: it came from bulk
    #: inserts, which open in few segments anyway (a choice, not a measurement: a
    #: one-document write at a million chunks commits ~300 node rows).
    store_merge_max_rows: int = 262_144
    #: Patches a per-node state chain holds before a commit writes a new base instead
    #: (reading a state reads its base and every patch).
    node_state_patches: FoldPolicy = FoldPolicy(minimum=128, inclusive=True)
    #: Rows of a per-node state chain's patches (a share of the whole mapping) at which a
    #: commit writes a new base instead: once the patches hold as many rows as a base would.
    node_state_rows: FoldPolicy = FoldPolicy(share=1.0, minimum=1, inclusive=True)
    #: Lazily read edge parts (semantic edges) an edge table keeps apart before they are
    #: filtered into one ...
    edges_parts: FoldPolicy = FoldPolicy(minimum=64)
    #: ... and dead node ids it keeps to filter them with.
    edges_dead: FoldPolicy = FoldPolicy(minimum=1 << 16)
    #: Rows written since a cache file (vector bases, BM25 postings; a share of the index's
    #: rows) at which a commit writes it again: a quarter, at least 2,048 (not tuned), so
    #: small writes write little and an open maps a file close to its version.
    cache_stale: FoldPolicy = FoldPolicy(share=0.25, minimum=2048, inclusive=True)
    #: A node table combines its trailing Arrow chunks while the chunk before them holds at
    #: most this many times their rows: a binary-counter merge, each appended row copied
    #: O(log N) times. Copying every live row once the table spanned 64 chunks instead cost
    #: 0.31 s at 100k chunks every ~64 writes (issue 17).
    table_chunk_merge_factor: int = 2
    #: Versions a node table's set of ids of some kinds is carried along unasked before it
    #: is dropped (moving the nine sets of a 100k-chunk index took 2.7 ms per write).
    table_kind_set_versions: int = 16

    def validate(self) -> None:
        """Raise ``ConfigError`` on an invalid value."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, FoldPolicy):
                value.validate(f.name)
            elif value < 1:
                raise ConfigError(f"maintenance.{f.name} must be >= 1, got {value}")

    def policies(self) -> dict[str, Any]:
        """Every field as plain values (what ``Engine.stats`` shows)."""
        return dataclasses.asdict(self)

    @classmethod
    def of_config(cls, config: dict[str, Any]) -> MaintenanceConfig:
        """The section of a recorded ``IndexConfig`` dict (the defaults when it has none:
        an index created before the section existed)."""
        return _from_dict(cls, config.get("maintenance", {}))


@dataclass
class IndexConfig:
    """Everything that defines an index. Recorded in its manifest."""

    #: The packaged all-MiniLM-L6-v2 through ONNX Runtime fp32: the same vectors as torch
    #: (cosine >= 1 - 1e-7) at 2-4x the speed; int8 is faster still but moved recall by up to
    #: 2.0 points on HotpotQA, over the 0.5-point rule (benchmarks/results/embedder_quality.md).
    embedder: str = "minilm-onnx"
    llm: str = "extractive"
    #: How vectors are stored and held by usearch: float16 halves their bytes. On the 2-core
    #: machine (benchmarks/results/vector_dtype.md, one run, load 2) a single-thread HNSW
    #: build took 0.37 against 0.72 ms per vector for 49k all-MiniLM-L6-v2 vectors and 0.80
    #: against 1.37 ms for 200k hashing vectors; a one-query search 1.18 against 1.58 ms and
    #: 2.29 against 4.18 ms; recall of the exact top 50 0.9847 for both and 0.6722 against
    #: 0.6725. int8 lost 3-12 points of recall. Every product and score is float32; indexes
    #: record theirs (an f32 index stays f32).
    vector_dtype: str = "f16"
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    hierarchy: HierarchyConfig = field(default_factory=HierarchyConfig)
    heterograph: HeterographConfig = field(default_factory=HeterographConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    #: When incremental structures fold (an index created without the section gets these
    #: defaults).
    maintenance: MaintenanceConfig = field(default_factory=MaintenanceConfig)
    #: The floor under each LLM stage's yield and the index's own prompts (docs/guide/llm.md).
    yield_floor: YieldConfig = field(default_factory=YieldConfig)
    prompts: PromptConfig = field(default_factory=PromptConfig)

    def validate(self) -> None:
        """Raise ``ConfigError`` on an invalid value."""
        for section in (self.chunking, self.hierarchy, self.heterograph, self.fusion):
            section.validate()
        self.maintenance.validate()
        self.yield_floor.validate(ConfigError)
        self.prompts.validate(ConfigError)
        if self.vector_dtype not in ("f32", "f16"):
            raise ConfigError(f"vector_dtype must be 'f32' or 'f16', got {self.vector_dtype!r}")

    def to_dict(self) -> dict[str, Any]:
        """A plain, JSON-serializable dict (what the manifest records)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexConfig:
        """The config a dict describes; unknown keys are a ``ConfigError``."""
        return _from_dict(cls, data)


def _from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build a (nested) dataclass from a dict, rejecting unknown keys with a clear error."""
    if not isinstance(data, dict):
        raise ConfigError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = set(data) - set(fields)
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown option(s) {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        ftype = fields[name].type
        sub = _DATACLASSES.get(ftype if isinstance(ftype, str) else getattr(ftype, "__name__", ""))
        kwargs[name] = _from_dict(sub, value) if sub is not None else value
    return cls(**kwargs)


_SECTIONS = (ChunkingConfig, IngestConfig, HierarchyConfig, HeterographConfig, SearchConfig)
_DATACLASSES: dict[str, type] = {
    c.__name__: c for c in (*_SECTIONS, FusionConfig, MaintenanceConfig, FoldPolicy)
}
_DATACLASSES.update(YieldConfig=YieldConfig, PromptConfig=PromptConfig)
