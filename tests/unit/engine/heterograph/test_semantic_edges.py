"""Semantic edges: the approximate stage against the exact one (oracle: brute force).

``core.knn.best_per_query`` (merging candidate lists), ``VectorIndex.neighbours`` (the
committed index queried with the new nodes) and the heterograph stage
``enrich.semantic_edges`` on a real index: identical to the exact kernel below
``HeterographConfig.semantic_exact_below``, equal top-m similarities above it while every
kind is small enough for usearch to search exactly. The k-NN graph among many new
nodes (``core.nndescent``) has its own oracle tests in ``test_core_nndescent.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.core.knn import best_per_query, nearest_neighbours, nearest_neighbours_scored
from graphstrata.engine.component import ChangeSet, MeteredEmbedder, MeteredLLM, UpdateContext
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.heterograph.build.enrich import semantic_edges
from graphstrata.engine.heterograph.build.work import Work
from graphstrata.engine.heterograph.schema import HETERO_EMBEDDED
from graphstrata.engine.report import OperationReport
from graphstrata.engine.types import EdgeKind, NodeKind
from graphstrata.engine.vectors import VectorIndex
from tests.helpers.maintenance import maintenance


def _unit(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ---------------------------------------------------------------------- core.knn merge
def test_best_per_query_merges_dedups_and_breaks_ties_by_id():
    src = np.asarray([5, 5, 5, 3, 5, 3, 5], np.int64)
    dst = np.asarray([9, 7, 8, 1, 7, 2, 6], np.int64)
    sim = np.asarray([0.5, 0.9, 0.5, 0.1, 0.9, 0.3, 0.2], np.float32)
    s, d, v = best_per_query(src, dst, sim, 3)
    assert s.tolist() == [3, 3, 5, 5, 5]
    assert d.tolist() == [2, 1, 7, 8, 9]  # (5, 7) once; 8 before 9 on the tie
    np.testing.assert_allclose(v, [0.3, 0.1, 0.9, 0.5, 0.5])
    assert best_per_query(src, dst, sim, 0)[0].size == 0
    assert best_per_query(src[:0], dst[:0], sim[:0], 3)[0].size == 0
    with pytest.raises(ValueError, match="length"):
        best_per_query(src, dst[:2], sim, 3)


def test_exact_scored_equals_unscored():
    rng = np.random.default_rng(2)
    base = _unit(rng, 60, 8)
    ids = rng.permutation(np.arange(100, 160)).astype(np.int64)
    a = nearest_neighbours(base[:9], ids[:9], base, ids, 4, block_rows=4)
    s, d, v = nearest_neighbours_scored(base[:9], ids[:9], base, ids, 4, block_rows=4)
    assert a[0].tolist() == s.tolist() and a[1].tolist() == d.tolist()
    pos = {int(i): j for j, i in enumerate(ids.tolist())}
    true = np.einsum("ij,ij->i", base[[pos[x] for x in s]], base[[pos[x] for x in d]])
    np.testing.assert_allclose(v, true, atol=1e-6)


# ---------------------------------------------------------------------- VectorIndex
def test_vector_index_neighbours_skip_self_and_excluded_ids():
    rng = np.random.default_rng(4)
    x = _unit(rng, 300, 16)
    ids = np.arange(1000, 1300, dtype=np.int64)
    kinds = np.where(ids % 3 == 0, int(NodeKind.T), int(NodeKind.S)).astype(np.uint8)
    vi = VectorIndex(16).updated(ids, kinds, x, np.zeros(0, np.int64), 1)
    queries, qids = x[:20], ids[:20]
    exclude = ids[20:60]
    src, dst, sim = vi.neighbours(queries, qids, [int(NodeKind.T), int(NodeKind.S)], 5, exclude)
    keep = ~np.isin(ids, exclude)
    es, _, ev = nearest_neighbours_scored(queries, qids, x[keep], ids[keep], 5)
    # Both kinds are below usearch's exact threshold: the same neighbours, up to ties.
    for q in qids.tolist():
        np.testing.assert_allclose(np.sort(sim[src == q]), np.sort(ev[es == q]), atol=1e-5)
    assert not np.isin(dst, exclude).any() and not np.any(src == dst)
    # One kind only, and the degenerate calls.
    _, d1, _ = vi.neighbours(queries, qids, [int(NodeKind.T)], 5, exclude)
    assert np.all(d1 % 3 == 0)
    assert vi.neighbours(queries, qids, [int(NodeKind.A)], 5, exclude)[0].size == 0
    assert vi.neighbours(queries, qids, [int(NodeKind.T)], 0, exclude)[0].size == 0


@pytest.mark.parametrize("oversample", [1, 16])
def test_vector_index_neighbours_when_the_best_matches_are_excluded(oversample):
    """Each query's best matches were removed from the base or are excluded by the write:
    the narrow first search finds too few others and the short queries ask again (with
    ``vector_oversample`` 1 nearly all do); the result is the brute-force top-m of the
    rest."""
    policy = maintenance(vector_oversample=oversample)
    rng = np.random.default_rng(8)
    x = _unit(rng, 400, 16)
    ids = np.arange(1, 401, dtype=np.int64)
    kind = int(NodeKind.S)
    vi = VectorIndex(16, maintenance=policy).updated(
        ids, np.full(400, kind, np.uint8), x, ids[:0], 1
    )
    queries, qids = x[:12], ids[:12]
    best = np.argsort(-(queries @ x.T), axis=1)[:, 1:7]  # each query's six best others
    removed, exclude = ids[best[:, :3].ravel()], ids[best[:, 3:].ravel()]
    vi = vi.updated(ids[:0], np.zeros(0, np.uint8), x[:0], np.unique(removed), 2)
    assert vi.removed[kind].size  # kept as removals of the base
    src, dst, sim = vi.neighbours(queries, qids, [kind], 5, np.unique(exclude))
    keep = ~np.isin(ids, np.concatenate([removed, exclude]))
    es, _, ev = nearest_neighbours_scored(queries, qids, x[keep], ids[keep], 5)
    for q in qids.tolist():
        np.testing.assert_allclose(np.sort(sim[src == q]), np.sort(ev[es == q]), atol=1e-5)
        assert (src == q).sum() == 5
    assert not np.isin(dst, np.concatenate([removed, exclude])).any()


# ---------------------------------------------------------------------- the stage
@pytest.fixture(scope="module")
def built(tmp_path_factory, sample_docs) -> Index:
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    index = Index.create(tmp_path_factory.mktemp("sem") / "idx", cfg, embedder=HashingEmbedder(64))
    index.insert(sample_docs)
    return index


def _context(engine: Any) -> tuple[UpdateContext, Any]:
    """An update context over the engine's committed version, and its new delta."""
    state = engine.state
    report = OperationReport("insert")
    delta = engine.store.new_delta()
    ctx = UpdateContext(
        snapshot=state.snapshot,
        delta=delta,
        config=engine.config,
        embedder=MeteredEmbedder(engine.embedder, report),
        llm=MeteredLLM(engine.llm, report),
        report=report,
        hyperplanes=state.snapshot.hyperplanes,
    )
    return ctx, delta


def _stage(
    index: Index, exact_below: int, with_index: bool, dead: list[int] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Run ``semantic_edges`` for 40 new S nodes; return (src, dst, new ids, new vectors)."""
    engine = index.engine
    state = engine.state
    ctx, delta = _context(engine)
    texts = [f"new unit {i} about the {w} river" for i, w in enumerate(["north", "south"] * 20)]
    new_ids = delta.new_node_ids(len(texts))
    vecs = ctx.embed_nodes(new_ids, int(NodeKind.S), texts)
    cfg = dataclasses.replace(engine.config.heterograph, semantic_exact_below=exact_below)
    work = Work.start(state.snapshot, cfg, np.asarray(dead or [], np.int64), delta.new_node_ids)
    empty = np.zeros(0, np.int64)
    change = ChangeSet(empty, [], empty, empty, np.zeros((0, 64), np.float32), empty, empty, empty)
    semantic_edges(ctx, work, change, new_ids, state.vectors if with_index else None)
    src, dst = work.edges.of(int(EdgeKind.SEMANTIC))
    return src, dst, new_ids, vecs


def _committed(index: Index, dead: list[int]) -> tuple[np.ndarray, np.ndarray]:
    vt = index.engine.state.snapshot.vectors
    ids = np.concatenate([vt.ids[vt.kinds == k] for k in HETERO_EMBEDDED])
    ids = ids[~np.isin(ids, np.asarray(dead, np.int64))]
    return ids, vt.get(ids)


def test_below_the_threshold_the_stage_is_the_exact_kernel(built):
    src, dst, new_ids, vecs = _stage(built, exact_below=10**9, with_index=True)
    ids, mat = _committed(built, [])
    want = nearest_neighbours(
        vecs, new_ids, np.concatenate([mat, vecs]), np.concatenate([ids, new_ids]), 16
    )
    assert src.tolist() == want[0].tolist() and dst.tolist() == want[1].tolist()
    # Deterministic: a second run gives the same edge list.
    again = _stage(built, exact_below=10**9, with_index=True)
    assert again[0].tolist() == src.tolist() and again[1].tolist() == dst.tolist()


@pytest.mark.parametrize("with_index", [True, False])
def test_above_the_threshold_the_same_similarities_and_no_dead_neighbour(built, with_index):
    exact = _stage(built, exact_below=10**9, with_index=True)
    # Delete some exact neighbours of the first new node: they must not come back.
    dead = sorted({int(d) for s, d in zip(*exact[:2], strict=True) if s == exact[2][0]})[:6]
    dead = [d for d in dead if d < int(exact[2][0])]
    src, dst, new_ids, vecs = _stage(built, exact_below=0, with_index=with_index, dead=dead)
    assert not np.isin(dst, dead).any() and not np.any(src == dst)
    ids, mat = _committed(built, dead)
    base, base_ids = np.concatenate([mat, vecs]), np.concatenate([ids, new_ids])
    _, _, true_sim = nearest_neighbours_scored(vecs, new_ids, base, base_ids, 16)
    es, _, _ = nearest_neighbours_scored(vecs, new_ids, base, base_ids, 16)
    pos = {int(i): j for j, i in enumerate(base_ids.tolist())}
    got_sim = np.einsum("ij,ij->i", base[[pos[s] for s in src]], base[[pos[d] for d in dst]])
    # Every kind is below usearch's exact threshold and the 40 new nodes are few: the top-16
    # similarities of each new node are the exact ones (ids may differ on ties only).
    for q in new_ids.tolist():
        np.testing.assert_allclose(
            np.sort(got_sim[src == q]), np.sort(true_sim[es == q]), atol=1e-5
        )


def test_no_new_node_or_no_neighbour_wanted_adds_no_edge(built):
    engine = built.engine
    state = engine.state
    ctx, delta = _context(engine)
    empty = np.zeros(0, np.int64)
    change = ChangeSet(empty, [], empty, empty, np.zeros((0, 64), np.float32), empty, empty, empty)
    for neighbours in (16, 0):
        cfg = dataclasses.replace(
            engine.config.heterograph, semantic_exact_below=0, semantic_neighbours=neighbours
        )
        work = Work.start(state.snapshot, cfg, empty, delta.new_node_ids)
        semantic_edges(ctx, work, change, empty, state.vectors)
        assert work.edges.of(int(EdgeKind.SEMANTIC))[0].size == 0


def test_an_insert_above_the_threshold_queries_the_committed_index(
    tmp_path, sample_docs, monkeypatch
):
    # The engine hands its committed vector index to the stage (UpdateContext.vectors), so
    # an approximate insert searches it instead of copying every committed vector.
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    cfg.heterograph.semantic_exact_below = 0
    index = Index.create(tmp_path / "idx", cfg, embedder=HashingEmbedder(64))
    index.insert(sample_docs[:20])
    calls: list[int] = []
    real = VectorIndex.neighbours

    def spy(self, queries, *args, **kwargs):
        calls.append(len(queries))
        return real(self, queries, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "neighbours", spy)
    report = index.insert(sample_docs[20:22])
    assert calls and calls[0] > 0
    assert any("semantic edges approximate" in note for note in report.notes)
    snap = index.engine.state.snapshot
    src = snap.edges.column("src").to_numpy()
    dst = snap.edges.column("dst").to_numpy()
    kind = snap.edges.column("kind").to_numpy()
    semantic = kind == int(EdgeKind.SEMANTIC)
    assert bool(np.isin(dst[semantic], snap.nodes.ids).all())
    assert bool(np.isin(src[semantic], snap.nodes.ids).all())


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("semantic_exact_below", -1, "semantic_exact_below must be >= 0"),
        ("semantic_neighbours", -2, "semantic_neighbours must be >= 0"),
        ("community_change_share", 1.5, r"community_change_share must be in \[0, 1\]"),
    ],
)
def test_bad_heterograph_build_settings_are_config_errors(tmp_path, field, value, message):
    from graphstrata.engine.config import ConfigError

    cfg = IndexConfig()
    setattr(cfg.heterograph, field, value)
    with pytest.raises(ConfigError, match=message):
        Index.create(tmp_path / "idx", cfg, embedder=HashingEmbedder(64))
    assert not (tmp_path / "idx" / "manifest.json").exists()


def test_state_written_whole_by_an_older_version_reads_as_node_state(built):
    """An index from before per-node state kept Leiden labels as an array aligned with the
    live S/N/R/A nodes: :meth:`Work.node_state` reads it as the same mapping."""
    from graphstrata.engine.heterograph.schema import G2_KINDS, NAME, ST_LEIDEN

    snap = built.engine.state.snapshot
    cfg = built.engine.config.heterograph
    empty = np.zeros(0, np.int64)
    ids, labels = Work.start(snap, cfg, empty, lambda n: empty).node_state(ST_LEIDEN, G2_KINDS)
    g2 = snap.nodes.ids_of_kind(*G2_KINDS)
    assert np.array_equal(ids, g2)
    legacy = dataclasses.replace(
        snap,
        node_state_arrays={},
        state_arrays={**snap.state_arrays, f"{NAME}/{ST_LEIDEN}": labels.astype(np.int32)},
    )
    old_ids, old_labels = Work.start(legacy, cfg, empty, lambda n: empty).node_state(
        ST_LEIDEN, G2_KINDS
    )
    assert np.array_equal(old_ids, ids) and np.array_equal(old_labels, labels)
    # Misaligned (another version's node count): ignored, as before.
    stale = dataclasses.replace(
        legacy, state_arrays={f"{NAME}/{ST_LEIDEN}": labels[:-1].astype(np.int32)}
    )
    assert Work.start(stale, cfg, empty, lambda n: empty).node_state(ST_LEIDEN, G2_KINDS) is None
