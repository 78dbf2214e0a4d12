"""After a commit the engine builds the new version in memory (``Snapshot.advanced``) instead
of rereading every segment: on random insert / update / delete sequences, with every
component, that snapshot equals the one ``Store.load`` reads from disk."""

from __future__ import annotations

import random

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.store import Store
from tests.helpers.maintenance import maintenance
from tests.helpers.snapshots import assert_same_snapshot


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
    from graphstrata.engine.heterograph.build.lookups import EntityKeys
    from graphstrata.engine.heterograph.parse import normalize_name
    from graphstrata.engine.heterograph.schema import N
    from graphstrata.engine.heterograph.state.names import NameIndex

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
        assert got.shared == want.shared
        for have, expect in ((got.names, want.names), (got.titles, want.titles)):
            assert sorted(have) == sorted(expect)
            for key, ids in expect.items():
                np.testing.assert_array_equal(have[key], ids, err_msg=key)
        # What new entities merge into, read from the names: the lowest-id entity of a key.
        nodes = state.snapshot.nodes
        n_ids = nodes.ids_of_kind(N)
        first: dict[str, int] = {}
        for nid, text in zip(n_ids.tolist(), nodes.text_of(n_ids), strict=True):
            first.setdefault(normalize_name(text), nid)
        keys = EntityKeys.of_names(got, nodes)
        assert all(keys.get(k) == nid for k, nid in first.items() if k)
        assert keys.get("no such entity anywhere") is None


def test_advanced_text_index_equals_a_fresh_one(tmp_path, sample_docs):
    """The reuse index of each version (advanced by the delta for the kinds built before)
    maps every text as a fresh index of that version does, repeated texts included."""
    from graphstrata.engine.component import TextIndex

    index = Index.create(tmp_path / "ix", IndexConfig(), embedder=HashingEmbedder(64))
    docs = list(sample_docs)
    twin = {**docs[5], "doc_id": docs[5]["doc_id"] + "-twin"}  # the same chunk texts twice
    index.insert([*docs[:8], twin])
    steps = [
        ("insert", docs[8:12]),
        ("delete", [docs[2]["doc_id"], docs[9]["doc_id"]]),
        ("delete", [twin["doc_id"]]),  # a repeated key's holder leaves: the key passes on
        ("insert", [{**docs[3], "text": docs[3]["text"] + " Later the Orrin Guild sold it."}]),
        ("insert", docs[12:15]),
    ]
    advanced = 0
    for action, arg in steps:
        index.insert(arg) if action == "insert" else index.delete(arg)
        state = index.engine.state
        got, want = state.text_index, TextIndex(state.snapshot)
        advanced += len(got.built_kinds)
        for kind in got.built_kinds:
            assert got.of_kind(kind) == want.of_kind(kind), kind
    assert advanced > 0


@pytest.mark.parametrize("compact", ["never", "always", "rebuild", "default"])
def test_advanced_walk_graph_equals_a_fresh_one(tmp_path, sample_docs, monkeypatch, compact):
    """The graph view's edges and walk graph after each write (advanced by the delta:
    dropped nodes renumbered out of the edges and dead in the CSR's layers, new edges
    merged into its extra layer) are those a view built from scratch holds, and so are its
    walks; with the merged layers flattened on every write ('always'), never, the walk
    graph built from the snapshot on every write ('rebuild': new edges past the extra
    share), and at the default shares."""
    from graphstrata.core.layered import flatten, row_weights
    from graphstrata.engine.heterograph.query.search import SPARSE_KINDS, HeterographView
    from graphstrata.engine.heterograph.state import walk_graph

    never, always = {"share": 1e9}, {"share": 0.0, "inclusive": True}
    shares = {
        "never": (never, never),
        "always": (never, always),
        "rebuild": ({"share": 0.0}, never),
    }
    config = IndexConfig()
    config.heterograph.attributes = "on"  # attribute nodes come and go with the writes
    if compact in shares:
        extra, dead = shares[compact]
        config.maintenance = maintenance(walk_graph_extra=extra, walk_graph_dead=dead)
    built = 0
    build = walk_graph.WalkEdges.build.__func__

    def counted_build(cls, *args):
        nonlocal built
        built += 1
        return build(cls, *args)

    monkeypatch.setattr(walk_graph.WalkEdges, "build", classmethod(counted_build))
    index = Index.create(tmp_path / "ix", config, embedder=HashingEmbedder(64))
    docs = list(sample_docs)
    index.insert(docs[:10])
    steps = [
        ("insert", docs[10:13]),
        ("delete", [docs[1]["doc_id"], docs[10]["doc_id"]]),
        ("insert", [{**docs[4], "text": docs[4]["text"] + " Later the Orrin Guild sold it."}]),
        ("delete", [docs[5]["doc_id"]]),
        ("insert", docs[13:16]),
    ]
    engine = index.engine
    layered = 0
    for action, arg in steps:
        index.insert(arg) if action == "insert" else index.delete(arg)
        state = engine.state
        got = state.views["graph"]
        # built from the snapshot, not from the state's advanced names and walked edges
        sparse = state.sparse.index(SPARSE_KINDS)
        want = HeterographView(
            state.snapshot, state.vectors, engine.config, state.doc_names, sparse
        )
        assert want.stored.csr.extra_entries == 0 and want.stored.csr.dead == 0  # one layer
        layered += got.stored.csr.extra_entries > 0 and got.stored.csr.dead > 0
        for g, w in ((got.stored.csr, want.stored.csr), (got.graph, want.graph)):
            flat, fresh = flatten(g), flatten(w)
            np.testing.assert_array_equal(flat[0], fresh[0])
            np.testing.assert_array_equal(flat[1], fresh[1])
            np.testing.assert_allclose(flat[2], fresh[2], rtol=1e-6)
        np.testing.assert_array_equal(got.stored.slot_ids[got.stored.slot_of_position], want.ids)
        np.testing.assert_allclose(got.row_sums, row_weights(got.graph), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(want.row_sums, row_weights(want.graph), rtol=1e-6, atol=1e-9)
        everyone = np.arange(want.ids.size)
        np.testing.assert_array_equal(got.units_of(everyone), want.units_of(everyone))
        np.testing.assert_array_equal(got.chunk_of(everyone), want.chunk_of(everyone))
        for name in ("chunk_units", "unit_entities", "entity_attributes", "title_elements"):
            # the same (origin, target) pairs, links to deleted nodes dropped
            pairs = [
                sorted(zip(*view.follow(getattr(view.links, name), everyone)[::-1], strict=True))
                for view in (got, want)
            ]
            assert pairs[0] == pairs[1], name
        seeds = np.arange(0, want.ids.size, 7)
        a = got.walk(seeds, np.ones(seeds.size), got.cfg)
        b = want.walk(seeds, np.ones(seeds.size), want.cfg)
        order_a, order_b = np.argsort(a[0]), np.argsort(b[0])
        np.testing.assert_array_equal(a[0][order_a], b[0][order_b])
        np.testing.assert_allclose(a[1][order_a], b[1][order_b], rtol=1e-5, atol=1e-12)
    assert (layered > 0) == (compact == "never")
    # Built: the empty index's view, the build's (not advanced from empty) and the fresh
    # view of each step; 'rebuild' builds the advanced walk graph of every step too, the
    # others merge into it (at the default shares, a step on this small index may do either).
    if compact in shares:
        assert built == 2 + len(steps) + (len(steps) if compact == "rebuild" else 0)


def test_advanced_doc_names_equal_fresh_ones(tmp_path, sample_docs):
    """Each version's doc names, advanced from the previous version's by the delta once
    those were built, name every document as fresh names of that version do."""
    from graphstrata.engine.component import DocNames

    index = Index.create(tmp_path / "ix", IndexConfig(), embedder=HashingEmbedder(64))
    docs = list(sample_docs)
    index.insert(docs[:6])
    steps = [
        ("insert", docs[6:9]),
        ("delete", [docs[1]["doc_id"], docs[7]["doc_id"]]),
        ("insert", [{**docs[3], "text": docs[3]["text"] + " A later line."}]),  # an update
        ("insert", docs[9:11]),
    ]
    for action, arg in steps:
        index.engine.state.doc_names([0])  # built: the next version's is advanced from it
        index.insert(arg) if action == "insert" else index.delete(arg)
        state = index.engine.state
        keys = state.snapshot.docs.column("key").to_pylist()
        assert state.doc_names._names is not None  # advanced, not rebuilt lazily
        assert state.doc_names([*keys, 10**9]) == DocNames(state.snapshot)(keys)
        assert len(state.doc_names._names) == len(keys)
