"""The hierarchy through whole pipelines: reopen, compact, vector index, bytes, real backends."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.hierarchy import HierarchyTree
from graphstrata.engine.types import NodeKind
from tests.helpers.hierarchy import check_hierarchy, new_index, signature, small_config
from tests.helpers.maintenance import maintenance

pytestmark = pytest.mark.integration

L = int(NodeKind.L)


def test_reopen_compact_and_continue(tmp_path, hashing_embedder, sample_docs):
    config = small_config()
    path = tmp_path / "idx"
    index = new_index(path, hashing_embedder, config)
    index.insert(sample_docs[:20])
    reopened = Index.open(path, embedder=hashing_embedder, llm="extractive")
    assert signature(reopened) == signature(index)
    reopened.insert(sample_docs[20:])
    reopened.delete([d["doc_id"] for d in sample_docs[:5]])
    check_hierarchy(reopened, config)
    before = signature(reopened)
    reopened.compact()
    compacted = Index.open(path, embedder=hashing_embedder, llm="extractive")
    assert signature(compacted) == before
    check_hierarchy(compacted, config)
    compacted.insert(sample_docs[:5])
    check_hierarchy(compacted, config)


def test_vector_index_follows_changed_summaries_only(tmp_path, hashing_embedder, sample_docs):
    index = new_index(tmp_path / "idx", hashing_embedder)
    index.insert(sample_docs[:25])
    cache = index.engine.store.manifest["vector_cache"]
    old_l = set(index.engine.state.snapshot.nodes.ids_of_kind(L).tolist())
    index.insert(sample_docs[25:26])
    state = index.engine.state
    # a small insert updates the in-memory usearch index; the cache file is not rewritten
    assert index.engine.store.manifest["vector_cache"] == cache
    new_l = set(state.snapshot.nodes.ids_of_kind(L).tolist())
    added, removed = new_l - old_l, old_l - new_l
    assert added and removed
    assert state.vectors.contains(np.asarray(sorted(added)), L).all()
    assert not state.vectors.contains(np.asarray(sorted(removed)), L).any()
    # a new summary is found by its own text, a replaced one never again
    nodes = state.snapshot.nodes
    texts = nodes.text_of(nodes.ids_of_kind(int(NodeKind.T), L))
    unique = [i for i in sorted(added) if texts.count(nodes.text_of([i])[0]) == 1]
    newest = unique[-1]  # (extractive summaries may repeat a child's text one layer up)
    (text,) = nodes.text_of([newest])
    hits = index.query(text, mode="summarized", budget_tokens=400, bias_share=1.0).nodes
    assert hits[0].id == newest
    result = index.query(text, mode="collapsed", budget_tokens=4000, top_k=200)
    assert not {h.id for h in result.nodes} & removed


def _remake_past_one_dead(**changes: Any) -> IndexConfig:
    """A config whose vector bases are made anew once they hold two dead ids, and whose
    caches' staleness has no floor of rows (the ``cache_stale`` share alone decides)."""
    config = small_config()
    config.maintenance = maintenance(
        vector_removed={"minimum": 1, "share": 0.0}, cache_stale={"minimum": 0}, **changes
    )
    return config


def _stale_share(index: Index, share: float) -> None:
    """The writer's ``cache_stale`` share from now on."""
    policy = index.engine.config.maintenance
    stale = dataclasses.replace(policy.cache_stale, share=share)
    index.engine.config.maintenance = dataclasses.replace(policy, cache_stale=stale)


def _answers_alike(index: Index, reopened: Index, docs: list, modes: tuple[str, ...]) -> None:
    """Each doc's opening words as a query get the same nodes from both, in every mode."""
    for doc in docs:
        for mode in modes:
            want = [h.id for h in index.query(doc["text"][:120], mode=mode).nodes]
            assert [h.id for h in reopened.query(doc["text"][:120], mode=mode).nodes] == want


def test_a_rebuilt_summary_base_is_cached_alone_once_stale(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    """A write whose rewritten summaries pass the removal limit makes the summaries' base
    anew. While the summaries written since their file stay below the stale share, the file
    stays and a reader makes the base anew at its open; once they reach it, that commit
    writes the summaries' file only (the chunks' entry stays), with the version the base
    holds, and a reader opens it without making it again and answers as the writer does."""
    path = tmp_path / "idx"
    index = new_index(path, hashing_embedder, _remake_past_one_dead())
    index.insert(sample_docs[:25])
    before = index.engine.store.manifest["vector_cache"]["kinds"]
    T = str(int(NodeKind.T))
    modes = ("collapsed", "summarized", "naive")

    _stale_share(index, 0.9)
    index.insert(sample_docs[25:26])
    assert index.engine.state.vectors.unsaved() == [L]
    assert index.engine.store.manifest["vector_cache"]["kinds"] == before
    reopened = Index.open(path, embedder=hashing_embedder, llm="extractive")
    assert reopened.engine.state.vectors.unsaved() == [L]  # made anew at the open
    _answers_alike(index, reopened, sample_docs[20:27], modes)

    _stale_share(index, 0.01)
    index.insert(sample_docs[26:27])
    vi = index.engine.state.vectors
    after = index.engine.store.manifest["vector_cache"]["kinds"]
    assert after[T] == before[T]  # the chunks' base was not rebuilt: not rewritten
    assert after[str(L)]["file"] != before[str(L)]["file"]
    # Made anew by this write from the live and fresh summaries: nothing fresh is left.
    assert after[str(L)]["version"] == vi.base_versions[L] == index.engine.store.version
    assert L not in vi.fresh and vi.unsaved() == []
    reopened = Index.open(path, embedder=hashing_embedder, llm="extractive")
    opened = reopened.engine.state.vectors
    assert opened.unsaved() == [] and opened.count([L]) == vi.count([L])
    assert opened.fresh.get(L, (np.zeros(0),))[0].size == 0
    _answers_alike(index, reopened, sample_docs[20:27], modes)


def test_a_summary_base_made_anew_is_written_by_its_commit(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    """A base searched by HNSW that a write makes anew (its dead ids past the limit) is
    written by that write's commit although few of its rows are new (a reader would make it
    again at its open: seconds at scale), and a reader maps it without making anything."""
    # Every kind counts as an HNSW base.
    config = _remake_past_one_dead(vector_exact_below=1)
    config.maintenance.cache_stale = dataclasses.replace(config.maintenance.cache_stale, share=0.9)
    path = tmp_path / "idx"
    index = new_index(path, hashing_embedder, config)
    index.insert(sample_docs[:25])
    before = index.engine.store.manifest["vector_cache"]["kinds"]
    index.insert(sample_docs[25:26])
    vi = index.engine.state.vectors
    after = index.engine.store.manifest["vector_cache"]["kinds"]
    assert vi.made.get(L) is vi.by_kind[L] and vi.unsaved() == []
    assert after[str(L)]["version"] == index.engine.store.version != before[str(L)]["version"]
    assert after[str(int(NodeKind.T))] == before[str(int(NodeKind.T))]
    reopened = Index.open(path, embedder=hashing_embedder, llm="extractive")
    assert reopened.engine.state.vectors.unsaved() == []
    _answers_alike(index, reopened, sample_docs[20:27], ("collapsed", "naive"))


def test_a_base_rebuilt_after_a_compaction_reopens_with_every_vector(
    tmp_path, hashing_embedder, sample_docs, monkeypatch
):
    """A compaction rewrites every vector at its own version; a base rebuilt by a later
    write is cached with a version from after it, so a reader takes none of the compacted
    vectors as new and misses none of the fresh ones."""
    config = _remake_past_one_dead()
    config.maintenance.cache_stale = dataclasses.replace(config.maintenance.cache_stale, share=0.01)
    path = tmp_path / "idx"
    index = new_index(path, hashing_embedder, config)
    index.insert(sample_docs[:20])
    index.insert(sample_docs[20:23])  # fresh vectors and removals kept apart
    index.compact()
    compacted = index.engine.store.version
    assert all(v == compacted for v in index.engine.state.vectors.base_versions.values())
    index.insert(sample_docs[23:25])  # rebuilds the summaries' base again
    cache = index.engine.store.manifest["vector_cache"]["kinds"]
    assert int(cache[str(L)]["version"]) >= compacted
    reopened = Index.open(path, embedder=hashing_embedder, llm="extractive")
    opened, live = reopened.engine.state.vectors, reopened.engine.state.snapshot.vectors
    assert opened.unsaved() == []
    for kind in (L, int(NodeKind.T)):
        assert opened.count([kind]) == int((live.kinds == kind).sum())
        assert opened.contains(live.ids[live.kinds == kind], kind).all()
    _answers_alike(index, reopened, sample_docs[18:25], ("collapsed",))


def test_single_document_insert_is_local(tmp_path, hashing_embedder, sample_docs):
    config = small_config()
    index = new_index(tmp_path / "idx", hashing_embedder, config)
    build = index.insert(sample_docs[:29])
    insert = index.insert(sample_docs[29:])
    tree = HierarchyTree.from_nodes(index.engine.state.snapshot.nodes)
    # A new item changes at most 3 segments of its layer (the one it joins, the part split
    # off when that overflows, the neighbour that absorbs a remainder); each changed segment
    # is one new node one layer up. So a handful of calls, against all segments of a build.
    assert insert.chunks_added == 2
    calls = [insert.llm_by_stage[f"summarize_layer_{i}"]["calls"] for i in range(1, 3)]
    assert calls[0] <= 3 * 2 and calls[1] <= 3 * calls[0]
    assert tree.top_layer == 2 and sum(calls) == insert.llm_calls < build.llm_calls / 2
    assert insert.total_tokens < build.total_tokens / 3
    # (bytes written are compared at scale by benchmarks/scale/update.py: on 60 chunks the fixed
    # cost of a commit, file footers and the manifest, dominates)
    check_hierarchy(index, config)


def test_default_backends_build_and_search(tmp_path, minilm_embedder, sample_docs):
    """The packaged MiniLM and the extractive LLM with the default bounds (8..12)."""
    config = IndexConfig()
    config.heterograph.enabled = False
    index = new_index(tmp_path / "idx", minilm_embedder, config)
    index.insert(sample_docs)
    check_hierarchy(index, config)
    question = "Which instruments did the Halvorsen Observatory build with Meridian Optics?"
    result = index.query(question, mode="collapsed", budget_tokens=1500)
    cited = {d for h in result.nodes for d in h.docs}
    assert any(d.startswith("observatory/") for d in cited)
    assert sum(h.tokens for h in result.nodes) <= 1500
    detailed = index.query(question, mode="detailed", budget_tokens=1500, bias_share=0.5)
    # chunks take the first half; the rest goes to chunks and summaries alike (decision 0035)
    head = detailed.report["share"]["first_tokens"]
    assert 0 < head <= 750
    packed, first = 0, []
    for h in detailed.nodes:
        if packed >= head:
            break
        first.append(h.kind)
        packed += h.tokens
    assert packed == head and set(first) == {"T"}
    assert sum(h.tokens for h in detailed.nodes) <= 1500
    report = index.delete([d["doc_id"] for d in sample_docs if d["doc_id"].startswith("obs")])
    assert report.docs_deleted > 0
    check_hierarchy(index, config)
    after = index.query(question, mode="collapsed", budget_tokens=1500)
    assert not any(d.startswith("observatory/") for h in after.nodes for d in h.docs)
    assert np.all(index.engine.state.snapshot.nodes.parent >= -1)
