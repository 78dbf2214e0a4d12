"""``PinnedVersion``'s look-ups for the web page (``Engine.pinned``): nodes found by name,
edges filtered by kind, a document's chunk ids; and the versions ``Engine.stats`` lists."""

from __future__ import annotations

from graphstrata.engine.types import EdgeKind, NodeKind


def test_find_nodes_ranks_exact_then_prefix_then_substring(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs)
    pinned = index.pinned()
    found = pinned.find_nodes("  MERIDIAN optics ", [int(NodeKind.N)], 20)
    texts = [pinned.node(n)["text"].casefold() for n in found]
    assert texts[0] == "meridian optics"
    ranks = [
        0 if t == "meridian optics" else 1 if t.startswith("meridian optics") else 2 for t in texts
    ]
    assert ranks == sorted(ranks) and all("meridian optics" in t for t in texts)
    assert pinned.find_nodes("meridian optics", [int(NodeKind.N)], 1) == found[:1]
    assert pinned.find_nodes("   ", [int(NodeKind.N)], 20) == []
    assert pinned.find_nodes("meridian optics", [int(NodeKind.T)], 50)  # any kind given


def test_heaviest_edges_of_some_kinds_and_a_documents_chunk_ids(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs)
    pinned = index.pinned()
    entity = pinned.find_nodes("Meridian Optics", [int(NodeKind.N)], 1)[0]
    every = pinned.heaviest_edges(entity, 500)
    relations = pinned.heaviest_edges(entity, 500, kinds=[int(EdgeKind.ENTITY_RELATION)])
    assert relations and {e["kind"] for e in relations} == {int(EdgeKind.ENTITY_RELATION)}
    assert relations == [e for e in every if e["kind"] == int(EdgeKind.ENTITY_RELATION)]
    assert pinned.heaviest_edges(entity, 500, kinds=[]) == []
    text = pinned.document_text("optics/meridian_founding.md")
    assert len(text["chunk_ids"]) == len(text["chunks"])
    assert [pinned.node(i)["text"] for i in text["chunk_ids"]] == text["chunks"]


def test_stats_list_the_kept_versions_newest_first_with_their_times(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:10])
    index.insert(sample_docs[10:20])
    stats = index.stats()
    versions = stats["versions"]
    assert [v["version"] for v in versions] == [stats["version"], stats["version"] - 1, 0]
    times = [v["committed_at"] for v in versions]
    assert times == sorted(times, reverse=True) and times[0] == stats["committed_at"]
    index.compact()
    assert [v["version"] for v in index.stats()["versions"]] == [index.stats()["version"]]
