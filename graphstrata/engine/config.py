"""Typed configuration. Defaults come from the papers (EraRAG, NodeRAG).

Every config is a dataclass that round-trips through a plain dict, so the index manifest can
record exactly what built it. A field made with ``setting`` declares its range or choices
(checked by ``validate``, ``engine.fields``) and, with ``query=True``, that a query may
override it: the search modes' parameters are those fields (``engine.params.params_from``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from graphstrata.core.fusion import ADAPTIVE_SIGNALS
from graphstrata.engine.extraction import YieldConfig
from graphstrata.engine.fields import ConfigError, check_fields, from_dict, setting
from graphstrata.engine.interfaces import EXTRACTIVE_LLM
from graphstrata.engine.policies import MaintenanceConfig
from graphstrata.engine.prompts import PromptConfig

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
    #: Whether the favoured share of ``detailed`` / ``summarized`` takes only the candidates
    #: that compete (a summary scoring at least as well as every candidate below it in the
    #: tree; ``core.fusion.competing``; chunks always do) or, off, any candidate of the
    #: favoured kind (EraRAG's share). Measured: decision 0035.
    compete: bool = setting(
        True,
        query=True,
        doc="Favoured share of detailed/summarized only for candidates that outscore what "
        "lies below them in the tree.",
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

    The ``graph`` search defaults (from ``entry_top_k`` on) were first chosen with
    ``benchmarks/quality/graph_tuning.py`` on HotpotQA (994 passages, 100 questions) and a
    150-document MultiHop-RAG subset (274 questions), CPU defaults, 2,000-token budget
    (``benchmarks/results/graph_tuning-*.md``; "fact R" = gold facts verbatim in a retrieved
    node, "HP" / "MH150" / "MH" those sets). Each query default is now measured on all three
    shared sets, one changed at a time, by the graph sweep of
    ``benchmarks/results/retrieval.md`` (2,000 tokens; the triples below are MultiHop-RAG /
    HotpotQA fact R and novels evidence R, the defaults giving 0.591 / 0.983 / 0.891): no
    single change is above the defaults on all three. Each field declared with
    ``query=True`` is also a ``graph`` query parameter (``GraphParams``); the ones the view
    builds its walk from (``semantic_edge_weight``, ``title_edge_weight``,
    ``sparse_kinds``) and ``max_candidates`` are not, and keep their HP / MH150 measurements.
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
    #: Attribute nodes (A: an important entity's facts summarized by the LLM, NodeRAG §2.3).
    #: ``auto`` is resolved when an index is created (``resolved``): ``off`` under the
    #: extractive backend, whose attributes are sentences the units already hold; ``on``
    #: under a generative one (NodeRAG's design; not measured here). Under the extractive
    #: backend, off against on moved graph recall by -0.3 to +0.3 points at 1k/2k/4k tokens on
    #: the three shared sets (within half a point in every paired interval) and saves the
    #: attribute stage and its embeddings, 10 % (MultiHop-RAG) to 20 % (HotpotQA) of a build
    #: from empty caches (benchmarks/results/graph-attributes.md, decision 0034). An index
    #: made before this field existed reads ``auto`` and keeps its attributes. ``off`` on an
    #: index with attributes drops them at its next write.
    attributes: str = setting(
        "auto",
        choices=("auto", "on", "off"),
        doc="Write attribute nodes of the important entities: ``on``, ``off`` or ``auto`` "
        "(resolved at creation: off under the extractive LLM, on under a generative one).",
    )
    attribute_tokens: int = setting(200, ge=1)
    element_tokens: int = setting(400, ge=1)
    decompose_tokens: int = setting(1024, ge=1)
    #: Vector entry points over S/A/H (NodeRAG: 10) and as many over T; 5 and 20 gave
    #: 0.582 / 0.980 / 0.891 and 0.581 / 0.987 / 0.891: kept at NodeRAG's value.
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
    #: Restart probability and steps of the shallow PPR (NodeRAG: 0.5, 2): alpha 0.3 and 0.7
    #: gave 0.581 / 0.983 / 0.888 and 0.583 / 0.983 / 0.888, 1 and 3 steps 0.584 / 0.980 /
    #: 0.888 and 0.592 / 0.983 / 0.890.
    ppr_alpha: float = setting(
        0.5,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Restart probability of the shallow PPR, in [0, 1] (NodeRAG §2.5: 0.5).",
    )
    ppr_iters: int = setting(2, ge=0, le=MAX_PPR_ITERS, query=True, doc="PPR steps t (NodeRAG: 2).")
    #: A node passes its mass on only when it sends at least this much per unit of edge
    #: weight (the approximate push of Andersen, Chung & Lang 2006): a hub reached with a
    #: little mass no longer spreads it over its thousands of edges. 1e-5 took ``graph``'s
    #: p50 from 4.96-5.01 / 3.17-3.34 / 2.88-3.00 ms to 3.65-3.79 / 2.70-2.78 / 2.64-2.68
    #: (MultiHop-RAG / HotpotQA / novels; ``variant_latency graph-push``), its recall within
    #: one HotpotQA question of the exact walk on all three sets at 1k / 2k / 4k tokens
    #: (decision 0039).
    ppr_epsilon: float = setting(
        1e-5,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Push threshold of the walk: a node passes its mass on only when (1 - ppr_alpha) * "
        "mass >= ppr_epsilon * its row weight, else the mass stops there; 0 walks exactly.",
    )
    #: Shares of the restart mass of the exact-match, vector and BM25 entry points. Exact
    #: 0.5 / vector 1 / BM25 2 measured best of a grid on MH150 (+1.8 to +2.1 points of fact R
    #: over 1/1/1) and equal on HP. Each moved alone: exact 0.25 / 1 gave 0.586 / 0.983 /
    #: 0.888 and 0.581 / 0.983 / 0.890, vector 0.5 / 2 0.578 / 0.975 / 0.891 and 0.578 /
    #: 0.983 / 0.885, BM25 1 / 3 0.575 / 0.990 / 0.883 and 0.581 / 0.975 / 0.887; without BM25
    #: entry points (``sparse_top_k`` 0) 0.464 / 0.972 / 0.836 (decision 0040).
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
    #: BM25 entry points per kind of ``sparse_kinds`` at a 2,000-token budget; a query takes
    #: them in proportion to its budget (``ranking.sparse_entries``: 20 at 1,000 tokens, 80 at
    #: 4,000). With term coverage (decision 0036) the extra entry points give it passages to
    #: choose from: graph at 2,000 tokens (MultiHop-RAG / HotpotQA / novels) 40: 0.593 / 0.987
    #: / 0.891, 20: 0.576 / 0.983 / 0.883, 30 to 80 all above 20 (decision 0038).
    sparse_top_k: int = setting(
        40,
        ge=0,
        le=MAX_QUERY_K,
        query=True,
        doc="BM25 entry points taken per kind of the index's ``sparse_kinds`` at a 2,000-token "
        "budget, scaled with the query's budget (0: none).",
    )
    #: Kinds with BM25 entry points: chunks and units. Adding A, H, R ("TSAHR") cost 4.2
    #: points of fact R on MH150 (their short texts match query words by accident).
    sparse_kinds: str = "TS"
    #: Share of the budget packed with chunks alone before anything else: 0 (rank all kinds
    #: on one scale); 0.25 / 0.5 / 0.8 gave 0.584 / 0.983 / 0.891, 0.587 / 0.983 / 0.891 and
    #: 0.558 / 0.983 / 0.879.
    text_share: float = setting(
        0.0,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Share of the budget packed first with chunks (T) alone, in [0, 1] (0: none).",
    )
    #: Rank by PPR score / tokens ** 0.75: a chunk holds several units' worth of facts for
    #: several units' worth of tokens. Ranking by PPR score alone gave HP 0.988 but MH150
    #: 0.44-0.49 (chunks crowd out units); 0.5 and 1 gave 0.582 / 0.987 / 0.887 and 0.583 /
    #: 0.983 / 0.888.
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
    #: hold evidence (4-6 % of relationship tokens packed, 26-32 % of chunk tokens); 0.05 and
    #: 0.1 gave 0.580 / 0.983 / 0.885 and 0.581 / 0.983 / 0.886 (decision 0034).
    structured_share: float = setting(
        0.0,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Most of the budget attributes, high-level elements and relationships may take "
        "together, in [0, 1].",
    )
    #: Query-term coverage of the ranking (``core.fusion.coverage_rerank``, the graph's
    #: own counterpart of ``FusionConfig.term_decay``): each chosen chunk or unit that
    #: matches a query term multiplies that term's share of later candidates' scores by this
    #: much, so a second hop's passage is not crowded out by more text on the first (1:
    #: off). Measured on all three shared sets at 1k/2k/4k tokens (decision 0036,
    #: benchmarks/results/retrieval.md "Graph budget"): at 2k, 0.9 gave 0.576 / 0.983 / 0.883
    #: against 0.548 / 0.985 / 0.877 at 1 (MultiHop-RAG / HotpotQA / novels), 0.95 and 0.8
    #: within a point and a half of 0.9; at 1k and 4k 0.9 gains or holds on every set.
    term_decay: float = setting(
        0.9,
        gt=0.0,
        le=1.0,
        query=True,
        doc="Query-term coverage of the ranking, in (0, 1] (1: off).",
    )
    #: The second hop: share of the restart mass given, in a second walk, to the entities
    #: of the first walk's 5 best chunks and units (the bridge of a multi-hop question).
    #: 0.3 took HP from 0.972 to 0.988 fact R and 0.975 to 0.990 doc R (graph_tuning). On the
    #: three sets 0 and 0.6 gave 0.595 / 0.980 / 0.892 and 0.578 / 0.983 / 0.888: the second
    #: hop costs MultiHop-RAG 0.4 point (its questions name every article they need) and the
    #: novels 0.1, and is kept for bridge questions (HotpotQA doc R 0.995 against 0.985).
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
    #: A bridge entity is mentioned by at most this many units (64 gave 0.588 / 0.983 / 0.891:
    #: no cap).
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
    #: element titles, document titles). Off: on gave 0.589 / 0.983 / 0.892, within 0.2
    #: point of off on every set, and costs a name lookup per n-gram; a query can turn it on
    #: for names the entity rules split ("Haymo of Faversham").
    match_query_ngrams: bool = setting(
        False,
        query=True,
        doc="Also match every capitalized word n-gram of the question against the known names.",
    )

    def validate(self) -> None:
        """Raise ``ConfigError`` on a value of the wrong type or out of range (the checks of
        a query's ``graph`` parameters, ``engine.fields``)."""
        check_fields(self, "heterograph", ConfigError)

    def resolved(self, llm_name: str) -> HeterographConfig:
        """This section with ``attributes="auto"`` decided for an index built by the LLM
        named ``llm_name`` (``EXTRACTIVE_LLM``: off; any other: on)."""
        if self.attributes != "auto":
            return self
        return dataclasses.replace(self, attributes="off" if llm_name == EXTRACTIVE_LLM else "on")

    @property
    def writes_attributes(self) -> bool:
        """Whether writes make attribute nodes (an unresolved ``auto``, read from an index
        made before the field existed, keeps them as that index was built)."""
        return self.attributes != "off"


_RERANK_DOC = "How many of the mode's top candidates a reranker rescores before packing; 0: none."


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
    #: A filter allowing at most this share of a kind's vectors scores them exactly, else asks
    #: the ANN index for k / share (``engine.filtered``; benchmarks/results/filters.md, 0025).
    filter_exact_share: float = 0.05
    #: Reranking before packing (docs/guide/rerank.md, decision 0031): the reranker's spec
    #: (``bindings/rerank``; "" none) and how many top candidates it rescores (0 none).
    reranker: str = ""
    rerank_candidates: int = setting(0, ge=0, le=1000, query=True, doc=_RERANK_DOC)


@dataclass
class FusionConfig:
    """Fusing dense and BM25 candidates, and spending the budget on distinct evidence.

    Used by ``hybrid`` and the hierarchy modes (``collapsed``, ``detailed``,
    ``summarized``); kernels in ``core/fusion.py``. The dense weight (``dense_weight``,
    ``adaptive*``) was chosen on all three shared sets (decision 0033), the rest first on
    MultiHop-RAG and HotpotQA (decision 0009); each default is now measured on all three by
    the fusion sweep of ``benchmarks/results/retrieval.md``, one changed at a time, at 2,000
    tokens. The triples below are MultiHop-RAG / HotpotQA fact R and novels evidence R of
    ``hybrid`` (``collapsed`` where named); the defaults give 0.526 / 0.960 / 0.880
    (``collapsed`` 0.524 / 0.953 / 0.873).
    """

    #: ``"score"``: convex combination of min-max normalized scores (Bruch et al. 2023),
    #: ``"rrf"``: reciprocal-rank fusion (Cormack et al. 2009), ``"dense"`` / ``"sparse"``: one
    #: list alone. RRF with equal weights gave 0.447 / 0.933 / 0.852 (k=60), dense alone
    #: 0.354 / 0.868 / 0.796 and BM25 alone 0.481 / 0.938 / 0.863.
    method: str = setting(
        "score",
        choices=FUSION_METHODS,
        query=True,
        doc="``rrf`` (reciprocal-rank fusion), ``score`` (min-max score fusion), ``dense`` or "
        "``sparse`` (one list alone).",
    )
    #: RRF's rank offset k: a list contributes ``weight / (rrf_k + rank)``, rank from 1.
    #: Cormack et al.'s 60, also the default of LanceDB's RRF reranker and LangChain4j's
    #: ReciprocalRankFuser; k = 10 and 100 gave 0.473 / 0.933 / 0.861 and 0.443 / 0.928 /
    #: 0.851 (RRF is not the default method).
    rrf_k: int = setting(60, ge=0, query=True, doc="RRF's rank offset (>= 0).")
    #: Dense weight before the per-query move (``adaptive``); BM25 gets the rest. BM25 is the
    #: stronger on all three shared sets, so a fixed weight tuned there favours it (0.2),
    #: and a corpus where MiniLM is stronger pays (issue 48). Measured: decision 0033.
    dense_weight: float = setting(
        0.4,
        ge=0.0,
        le=1.0,
        query=True,
        doc="Weight of the dense list in [0, 1], the BM25 list gets the rest.",
    )
    #: Per-query dense weight (``core.fusion.query_dense_weight``; complete score lists):
    #: ``agreement`` moves ``dense_weight`` toward the retriever whose best candidates the
    #: other rates well, ``spread`` toward the one whose best stand out, ``off`` keeps it.
    #: agreement w=0.4 s=4: hybrid within two HotpotQA questions of the best fixed weight on
    #: every set, query weights ~0.35, higher where dense is right (decision 0033).
    adaptive: str = setting(
        "agreement",
        choices=ADAPTIVE_SIGNALS,
        query=True,
        doc="Per-query dense weight from the two lists: ``off``, ``agreement`` or ``spread``.",
    )
    #: How far the per-query evidence (in [-1, 1]) moves the dense weight, on the logit scale.
    adaptive_strength: float = setting(
        4.0, ge=0.0, le=20.0, query=True, doc="Strength of the per-query weight (>= 0)."
    )
    #: Best candidates of each list the per-query evidence compares.
    adaptive_depth: int = setting(
        5, ge=1, le=100, query=True, doc="Best candidates of each list compared (>= 1)."
    )
    #: Score every candidate of either list on both sides (its cosine and its BM25 score)
    #: before fusing, instead of counting it absent from the list that did not return it.
    #: Off gave 0.485 / 0.943 / 0.864 (``collapsed`` 0.476 / 0.932 / 0.866).
    complete_scores: bool = setting(
        True, query=True, doc="Score every candidate on both sides before fusing."
    )
    #: A candidate is dropped as a duplicate when at least this share of its word shingles
    #: already occurs in the texts packed before it (> 1 disables deduplication). At 0.8 it
    #: drops near-copies only (a summary made of packed sentences, a repeated text): 0.02
    #: (hybrid) to 0.31 (detailed) candidates per question. 0.5 gave 0.527 / 0.955 / 0.880
    #: (``collapsed`` 0.526 / 0.955 / 0.873) and no deduplication 0.526 / 0.960 / 0.880
    #: (0.523 / 0.953 / 0.873).
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
    #: BM25 weight by this much for the rest (1 disables). 1, 0.8 and 0.7 gave 0.499 / 0.953
    #: / 0.866, 0.533 / 0.960 / 0.880 and 0.542 / 0.947 / 0.882, but ``collapsed`` falls to
    #: 0.930 and 0.927 on HotpotQA at 0.8 and 0.7 (0.953 at 0.9; decision 0009).
    term_decay: float = setting(
        0.9,
        gt=0.0,
        le=1.0,
        query=True,
        doc="Query-term coverage of score fusion, in (0, 1] (1: off).",
    )
    #: Dense pseudo-relevance feedback (Rocchio; ``core.fusion.feedback_vector``) of the
    #: fused methods: the vectors of the best ``feedback_docs`` fused candidates move the
    #: query vector (weight ``feedback_weight``) for a second dense top-k, and the union of
    #: both dense lists is fused with the BM25 list again (0 disables). None gave 0.524 /
    #: 0.945 / 0.876, 2 documents 0.522 / 0.955 / 0.877, ``feedback_weight`` 0.5 0.524 /
    #: 0.953 / 0.878 (decision 0009).
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
    #: Sparse pseudo-relevance feedback of the same round (RM3-like;
    #: ``SparseIndex.feedback_terms``): the heaviest terms (tf / length * idf) of the best
    #: ``feedback_docs`` fused candidates join the BM25 query, each weighing
    #: ``feedback_term_weight`` of a question word, and the BM25 lists of both queries are
    #: fused again (0 disables). On a bridge question the best passage names the entity the
    #: second hop is about. hybrid at 2,000 tokens (MultiHop-RAG / HotpotQA / novels): 3 terms
    #: at 0.25 0.526 / 0.960 / 0.880, none 0.528 / 0.948 / 0.878; 2 or 5 terms and weights 0.2
    #: or 0.33 within a point of the default on every set (retrieval.md, decision 0037).
    feedback_terms: int = setting(
        3,
        ge=0,
        le=50,
        query=True,
        doc="Terms of the best fused candidates added to the BM25 query in the feedback "
        "round (>= 0; 0: off).",
    )
    #: Weight of each feedback term against one occurrence of a query word (see
    #: ``feedback_terms``).
    feedback_term_weight: float = setting(
        0.25,
        gt=0.0,
        le=1.0,
        query=True,
        doc="Weight of each feedback term against a query word, in (0, 1].",
    )
    #: Whether ``collapsed``, ``detailed`` and ``summarized`` take the feedback round too
    #: (``hybrid`` always does when ``feedback_docs`` > 0; a query's ``feedback_docs``
    #: parameter applies to every fused mode: it turns the round on for that query). Off: on
    #: ``collapsed`` it gave 0.520 / 0.955 / 0.874 against 0.524 / 0.953 / 0.873 (no gain on
    #: balance), and it doubles the dense searches of modes that search two kinds (collapsed
    #: 9.9 -> 19.9 ms at 100k synthetic chunks, a one-off script, not kept, load 2.6).
    feedback_in_hierarchy: bool = False

    def validate(self) -> None:
        """Raise ``ConfigError`` on a value of the wrong type or out of range."""
        check_fields(self, "fusion", ConfigError)


@dataclass
class IndexConfig:
    """Everything that defines an index. Recorded in its manifest."""

    #: The packaged all-MiniLM-L6-v2 through ONNX Runtime fp32: the same vectors as torch
    #: (cosine >= 1 - 1e-7) at 2-4x the speed; int8 is faster still but moved recall by up to
    #: 2.0 points on HotpotQA, over the 0.5-point rule (benchmarks/results/embedder_quality.md).
    embedder: str = "minilm-onnx"
    llm: str = EXTRACTIVE_LLM
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
        check_fields(self.search, "search", ConfigError)
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
        return from_dict(cls, data)
