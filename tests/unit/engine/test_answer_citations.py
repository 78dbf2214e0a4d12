"""Citations list the nodes an answer cites, with the hit's fields (``engine/answer.py``)."""

from __future__ import annotations

from graphstrata.engine.answer import citations, cited_markers, sources_footer
from graphstrata.engine.component import Hit


def hit(i: int, docs: list[str]) -> Hit:
    return Hit(id=100 + i, kind="T", layer=0, text=f"text {i}", score=1.0 / i, tokens=3, docs=docs)


HITS = [hit(1, ["a"]), hit(2, ["b", "c"]), hit(3, []), hit(4, ["d"])]


def test_markers_are_read_in_order_once_and_only_when_they_exist():
    assert cited_markers("x [2] y [1, 4] z [2][9] [0] [x]", 4) == [2, 1, 4]
    assert cited_markers("Insufficient information.", 4) == []


def test_only_cited_nodes_are_listed_one_per_document():
    out = citations(HITS, "Veld founded it [2]. Later [3].")
    assert [(c["marker"], c["doc_id"], c["node_id"]) for c in out] == [
        (2, "b", 102),
        (2, "c", 102),
        (3, None, 103),
    ]
    first = out[0]
    assert set(first) == {
        "marker",
        "doc_id",
        "node_id",
        "kind",
        "score",
        "title",
        "metadata",
        "spans",
        "text",
    }
    assert first["text"] == "text 2" and first["score"] == 0.5
    assert first["title"] is None and first["metadata"] == {} and first["spans"] == []
    assert citations(HITS, "nothing cited") == []


def test_sources_footer_names_each_reference_once():
    cited = citations(HITS, "[4] and [1] and [4]")
    cited[0]["title"] = "Doc D"
    cited[0]["spans"] = [{"doc_id": "d", "page": 3, "start": 0, "end": 5}]
    assert sources_footer(cited) == "\n\nSources:\n[4] Doc D (page 3)\n[1] a"
    assert sources_footer([]) == ""
