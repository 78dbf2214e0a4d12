"""Source spans of a chunk from its document's layout: cut at page and section starts,
trimmed to text, None where the layout is unknown."""

from __future__ import annotations

import json

from graphstrata.engine.config import ChunkingConfig
from graphstrata.engine.documents import SourceMap
from graphstrata.engine.ingest.chunking import chunk_text
from graphstrata.engine.ingest.spans import chunk_spans, layout_json, source_info

TEXT = "Intro text here.\n\nMethods start on page two.\n\nResults close it."
PAGE_TWO = TEXT.index("Methods")
RESULTS = TEXT.index("Results")
SOURCE = SourceMap("a.pdf", "pdf", (0, PAGE_TWO), ((0, "Intro"), (RESULTS, "Intro > Results")))


def _layout(chunks, source=SOURCE, first=100):
    return json.loads(layout_json(chunks, first, source))


def test_a_chunk_over_a_page_break_and_a_heading_has_one_span_per_part():
    (chunk,) = chunk_text(TEXT, ChunkingConfig(chunk_tokens=200, overlap_tokens=20))
    spans = chunk_spans("a.pdf", _layout([chunk]), 100, chunk.text)
    assert [(s["page"], s["section"]) for s in spans] == [
        (1, "Intro"),
        (2, "Intro"),
        (2, "Intro > Results"),
    ]
    assert [TEXT[s["start"] : s["end"]] for s in spans] == [
        "Intro text here.",
        "Methods start on page two.",
        "Results close it.",
    ]


def test_each_chunk_is_found_by_its_id():
    chunks = chunk_text(TEXT * 20, ChunkingConfig(chunk_tokens=16, overlap_tokens=2))
    layout = _layout(chunks, source=None, first=7)
    for i, chunk in enumerate(chunks):
        spans = chunk_spans("d", layout, 7 + i, chunk.text)
        assert spans == [
            {"doc_id": "d", "page": None, "section": None, "start": chunk.start, "end": chunk.end}
        ]


def test_unknown_layouts_and_ids_give_a_span_of_nones():
    nones = [{"doc_id": "d", "page": None, "section": None, "start": None, "end": None}]
    assert chunk_spans("d", None, 5, "x") == nones
    assert chunk_spans("d", _layout([]), 100, "x") == nones


def test_source_info_of_a_file_and_of_text():
    assert source_info(layout_json([], 0, SOURCE)) == {
        "filename": "a.pdf",
        "format": "pdf",
        "pages": 2,
    }
    assert source_info(layout_json([], 0, None)) is None
    assert source_info(None) is None
