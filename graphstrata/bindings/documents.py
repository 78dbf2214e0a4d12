"""The documents side of :class:`graphstrata.Index`: files in, documents listed and read.

A mixin of ``Index`` (``bindings/api.py``), kept apart so each module stays one concept:
``insert_files`` parses files (``bindings/files``) and writes their documents with one
outcome per file; ``documents`` and ``document`` describe what the index holds
(``docs/guide/files.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphstrata.bindings.files import FileBatch, path_items, read_files
from graphstrata.engine import OperationReport, QueryError, parse_filter

if TYPE_CHECKING:
    from graphstrata.engine import Engine


class DocumentsAPI:
    """``Index.insert_files``, ``insert_parsed``, ``documents`` and ``document``."""

    _engine: Engine

    def insert_files(
        self,
        paths: Iterable[str | Path],
        metadata: Mapping[str, Any] | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        wait: float = 0.0,
    ) -> OperationReport:
        """Insert files: PDF, Word (.docx), HTML, Markdown and text (``docs/guide/files.md``).

        Each file is parsed on its own; one that gives no document (a scanned PDF without a
        text layer, a corrupt file, an unsupported type, a text over the size limit) fails
        alone and the others are written in one operation.

        Parameters
        ----------
        paths:
            Files (``doc_id`` = the file's name) and folders (their supported files,
            ``doc_id`` = the path relative to the folder).
        metadata:
            Metadata of every document of the batch.
        progress, wait:
            As for :meth:`insert`.

        Returns
        -------
        OperationReport
            As for :meth:`insert`, with ``files``: per file ``{"name", "status": "indexed" |
            "failed" | "skipped" (unchanged), "doc_id", "format"?, "pages"?, "error"?}``.

        Raises
        ------
        FileNotFoundError
            For a path that does not exist (nothing is read). A PDF or Word file without
            the ``files`` extra installed fails alone, its error naming the extra.
        """
        return self.insert_parsed(
            read_files(path_items(paths), self._engine.config.ingest, metadata), progress, wait
        )

    def insert_parsed(
        self,
        batch: FileBatch,
        progress: Callable[[str, int, int], None] | None = None,
        wait: float = 0.0,
    ) -> OperationReport:
        """Write the documents of parsed files (``graphstrata.bindings.files.read_files``);
        the report's ``files`` gives each file's outcome (:meth:`insert_files`)."""
        before = self._engine.version
        if batch.docs:
            report = self._engine.insert(batch.docs, progress=progress, wait=wait)
        else:
            report = OperationReport(operation="insert", version=before)
        pinned = self._engine.pinned()
        written = {}
        for doc in batch.docs:
            # An unchanged document keeps the version of its last write.
            found = pinned.document(doc.doc_id)
            written[doc.doc_id] = (
                found is not None and report.version > before and found["version"] == report.version
            )
        report.files = batch.finished(written)
        return report

    def documents(
        self,
        offset: int = 0,
        limit: int = 50,
        query: str | None = None,
        filter: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One page of the index's documents, ordered by ``doc_id``.

        Parameters
        ----------
        offset, limit:
            The page (``limit`` 1 to 1,000).
        query:
            Keep documents whose ``doc_id`` or title contains it (case-insensitive).
        filter:
            Keep documents that pass this metadata filter (the search filters' syntax,
            ``docs/guide/filters.md``).

        Returns
        -------
        dict
            ``{"documents": [...], "total", "offset", "limit"}``; each document as
            :meth:`document` gives it.

        Raises
        ------
        QueryError
            For a negative offset, a limit out of range or an invalid filter.
        """
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise QueryError(f"offset must be an integer >= 0, got {offset!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise QueryError(f"limit must be an integer from 1 to 1000, got {limit!r}")
        parsed = None if filter is None else parse_filter(filter)
        return self._engine.pinned().document_page(offset, limit, query or None, parsed)

    def document(self, doc_id: str) -> dict[str, Any] | None:
        """A document of the version served: ``{"doc_id", "title", "metadata", "status":
        "committed", "chunks", "version", "source"}`` (``source``: ``{"filename", "format",
        "pages"}`` of a parsed file, else None), or None when it is not in the index."""
        return self._engine.pinned().document(doc_id)
