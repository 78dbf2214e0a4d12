"""From documents to the chunk change the components see (docs/architecture.md, "Write path").

Removing documents tombstones their chunks and doc rows; adding documents chunks them,
embeds the chunks through ``UpdateContext.embed_nodes`` (each distinct text once, unchanged
chunks reusing their committed vectors) and records chunk and doc rows. Both only write into
the operation's delta.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphstrata.core import sets
from graphstrata.engine.component import ChangeSet, ProgressFn, UpdateContext
from graphstrata.engine.config import ChunkingConfig
from graphstrata.engine.documents import Document
from graphstrata.engine.ingest.chunking import Chunk, chunk_text
from graphstrata.engine.ingest.spans import layout_json
from graphstrata.engine.store import DOC_SCHEMA, Snapshot
from graphstrata.engine.types import NodeKind


def doc_lookup(snapshot: Snapshot, doc_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
    """``doc_id -> (doc key, content sha256)`` of those of ``doc_ids`` that are live documents
    of a version (matched in Arrow: no Python pass over every document of the index)."""
    docs = snapshot.docs
    if not doc_ids or not docs.num_rows:
        return {}
    # A doc id is a string; anything else names no document (the caller reports it).
    wanted = pa.array([d for d in dict.fromkeys(doc_ids) if isinstance(d, str)], pa.string())
    found = docs.filter(pc.is_in(docs.column("doc_id"), value_set=wanted))
    return {
        d: (int(k), s)
        for d, k, s in zip(
            found.column("doc_id").to_pylist(),
            found.column("key").to_pylist(),
            found.column("sha256").to_pylist(),
            strict=True,
        )
    }


def remove_docs(ctx: UpdateContext, keys: np.ndarray) -> np.ndarray:
    """Tombstone documents and every chunk that cites one of them.

    Parameters
    ----------
    ctx:
        The operation.
    keys:
        Doc keys to delete.

    Returns
    -------
    numpy.ndarray
        The removed chunk ids (int64).
    """
    if keys.size == 0:
        return np.zeros(0, np.int64)
    nodes = ctx.snapshot.nodes
    chunk_rows = np.flatnonzero(nodes.kind == np.uint8(NodeKind.T))
    # The doc lists flattened in Arrow, not one Python list per chunk (seconds at 1M chunks).
    flat, parent = nodes.doc_lists_at(chunk_rows)
    hit = sets.unique(parent[np.isin(flat, np.asarray(keys, np.int64))])
    removed = nodes.ids[chunk_rows[hit]].astype(np.int64)
    ctx.delta.delete_nodes(removed)
    ctx.delta.delete_docs(keys)
    ctx.report.chunks_removed += int(removed.size)
    return removed


def add_docs(
    ctx: UpdateContext,
    docs: Sequence[Document],
    chunking: ChunkingConfig,
    removed_chunks: np.ndarray,
    removed_keys: np.ndarray,
    progress: ProgressFn | None = None,
) -> ChangeSet:
    """Chunk, embed and record new documents; the operation's whole chunk change.

    Parameters
    ----------
    ctx:
        The operation.
    docs:
        Validated documents to add (an update was removed first by ``remove_docs``).
    chunking:
        How to cut them.
    removed_chunks, removed_keys:
        What ``remove_docs`` removed in this operation.
    progress:
        Called as chunks are embedded.

    Returns
    -------
    ChangeSet
        The new chunks (with vectors) and the removed ones, for the components.
    """
    keys = ctx.delta.new_doc_keys(len(docs))
    texts: list[str] = []
    tokens: list[int] = []
    chunk_docs: list[int] = []
    per_doc: list[list[Chunk]] = []
    with ctx.report.stage("chunk"):
        for key, doc in zip(keys.tolist(), docs, strict=True):
            chunks = chunk_text(doc.text, chunking)
            per_doc.append(chunks)
            for c in chunks:
                texts.append(c.text)
                tokens.append(c.tokens)
                chunk_docs.append(key)
    ids = ctx.delta.new_node_ids(len(texts))
    # A document's chunks take consecutive ids (new_node_ids is one ascending range).
    layouts: list[str | None] = []
    first = int(ids[0]) if ids.size else 0
    for chunks, doc in zip(per_doc, docs, strict=True):
        layouts.append(layout_json(chunks, first, doc.source_map))
        first += len(chunks)
    vectors = ctx.embed_nodes(ids, int(NodeKind.T), texts, stage="embed_chunks", progress=progress)
    ctx.delta.add_nodes(
        ids=ids,
        kind=int(NodeKind.T),
        text=texts,
        tokens=np.asarray(tokens, dtype=np.int32),
        docs=[[k] for k in chunk_docs],
    )
    n_chunks = [len(c) for c in per_doc]
    ctx.delta.add_docs(docs_table(docs, keys, n_chunks, ctx.delta.version, layouts))
    ctx.report.chunks_added += len(texts)
    return ChangeSet(
        added_chunk_ids=ids,
        added_chunk_texts=texts,
        added_chunk_tokens=np.asarray(tokens, dtype=np.int32),
        added_chunk_docs=np.asarray(chunk_docs, dtype=np.int64),
        added_chunk_vectors=vectors,
        removed_chunk_ids=removed_chunks,
        removed_doc_keys=removed_keys,
        added_doc_keys=keys,
    )


def docs_table(
    docs: Sequence[Document],
    keys: np.ndarray,
    n_chunks: Sequence[int],
    version: int,
    layouts: Sequence[str | None] | None = None,
) -> pa.Table:
    """The doc rows (``DOC_SCHEMA``) of new documents.

    Parameters
    ----------
    docs:
        The documents.
    keys:
        Their doc keys.
    n_chunks:
        How many chunks each was cut into.
    version:
        The version that writes them.
    layouts:
        Their ``layout`` columns (``ingest.spans.layout_json``); None: none recorded.
    """
    return pa.table(
        {
            "key": keys,
            "doc_id": [d.doc_id for d in docs],
            "title": [d.title for d in docs],
            "source": [d.source for d in docs],
            "sha256": [d.sha256 for d in docs],
            "metadata": [_json(d.metadata) for d in docs],
            "n_chars": np.asarray([len(d.text) for d in docs], dtype=np.int64),
            "n_chunks": np.asarray(n_chunks, dtype=np.int32),
            "version": np.full(len(docs), version, np.int64),
            "layout": pa.array(layouts or [None] * len(docs), pa.string()),
        },
        schema=DOC_SCHEMA,
    )


def _json(obj: Mapping[str, Any]) -> str:
    return json.dumps(dict(obj), ensure_ascii=False, sort_keys=True, default=str)
