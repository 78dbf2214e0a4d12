"""``ItemKeys``: the remembered codes and tie-breaks equal the ones computed from the vectors."""

from __future__ import annotations

import numpy as np

from graphstrata.bindings.api import Index
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.core.lsh import project_codes, sample_hyperplanes
from graphstrata.engine.hierarchy import HierarchyComponent, tiebreak_direction
from graphstrata.engine.hierarchy.keys import ItemKeys, tiebreaks
from graphstrata.engine.index import Engine
from graphstrata.engine.store.tables import VectorSegment, VectorTable
from graphstrata.engine.types import NodeKind
from tests.helpers.hierarchy import signature, small_config


def _table(rng: np.random.Generator, ids: np.ndarray, dim: int) -> VectorTable:
    mat = rng.standard_normal((ids.size, dim)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    kinds = np.full(ids.size, int(NodeKind.T), np.uint8)
    return VectorTable(dim, [VectorSegment(ids, kinds, mat, 1)], np.sort(ids))


def test_keys_equal_the_projections_of_the_stored_vectors_and_are_read_once(monkeypatch):
    rng = np.random.default_rng(0)
    dim = 24
    planes = sample_hyperplanes(dim, 12, seed=3)
    direction = tiebreak_direction(dim, 12, seed=3)
    ids = rng.permutation(np.arange(5, 405, dtype=np.int64))
    table = _table(rng, ids, dim)
    keys = ItemKeys(planes, direction)
    reads: list[int] = []
    real_get = VectorTable.get
    monkeypatch.setattr(
        VectorTable, "get", lambda self, i: reads.append(len(i)) or real_get(self, i)
    )
    for ask in (ids[:50], ids[30:200], np.concatenate([ids[::-1], ids[:3]]), ids[:0]):
        codes, ties = keys.of(ask, table)
        matrix = real_get(table, ask)
        np.testing.assert_array_equal(codes, project_codes(matrix, planes))
        np.testing.assert_array_equal(ties, tiebreaks(matrix, direction))
        np.testing.assert_allclose(ties, matrix @ direction, rtol=1e-5, atol=1e-6)
    assert reads == [50, 150, 200]  # each id's vector read once
    assert keys.matches(planes, direction) and not keys.matches(planes, -direction)


def test_a_tiebreak_does_not_depend_on_the_rows_computed_with_it():
    rng = np.random.default_rng(2)
    matrix = rng.standard_normal((3000, 384)).astype(np.float32)
    direction = tiebreak_direction(384, 16, seed=2)
    whole = tiebreaks(matrix, direction)
    for a, b in ((0, 1), (5, 77), (100, 3000), (2999, 3000)):
        np.testing.assert_array_equal(tiebreaks(matrix[a:b], direction), whole[a:b])


def test_keys_of_deleted_nodes_are_dropped_when_they_outnumber_the_live():
    rng = np.random.default_rng(1)
    dim = 16
    planes, direction = sample_hyperplanes(dim, 8, seed=1), tiebreak_direction(dim, 8, seed=1)
    keys = ItemKeys(planes, direction)
    first = np.arange(0, 6000, dtype=np.int64)
    keys.of(first, _table(rng, first, dim))
    later = np.arange(6000, 6100, dtype=np.int64)  # only these live now
    table = _table(rng, later, dim)
    codes, _ = keys.of(later, table)
    assert len(keys) == later.size
    np.testing.assert_array_equal(codes, project_codes(table.get(later), planes))


def test_writes_in_one_process_build_the_hierarchy_of_a_reopened_one(
    tmp_path, hashing_embedder, sample_docs
):
    """The memo carried from write to write gives the hierarchy that fresh keys give."""
    config = small_config()
    batches = [sample_docs[:12], sample_docs[12:18], sample_docs[18:19], sample_docs[19:26]]
    kept = Index(
        Engine.create(
            tmp_path / "a", config, hashing_embedder, ExtractiveLLM(), [HierarchyComponent()]
        )
    )
    path = tmp_path / "b"
    Engine.create(path, config, hashing_embedder, ExtractiveLLM(), [HierarchyComponent()])
    for i, batch in enumerate(batches):
        kept.insert(batch)
        reopened = Index(
            Engine.open(path, hashing_embedder, ExtractiveLLM(), components=[HierarchyComponent()])
        )
        reopened.insert(batch)
        if i == 2:
            gone = [d["doc_id"] for d in sample_docs[3:6]]
            kept.delete(gone)
            reopened.delete(gone)
        assert signature(kept) == signature(reopened)
    memo = kept.engine.state.carried["hierarchy"]  # handed to the next write by the state
    assert len(memo) > 0


def test_keys_of_new_ids_above_the_known_ones_are_appended_and_found():
    """New ids above every known one are appended (the known keep their positions, only the
    new are looked up), and answers stay the projections, before and after keys of deleted
    nodes are dropped."""
    rng = np.random.default_rng(1)
    dim = 16
    planes = sample_hyperplanes(dim, 10, seed=5)
    direction = tiebreak_direction(dim, 10, seed=5)
    every = np.arange(0, 6100, dtype=np.int64)
    matrix_of = rng.standard_normal((every.size, dim)).astype(np.float32)
    matrix_of /= np.linalg.norm(matrix_of, axis=1, keepdims=True)

    def table_of(ids: np.ndarray) -> VectorTable:  # an id's vector never changes
        kinds = np.full(ids.size, int(NodeKind.T), np.uint8)
        return VectorTable(dim, [VectorSegment(ids, kinds, matrix_of[ids], 1)], ids)

    all_ids = every[:6000]
    table = table_of(all_ids)
    keys = ItemKeys(planes, direction)
    appended = []
    real_add = keys._add
    keys._add = lambda *a: appended.append(real_add(*a)) or appended[-1]  # type: ignore[method-assign]
    asks = (  # known ids, repeated, and new ones above every known one
        all_ids[:100],
        np.concatenate([all_ids[:100:3], all_ids[100:300:3], all_ids[:10]]),
        np.concatenate([all_ids[300:6000:7], all_ids[:100][::-1]]),
    )
    for ask in asks:
        codes, ties = keys.of(ask, table)
        matrix = table.get(ask)
        np.testing.assert_array_equal(codes, project_codes(matrix, planes))
        np.testing.assert_array_equal(ties, tiebreaks(matrix, direction))
    assert appended == [True, True, True]
    # most nodes deleted: the next new ids make the keys drop the dead ones first
    live = np.concatenate([all_ids[:40], np.arange(6000, 6100, dtype=np.int64)])
    table2 = table_of(live)
    codes, ties = keys.of(live[::-1], table2)
    matrix = table2.get(live[::-1])
    np.testing.assert_array_equal(codes, project_codes(matrix, planes))
    np.testing.assert_array_equal(ties, tiebreaks(matrix, direction))
