"""After a commit the engine builds the new version in memory (``Snapshot.advanced``) instead
of rereading every segment: on random insert / update / delete sequences, with every
component, that snapshot equals the one ``Store.load`` reads from disk."""

from __future__ import annotations

import random

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embedders import HashingEmbedder
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.store import Snapshot, Store


def assert_same_snapshot(got: Snapshot, want: Snapshot) -> None:
    """Same manifest, tables (row order included), vectors, state and node state."""
    assert got.manifest == want.manifest
    assert got.nodes.table.equals(want.nodes.table)
    assert got.edges.equals(want.edges)
    assert got.docs.equals(want.docs)
    np.testing.assert_array_equal(got.vectors.ids, want.vectors.ids)
    np.testing.assert_array_equal(
        got.vectors.get(want.vectors.ids), want.vectors.get(want.vectors.ids)
    )
    np.testing.assert_array_equal(got.hyperplanes, want.hyperplanes)
    assert sorted(got.state_arrays) == sorted(want.state_arrays)
    for key, array in want.state_arrays.items():
        np.testing.assert_array_equal(got.state_arrays[key], array, err_msg=key)
    assert sorted(got.node_state_arrays) == sorted(want.node_state_arrays)
    for key, (ids, values) in want.node_state_arrays.items():
        np.testing.assert_array_equal(got.node_state_arrays[key][0], ids, err_msg=key)
        np.testing.assert_array_equal(got.node_state_arrays[key][1], values, err_msg=key)


@pytest.mark.parametrize("seed", [0, 1])
def test_advanced_snapshot_equals_the_one_read_from_disk(tmp_path, sample_docs, seed):
    rng = random.Random(seed)
    path = tmp_path / "ix"
    index = Index.create(path, IndexConfig(), embedder=HashingEmbedder(64))
    docs = list(sample_docs)
    live: dict[str, dict] = {}
    for step in range(6):
        action = rng.choice(["insert", "insert", "update", "delete"]) if live else "insert"
        if action == "insert":
            batch = [d for d in docs if d["doc_id"] not in live][: rng.randint(1, 3)]
            if not batch:
                continue
            index.insert(batch)
            live.update({d["doc_id"]: d for d in batch})
        elif action == "update":
            doc_id = rng.choice(sorted(live))
            changed = {
                **live[doc_id],
                "text": live[doc_id]["text"] + f" Revision {step} adds a line.",
            }
            index.insert([changed])
            live[doc_id] = changed
        else:
            doc_id = rng.choice(sorted(live))
            index.delete([doc_id])
            del live[doc_id]
        assert_same_snapshot(index.engine.state.snapshot, Store.open(path).load())


def test_advanced_name_index_equals_a_fresh_one(tmp_path, sample_docs):
    """The graph view's names after each write (advanced by the delta) are those a view
    built from scratch on the same version holds."""
    from graphstrata.engine.heterograph.names import NameIndex

    index = Index.create(tmp_path / "ix", IndexConfig(), embedder=HashingEmbedder(64))
    docs = list(sample_docs)
    index.insert(docs[:10])
    steps = [
        ("insert", docs[10:14]),
        ("delete", [docs[2]["doc_id"], docs[11]["doc_id"]]),
        ("insert", [{**docs[3], "text": docs[3]["text"] + " Later the Orrin Guild sold it."}]),
        ("insert", docs[14:16]),
    ]
    for action, arg in steps:
        index.insert(arg) if action == "insert" else index.delete(arg)
        state = index.engine.state
        got, want = state.views["graph"].names, NameIndex.build(state.snapshot)
        assert got.title_of == want.title_of
        for have, expect in ((got.names, want.names), (got.titles, want.titles)):
            assert sorted(have) == sorted(expect)
            for key, ids in expect.items():
                np.testing.assert_array_equal(have[key], ids, err_msg=key)
