"""Files to documents, one outcome per file: a bad file fails alone, never the batch.

Each file is parsed by the module of its format (``FORMATS``), and the document it gives is
checked as the engine checks a batch (``validate_batch``) on its own, so an empty scan, a
corrupt file, an unsupported type or an oversized text is one ``failed`` outcome with its
cause while the other files are written (``Index.insert_files``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphstrata.bindings.extras import MissingExtraError
from graphstrata.bindings.files.base import FileError, Parsed
from graphstrata.bindings.files.html_page import parse as parse_html
from graphstrata.bindings.files.markdown import parse as parse_markdown
from graphstrata.bindings.files.pdf import parse as parse_pdf
from graphstrata.bindings.files.text import parse as parse_text
from graphstrata.bindings.files.word import parse as parse_docx
from graphstrata.engine import (
    Document,
    DocumentError,
    IngestConfig,
    SourceMap,
    as_documents,
    folder_files,
    metadata_problem,
    read_documents,
    validate_batch,
)

log = logging.getLogger(__name__)

#: File name ending -> format.
FORMATS: dict[str, str] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
}

#: Format -> its parser (``parse(data, name) -> Parsed``).
PARSERS: dict[str, Callable[[bytes, str], Parsed]] = {
    "pdf": parse_pdf,
    "docx": parse_docx,
    "html": parse_html,
    "markdown": parse_markdown,
    "text": parse_text,
}


@dataclass
class FileBatch:
    """The documents of a batch of files and each file's outcome so far.

    Attributes
    ----------
    docs:
        The documents to write, in file order.
    outcomes:
        One per file: ``{"name", "status", "format"?, "doc_id"?, "pages"?, "error"?}``;
        ``status`` is ``"failed"`` (with ``error``) or, until the write, ``"parsed"``.
    """

    docs: list[Document] = field(default_factory=list)
    outcomes: list[dict[str, Any]] = field(default_factory=list)

    def finished(self, written: Mapping[str, bool]) -> list[dict[str, Any]]:
        """The outcomes once written: ``indexed``, or ``skipped`` for a document whose
        content was already indexed (``written[doc_id]`` False)."""
        for outcome in self.outcomes:
            if outcome["status"] == "parsed":
                outcome["status"] = "indexed" if written.get(outcome["doc_id"]) else "skipped"
        return self.outcomes


def supported(name: str) -> bool:
    """Whether a file name ends with a format this module reads."""
    return Path(name).suffix.lower() in FORMATS


def parse_file(
    name: str, data: bytes, metadata: Mapping[str, Any] | None = None, *, doc_id: str = ""
) -> Document:
    """One file's document.

    Parameters
    ----------
    name:
        The file's name (its ending picks the format).
    data:
        Its bytes.
    metadata:
        The document's metadata.
    doc_id:
        Its id (default: ``name``).

    Raises
    ------
    FileError
        For an unsupported type or a file that gives no document (the cause in one line).
    """
    suffix = Path(name).suffix.lower()
    fmt = FORMATS.get(suffix)
    if fmt is None:
        kinds = ", ".join(sorted(FORMATS))
        raise FileError(f"unsupported file type {suffix or '(none)'!r}; supported: {kinds}")
    parsed = PARSERS[fmt](data, name)
    if not parsed.text.strip():
        raise FileError("the file holds no text")
    source_map = SourceMap(
        filename=Path(name).name, format=fmt, pages=parsed.pages, sections=parsed.sections
    )
    return Document(
        doc_id=doc_id or name,
        text=parsed.text,
        title=parsed.title,
        metadata=dict(metadata or {}),
        source=name,
        source_map=source_map,
    )


def read_files(
    items: Iterable[tuple[str, str, Callable[[], bytes]]],
    ingest: IngestConfig,
    metadata: Mapping[str, Any] | None = None,
) -> FileBatch:
    """Parse and check files one by one.

    Parameters
    ----------
    items:
        ``(name, doc_id, read)`` per file: the name its outcome shows, its document's id,
        and a function returning its bytes.
    ingest:
        The index's document limits.
    metadata:
        Metadata of every document of the batch.

    Returns
    -------
    FileBatch
        The good documents and every file's outcome.

    Raises
    ------
    DocumentError
        When ``metadata`` itself is invalid (nothing is read). A file whose format's
        parser is not installed fails alone, its error naming the extra to install.
    """
    if metadata is not None:
        if not isinstance(metadata, Mapping):
            raise DocumentError(["metadata must be a JSON object"])
        problem = metadata_problem(metadata)
        if problem:
            raise DocumentError([problem])
    batch = FileBatch()
    seen: set[str] = set()
    for name, doc_id, read in items:
        outcome: dict[str, Any] = {"name": name, "doc_id": doc_id}
        fmt = FORMATS.get(Path(name).suffix.lower())
        if fmt is not None:
            outcome["format"] = fmt
        batch.outcomes.append(outcome)
        try:
            doc = parse_file(name, read(), metadata, doc_id=doc_id)
            validate_batch([doc], ingest)
            if doc.doc_id in seen:
                raise FileError(f"duplicate doc_id {doc.doc_id!r} in one batch")
        except (FileError, DocumentError, OSError, MissingExtraError) as exc:
            message = "; ".join(exc.problems) if isinstance(exc, DocumentError) else str(exc)
            outcome.update(status="failed", error=message)
            continue
        seen.add(doc.doc_id)
        if doc.source_map is not None and doc.source_map.pages:
            outcome["pages"] = len(doc.source_map.pages)
        outcome["status"] = "parsed"
        batch.docs.append(doc)
    return batch


def path_items(paths: Iterable[str | Path]) -> list[tuple[str, str, Callable[[], bytes]]]:
    """The files of ``paths`` for :func:`read_files`: a file as itself (``doc_id`` = its
    name), a folder as its supported files (``doc_id`` = the path relative to it; symbolic
    links leading outside it are not followed and are named in one warning, as for text
    folders).

    Raises
    ------
    FileNotFoundError
        For a path that does not exist.
    """
    items: list[tuple[str, str, Callable[[], bytes]]] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files, skipped = folder_files(path, tuple(FORMATS))
            if skipped:
                more = f" (and {len(skipped) - 10} more)" if len(skipped) > 10 else ""
                log.warning(
                    "%s: not following %d symbolic link(s): %s",
                    path,
                    len(skipped),
                    "; ".join(skipped[:10]) + more,
                )
            for file in files:
                rel = file.relative_to(path).as_posix()
                items.append((rel, rel, file.read_bytes))
        elif path.exists():
            items.append((path.name, path.name, path.read_bytes))
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return items


def read_source(source: str | Path, ingest: IngestConfig) -> FileBatch:
    """The documents of ``graphstrata index`` / ``insert``'s source: a ``.jsonl`` file whole
    (any bad line rejects it), else a file or folder of files, each on its own.

    Raises
    ------
    DocumentError
        For a bad JSONL line, or when files were given and none gives a document (each one
        named with its cause).
    FileNotFoundError
        When ``source`` does not exist.
    """
    path = Path(source)
    if path.suffix.lower() in (".jsonl", ".ndjson") and not path.is_dir():
        return FileBatch(docs=as_documents(read_documents(path)))
    batch = read_files(path_items([path]), ingest)
    if not batch.docs and batch.outcomes:
        raise DocumentError([f"{o['name']}: {o['error']}" for o in batch.outcomes])
    return batch
