"""EraRAG hierarchy: structure, bounds, local updates and biased search (engine/hierarchy/).

Most tests use the sample corpus (30 documents, 60 chunks) with the hashing embedder and the
extractive LLM, and small segment bounds (3..5) so the hierarchy has three layers.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphstrata.bindings.api import Index
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.core.lsh import project_codes
from graphstrata.engine.config import FusionConfig
from graphstrata.engine.hierarchy import HierarchyTree, tiebreak_direction
from graphstrata.engine.interfaces import LLMError, LLMRequest, LLMResponse
from graphstrata.engine.types import NodeKind
from tests.helpers.hierarchy import (
    check_hierarchy,
    hierarchy_rows,
    new_index,
    signature,
    small_config,
)

T, L = int(NodeKind.T), int(NodeKind.L)


def doc_ids(docs: Sequence[dict[str, Any]]) -> list[str]:
    return [d["doc_id"] for d in docs]


# ------------------------------------------------------------------------------ build
@pytest.fixture
def built(tmp_path, hashing_embedder, sample_docs):
    index = new_index(tmp_path / "idx", hashing_embedder)
    report = index.insert(sample_docs[:25])
    return index, report


def test_build_makes_several_bounded_layers(built):
    index, report = built
    check_hierarchy(index, small_config())
    tree = HierarchyTree.from_nodes(index.engine.state.snapshot.nodes)
    assert tree.top_layer >= 2
    # one batched LLM call per layer, named by layer
    stages = sorted(report.llm_by_stage)
    assert stages == [f"summarize_layer_{i}" for i in range(1, tree.top_layer + 1)]
    assert all(report.llm_by_stage[s]["batches"] == 1 for s in stages)
    assert index.stats()["hierarchy_layers"] == tree.top_layer


def test_build_embeds_each_text_once(tmp_path, hashing_embedder, sample_docs):
    twins = [dict(d, doc_id=d["doc_id"] + "-twin") for d in sample_docs[:10]]
    index = new_index(tmp_path / "idx", hashing_embedder)
    report = index.insert(sample_docs[:10] + twins)
    nodes = index.engine.state.snapshot.nodes
    chunk_texts = nodes.text_of(nodes.ids_of_kind(T))
    summary_texts = nodes.text_of(nodes.ids_of_kind(L))
    # a summary that repeats a chunk's or a lower summary's text reuses its vector
    assert report.embedded == len(set(chunk_texts) | set(summary_texts))
    assert report.embedded < len(chunk_texts) + len(summary_texts)
    check_hierarchy(index, small_config())


def test_small_corpus_has_no_summary_until_it_outgrows_one_segment(
    tmp_path, hashing_embedder, sample_docs
):
    index = new_index(tmp_path / "idx", hashing_embedder)
    index.insert(sample_docs[:2])  # 4 chunks: fits in one segment of at most 5
    assert index.engine.state.snapshot.nodes.ids_of_kind(L).size == 0
    check_hierarchy(index, small_config())
    report = index.insert(sample_docs[2:4])  # 8 chunks: a new layer, summarized at once
    assert report.llm_by_stage["summarize_layer_1"]["calls"] == 2
    check_hierarchy(index, small_config())
    index.delete(doc_ids(sample_docs[2:4]))  # back to one segment: the layer goes away
    assert index.engine.state.snapshot.nodes.ids_of_kind(L).size == 0
    check_hierarchy(index, small_config())


def test_max_layers_caps_the_hierarchy(tmp_path, hashing_embedder, sample_docs):
    config = small_config(max_layers=1)
    index = new_index(tmp_path / "idx", hashing_embedder, config)
    index.insert(sample_docs)
    tree = HierarchyTree.from_nodes(index.engine.state.snapshot.nodes)
    assert tree.top_layer == 1 and tree.at_layer(1).size > config.hierarchy.s_max
    check_hierarchy(index, config)


def test_delete_everything_leaves_no_hierarchy(built, sample_docs):
    index, _ = built
    index.delete(doc_ids(sample_docs[:25]))
    nodes = index.engine.state.snapshot.nodes
    assert nodes.ids_of_kind(T, L).size == 0
    assert index.engine.state.vectors.count([T, L]) == 0


# ------------------------------------------------------------------------------ updates
def test_new_chunk_rows_replace_the_engines_rows(built, sample_docs):
    """The hierarchy rewrites new chunk rows (same id, same version) with code and parent."""
    index, _ = built
    before = index.engine.store.manifest["next_node_id"]
    index.insert(sample_docs[25:27])
    nodes = index.engine.state.snapshot.nodes
    new = nodes.ids_of_kind(T)
    new = new[new >= before]
    assert new.size == 4
    rows = nodes.rows(new)
    assert np.all(nodes.parent[rows] >= 0)
    assert len(nodes) == len(np.unique(nodes.ids))


def test_insert_into_one_group_touches_only_its_ancestors(built):
    index, _ = built
    config = small_config()
    h = hierarchy_rows(index)
    nodes = h["snap"].nodes
    tree = HierarchyTree.from_nodes(nodes)
    # A chunk whose code no other segment holds, in a segment with room: a document made of
    # its text gets the same vector and code, so it joins exactly that segment.
    segs = tree.segments(0)
    code_owners: dict[int, set[int]] = {}
    for p, members in segs.items():
        for c in nodes.code[nodes.rows(members)].tolist():
            code_owners.setdefault(c, set()).add(p)
    target = next(
        int(m)
        for p, members in segs.items()
        if len(members) < config.hierarchy.s_max
        for m in members
        if len(code_owners[int(nodes.code[nodes.rows([m])[0]])]) == 1
    )
    ancestors = []
    node = target
    while (p := int(tree.parent[tree.rows(np.asarray([node]))[0]])) >= 0:
        ancestors.append(p)
        node = p
    (text,) = nodes.text_of([target])
    report = index.insert([{"doc_id": "copy", "text": text}])
    assert report.chunks_added == 1
    calls = {s: v["calls"] for s, v in report.llm_by_stage.items()}
    assert calls == {f"summarize_layer_{i}": 1 for i in range(1, tree.top_layer + 1)}
    after = index.engine.state.snapshot.nodes
    gone = set(nodes.ids_of_kind(L).tolist()) - set(after.ids_of_kind(L).tolist())
    assert gone == set(ancestors)
    check_hierarchy(index, config)


def test_insert_then_delete_restores_the_hierarchy(tmp_path, hashing_embedder, sample_docs):
    """Insert-then-delete of a document gives back the same segments and texts when the
    insert had room in the segments it joined (no segment was re-cut)."""
    config = small_config(3, 8)  # room in most segments: inserts seldom re-cut them
    index = new_index(tmp_path / "wide", hashing_embedder, config)
    index.insert(sample_docs[:20])
    restored = 0
    for doc in sample_docs[20:]:
        before = signature(index)
        nodes = index.engine.state.snapshot.nodes
        old = {p: set(m.tolist()) for p, m in HierarchyTree.from_nodes(nodes).segments(0).items()}
        first_new = index.engine.store.manifest["next_node_id"]
        index.insert([doc])
        mid = HierarchyTree.from_nodes(index.engine.state.snapshot.nodes).segments(0)
        recut = sorted(
            tuple(sorted(i for i in m.tolist() if i < first_new)) for m in mid.values()
        ) != sorted(tuple(sorted(m)) for m in old.values())
        index.delete([doc["doc_id"]])
        check_hierarchy(index, config)
        if not recut:
            assert signature(index) == before, doc["doc_id"]
            restored += 1
    assert restored >= 3


def test_new_items_that_fill_segments_are_grouped_first(tmp_path, hashing_embedder, sample_docs):
    calls = {}
    for policy in (True, False):
        index = new_index(tmp_path / f"idx-{policy}", hashing_embedder, None, None, policy)
        index.insert(sample_docs[:20])
        first_new = index.engine.store.manifest["next_node_id"]
        report = index.insert(sample_docs[20:])  # 20 new chunks
        calls[policy] = report.llm_by_stage["summarize_layer_1"]["calls"]
        check_hierarchy(index, small_config())
        segments = HierarchyTree.from_nodes(index.engine.state.snapshot.nodes).segments(0)
        only_new = [m for m in segments.values() if np.all(m >= first_new)]
        if policy:
            assert len(only_new) >= 3  # 20 new chunks fill whole segments of 3..5
    assert calls[True] < calls[False]


def test_membership_changes_come_from_the_assignments():
    """Changed and vanished segments are derived from the seats before and after (a segment
    emptied by a merge must be reported even if the partition's own report misses it)."""
    from graphstrata.engine.hierarchy.update import _membership_changes

    seats = np.array([0, 1, 0, 2, 2, -1, 5, 5])  # 5 is untouched; 0 lost a deleted item
    after = np.array([0, 1, 0, 1, 6, 6, 5, 5])  # 2 emptied, 6 is new
    changed, removed = _membership_changes(seats, after, np.array([0]))
    assert changed.tolist() == [0, 1, 6] and removed.tolist() == [2]
    changed, removed = _membership_changes(seats, seats.clip(0), np.array([], int))
    assert changed.tolist() == [0] and removed.tolist() == []


def test_update_of_a_document_replaces_its_chunks_in_one_operation(built, sample_docs):
    index, _ = built
    doc = dict(sample_docs[0], text=sample_docs[0]["text"] + " A new closing sentence.")
    report = index.insert([doc])
    assert report.docs_updated == 1 and report.chunks_removed == 2
    check_hierarchy(index, small_config())
    cites = index.query("closing sentence", mode="collapsed", budget_tokens=2000)
    assert all(d in doc_ids(sample_docs[:25]) for h in cites.nodes for d in h.docs)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["insert", "delete", "update"]),
            st.lists(st.integers(0, 29), min_size=1, max_size=8, unique=True),
        ),
        min_size=1,
        max_size=5,
    )
)
@pytest.mark.parametrize("group_new_first", [True, False])
def test_bounds_hold_after_any_inserts_and_deletes(
    ops, group_new_first, hashing_embedder, sample_docs
):
    config = small_config()
    with tempfile.TemporaryDirectory() as tmp:
        index = new_index(Path(tmp) / "idx", hashing_embedder, config, None, group_new_first)
        index.insert(sample_docs[:12])
        present = set(range(12))
        for op, picks in ops:
            if op == "insert":
                index.insert([sample_docs[i] for i in picks])
                present |= set(picks)
            elif op == "delete":
                index.delete([sample_docs[i]["doc_id"] for i in picks], missing_ok=True)
                present -= set(picks)
            else:
                edited = [
                    dict(sample_docs[i], text=sample_docs[i]["text"] + f" Edit {len(ops)}.")
                    for i in picks
                    if i in present
                ]
                index.insert(edited)
            check_hierarchy(index, config)


def vector_on_a_float16_edge(h: np.ndarray, others: np.ndarray, dim: int) -> np.ndarray:
    """A unit float32 vector whose projection on ``h`` is positive, but negative once the vector
    is rounded to float16 (and whose other bits keep their sign), so that its LSH code
    depends on the precision it is hashed at."""
    rng = np.random.default_rng(7)
    unit = h / np.linalg.norm(h)
    for _ in range(10_000):
        u = rng.standard_normal(dim).astype(np.float32)
        u -= (u @ unit) * unit
        u /= np.linalg.norm(u)
        v = (u + 1e-7 * unit).astype(np.float32)
        stored = v.astype(np.float16).astype(np.float32)
        if v @ h > 0 > stored @ h and np.all((others @ v > 0) == (others @ stored > 0)):
            return v
    raise AssertionError("no vector found on the float16 edge")


def test_codes_are_those_of_the_stored_float16_vectors(tmp_path, hashing_embedder, sample_docs):
    """With float16 storage (the default) a new node's code is computed from its vector as
    stored: a chunk whose float32 and float16 vectors hash differently gets the float16 code,
    which a later operation recomputes from the stored vector (a CI failure of the property
    test above, 1 code in 32, before ``Delta.add_vectors``)."""
    config = small_config()
    assert config.vector_dtype == "f16"
    index = new_index(tmp_path / "idx", hashing_embedder, config)
    index.insert(sample_docs[:12])
    planes = index.engine.state.snapshot.hyperplanes
    edge = vector_on_a_float16_edge(planes[0], planes[1:], hashing_embedder.dim)

    class EdgeEmbedder:
        """The hashing embedder, except that a text naming Zyxwv embeds to ``edge``."""

        name, dim, max_input_tokens = (
            hashing_embedder.name,
            hashing_embedder.dim,
            hashing_embedder.max_input_tokens,
        )
        compatible_names = hashing_embedder.compatible_names

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            out = hashing_embedder.embed(texts)
            out[["Zyxwv" in t for t in texts]] = edge
            return out

    index.engine.embedder = EdgeEmbedder()
    index.insert([{"doc_id": "edge.md", "text": "Zyxwv is a name on the edge of a hyperplane."}])
    nodes = index.engine.state.snapshot.nodes
    (row,) = np.flatnonzero(
        (nodes.kind == T) & np.array(["Zyxwv" in t for t in nodes.text_of(nodes.ids)])
    )
    stored = index.engine.state.snapshot.vectors.get(nodes.ids[[row]])
    assert int(project_codes(edge[None], planes)[0]) & 1 == 1  # the float32 vector's bit
    assert int(nodes.code[row]) == int(project_codes(stored, planes)[0])
    assert int(nodes.code[row]) & 1 == 0
    check_hierarchy(index, config)


def test_failed_summary_call_commits_nothing(tmp_path, hashing_embedder, sample_docs):
    class FailingLLM(ExtractiveLLM):
        fail = False

        def complete(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
            if self.fail and any(r.task == "summarize" for r in requests):
                raise LLMError("summarizer down")
            return super().complete(requests)

    llm = FailingLLM()
    index = new_index(tmp_path / "idx", hashing_embedder, llm=llm)
    index.insert(sample_docs[:20])
    version, before = index.version, signature(index)
    llm.fail = True
    with pytest.raises(LLMError):
        index.insert(sample_docs[20:22])
    assert index.version == version and signature(index) == before


# ------------------------------------------------------------------------------ persistence
def test_hyperplanes_and_tiebreak_survive_reopen_and_are_never_regenerated(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    path = tmp_path / "idx"
    index = new_index(path, hashing_embedder)
    index.insert(sample_docs[:20])
    manifest = index.engine.store.manifest
    hp_entry = dict(manifest["hyperplanes"])
    state_entry = dict(manifest["state"]["hierarchy/tiebreak_direction"])
    hyperplanes = np.load(path / hp_entry["file"])
    direction = index.engine.state.snapshot.state("hierarchy", "tiebreak_direction")
    np.testing.assert_array_equal(
        direction, tiebreak_direction(hashing_embedder.dim, hp_entry["n_bits"], hp_entry["seed"])
    )

    def no_sampling(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("hyperplanes regenerated")

    monkeypatch.setattr("graphstrata.engine.index.sample_hyperplanes", no_sampling)
    monkeypatch.setattr("graphstrata.engine.hierarchy.update.tiebreak_direction", no_sampling)
    reopened = Index.open(path, embedder=hashing_embedder, llm="extractive")
    reopened.insert(sample_docs[20:25])
    reopened.delete([sample_docs[0]["doc_id"]])
    manifest = reopened.engine.store.manifest
    assert manifest["hyperplanes"] == hp_entry
    assert manifest["state"]["hierarchy/tiebreak_direction"] == state_entry
    snap = reopened.engine.state.snapshot
    np.testing.assert_array_equal(snap.hyperplanes, hyperplanes)
    check_hierarchy(reopened, small_config())


# ------------------------------------------------------------------------------ search
QUESTION = "Which instruments did the observatory build with the optics company?"


def brute_force_top(index: Index, kinds: Sequence[int], k: int) -> tuple[np.ndarray, np.ndarray]:
    snap = index.engine.state.snapshot
    ids = snap.nodes.ids_of_kind(*kinds)
    q = index.engine.embedder.embed([QUESTION])[0]
    scores = snap.vectors.get(ids) @ q
    order = np.argsort(-scores, kind="stable")[:k]
    return ids[order], scores[order]


def ranked(index: Index, ids: Sequence[int]) -> list[tuple[float, str]]:
    """Nodes as (score, text): equal texts have equal scores, and their order among
    themselves is the vector index's choice, so compare them as multisets."""
    snap = index.engine.state.snapshot
    q = index.engine.embedder.embed([QUESTION])[0]
    scores = snap.vectors.get(np.asarray(ids, dtype=np.int64)) @ q
    return sorted(
        ((round(-float(s), 5), t) for s, t in zip(scores, snap.nodes.text_of(ids), strict=True))
    )


def test_collapsed_is_top_k_over_chunks_and_summaries_packed(built):
    index, _ = built
    result = index.query(QUESTION, mode="collapsed", budget_tokens=600, top_k=20)
    ids, _ = brute_force_top(index, [T, L], 20)
    tokens = index.engine.state.snapshot.nodes.tokens[index.engine.state.snapshot.nodes.rows(ids)]
    expected, used = [], 0
    for i, t in zip(ids.tolist(), tokens.tolist(), strict=True):
        if used + t <= 600:
            expected.append(i)
            used += t
    assert ranked(index, [h.id for h in result.nodes]) == ranked(index, expected)
    assert {h.kind for h in result.nodes} <= {"T", "L"}
    for h in result.nodes:
        assert (h.kind == "T") == (h.layer == 0) and h.docs and h.tokens > 0


def competes_in_order(
    index: Index, ranking: Sequence[int], scores: Sequence[float] | None = None
) -> list[bool]:
    """For each id of ``ranking`` (best first): whether it scores at least as well as every
    candidate below it in the tree (its descendants among the candidates, at least one),
    written plainly (without ``scores``: whether it is ranked above them)."""
    nodes = index.engine.state.snapshot.nodes

    def ancestors(i: int) -> list[int]:
        out, cur = [], int(nodes.parent[nodes.rows([i])[0]])
        while cur >= 0:
            out.append(cur)
            cur = int(nodes.parent[nodes.rows([cur])[0]])
        return out

    above = {i: ancestors(i) for i in ranking}
    if scores is None:
        pos = {i: r for r, i in enumerate(ranking)}
        beats = [all(pos[j] > pos[i] for j in ranking if i in above[j]) for i in ranking]
    else:
        score = {i: round(float(x), 5) for i, x in zip(ranking, scores, strict=True)}
        beats = [all(score[j] <= score[i] for j in ranking if i in above[j]) for i in ranking]
    found = [any(i in above[j] for j in ranking) for i in ranking]
    return [b and f for b, f in zip(beats, found, strict=True)]


def biased_oracle(
    index: Index, ranking: Sequence[int], mode: str, p: float, budget: int, pack, scores=None
) -> tuple[list[int], list[int]]:
    """EraRAG's biased search over one ranking: the favoured kind's competing candidates
    packed under p * budget, then every other candidate under the rest (``pack(ids, budget,
    before_ids)`` packs a list in order)."""
    nodes = index.engine.state.snapshot.nodes
    favoured = T if mode == "detailed" else L
    kinds = nodes.kind[nodes.rows(np.asarray(ranking, np.int64))].tolist() if ranking else []
    comp = competes_in_order(index, ranking, scores)
    # chunks have nothing below them: in ``detailed`` every chunk takes the share
    first = [
        i for i, k, c in zip(ranking, kinds, comp, strict=True) if k == favoured and (c or k == T)
    ]
    head = pack(first, int(p * budget), [])
    used = int(nodes.tokens[nodes.rows(np.asarray(head, np.int64))].sum()) if head else 0
    tail = pack([i for i in ranking if i not in head], budget - used, head)
    return head, tail


@pytest.mark.parametrize("mode", ["detailed", "summarized"])
@pytest.mark.parametrize("p", [0.3, 0.7, 1.0])
def test_biased_search_takes_its_competing_share_first(built, mode, p):
    """Changed on purpose (decision 0035): one ranking over chunks and summaries (collapsed's);
    the favoured side's share holds only its candidates that compete, the rest of the
    budget goes to every other candidate, not to the other side alone."""
    index, _ = built
    budget = 800
    result = index.query(QUESTION, mode=mode, budget_tokens=budget, bias_share=p)
    ids, cosines = brute_force_top(index, [T, L], index.engine.config.search.top_k)
    nodes = index.engine.state.snapshot.nodes

    def pack(cands, limit, _before):
        out, used = [], 0
        for i in cands:
            t = int(nodes.tokens[nodes.rows([i])[0]])
            if used + t <= limit:
                out.append(i)
                used += t
        return out

    head, tail = biased_oracle(index, ids.tolist(), mode, p, budget, pack, cosines.tolist())
    got = [h.id for h in result.nodes]
    assert ranked(index, got[: len(head)]) == ranked(index, head)
    assert ranked(index, got[len(head) :]) == ranked(index, tail)
    first = "T" if mode == "detailed" else "L"
    assert {h.kind for h in result.nodes[: len(head)]} <= {first}
    assert sum(h.tokens for h in result.nodes[: len(head)]) <= int(p * budget)
    assert sum(h.tokens for h in result.nodes) <= budget
    assert result.report["share"]["first_tokens"] == sum(
        h.tokens for h in result.nodes[: len(head)]
    )
    if mode == "detailed":
        assert head  # chunks have nothing below them: every chunk competes
    else:  # a summary in the head is ranked above each of its candidate descendants
        assert result.report["share"]["competing"] >= len(head)


def test_default_share_and_bad_share(built):
    index, _ = built
    result = index.query(QUESTION, mode="detailed", budget_tokens=1000)
    assert result.report["share"]["p"] == pytest.approx(0.7)
    assert result.report["share"]["first_budget"] == 700
    with pytest.raises(ValueError, match="bias_share must be"):
        index.query(QUESTION, mode="summarized", bias_share=1.5)
    with pytest.raises(ValueError, match="bias_share must be"):
        index.query(QUESTION, mode="summarized", bias_share="half")


def test_hierarchy_modes_are_absent_when_disabled(tmp_path, hashing_embedder):
    config = small_config()
    config.hierarchy.enabled = False
    index = Index.create(tmp_path / "idx", config, embedder=hashing_embedder, llm="extractive")
    assert "collapsed" not in index.modes and "naive" in index.modes
    enabled = Index.create(tmp_path / "on", small_config(), embedder=hashing_embedder)
    assert {"collapsed", "detailed", "summarized"} <= set(enabled.modes)


# ------------------------------------------------------------------------------ fused search
@pytest.fixture
def fused_built(tmp_path, hashing_embedder, sample_docs):
    """The ``built`` index with the shipped fusion defaults (dense + BM25, dedup)."""
    config = small_config()
    config.fusion = FusionConfig()
    index = new_index(tmp_path / "fused", hashing_embedder, config)
    index.insert(sample_docs[:25])
    return index


def fused_oracle(
    index: Index,
    kinds: Sequence[int],
    budget: int | None,
    before=(),
    feedback_docs=None,
    ranking: Sequence[int] | None = None,
) -> list[int]:
    """The fusion (as configured) of the dense and BM25 top-k of ``kinds``, packed greedily
    skipping candidates whose shingles are mostly packed already (``budget`` None: the
    fused ranking, unpacked; ``ranking``: pack that list instead of fusing)."""
    from graphstrata.core.fusion import query_dense_weight, rrf, score_fusion, shingles
    from graphstrata.engine.sparse.index import SparseIndex
    from tests.helpers.oracles import coverage_oracle, feedback_round

    engine = index.engine
    state, fusion, k = engine.state, engine.config.fusion, engine.config.search.top_k
    q = np.asarray(engine.embedder.embed([QUESTION]), np.float32)
    d_ids, _ = state.vectors.search(q, kinds, k)
    nodes = state.snapshot.nodes
    all_ids = nodes.ids_of_kind(T, L)
    fresh = SparseIndex.from_texts(all_ids, nodes.kind[nodes.rows(all_ids)], nodes.text_of(all_ids))
    s_ids, _ = fresh.search(QUESTION, kinds, k)
    w = fusion.dense_weight

    def one_round(dense, vector, bm25_ids, query):
        union = np.union1d(dense[0], bm25_ids)  # complete scores: both sides score the union
        lists = [
            (union, state.snapshot.vectors.get(union) @ vector),
            (union, fresh.score(query, union)),
        ]
        # the per-query weight (its kernel has its own oracle in tests/unit/core)
        w_q = query_dense_weight(
            lists[0][1],
            lists[1][1],
            w,
            fusion.adaptive,
            fusion.adaptive_strength,
            fusion.adaptive_depth,
        )
        if fusion.method == "score" and fusion.term_decay < 1:
            terms = fresh.term_scores(query, union)
            return np.asarray(coverage_oracle(union, lists[0][1], terms, w_q, fusion.term_decay))
        if fusion.method == "score":
            return score_fusion(lists, [w_q, 1 - w_q])[0]
        rankings = [i[np.lexsort((i, -np.asarray(s, np.float64)))] for i, s in lists]
        return rrf(rankings, [w_q, 1 - w_q], fusion.rrf_k)[0]

    fused = one_round((d_ids[0], None), q[0], s_ids, QUESTION)
    fused = fused if ranking is None else np.asarray(ranking)
    if ranking is not None:
        feedback_docs = 0
    elif feedback_docs is None:  # the hierarchy modes' default: feedback only if configured
        feedback_docs = fusion.feedback_docs if fusion.feedback_in_hierarchy else 0
    if feedback_docs and fused.size:
        top = fused[:feedback_docs]
        again = feedback_round(
            index, kinds, k, q[0], top, fusion, d_ids[0], (fresh, QUESTION, s_ids), one_round
        )
        fused = fused if again is None else again
    if budget is None:
        return [int(i) for i in fused.tolist()]
    n = fusion.shingle_words
    seen = {h for text in before for h in shingles(text, n)}
    out, used = [], 0
    for i in fused.tolist():
        t = int(nodes.tokens[nodes.rows([i])[0]])
        if used + t > budget:
            continue
        sh = shingles(nodes.text_of([i])[0], n)
        if sh and len(sh & seen) >= fusion.max_overlap * len(sh):
            continue
        seen |= sh
        out.append(i)
        used += t
    return out


def test_fused_collapsed_packs_distinct_fused_chunks_and_summaries(fused_built):
    index = fused_built
    result = index.query(QUESTION, mode="collapsed", budget_tokens=1200)
    assert [h.id for h in result.nodes] == fused_oracle(index, [T, L], 1200)
    assert result.report["fusion"]["method"] == index.engine.config.fusion.method
    assert result.report["fusion"]["sparse"] > 0
    by_kind = result.report["tokens_by_kind"]
    assert sum(by_kind.values()) == result.report["tokens"] <= 1200
    # no packed text is (almost) all inside the texts packed before it
    from graphstrata.core.fusion import shingles

    seen: set[int] = set()
    for h in result.nodes:
        sh = shingles(h.text, 5)
        assert not sh or len(sh & seen) < 0.8 * len(sh)
        seen |= sh
    assert "feedback" not in result.report["fusion"]  # off in the hierarchy by default
    # a query's feedback_docs turns the feedback round on, as does the config
    asked = index.query(QUESTION, mode="collapsed", budget_tokens=1200, feedback_docs=2)
    assert asked.report["fusion"]["feedback"] == 1
    assert [h.id for h in asked.nodes] == fused_oracle(index, [T, L], 1200, feedback_docs=2)
    index.engine.config.fusion.feedback_in_hierarchy = True
    configured = index.query(QUESTION, mode="collapsed", budget_tokens=1200)
    assert [h.id for h in configured.nodes] == fused_oracle(index, [T, L], 1200)
    assert configured.report["fusion"]["feedback"] == 1


def fused_biased_oracle(index: Index, mode: str, p: float, budget: int, feedback_docs=None):
    ranking = fused_oracle(index, [T, L], None, feedback_docs=feedback_docs)

    def pack(cands, limit, before_ids):
        texts = index.engine.state.snapshot.nodes.text_of(before_ids) if before_ids else []
        return fused_oracle(index, [T, L], limit, before=texts, ranking=cands)

    return biased_oracle(index, ranking, mode, p, budget, pack)


@pytest.mark.parametrize("mode", ["detailed", "summarized"])
def test_fused_biased_search_takes_its_share_first_without_repeats(fused_built, mode):
    index = fused_built
    budget, p = 900, 0.6
    result = index.query(QUESTION, mode=mode, budget_tokens=budget, bias_share=p)
    head, tail = fused_biased_oracle(index, mode, p, budget)
    assert [h.id for h in result.nodes] == head + tail
    letter = "T" if mode == "detailed" else "L"
    assert all(h.kind == letter for h in result.nodes[: len(head)])
    assert sum(h.tokens for h in result.nodes) <= budget
    # one fused ranking for both parts: a summary and a chunk can follow in the rest
    assert result.report["ranked"] == fused_oracle(index, [T, L], None)[:20]
    # the fusion parameters of detailed/summarized override the config
    dense = index.query(QUESTION, mode=mode, budget_tokens=budget, method="dense", max_overlap=2.0)
    assert dense.report["fusion"]["method"] == "dense" and dense.report["fusion"]["sparse"] == 0


@pytest.mark.parametrize("mode", ["detailed", "summarized"])
def test_a_querys_feedback_docs_applies_to_the_biased_modes(fused_built, mode):
    """``FusionConfig.feedback_docs`` applies to every fused mode: a query's value turns the
    feedback round on in ``detailed`` and ``summarized`` (once: one ranking, decision 0035),
    as in ``collapsed``, without changing the index's config."""
    index = fused_built
    fusion_before = dataclasses.asdict(index.engine.config.fusion)
    budget, p = 900, 0.6
    plain = index.query(QUESTION, mode=mode, budget_tokens=budget, bias_share=p)
    assert "feedback" not in plain.report["fusion"]  # off in the hierarchy by default
    asked = index.query(QUESTION, mode=mode, budget_tokens=budget, bias_share=p, feedback_docs=1)
    assert asked.report["fusion"]["feedback"] == 1
    head, tail = fused_biased_oracle(index, mode, p, budget, feedback_docs=1)
    assert [h.id for h in asked.nodes] == head + tail
    assert dataclasses.asdict(index.engine.config.fusion) == fusion_before
    again = index.query(QUESTION, mode=mode, budget_tokens=budget, bias_share=p)
    assert [h.id for h in again.nodes] == [h.id for h in plain.nodes]


def test_summary_postings_follow_inserts_and_deletes(fused_built, sample_docs):
    from graphstrata.engine.sparse.index import SparseIndex

    index = fused_built
    index.query(QUESTION, mode="collapsed")  # builds the T and L postings of this version
    index.insert(sample_docs[25:28])
    index.delete([sample_docs[1]["doc_id"]])
    view = index.engine.state.views["collapsed"]
    assert view.sparse.built(T) and view.sparse.built(L)  # advanced, not rebuilt lazily
    nodes = index.engine.state.snapshot.nodes
    ids = nodes.ids_of_kind(T, L)
    fresh = SparseIndex.from_texts(ids, nodes.kind[nodes.rows(ids)], nodes.text_of(ids))
    for query in (QUESTION, "ferry fjord harbour", "lake ice winter"):
        got = view.sparse.search(query, [T, L], 40)
        want = fresh.search(query, [T, L], 40)
        assert got[0].tolist() == want[0].tolist()
        np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    result = index.query(QUESTION, mode="collapsed", budget_tokens=1200)
    assert [h.id for h in result.nodes] == fused_oracle(index, [T, L], 1200)


def test_cited_docs_keeps_the_most_cited_then_the_older():
    from graphstrata.engine.hierarchy.update import cited_docs

    empty = np.zeros(0, np.int64)
    assert cited_docs(empty, 3).tolist() == [] and cited_docs(empty, 0).tolist() == []
    docs = np.asarray([9, 4, 4, 7, 9, 1, 4, 2, 2], np.int64)  # 4 x3, 9 x2, 2 x2, 7, 1
    assert cited_docs(docs, 0).tolist() == [1, 2, 4, 7, 9]
    assert cited_docs(docs, 5).tolist() == [1, 2, 4, 7, 9]
    assert cited_docs(docs, 1).tolist() == [4]
    assert cited_docs(docs, 2).tolist() == [2, 4]  # 9 and 2 tie: the smaller key
    assert cited_docs(docs, 4).tolist() == [1, 2, 4, 9]
    assert cited_docs(np.asarray([5], np.int64), 1).tolist() == [5]
    from graphstrata.engine.config import ConfigError, HierarchyConfig

    with pytest.raises(ConfigError, match="summary_docs_max must be >= 0"):
        HierarchyConfig(summary_docs_max=-1).validate()
