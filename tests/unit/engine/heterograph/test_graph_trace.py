"""The ``graph`` search's opt-in trace: entry points and walk edges on the sample corpus, and
the trace functions of ``heterograph.ranking`` against a direct computation."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.core.graph import csr_from_edges
from graphstrata.core.layered import LayeredCSR, flatten, plain, row_weights
from graphstrata.core.ppr import shallow_ppr
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.heterograph import GraphParams
from graphstrata.engine.heterograph.parse import normalize_name
from graphstrata.engine.heterograph.query.ranking import (
    TITLE_LINK,
    pair_kinds,
    seed_matches,
    walk_distribution,
    walk_edges,
)
from graphstrata.engine.heterograph.query.search import TRACE_EDGES, TRACE_LEVELS
from graphstrata.engine.params import QueryError
from graphstrata.engine.types import NodeKind

QUESTIONS = [
    "Who founded Meridian Optics?",
    "When did the Halvorsen Observatory open on Mount Kjell?",
    "Which instruments did Meridian Optics build for the observatory?",
    "Considering Brekkvik, what does its harbour ship?",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory, sample_docs) -> Index:
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    index = Index.create(
        tmp_path_factory.mktemp("trace") / "idx", cfg, embedder=HashingEmbedder(64)
    )
    index.insert(sample_docs)
    return index


def _stored_pairs(index: Index) -> set[tuple[int, int, int]]:
    edges = index.engine.state.snapshot.edges
    cols = [edges.column(c).to_numpy().tolist() for c in ("src", "dst", "kind")]
    return {(a, b, k) for a, b, k in zip(*cols, strict=True)} | {
        (b, a, k) for a, b, k in zip(*cols, strict=True)
    }


def test_entry_points_name_the_exact_match_of_the_question(built):
    result = built.query(QUESTIONS[0], mode="graph", trace=True)
    trace = result.report["trace"]
    nodes = built.engine.state.snapshot.nodes
    entries = trace["entry_points"]
    assert len(entries) == result.report["entry_nodes"] + result.report["bridge_nodes"]
    exact = [e for e in entries if "exact" in e["match"]]
    names = {normalize_name(nodes.text_of(np.asarray([e["id"]]))[0]) for e in exact}
    assert "meridian optics" in names
    assert any(e["kind"] == "N" for e in exact)
    assert {m for e in entries for m in e["match"]} <= {"exact", "dense", "sparse", "bridge"}
    assert all(e["match"] for e in entries)
    weights = [e["weight"] for e in entries]
    assert weights == sorted(weights, reverse=True) and abs(sum(weights) - 1.0) < 1e-4
    # The dense and sparse groups seed too; switching them off leaves the exact matches.
    assert {"dense", "sparse"} <= {m for e in entries for m in e["match"]}
    only_exact = built.query(
        QUESTIONS[0], mode="graph", trace=True, entry_top_k=0, sparse_top_k=0, bridge_weight=0.0
    ).report["trace"]["entry_points"]
    assert only_exact and all(e["match"] == ["exact"] for e in only_exact)


@pytest.mark.parametrize("question", QUESTIONS)
def test_every_walk_edge_is_an_edge_of_the_walked_graph(built, question):
    view = built.engine.state.views["graph"]
    nodes = built.engine.state.snapshot.nodes
    stored = _stored_pairs(built)
    result = built.query(question, mode="graph", trace=True)
    edges = result.report["trace"]["walk_edges"]
    assert edges
    returned = {h.id for h in result.nodes}
    seeds = {e["id"] for e in result.report["trace"]["entry_points"]}
    level_one_sources = {e["src"] for e in edges if e["level"] == 1}
    for e in edges:
        assert e["flow"] > 0 and e["weight"] > 0 and 1 <= e["level"] <= TRACE_LEVELS
        if e["kind"] == TITLE_LINK:  # an entity and a chunk of the document of its name
            pair = np.asarray([e["src"], e["dst"]], np.int64)
            entity, chunk = view._positions(pair)
            if view.kinds[entity] != int(NodeKind.N):  # the mass went from the chunk
                entity, chunk = chunk, entity
            assert view.kinds[entity] == int(NodeKind.N)
            name = normalize_name(nodes.text_of(view.ids[[entity]])[0])
            assert int(view.ids[chunk]) in view.names.titles[name].tolist()
        else:
            assert (e["src"], e["dst"], e["kind"]) in stored
        if e["level"] == 1:
            assert e["dst"] in returned
        else:  # traced back from a source of the step after it, never from a seed
            assert e["dst"] in level_one_sources and e["dst"] not in seeds
    per_node = Counter((e["dst"], e["level"]) for e in edges)
    assert max(per_node.values()) <= TRACE_EDGES


@pytest.mark.parametrize("question", QUESTIONS)
def test_trace_off_changes_nothing(built, question):
    default = built.query(question, mode="graph", budget_tokens=1500)
    off = built.query(question, mode="graph", budget_tokens=1500, trace=False)
    on = built.query(question, mode="graph", budget_tokens=1500, trace=True)
    for other in (off, on):
        assert [(h.id, h.score, h.tokens) for h in other.nodes] == [
            (h.id, h.score, h.tokens) for h in default.nodes
        ]
    assert "trace" not in default.report and "trace" not in off.report
    drop = {"trace", "seconds", "search_seconds", "embed_seconds"}
    assert {k: v for k, v in on.report.items() if k not in drop} == {
        k: v for k, v in default.report.items() if k not in drop
    }


def test_trace_is_a_typed_parameter():
    assert GraphParams.parse({"trace": True}, "graph").trace is True
    with pytest.raises(QueryError, match="trace must be true or false"):
        GraphParams.parse({"trace": 1}, "graph")
    schema = GraphParams.json_schema()["properties"]["trace"]
    assert "entry points" in schema["description"]


def _graph(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    weight = rng.uniform(0.1, 2.0, m).astype(np.float32)
    return csr_from_edges(src.astype(np.int64), dst.astype(np.int64), weight, n)


def _with_sums(graph: LayeredCSR) -> tuple[LayeredCSR, np.ndarray]:
    return graph, row_weights(graph)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("eps", [0.0, 0.02])
def test_walk_edges_account_for_all_the_mass_that_reached_a_node(seed, eps):
    """Also under a push threshold (``ppr_epsilon``): the mass a node keeps under it is not
    passed on, so its edges carry nothing and the in-flows still add up to each score."""
    n, alpha, iters = 40, 0.5, 3
    indptr, indices, weights = _graph(n, 120, seed)
    rng = np.random.default_rng(seed + 10)
    walks = [
        (rng.choice(n, 3, replace=False), rng.uniform(0.5, 1.0, 3), 1.0),
        (rng.choice(n, 2, replace=False), rng.uniform(0.5, 1.0, 2), 0.5),
    ]
    graph = _with_sums(plain(indptr, indices, weights))
    final = walk_distribution(*graph, walks, alpha, iters, eps)
    # The mixture equals the walks combined by their shares, as the search combines them.
    direct = np.zeros(n)
    for seeds, w, share in walks:
        touched, scores = shallow_ppr(indptr, indices, weights, seeds, w, alpha, iters, epsilon=eps)
        direct[touched] += share / 1.5 * scores
    np.testing.assert_allclose(final, direct, atol=1e-12)
    restart = walk_distribution(*_with_sums(plain(indptr, indices, weights)), walks, alpha, 0)
    assert abs(restart.sum() - 1.0) < 1e-12
    earlier = [walk_distribution(*graph, walks, alpha, iters - 1, eps, passed=True)]
    if eps:  # the threshold held some mass back (else this case tests nothing new)
        unpushed = walk_distribution(*graph, walks, alpha, iters - 1, eps)
        assert (unpushed > earlier[0]).any()
    targets = np.flatnonzero(final > 0)
    src, dst, w, flow, level = walk_edges(
        *_with_sums(plain(indptr, indices, weights)),
        earlier,
        alpha,
        targets,
        np.zeros(0, np.int64),
        n,
    )
    assert set(level.tolist()) <= {1}
    inflow = np.zeros(n)
    np.add.at(inflow, dst, flow)
    np.testing.assert_allclose(inflow + alpha * restart, final, atol=1e-12)
    row_of = {(int(indices[j]), v) for v in range(n) for j in range(indptr[v], indptr[v + 1])}
    assert all((int(a), int(b)) in row_of for a, b in zip(src, dst, strict=True))
    # A bound per node keeps the heaviest edges; seeds stop the trace back.
    top = walk_edges(
        *_with_sums(plain(indptr, indices, weights)),
        earlier * 2,
        alpha,
        targets[:2],
        targets[2:],
        2,
    )
    for v in targets[:2].tolist():
        mine = np.sort(flow[dst == v])[::-1][:2]
        np.testing.assert_allclose(np.sort(top[3][(top[1] == v) & (top[4] == 1)])[::-1], mine)
    assert set(top[1][top[4] == 2].tolist()) <= set(top[0][top[4] == 1].tolist()) - set(
        targets[2:].tolist()
    )


def test_walk_edges_of_no_step_and_seed_matches():
    indptr, indices, weights = _graph(10, 20, 3)
    out = walk_edges(
        *_with_sums(plain(indptr, indices, weights)),
        [],
        0.5,
        np.arange(3),
        np.zeros(0, np.int64),
        3,
    )
    assert all(a.size == 0 for a in out)
    groups = [
        ("exact", np.array([1, 2]), np.array([1.0, 0.0]), 1.0),
        ("dense", np.array([1, 3]), np.array([0.5, 1.0]), 0.5),
        ("sparse", np.array([4]), np.array([1.0]), 0.0),  # no share: seeds nothing
    ]
    assert seed_matches(groups) == {1: ["exact", "dense"], 3: ["dense"]}


def test_pair_kinds_take_the_heaviest_stored_edge_either_way():
    src, dst = np.array([0, 2, 1]), np.array([1, 1, 0])
    weight, kind = np.array([1.0, 1.0, 3.0]), np.array([2, 7, 5])
    got = pair_kinds(src, dst, weight, kind, np.array([1, 1, 3]), np.array([0, 2, 0]))
    assert got.tolist() == [5, 7, TITLE_LINK]


def test_a_walk_without_seeds_has_an_empty_trace(built):
    result = built.query(
        "nothing here matches", mode="graph", trace=True, entry_top_k=0, sparse_top_k=0
    )
    assert result.nodes == [] and result.report["entry_nodes"] == 0
    assert result.report["trace"] == {"entry_points": [], "walk_edges": []}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_trace_on_layers_equals_the_trace_on_the_flattened_graph(seed):
    """Base + extra layers with dead nodes (as the view's walk graph after writes) trace the
    same edges and flows as the one CSR they stand for, renumbered."""
    n_base, n, alpha = 30, 40, 0.5
    rng = np.random.default_rng(seed)
    base = _graph(n_base, 90, seed)
    xs, xd = rng.integers(0, n, 40), rng.integers(0, n, 40)
    xs[:10], xd[:10] = base[1][:10], base[1][5:15]  # some pairs in both layers
    extra = csr_from_edges(xs, xd, rng.uniform(0.1, 2.0, 40).astype(np.float32), n)
    alive = rng.random(n) > 0.15
    layered = LayeredCSR(*base, *extra, alive)
    flat = plain(*flatten(layered))
    layered_sums, flat_sums = row_weights(layered), row_weights(flat)
    pos = np.cumsum(alive) - 1
    live = np.flatnonzero(alive)
    walks = [(rng.choice(live, 3, replace=False), rng.uniform(0.5, 1.0, 3), 1.0)]
    walks_flat = [(pos[s], w, share) for s, w, share in walks]
    for t in range(3):
        got = walk_distribution(layered, layered_sums, walks, alpha, t)
        np.testing.assert_allclose(
            got[live], walk_distribution(flat, flat_sums, walks_flat, alpha, t), atol=1e-9
        )
        assert not got[~alive].any()
    earlier = [walk_distribution(layered, layered_sums, walks, alpha, 1)]
    earlier_flat = [walk_distribution(flat, flat_sums, walks_flat, alpha, 1)]
    final = walk_distribution(layered, layered_sums, walks, alpha, 2)
    targets = np.flatnonzero(final > 0)
    got = walk_edges(layered, layered_sums, earlier, alpha, targets, np.zeros(0, np.int64), 5)
    want = walk_edges(flat, flat_sums, earlier_flat, alpha, pos[targets], np.zeros(0, np.int64), 5)
    got_rows = sorted(zip(pos[got[0]].tolist(), pos[got[1]].tolist(), got[3].tolist()))
    want_rows = sorted(zip(want[0].tolist(), want[1].tolist(), want[3].tolist()))
    assert [r[:2] for r in got_rows] == [r[:2] for r in want_rows]
    np.testing.assert_allclose([r[2] for r in got_rows], [r[2] for r in want_rows], rtol=1e-6)
