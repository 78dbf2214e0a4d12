"""Ingest: documents in, chunk changes out (docs/architecture.md, "Write path").

``chunking`` cuts validated documents (``engine.documents``) into token windows, ``changes``
turns a batch into the ``ChangeSet`` of one operation.
"""

from graphstrata.engine.ingest.changes import add_docs, doc_lookup, docs_table, remove_docs
from graphstrata.engine.ingest.chunking import Chunk, chunk_text

__all__ = ["Chunk", "add_docs", "chunk_text", "doc_lookup", "docs_table", "remove_docs"]
