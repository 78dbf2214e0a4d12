"""Source spans: where each chunk lies in its document, and the file's pages and headings.

A document's ``layout`` (a JSON column of the doc row, ``store/schema.py``) is written once,
with the document, and read back when a hit first cites it in a version (``DocRecords``
keeps it parsed):

* ``first``: the id of its first chunk (a document's chunks get consecutive ids,
  ``Delta.new_node_ids``, so chunk ``i`` is ``first + i``);
* ``chunks``: the character offsets ``[start0, end0, start1, end1, ...]`` of its chunks in
  the document's text;
* ``file``: the ``SourceMap`` of a document parsed from a file (pages and headings as
  offsets), absent for a document given as text.

Because the layout lives on the doc row, it survives every later version (compaction
copies doc rows) and leaves with the document. A doc row written before layouts existed
reads as null: its chunks' spans have ``page``, ``section``, ``start`` and ``end`` None
(``docs/decisions/0023-file-parsing-and-source-spans.md``).
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from graphstrata.engine.documents import SourceMap
from graphstrata.engine.ingest.chunking import Chunk
from graphstrata.engine.types import NodeKind

#: The letter of a chunk hit, the one kind that carries spans (the decision record says why).
_CHUNK = NodeKind.T.letter


def layout_json(chunks: Sequence[Chunk], first_id: int, source_map: SourceMap | None) -> str:
    """A document's ``layout`` column (module docstring).

    Parameters
    ----------
    chunks:
        Its chunks, in order (``chunk_text``).
    first_id:
        The node id of its first chunk.
    source_map:
        Its file's pages and headings, or None.
    """
    layout: dict[str, Any] = {
        "first": int(first_id),
        "chunks": [v for c in chunks for v in (c.start, c.end)],
    }
    if source_map is not None:
        layout["file"] = source_map.to_dict()
    return json.dumps(layout, ensure_ascii=False, separators=(",", ":"))


def source_info(layout: str | None) -> dict[str, Any] | None:
    """``{"filename", "format", "pages"}`` of a document parsed from a file, else None.

    Parameters
    ----------
    layout:
        The document's ``layout`` column (None for rows written before it existed).
    """
    if not layout:
        return None
    found = json.loads(layout).get("file")
    if found is None:
        return None
    pages = len(found.get("pages") or ())
    return {"filename": found["filename"], "format": found["format"], "pages": pages or None}


def chunk_spans(
    doc_id: str, layout: dict[str, Any] | None, chunk_id: int, text: str
) -> list[dict[str, Any]]:
    """The spans of one chunk: one per page and section it covers, each trimmed to its
    non-blank text, offsets into the document's text.

    Parameters
    ----------
    doc_id:
        The chunk's document.
    layout:
        That document's parsed ``layout``, or None (written before layouts).
    chunk_id:
        The chunk's node id.
    text:
        The chunk's text (``document_text[start:end]``).

    Returns
    -------
    list of dict
        ``{"doc_id", "page", "section", "start", "end"}`` each; one span with None fields
        when the document has no layout.
    """
    unknown = {"doc_id": doc_id, "page": None, "section": None, "start": None, "end": None}
    if layout is None:
        return [unknown]
    i = chunk_id - int(layout["first"])
    offsets = layout["chunks"]
    if not 0 <= 2 * i < len(offsets):
        return [unknown]
    start, end = int(offsets[2 * i]), int(offsets[2 * i + 1])
    file = layout.get("file") or {}
    pages: list[int] = file.get("pages") or []
    sections = file.get("sections") or []
    section_starts = [int(o) for o, _ in sections]
    cuts = sorted({start, end, *(o for o in (*pages, *section_starts) if start < o < end)})
    spans = []
    for lo, hi in itertools.pairwise(cuts):
        piece = text[lo - start : hi - start]
        if not piece.strip():
            continue
        lo += len(piece) - len(piece.lstrip())
        hi -= len(piece) - len(piece.rstrip())
        page = bisect.bisect_right(pages, lo) if pages else None
        s = bisect.bisect_right(section_starts, lo) - 1
        spans.append(
            {
                "doc_id": doc_id,
                "page": page or None,
                "section": sections[s][1] if s >= 0 else None,
                "start": lo,
                "end": hi,
            }
        )
    return spans


def hit_spans(
    layouts_of: Callable[[list[int]], Mapping[int, dict[str, Any] | None]],
    ids: Sequence[int] | np.ndarray,
    letters: Sequence[str],
    doc_keys: Sequence[Sequence[int]],
    doc_ids: Sequence[Sequence[str]],
    texts: Sequence[str],
) -> list[list[dict[str, Any]]]:
    """The source spans of hits, in order: a chunk's own (:func:`chunk_spans`), none for
    other kinds (they cite documents through ``docs``; decision 0023).

    Parameters
    ----------
    layouts_of:
        The parsed layouts of the version's live documents among some doc keys, by key
        (``DocRecords.layouts``).
    ids, letters, doc_keys, doc_ids, texts:
        Per hit: node id, kind letter, doc keys, their doc_ids, text.

    Returns
    -------
    list of list of dict
        One list of spans per hit.
    """
    chunk_keys = {
        int(keys[0]) for keys, letter in zip(doc_keys, letters, strict=True) if letter == _CHUNK
    }
    chunk_keys.discard(-1)
    layouts = layouts_of(sorted(chunk_keys)) if chunk_keys else {}
    out: list[list[dict[str, Any]]] = []
    for node_id, letter, keys, names, text in zip(
        ids, letters, doc_keys, doc_ids, texts, strict=True
    ):
        if letter != _CHUNK or not keys or not names:
            out.append([])
            continue
        out.append(chunk_spans(names[0], layouts.get(int(keys[0])), int(node_id), text))
    return out
