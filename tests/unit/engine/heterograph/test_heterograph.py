"""The heterograph component on the sample corpus: node kinds, edges, graph search, bad LLMs."""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.core.layered import row_weights
from graphstrata.engine.config import MAX_QUERY_K, IndexConfig
from graphstrata.engine.heterograph import GraphParams, HeterographComponent
from graphstrata.engine.heterograph.parse import query_name_candidates, title_key
from graphstrata.engine.heterograph.query.ranking import (
    COVERAGE_BUDGETS,
    ENTRY_BUDGET,
    bridge_seeds,
    containers,
    coverage_ranked,
    kinds_of_letters,
    maximal_keys,
    merge_seeds,
    minmax,
    mixed_walks,
    pack_ranked,
    reordered,
    sparse_entries,
)
from graphstrata.engine.interfaces import LLMRequest, LLMResponse
from graphstrata.engine.types import EdgeKind, NodeKind, kind_table

K = {k.name: int(k) for k in NodeKind}
#: Allowed (src kind, dst kind) of each edge kind, as the component writes them.
EDGE_SHAPES = {
    EdgeKind.CHUNK_UNIT: {("T", "S")},
    EdgeKind.UNIT_ENTITY: {("S", "N")},
    EdgeKind.UNIT_RELATION: {("S", "R")},
    EdgeKind.ENTITY_RELATION: {("N", "R")},
    EdgeKind.ENTITY_ATTRIBUTE: {("N", "A")},
    EdgeKind.ELEMENT_MEMBER: {("H", "S"), ("H", "A"), ("H", "H")},
    EdgeKind.ELEMENT_TITLE: {("H", "O")},
    EdgeKind.SEMANTIC: {(a, b) for a in "TSAH" for b in "TSAH"},
}


def _config(hierarchy: bool = False) -> IndexConfig:
    cfg = IndexConfig()
    cfg.hierarchy.enabled = hierarchy
    cfg.heterograph.attributes = "on"  # every node kind (off under the extractive LLM)
    return cfg


@pytest.fixture(scope="module")
def built(tmp_path_factory, sample_docs) -> Index:
    index = Index.create(
        tmp_path_factory.mktemp("hg") / "idx", _config(), embedder=HashingEmbedder(64)
    )
    index.insert(sample_docs)
    return index


def _edges(index: Index) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    snap = index.engine.state.snapshot
    kind = snap.edges.column("kind").to_numpy()
    src = snap.edges.column("src").to_numpy()
    dst = snap.edges.column("dst").to_numpy()
    return {int(k): (src[kind == k], dst[kind == k]) for k in np.unique(kind)}


def _kind_letters(index: Index, ids: np.ndarray) -> list[str]:
    nodes = index.engine.state.snapshot.nodes
    return [NodeKind(int(k)).letter for k in nodes.kind[nodes.rows(ids)]]


def test_component_is_registered_and_serves_graph(built):
    assert HeterographComponent().enabled(IndexConfig())
    assert "graph" in built.modes
    cfg = IndexConfig()
    cfg.heterograph.enabled = False
    assert not HeterographComponent().enabled(cfg)


def test_every_node_kind_appears_with_the_right_edges(built):
    snap = built.engine.state.snapshot
    counts = Counter(NodeKind(int(k)).letter for k in snap.nodes.kind)
    for letter in "TSNRAHO":
        assert counts[letter] > 0, f"no {letter} node"
    edges = _edges(built)
    for kind, shapes in EDGE_SHAPES.items():
        src, dst = edges[int(kind)]
        assert src.size > 0, f"no {kind.name} edge"
        pairs = set(zip(_kind_letters(built, src), _kind_letters(built, dst), strict=True))
        assert pairs <= shapes, f"{kind.name}: {pairs - shapes}"
    # Every unit comes from exactly one chunk; every relationship joins two entities; every
    # attribute describes one entity; every element has one title.
    _, s = edges[int(EdgeKind.CHUNK_UNIT)]
    assert sorted(s.tolist()) == sorted(snap.nodes.ids_of_kind(K["S"]).tolist())
    _, r = edges[int(EdgeKind.ENTITY_RELATION)]
    assert set(Counter(r.tolist()).values()) == {2}
    assert len(set(r.tolist())) == counts["R"]
    _, a = edges[int(EdgeKind.ENTITY_ATTRIBUTE)]
    assert sorted(a.tolist()) == sorted(snap.nodes.ids_of_kind(K["A"]).tolist())
    h, o = edges[int(EdgeKind.ELEMENT_TITLE)]
    assert sorted(h.tolist()) == sorted(snap.nodes.ids_of_kind(K["H"]).tolist())
    assert sorted(o.tolist()) == sorted(snap.nodes.ids_of_kind(K["O"]).tolist())
    # Embeddings only for T, S, A, H.
    embedded = set(np.unique(snap.vectors.kinds).tolist())
    assert embedded == {K["T"], K["S"], K["A"], K["H"]}
    # Semantic edges: each new embedded node got its neighbours (M = 16).
    src, _ = edges[int(EdgeKind.SEMANTIC)]
    assert set(Counter(src.tolist()).values()) == {16}


def test_derived_nodes_cite_the_documents_of_their_units(built):
    snap = built.engine.state.snapshot
    nodes = snap.nodes
    unit_docs = dict(
        zip(
            nodes.ids_of_kind(K["S"]).tolist(),
            nodes.docs_of(nodes.ids_of_kind(K["S"])),
            strict=True,
        )
    )
    src, dst = _edges(built)[int(EdgeKind.UNIT_ENTITY)]
    expected: dict[int, set[int]] = {}
    for s, n in zip(src.tolist(), dst.tolist(), strict=True):
        expected.setdefault(n, set()).update(unit_docs[s])
    for n, docs in zip(
        nodes.ids_of_kind(K["N"]).tolist(), nodes.docs_of(nodes.ids_of_kind(K["N"])), strict=True
    ):
        assert set(docs) == expected[n]


QUESTIONS = [
    "Who founded Meridian Optics?",
    "When did the Halvorsen Observatory open on Mount Kjell?",
    "What does the Lake Sundra Climate Station measure?",
    "Which instruments did Meridian Optics build for the observatory?",
]


@pytest.mark.parametrize("budget", [300, 2000])
def test_graph_search_returns_only_retrievable_kinds_within_budget(built, budget):
    snap = built.engine.state.snapshot
    nodes = snap.nodes
    hidden = {
        t for t, k in zip(nodes.texts, nodes.kind.tolist(), strict=True) if k in (K["N"], K["O"])
    }
    for question in QUESTIONS:
        result = built.query(question, mode="graph", budget_tokens=budget)
        assert result.nodes, question
        assert {h.kind for h in result.nodes} <= {"T", "S", "A", "H", "R"}
        assert sum(h.tokens for h in result.nodes) <= budget
        kinds = _kind_letters(built, np.asarray([h.id for h in result.nodes]))
        assert kinds == [h.kind for h in result.nodes]
        assert all(h.text not in hidden or h.kind in "TS" for h in result.nodes)
        assert all(h.docs for h in result.nodes)
        scores = [h.score for h in result.nodes]
        assert scores == sorted(scores, reverse=True)
        report = result.report
        assert report["entry_nodes"] > 0 and report["touched_nodes"] >= report["entry_nodes"]
        assert report["query_entities"] >= report["matched_entities"] >= 0


def test_a_matched_entity_contributes_its_attribute(built):
    snap = built.engine.state.snapshot
    src, dst = _edges(built)[int(EdgeKind.ENTITY_ATTRIBUTE)]
    name = snap.nodes.text_of(src[:1])[0]
    # Structured nodes take no budget by default (decision 0034); a query may grant them some.
    result = built.query(
        f"Tell me about {name}.", mode="graph", budget_tokens=4000, structured_share=0.05
    )
    assert result.report["matched_entities"] >= 1
    assert int(dst[0]) in {h.id for h in result.nodes}
    default = built.query(f"Tell me about {name}.", mode="graph", budget_tokens=4000)
    assert {h.kind for h in default.nodes} <= {"T", "S"}


def test_seeds_that_hit_no_node_give_a_valid_empty_result(built):
    view = built.engine.state.views["graph"]
    touched, scores, cross = view.cross_nodes(np.zeros(0, np.int64), np.zeros(0), view.cfg)
    assert touched.size == scores.size == cross.size == 0
    result = built.query("zzqx qqzz?", mode="graph", entry_top_k=0)
    assert result.nodes == []
    assert result.report["entry_nodes"] == 0 and result.report["cross_nodes"] == 0
    # A seed with no edges reaches only itself.
    graph = view.graph
    no_edges = np.flatnonzero(graph.alive & (row_weights(graph) == 0))
    isolated = view.stored.position_of_slot[no_edges]
    if isolated.size:
        touched, scores, cross = view.cross_nodes(isolated[:1], np.ones(1), view.cfg)
        assert touched.tolist() == isolated[:1].tolist() and cross.tolist() == touched.tolist()


class BrokenJSONLLMDouble:
    """Test double of the LLM interface: the extractive backend's answers, broken on purpose.

    Each decompose/community prompt gets one of six behaviours (by a hash of the prompt):
    good; truncated JSON; JSON wrapped in prose and a code fence; a wrong type on the first
    call and a good answer on the retry; an empty string always; units without text always.
    """

    name = "broken-json-double"

    def __init__(self) -> None:
        self.inner = ExtractiveLLM()
        self.seen: Counter[str] = Counter()

    @staticmethod
    def variant(prompt: str) -> int:
        return zlib.crc32(prompt.encode()) % 6

    def complete(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        out = []
        for request, good in zip(requests, self.inner.complete(requests), strict=True):
            self.seen[request.prompt] += 1
            text = good.text
            if request.task in ("decompose", "community"):
                v = self.variant(request.prompt)
                first = self.seen[request.prompt] == 1
                text = [
                    text,
                    text[: max(1, int(len(text) * 0.6))],
                    f"Sure! Here you go:\n```json\n{text}\n```\nAnything else?",
                    '{"semantic_units": "n/a", "high_level_elements": 3}' if first else text,
                    "",
                    '{"semantic_units": [{"text": 42}], "high_level_elements": [{"title": 1}]}',
                ][v]
            out.append(LLMResponse(text, good.prompt_tokens, len(text.split())))
        return out


def test_broken_llm_json_never_crashes_and_unusable_chunks_are_skipped(tmp_path, sample_docs):
    llm = BrokenJSONLLMDouble()
    # The parser is under test, not the yield floor (tests/integration/test_llm_yield.py):
    # half of this double's community answers are broken, which the default floor refuses.
    cfg = _config()
    cfg.yield_floor.min_yield = 0.0
    index = Index.create(tmp_path / "idx", cfg, embedder=HashingEmbedder(64), llm=llm)
    report = index.insert(sample_docs)
    snap = index.engine.state.snapshot
    assert len(snap.nodes.ids_of_kind(K["S"])) > 0
    notes = " ".join(report.notes)
    assert "decompositions unusable, retried" in notes and "skipped" in notes
    assert report.llm_by_stage["decompose_retry"]["calls"] > 0
    chunk_ids = snap.nodes.ids_of_kind(K["T"])
    texts = snap.nodes.text_of(chunk_ids)
    t, _ = _edges(index)[int(EdgeKind.CHUNK_UNIT)]
    with_units = set(t.tolist())
    from graphstrata.engine.prompts import decompose_request

    for cid, text in zip(chunk_ids.tolist(), texts, strict=True):
        v = llm.variant(decompose_request(text, 1024).prompt)
        if v in (4, 5):  # never usable: skipped
            assert cid not in with_units
        elif v in (0, 2, 3):  # good, wrapped, or good on retry
            assert cid in with_units
    result = index.query("Who founded Meridian Optics?", mode="graph")
    assert {h.kind for h in result.nodes} <= {"T", "S", "A", "H", "R"}


def test_graph_and_hierarchy_share_one_index(tmp_path, sample_docs):
    index = Index.create(tmp_path / "both", _config(hierarchy=True), embedder=HashingEmbedder(64))
    index.insert(sample_docs[:12])
    assert {"graph", "naive"} <= set(index.modes)
    result = index.query("Who founded Meridian Optics?", mode="graph", budget_tokens=3000)
    assert result.nodes and all(h.kind != "L" for h in result.nodes)
    index.delete([sample_docs[0]["doc_id"]])
    result = index.query("Who founded Meridian Optics?", mode="graph", budget_tokens=3000)
    assert all(sample_docs[0]["doc_id"] not in h.docs for h in result.nodes)


def test_graph_parameters_are_typed_and_checked(built):
    q = "Who founded Meridian Optics?"
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['nonsense'\].*ppr_alpha"):
        built.query(q, mode="graph", nonsense=1)
    with pytest.raises(ValueError, match="ppr_iters must be an integer"):
        built.query(q, mode="graph", ppr_iters="2")
    one_step = built.query(q, mode="graph", ppr_iters=1)
    default = built.query(q, mode="graph")
    assert one_step.report["touched_nodes"] < default.report["touched_nodes"]


# ------------------------------------------------------------------ hybrid entry points


def test_merge_seeds_gives_each_group_its_share_and_adds_overlaps():
    pos, w = merge_seeds(
        [
            (np.array([5, 7]), np.array([1.0, 3.0]), 0.5),  # -> 0.125, 0.375
            (np.array([7, 9]), np.array([2.0, 2.0]), 1.5),  # -> 0.75, 0.75
            (np.array([11]), np.array([4.0]), 0.0),  # no share: dropped
            (np.array([13]), np.array([0.0]), 1.0),  # no weight: dropped
        ]
    )
    assert pos.tolist() == [5, 7, 9]
    assert np.allclose(w, [0.125, 0.375 + 0.75, 0.75])
    empty_pos, empty_w = merge_seeds([])
    assert empty_pos.size == empty_w.size == 0


def test_minmax_maximal_keys_and_kind_letters():
    assert minmax(np.array([2.0, 4.0, 3.0])).tolist() == [0.0, 1.0, 0.5]
    assert minmax(np.array([3.0, 3.0])).tolist() == [1.0, 1.0]
    assert minmax(np.zeros(0)).size == 0
    keys = ["haymo", "haymo of faversham", "faversham", "kent"]
    assert maximal_keys(keys) == ["haymo of faversham", "kent"]
    assert kinds_of_letters("TS", (K["T"], K["S"], K["A"])) == (K["T"], K["S"])
    with pytest.raises(ValueError, match="not among"):
        kinds_of_letters("TN", (K["T"], K["S"]))


def test_query_name_candidates_are_capitalized_spans_and_titles_drop_articles():
    keys = query_name_candidates("What did the Haymo of Faversham era bring to The Exies in 1999?")
    assert "haymo of faversham" in keys and "haymo" in keys and "faversham" in keys
    assert "the exies" in keys and "exies" in keys and "1999" in keys
    assert "era" not in keys and "what did" not in keys
    assert title_key("The Lake Sundra Ferry") == "lake sundra ferry"
    assert title_key("Meridian Optics") == "meridian optics"


def _packed(cand, tokens, kinds, chunk_of, budget, share=1.0, text_share=0.0) -> list[int]:
    cand = np.asarray(cand)
    chunks = np.asarray(chunk_of)[cand]
    got = pack_ranked(
        cand,
        containers(cand, chunks),
        np.asarray(tokens),
        np.asarray([K[k] for k in kinds], np.uint8),
        K["T"],
        kind_table((K["A"], K["H"], K["R"])),
        budget,
        share,
        text_share,
    )
    return cand[got].tolist()


def test_pack_ranked_never_packs_a_unit_inside_a_packed_chunk():
    # 0: chunk (50 tokens) with units 1 and 2; 3: a unit of another chunk (not a candidate);
    # 4: an attribute. The chunk replaces unit 1, packed before it; unit 2 is then skipped.
    tokens, kinds, chunk_of = [50, 20, 25, 10, 30], list("TSSSA"), [-1, 0, 0, 9, -1]
    assert _packed([1, 3, 0, 2, 4], tokens, kinds, chunk_of, 200) == [3, 0, 4]
    assert containers(np.asarray([1, 3, 0]), np.asarray([0, 9, -1])).tolist() == [2, -1, -1]
    assert reordered(np.asarray([2, 0, 1]), np.asarray([2, -1, -1])).tolist() == [-1, 0, -1]


def test_pack_ranked_text_share_and_structured_share():
    tokens, kinds, chunk_of = [40, 40, 30, 30, 10], list("TTARS"), [-1, -1, -1, -1, -1]
    # Chunks alone first into half the budget (chunk 1 does not fit 50), then everything:
    # A (30) fits the 30-token structured cap, R (30) no longer does; S is not capped;
    # chunk 1 no longer fits.
    got = _packed([0, 2, 3, 4, 1], tokens, kinds, chunk_of, 100, 0.3, 0.5)
    assert got == [0, 2, 4]
    # A chunk that does not fit even after its units' tokens are given back is skipped.
    assert _packed([1, 2, 0], [50, 20, 30], list("TST"), [-1, 0, -1], 60) == [1, 2]


def test_mixed_walks_lists_each_touched_node_once():
    # The first walk touched 3 (score 0.5) and 5, leaving 5 no mass (a push threshold); the
    # second touched 5 and 7. Each comes back once, scores (first + 2 * second) / 3.
    score = np.zeros(9)
    score[[3, 5]] = [0.5, 0.0]
    touched, scores = mixed_walks(
        score, np.asarray([3, 5]), np.asarray([5, 7]), np.asarray([0.3, 0.6]), 2.0
    )
    assert touched.tolist() == [3, 5, 7]
    assert scores == pytest.approx([0.5 / 3, 0.6 / 3, 1.2 / 3])
    assert score[[3, 5, 7]] == pytest.approx(scores) and score.sum() == pytest.approx(scores.sum())


def _bridge_oracle(kinds, chunk_units, unit_entities, mentions, sources, strength, exclude, top):
    """``bridge_seeds`` in plain Python: a unit's strength is its last listing's (sources'
    units first, then each chunk source's units)."""
    listed = [(p, w) for p, w in zip(sources, strength) if kinds[p] != K["T"]]
    listed += [
        (u, w)
        for p, w in zip(sources, strength)
        if kinds[p] == K["T"]
        for u in chunk_units.get(p, [])
    ]
    of_unit = dict(listed)
    best: dict[int, float] = {}
    for u, _ in listed:
        for e in unit_entities.get(u, []):
            if e not in exclude and 2 <= mentions[e] <= top:
                best[e] = max(best.get(e, 0.0), of_unit[u])
    keys = sorted(best)
    return keys, [best[e] / np.log1p(mentions[e]) for e in keys]


@pytest.mark.parametrize("seed", range(30))
def test_bridge_seeds_against_a_python_oracle(seed):
    rng = np.random.default_rng(seed)
    n = 40
    kinds = rng.choice([K["T"], K["S"], K["N"]], n).astype(np.uint8)
    chunks, units, entities = (np.flatnonzero(kinds == K[k]) for k in "TSN")
    chunk_units = (
        {
            int(c): sorted(rng.choice(units, rng.integers(0, 4), replace=False).tolist())
            for c in chunks
        }
        if units.size
        else {}
    )
    unit_entities = (
        {
            int(u): sorted(rng.choice(entities, rng.integers(0, 4), replace=False).tolist())
            for u in units
        }
        if entities.size
        else {}
    )
    mentions = rng.integers(0, 6, n)

    def follow(links):
        def go(p):
            pairs = [(t, int(o)) for o in p.tolist() for t in links.get(int(o), [])]
            return np.asarray([t for t, _ in pairs], np.int64), np.asarray(
                [o for _, o in pairs], np.int64
            )

        return go

    pool = np.concatenate([chunks, units])
    sources = rng.permutation(pool)[: rng.integers(0, pool.size + 1)].astype(np.int64)
    strength = rng.random(sources.size)
    exclude = rng.choice(np.arange(n), 3).astype(np.int64)  # may repeat
    got, w = bridge_seeds(
        kinds,
        K["T"],
        follow(chunk_units),
        follow(unit_entities),
        lambda p: mentions[p],
        sources,
        strength,
        exclude,
        4,
    )
    keys, want = _bridge_oracle(
        kinds,
        chunk_units,
        unit_entities,
        mentions,
        sources.tolist(),
        strength.tolist(),
        set(exclude.tolist()),
        4,
    )
    assert got.tolist() == keys and w.tolist() == pytest.approx(want, rel=1e-12)


def test_coverage_ranked_maps_units_to_their_chunks_and_reads_the_head_only():
    # Positions 40 (chunk), 7 (its unit), 12 and 30 (chunks), by walk score; term 0 is the
    # one the unit and its chunk share, term 1 is 12's.
    cand, density = np.asarray([7, 40, 12, 30]), np.asarray([1.0, 0.9, 0.6, 0.5])
    asked: list[list[int]] = []
    parts = {7: (1.0, 0.0), 40: (1.0, 0.0), 12: (0.0, 1.0), 30: (1.0, 0.0)}

    def term_scores(p):
        asked.append(p.tolist())
        return np.asarray([parts[int(x)] for x in p], np.float64).T.reshape(2, p.size)

    cost, chunks = np.asarray([10, 50, 50, 50]), np.asarray([40, -1, -1, -1])
    inside = containers(cand, chunks)
    assert inside.tolist() == [1, -1, -1, -1]
    order, gains = coverage_ranked(cand, density, cost, inside, term_scores, 0.5, 1000)
    got = cand[order]
    # The chunk after its unit: term 0 used up once, 0.9 * 0.5; 12 keeps 0.6.
    assert got.tolist() == [7, 12, 40, 30] and gains[:3] == pytest.approx([1.0, 0.6, 0.45])
    assert asked == [[7, 40, 12, 30]]
    # A budget of 20: the head is what holds COVERAGE_BUDGETS * 20 tokens, the rest counts
    # as matching no term (30 then takes the mean freshness, not term 0's).
    asked.clear()
    coverage_ranked(cand, density, cost, inside, term_scores, 0.5, 20)
    head = int(np.searchsorted(np.cumsum(cost), COVERAGE_BUDGETS * 20)) + 1
    assert asked == [cand[:head].tolist()] and head < cand.size
    empty = coverage_ranked(cand[:0], density[:0], cost[:0], inside[:0], term_scores, 0.5, 9)
    assert empty[0].size == 0


def test_graph_search_seeds_from_exact_vector_and_sparse_entry_points(built):
    q = "Who founded Meridian Optics?"
    report = built.query(q, mode="graph").report
    assert report["exact_nodes"] > 0 and report["vector_nodes"] > 0
    assert report["sparse_nodes"] > 0
    assert report["entry_nodes"] <= (
        report["exact_nodes"] + report["vector_nodes"] + report["sparse_nodes"]
    )
    no_sparse = built.query(q, mode="graph", sparse_top_k=0).report
    assert no_sparse["sparse_nodes"] == 0 and no_sparse["vector_nodes"] > 0
    no_vector = built.query(q, mode="graph", entry_top_k=0).report
    assert no_vector["vector_nodes"] == 0 and no_vector["sparse_nodes"] > 0
    only_exact = built.query(q, mode="graph", entry_top_k=0, sparse_top_k=0)
    assert only_exact.nodes and only_exact.report["entry_nodes"] == report["exact_nodes"]


def test_sparse_entries_scale_with_the_budget():
    assert [sparse_entries(40, b) for b in (1000, 2000, 4000)] == [20, 40, 80]
    assert sparse_entries(40, ENTRY_BUDGET) == 40
    assert sparse_entries(0, 4000) == 0  # no sparse entry points stays none
    assert sparse_entries(3, 1) == 1 and sparse_entries(3, 0) == 1  # at least one
    assert sparse_entries(5, 1000) == 2  # round(2.5): to even
    # never past the per-kind bound of a query, whatever the budget (issue 51)
    assert sparse_entries(1000, 10**6) == MAX_QUERY_K == 1000
    assert sparse_entries(40, 50_000) == 1000


def test_graph_search_takes_bm25_entry_points_in_proportion_to_its_budget(built, monkeypatch):
    view = type(built.engine.state.views["graph"])
    asked: list[int] = []
    real = view._sparse_lists

    def spy(self, text, k, query=None):
        asked.append(k)
        return real(self, text, k, query)

    monkeypatch.setattr(view, "_sparse_lists", spy)
    for budget in (500, 2000, 4000):
        built.query("Who founded Meridian Optics?", mode="graph", budget_tokens=budget)
    k = built.engine.config.heterograph.sparse_top_k
    assert asked == [sparse_entries(k, b) for b in (500, 2000, 4000)] == [k // 4, k, 2 * k]
    built.query("Who founded Meridian Optics?", mode="graph", budget_tokens=1000, sparse_top_k=6)
    assert asked[-1] == 3


def test_graph_search_returns_chunks_and_never_a_unit_of_a_returned_chunk(built):
    view = built.engine.state.views["graph"]
    nodes = built.engine.state.snapshot.nodes
    for question in QUESTIONS:
        result = built.query(question, mode="graph", budget_tokens=2000)
        kinds = [h.kind for h in result.nodes]
        assert "T" in kinds and result.report["text_nodes"] == kinds.count("T")
        chunks = {h.id for h in result.nodes if h.kind == "T"}
        units = np.asarray([h.id for h in result.nodes if h.kind == "S"], np.int64)
        if units.size:
            parents = view.ids[view.chunk_of(nodes.rows(units))]
            assert not set(parents.tolist()) & chunks


@pytest.mark.parametrize("share", [0.0, 0.1, 0.5])
def test_structured_share_caps_attributes_elements_and_relationships(built, share):
    for question in QUESTIONS:
        result = built.query(question, mode="graph", budget_tokens=1000, structured_share=share)
        structured = sum(h.tokens for h in result.nodes if h.kind in "AHR")
        assert structured <= 1000 * share


def test_text_share_packs_chunks_first(built):
    q = QUESTIONS[3]

    def chunk_tokens(**params: float) -> int:
        nodes = built.query(q, mode="graph", budget_tokens=1000, **params).nodes
        return sum(h.tokens for h in nodes if h.kind == "T")

    assert chunk_tokens(text_share=1.0) >= chunk_tokens(text_share=0.0) > 0


def test_document_titles_link_entities_to_their_chunks(built):
    view = built.engine.state.views["graph"]
    assert view.title_links > 0
    # "Brekkvik" is an entity and the title of a document: the question seeds its chunks.
    chunk_ids = view.names.titles[title_key("Brekkvik")]
    chunks = np.searchsorted(view.ids, chunk_ids)
    assert chunks.size and set(view.kinds[chunks].tolist()) == {K["T"]}
    result = built.query("Brekkvik?", mode="graph", entry_top_k=0, sparse_top_k=0)
    assert result.report["exact_nodes"] >= chunks.size
    assert {int(i) for i in view.ids[chunks]} & {h.id for h in result.nodes}


def test_bridge_walk_seeds_entities_of_the_first_hop(built):
    q = QUESTIONS[3]
    with_bridge = built.query(q, mode="graph")
    assert with_bridge.report["bridge_nodes"] > 0
    one_walk = built.query(q, mode="graph", bridge_weight=0.0)
    assert one_walk.report["bridge_nodes"] == 0
    assert one_walk.report["touched_nodes"] <= with_bridge.report["touched_nodes"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"text_share": 1.5}, "text_share must be in"),
        ({"structured_share": -0.1}, "structured_share must be in"),
        ({"token_exponent": 3.0}, "token_exponent must be in"),
        ({"sparse_top_k": -1}, "sparse_top_k must be in"),
        ({"sparse_match_weight": -1.0}, "sparse_match_weight must be >= 0"),
        ({"bridge_weight": -0.5}, "bridge_weight must be >= 0"),
        ({"bridge_sources": 1.5}, "bridge_sources must be an integer"),
        ({"match_query_ngrams": 1}, "match_query_ngrams must be true or false"),
    ],
)
def test_new_graph_parameters_are_checked(values, message):
    with pytest.raises(ValueError, match=message):
        GraphParams.parse(values, "graph")


def test_question_ngrams_match_names_the_entity_rules_miss(built):
    # The rules read "Considering Brekkvik" as one name; its n-gram "Brekkvik" is one.
    q = "Considering Brekkvik, what does its harbour ship?"
    on = built.query(q, mode="graph", match_query_ngrams=True).report
    off = built.query(q, mode="graph", match_query_ngrams=False).report
    assert on["matched_names"] >= 1 and off["matched_names"] == 0
    assert on["exact_nodes"] > off["exact_nodes"]
