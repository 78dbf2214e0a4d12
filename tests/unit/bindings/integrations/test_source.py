"""What a retriever sends and what each result carries (``bindings/integrations/source``)."""

from __future__ import annotations

import pytest

from graphstrata.bindings.integrations.source import (
    HttpSource,
    SearchOptions,
    hit_metadata,
    make_source,
    query_kwargs,
)

HIT = {
    "id": 42,
    "kind": "T",
    "layer": 0,
    "text": "The lighthouse was repainted.",
    "score": 0.5,
    "tokens": 6,
    "docs": ["news/a.md", "news/b.md"],
    "documents": [{"doc_id": "news/a.md", "title": "A", "metadata": {"year": 2024}}],
    "spans": [{"doc_id": "news/a.md", "page": 3, "section": None, "start": 10, "end": 39}],
}


def test_the_metadata_is_the_hit_without_its_text():
    meta = hit_metadata(HIT)
    assert "text" not in meta and "id" not in meta
    assert meta["node_id"] == 42 and meta["source"] == "news/a.md"
    assert meta["documents"] == HIT["documents"] and meta["spans"] == HIT["spans"]
    bare = hit_metadata({**HIT, "docs": []})
    assert "source" not in bare


def test_unset_options_are_left_out_and_a_filter_only_when_given():
    assert SearchOptions().body("q") == {"query": "q", "mode": "naive"}
    full = SearchOptions("graph", 500, 7, {"rank": "score"}, {"year": 2024}).body("q")
    assert full == {
        "query": "q",
        "mode": "graph",
        "budget_tokens": 500,
        "top_k": 7,
        "params": {"rank": "score"},
        "filter": {"year": 2024},
    }
    assert query_kwargs({"a": 1}, None) == {"a": 1}
    assert query_kwargs({"a": 1}, {"year": 1}) == {"a": 1, "filter": {"year": 1}}


def test_a_source_is_an_index_or_a_url():
    with pytest.raises(ValueError, match="either index"):
        make_source()
    with pytest.raises(ValueError, match="either index"):
        make_source(index=object(), url="http://x")  # type: ignore[arg-type]
    assert HttpSource("http://h:1/").endpoint == "http://h:1/v1/retrieve"
    named = HttpSource("http://h:1", token="t", index="docs")
    assert named.endpoint == "http://h:1/v1/indexes/docs/retrieve"
    assert named.headers == {"Authorization": "Bearer t"}
