"""Heterograph inserts and deletes: merging, support, restoration, consistency."""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.directory import stored_manifest
from graphstrata.engine.heterograph.parse import normalize_name
from graphstrata.engine.index import Engine
from graphstrata.engine.types import EdgeKind, NodeKind

pytestmark = pytest.mark.integration

K = {k.name: int(k) for k in NodeKind}

DOC_A = {
    "doc_id": "a",
    "text": "Tomas Veld founded Meridian Optics in Brekkvik in 1971. "
    "Veld had trained as a lens grinder in Ostmark.",
}
DOC_B = {
    "doc_id": "b",
    "text": "Meridian Optics built the mirror of the Kjell Telescope. "
    "The Halvorsen Observatory ordered the mirror in 1998.",
}


def _index(tmp_path, name: str = "idx") -> Index:
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    cfg.heterograph.attributes = "on"  # their upkeep is tested (off under the extractive LLM)
    return Index.create(tmp_path / name, cfg, embedder=HashingEmbedder(64))


def _edges(index: Index, kind: EdgeKind) -> tuple[np.ndarray, np.ndarray]:
    snap = index.engine.state.snapshot
    sel = snap.edges.column("kind").to_numpy() == int(kind)
    return snap.edges.column("src").to_numpy()[sel], snap.edges.column("dst").to_numpy()[sel]


def _entity(index: Index, name: str) -> tuple[int, list[str]] | None:
    snap = index.engine.state.snapshot
    ids = snap.nodes.ids_of_kind(K["N"])
    for nid, text, docs in zip(
        ids.tolist(), snap.nodes.text_of(ids), snap.nodes.docs_of(ids), strict=True
    ):
        if normalize_name(text) == normalize_name(name):
            return nid, sorted(index.engine.state.doc_names(docs))
    return None


def assert_consistent(index: Index) -> None:
    """Support, citations and links of every heterograph node agree with the graph."""
    snap = index.engine.state.snapshot
    nodes = snap.nodes
    live_docs = set(snap.docs.column("key").to_pylist())
    for docs in nodes.docs:
        assert set(docs) <= live_docs
    unit_docs = dict(
        zip(
            nodes.ids_of_kind(K["S"]).tolist(),
            nodes.docs_of(nodes.ids_of_kind(K["S"])),
            strict=True,
        )
    )
    for kind, letter in ((EdgeKind.UNIT_ENTITY, "N"), (EdgeKind.UNIT_RELATION, "R")):
        src, dst = _edges(index, kind)
        support: dict[int, set[int]] = {}
        for s, n in zip(src.tolist(), dst.tolist(), strict=True):
            support.setdefault(n, set()).update(unit_docs[s])
        ids = nodes.ids_of_kind(K[letter])
        assert set(support) == set(ids.tolist()), f"{letter} without a unit"
        for nid, docs in zip(ids.tolist(), nodes.docs_of(ids), strict=True):
            assert set(docs) == support[nid]
    _, r = _edges(index, EdgeKind.ENTITY_RELATION)
    assert Counter(r.tolist()) == Counter({rid: 2 for rid in nodes.ids_of_kind(K["R"]).tolist()})
    for text in nodes.text_of(nodes.ids_of_kind(K["R"])):
        lines = text.split("\n")
        assert all(lines) and len(lines) == len(set(lines))
    _, a = _edges(index, EdgeKind.ENTITY_ATTRIBUTE)
    assert sorted(a.tolist()) == sorted(nodes.ids_of_kind(K["A"]).tolist())
    h, o = _edges(index, EdgeKind.ELEMENT_TITLE)
    assert sorted(h.tolist()) == sorted(nodes.ids_of_kind(K["H"]).tolist())
    assert sorted(o.tolist()) == sorted(nodes.ids_of_kind(K["O"]).tolist())


def test_an_entity_of_two_documents_is_one_node_until_both_are_deleted(tmp_path):
    index = _index(tmp_path)
    index.insert([DOC_A, DOC_B])
    nid, docs = _entity(index, "Meridian Optics")
    assert docs == ["a", "b"]
    # Linked to a semantic unit of each document.
    src, dst = _edges(index, EdgeKind.UNIT_ENTITY)
    units = src[dst == nid]
    nodes = index.engine.state.snapshot.nodes
    assert sorted(index.engine.state.doc_names([d for ds in nodes.docs_of(units) for d in ds])) == [
        "a",
        "b",
    ]
    assert_consistent(index)

    index.delete(["a"])
    kept = _entity(index, "Meridian Optics")
    assert kept == (nid, ["b"])  # same node, now supported by b only
    assert _entity(index, "Tomas Veld") is None  # only a mentioned him
    assert_consistent(index)

    index.delete(["b"])
    assert _entity(index, "Meridian Optics") is None
    kinds = set(index.engine.state.snapshot.nodes.kind.tolist())
    assert kinds.isdisjoint({K[x] for x in "TSNRAHO"})


def test_insert_then_delete_restores_the_same_nodes(tmp_path, sample_docs):
    index = _index(tmp_path)
    index.insert(sample_docs[:-1])

    def node_set(letters: str) -> Counter:
        snap = index.engine.state.snapshot
        names = index.engine.state.doc_names
        return Counter(
            (NodeKind(int(k)).letter, t, tuple(sorted(names(d))))
            for k, t, d in zip(
                snap.nodes.kind.tolist(), snap.nodes.texts, snap.nodes.docs, strict=True
            )
            if NodeKind(int(k)).letter in letters
        )

    before = node_set("TSNRA")
    before_ids = set(index.engine.state.snapshot.nodes.ids_of_kind(K["N"], K["R"]).tolist())
    elements = len(index.engine.state.snapshot.nodes.ids_of_kind(K["H"]))
    insert = index.insert(sample_docs[-1:])
    assert node_set("TSNRA") != before
    assert_consistent(index)
    index.delete([sample_docs[-1]["doc_id"]])
    assert node_set("TSNRA") == before
    # Entities and relationships survive as the same nodes (ids are never reused).
    after_ids = set(index.engine.state.snapshot.nodes.ids_of_kind(K["N"], K["R"]).tolist())
    assert after_ids == before_ids
    # Communities restart from the previous membership, so elements may differ slightly.
    assert (
        abs(len(index.engine.state.snapshot.nodes.ids_of_kind(K["H"])) - elements) <= 0.3 * elements
    )
    assert_consistent(index)
    # A one-document insert costs far less LLM work than the build.
    assert insert.llm_by_stage["decompose"]["calls"] == insert.chunks_added


def test_document_update_and_cost_accounting(tmp_path, sample_docs):
    index = _index(tmp_path)
    build = index.insert(sample_docs)
    assert {"decompose", "attribute", "community"} <= set(build.llm_by_stage)
    changed = dict(
        sample_docs[3],
        text=sample_docs[3]["text"] + "\n\nIn 2024 Meridian Optics opened a plant in Varde.",
    )
    update = index.insert([changed])
    assert update.docs_updated == 1
    assert update.llm_by_stage["decompose"]["calls"] == update.chunks_added
    build_tokens = build.prompt_tokens + build.completion_tokens
    assert update.prompt_tokens + update.completion_tokens < build_tokens / 4
    assert_consistent(index)
    rel = [
        t
        for t in index.engine.state.snapshot.nodes.texts
        if "Meridian Optics" in t and "Varde" in t and " — " in t
    ]
    assert rel, "the new relationship was not merged in"
    index.delete([d["doc_id"] for d in sample_docs[:10]])
    assert_consistent(index)
    result = index.query("Who founded Meridian Optics?", mode="graph")
    deleted = {d["doc_id"] for d in sample_docs[:10]}
    assert all(not (set(h.docs) & deleted) for h in result.nodes)


def _relation_text(index: Index, a: str, b: str) -> str | None:
    for text in index.engine.state.snapshot.nodes.texts:
        if " — " in text and text.startswith(f"{a} — ") and text.split("\n")[0].endswith(f" — {b}"):
            return text
    return None


def test_relationship_lines_follow_the_documents_that_assert_them(tmp_path):
    index = _index(tmp_path)
    docs = {
        key: {"doc_id": key, "text": f"Tomas Veld {verb} Meridian Optics in {year}."}
        for key, verb, year in [
            ("a", "founded", 1971),
            ("b", "sold", 1999),
            ("c", "founded", 1972),
            ("d", "led", 1980),
        ]
    }
    founded, sold, led = (
        "Tomas Veld — founded — Meridian Optics",
        "Tomas Veld — sold — Meridian Optics",
        "Tomas Veld — led — Meridian Optics",
    )
    index.insert([docs["a"], docs["b"], docs["c"]])
    assert _relation_text(index, "Tomas Veld", "Meridian Optics").split("\n") == [founded, sold]
    index.delete(["a"])  # "founded" is still asserted by c
    assert _relation_text(index, "Tomas Veld", "Meridian Optics").split("\n") == [founded, sold]
    index.delete(["b"])
    assert _relation_text(index, "Tomas Veld", "Meridian Optics") == founded
    index.insert([docs["d"]])  # one line -> two: c's assertion must be remembered
    assert _relation_text(index, "Tomas Veld", "Meridian Optics").split("\n") == [founded, led]
    index.delete(["c"])
    assert _relation_text(index, "Tomas Veld", "Meridian Optics") == led
    assert_consistent(index)
    snap = index.engine.state.snapshot
    # Every live S/N/R/A node has a community (the stored mapping may still name nodes
    # deleted since its last base).
    ids, labels = snap.node_state("heterograph", "leiden_labels")
    g2 = snap.nodes.ids_of_kind(K["S"], K["N"], K["R"], K["A"])
    assert np.isin(g2, ids).all() and labels.shape == ids.shape


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_important_entities_are_reselected_on_their_schedule(tmp_path, sample_docs, share):
    """``importance_refresh_share``: 0 re-selects on every write (a static build's set);
    0.5 keeps the entities with attributes until G1 changes by half, and a build from
    empty always selects."""
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    cfg.heterograph.importance_refresh_share = share
    cfg.heterograph.attributes = "on"
    index = Index.create(tmp_path / "idx", cfg, embedder=HashingEmbedder(64))

    def last() -> dict:
        meta = index.engine.state.snapshot.component_meta("heterograph")
        return meta["last_update"]["attributes"]

    index.insert(sample_docs[:20])
    first = last()
    assert first["selected"] and first["important"] > 0 and "k_core" in first
    with_attributes = set(_edges(index, EdgeKind.ENTITY_ATTRIBUTE)[0].tolist())
    index.insert(sample_docs[20:21])
    after = last()
    if share == 0.0:
        assert after["selected"] and after["selected_at"] > first["selected_at"]
    else:
        assert not after["selected"] and after["selected_at"] == first["selected_at"]
        # Only the touched ones whose facts changed are rewritten; none is added.
        assert after["important"] == len(with_attributes)
        assert after["written"] == after["refreshed"] and after["dropped"] == 0
        # Shrinking past the share (15 of the 21 documents deleted) selects again.
        index.delete([d["doc_id"] for d in sample_docs[5:20]])
        assert last()["selected"] and last()["selected_at"] < first["selected_at"]


class _Generative(ExtractiveLLM):
    """The extractive backend under another name: the engine takes it for a generative one."""

    @property
    def name(self) -> str:
        return "scripted:generative"


def test_attributes_auto_is_decided_for_the_llm_at_creation(tmp_path, sample_docs):
    """``attributes="auto"``: off under the extractive LLM (no attribute node, no attribute
    call, no selection), on under any other backend; the decision is in the manifest."""
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    assert cfg.heterograph.attributes == "auto"
    plain = Index.create(tmp_path / "plain", cfg, embedder=HashingEmbedder(64))
    generative = Index.create(
        tmp_path / "gen", IndexConfig(), embedder=HashingEmbedder(64), llm=_Generative()
    )
    for index, path, want in ((plain, "plain", "off"), (generative, "gen", "on")):
        manifest = stored_manifest(tmp_path / path)
        assert manifest["config"]["heterograph"]["attributes"] == want
        report = index.insert(sample_docs)
        kinds = index.engine.state.snapshot.nodes
        assert (kinds.ids_of_kind(K["A"]).size > 0) == (want == "on")
        assert ("attribute" in report.llm_by_stage) == (want == "on")
        meta = index.engine.state.snapshot.component_meta("heterograph")
        assert (meta["last_update"]["attributes"]["important"] > 0) == (want == "on")
        assert kinds.ids_of_kind(K["H"]).size > 0  # communities are written either way
        assert index.query("Who founded Meridian Optics?", mode="graph").nodes
        assert_consistent(index)
    # Reopened, the recorded choice holds (the LLM given at open does not change it).
    reopened = Index.open(tmp_path / "plain", llm=_Generative())
    assert reopened.engine.config.heterograph.attributes == "off"
    # An index made before the field existed reads "auto" and keeps writing attributes.
    assert IndexConfig.from_dict({"heterograph": {}}).heterograph.writes_attributes


def test_engine_create_decides_auto_on_a_copy_of_the_config(tmp_path):
    """One config given to two creations: each decides ``auto`` for its own LLM."""
    cfg = IndexConfig()
    first = Engine.create(tmp_path / "a", cfg, HashingEmbedder(64), ExtractiveLLM())
    second = Engine.create(tmp_path / "b", cfg, HashingEmbedder(64), _Generative())
    assert cfg.heterograph.attributes == "auto"
    assert first.config.heterograph.attributes == "off"
    assert second.config.heterograph.attributes == "on"


def test_attributes_turned_off_are_dropped_at_the_next_write(tmp_path, sample_docs):
    index = _index(tmp_path)  # on
    index.insert(sample_docs[:12])
    assert index.engine.state.snapshot.nodes.ids_of_kind(K["A"]).size > 0
    config = index.engine.config
    config.heterograph = dataclasses.replace(config.heterograph, attributes="off")
    report = index.insert(sample_docs[12:14])
    assert index.engine.state.snapshot.nodes.ids_of_kind(K["A"]).size == 0
    assert "attribute" not in report.llm_by_stage
    assert_consistent(index)  # no attribute edge left behind
    assert index.query("Who founded Meridian Optics?", mode="graph").nodes
