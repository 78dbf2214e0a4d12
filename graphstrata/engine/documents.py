"""Documents: validation and readers (JSONL, folders of .txt/.md).

A batch with any invalid document is rejected whole with one error that lists every problem,
so the index never holds half of a batch. Decisions for the cases users hit:

* empty or whitespace-only text: invalid;
* bytes that are not UTF-8 (folder input) or text with NUL characters: invalid ("binary");
* a document over ``IngestConfig.max_doc_bytes`` (default 4 MiB of UTF-8): invalid, split it;
* the same ``doc_id`` twice in one batch: invalid (which version is meant is ambiguous);
* a JSONL line without ``doc_id`` or ``text``, or not a JSON object: invalid, with its line;
* a ``doc_id`` with control characters (U+0000-U+001F, U+007F-U+009F: tabs and newlines
  included), line or paragraph separators (U+2028, U+2029), or lone surrogates (a file name
  that is not UTF-8): invalid, each one named with its file, since a ``doc_id`` is printed,
  logged and matched by ``delete``;
* re-inserting a ``doc_id`` with identical content: a no-op; with other content: an update;
* metadata holding ``NaN`` or an infinity, or nested deeper than :data:`MAX_METADATA_DEPTH`
  levels: invalid, from JSONL, the Python API or the server alike (the server's JSON parser
  refuses both in a request body; issue 51, #15);
* a JSONL line nested too deep for the parser, or with an integer of more than 4,300 digits:
  invalid, with its line.

Every bad line of a JSONL file and every bad file of a folder is listed in one error (the
readers yield the good documents and raise at the end).

Folder input (:func:`read_folder`) reads the ``.txt``/``.md``/``.markdown`` files under the
folder, ``doc_id`` = the path relative to it. Symbolic links: a link to a file inside the
folder is read like a file (its ``doc_id`` is the link's own path); a link whose target lies
outside the folder, a dangling link, and any link to a directory are not followed, and the
skipped links are named in one warning (logger ``graphstrata.engine.documents``). So an index
of a folder never holds the content of a file outside it.

(docs/architecture.md, "Write path".)
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphstrata.engine.config import IngestConfig

log = logging.getLogger(__name__)

#: Deepest nesting of a document's metadata (the server's JSON nesting limit,
#: ``bindings/server/jsonbody.py``'s ``MAX_DEPTH``, so a JSONL file and a request agree).
MAX_METADATA_DEPTH = 200


class DocumentError(ValueError):
    """One or more documents are invalid; nothing was written."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        head = "; ".join(problems[:5])
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"{len(problems)} invalid document(s), nothing written: {head}{more}")


@dataclass(frozen=True)
class SourceMap:
    """Where a parsed file's text came from (``graphstrata/bindings/files``): the file, its
    pages and its headings, as character offsets into the document's text.

    Attributes
    ----------
    filename:
        The file's name as given (no folder).
    format:
        ``pdf``, ``docx``, ``html``, ``markdown`` or ``text``.
    pages:
        The offset where each page starts (page ``n`` starts at ``pages[n - 1]``); empty
        for a format without pages.
    sections:
        ``(offset, heading path)`` where each section starts, ascending, e.g.
        ``(120, "Intro > Methods")``.
    """

    filename: str
    format: str
    pages: tuple[int, ...] = ()
    sections: tuple[tuple[int, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (stored in the document's ``layout``)."""
        return {
            "filename": self.filename,
            "format": self.format,
            "pages": list(self.pages),
            "sections": [[int(o), p] for o, p in self.sections],
        }


@dataclass(frozen=True)
class Document:
    """A document as the user gives it (``source_map`` when it was parsed from a file)."""

    doc_id: str
    text: str
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""
    source_map: SourceMap | None = None

    @property
    def sha256(self) -> str:
        """Content hash: re-inserting the same content is a no-op (the same file parsed to
        other pages or headings is an update)."""
        content: dict[str, Any] = {
            "text": self.text,
            "title": self.title,
            "metadata": dict(self.metadata),
        }
        if self.source_map is not None:
            content["source_map"] = self.source_map.to_dict()
        payload = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def coerce_document(obj: Any, where: str = "") -> Document:
    """Turn a dict (or Document) into a Document; raise DocumentError naming the problem."""
    if isinstance(obj, Document):
        return obj
    prefix = f"{where}: " if where else ""
    if not isinstance(obj, Mapping):
        raise DocumentError(
            [f"{prefix}expected an object with doc_id and text, got {type(obj).__name__}"]
        )
    missing = [k for k in ("doc_id", "text") if k not in obj]
    if missing:
        raise DocumentError([f"{prefix}missing field(s) {missing}"])
    doc_id, text = obj["doc_id"], obj["text"]
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str):
        raise DocumentError([f"{prefix}doc_id must be a string, got {type(doc_id).__name__}"])
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DocumentError(
                [f"{prefix}doc {doc_id!r}: text is not UTF-8 (binary?): {exc.reason}"]
            ) from exc
    if not isinstance(text, str):
        raise DocumentError(
            [f"{prefix}doc {doc_id!r}: text must be a string, got {type(text).__name__}"]
        )
    title = obj.get("title") or ""
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise DocumentError([f"{prefix}doc {doc_id!r}: metadata must be an object"])
    bad_metadata = metadata_problem(metadata)
    if bad_metadata:
        raise DocumentError([f"{prefix}doc {doc_id!r}: {bad_metadata}"])
    return Document(
        doc_id=doc_id,
        text=text,
        title=str(title),
        metadata=dict(metadata),
        source=str(obj.get("source", "")),
    )


def metadata_problem(metadata: Mapping[str, Any]) -> str | None:
    """Why ``metadata`` may not be stored, or None: ``NaN`` or an infinity anywhere in it (not
    JSON: the server refuses them), or nesting deeper than :data:`MAX_METADATA_DEPTH`.

    Parameters
    ----------
    metadata:
        A document's metadata.

    Returns
    -------
    str or None
        E.g. ``"metadata holds nan at 'score' (NaN and infinities are not JSON)"``.
    """
    stack: list[tuple[Any, int, str]] = [(metadata, 1, "")]
    while stack:  # iterative: a deep value must not exhaust Python's recursion
        value, depth, where = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            return f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels"
        if isinstance(value, float) and not math.isfinite(value):
            return f"metadata holds {value} at {where!r} (NaN and infinities are not JSON)"
        if isinstance(value, Mapping):
            stack.extend(
                (v, depth + 1, f"{where}.{k}" if where else str(k)) for k, v in value.items()
            )
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1, f"{where}[{i}]") for i, v in enumerate(value))
    return None


def validate_batch(docs: list[Document], config: IngestConfig) -> None:
    """Raise DocumentError listing every invalid document of the batch."""
    problems: list[str] = []
    seen: dict[str, int] = {}
    for i, doc in enumerate(docs):
        label = f"doc {doc.doc_id!r}"
        if not doc.doc_id.strip():
            problems.append(f"document #{i}: empty doc_id")
        elif len(doc.doc_id) > config.max_doc_id_chars:
            problems.append(
                f"{label[:60]}...: doc_id longer than {config.max_doc_id_chars} characters"
            )
        bad_id = doc_id_problem(doc.doc_id)
        if bad_id:
            where = f" (file {doc.source!r})" if doc.source else ""
            problems.append(f"{label[:80]}{where}: {bad_id}")
        if doc.doc_id in seen:
            problems.append(
                f"{label}: duplicate doc_id in one batch (entries #{seen[doc.doc_id]} and #{i})"
            )
        seen.setdefault(doc.doc_id, i)
        if not doc.text.strip():
            problems.append(f"{label}: empty text")
            continue
        if "\x00" in doc.text:
            problems.append(f"{label}: text contains NUL characters (binary content?)")
        size = len(doc.text.encode("utf-8", errors="surrogatepass"))
        if size > config.max_doc_bytes:
            problems.append(
                f"{label}: {size / 2**20:.1f} MiB is over max_doc_bytes "
                f"({config.max_doc_bytes / 2**20:.1f} MiB); split the document or raise the limit"
            )
        try:
            doc.text.encode("utf-8")
        except UnicodeEncodeError:
            problems.append(f"{label}: text holds lone surrogates (not valid Unicode)")
    if problems:
        raise DocumentError(problems)


#: Control characters, line and paragraph separators, lone surrogates.
_BAD_ID_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs"})


def doc_id_problem(doc_id: str) -> str | None:
    """Why ``doc_id`` may not be used, or None: control characters, line breaks, surrogates.

    Parameters
    ----------
    doc_id:
        The document's id.

    Returns
    -------
    str or None
        E.g. ``"doc_id contains control character U+000A"``.
    """
    bad = sorted({ch for ch in doc_id if unicodedata.category(ch) in _BAD_ID_CATEGORIES})
    if not bad:
        return None
    if any(unicodedata.category(ch) == "Cs" for ch in bad):
        return "doc_id is not valid Unicode (a file name that is not UTF-8?); rename it"
    codes = ", ".join(f"U+{ord(ch):04X}" for ch in bad)
    plural = "s" if len(bad) > 1 else ""
    return f"doc_id contains control character{plural} {codes}; rename it"


def read_jsonl(path: str | Path) -> Iterator[Document]:
    """Documents from JSONL: ``{"doc_id", "text", "title"?, "metadata"?}`` per line.

    Raises
    ------
    DocumentError
        After the good lines, listing every bad one (not JSON, too deep, a number too long,
        an invalid document).
    """
    path = Path(path)
    problems: list[str] = []
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            where = f"{path.name}:{lineno}"
            try:
                yield coerce_document(_json_line(raw, where), where)
            except DocumentError as exc:
                problems.extend(exc.problems)
    if problems:
        raise DocumentError(problems)


def _json_line(raw: bytes, where: str) -> Any:
    """One JSONL line decoded, or ``DocumentError`` saying why it cannot be."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DocumentError([f"{where}: line is not UTF-8"]) from exc
    except json.JSONDecodeError as exc:
        raise DocumentError([f"{where}: not valid JSON ({exc.msg})"]) from exc
    except RecursionError as exc:
        raise DocumentError(
            [f"{where}: nested too deeply to parse (metadata may nest {MAX_METADATA_DEPTH} levels)"]
        ) from exc
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise DocumentError([f"{where}: not valid JSON ({exc})"]) from exc


TEXT_SUFFIXES = (".txt", ".md", ".markdown")


def folder_files(
    path: str | Path, suffixes: tuple[str, ...] = TEXT_SUFFIXES
) -> tuple[list[Path], list[str]]:
    """The files a folder contributes, and the symlinks that were not followed.

    Parameters
    ----------
    path:
        The folder.
    suffixes:
        The file name endings read (lower case; default the text files).

    Returns
    -------
    tuple
        ``(files, skipped)``: the files to read, sorted, and one ``"REL -> TARGET (why)"`` per
        link left out (see the module docstring for the rule).
    """
    root = Path(path)
    real_root = root.resolve()
    files: list[Path] = []
    skipped: list[str] = []
    # rglob does not descend into symlinked directories; links to files are checked here.
    for p in root.rglob("*"):
        text_file = p.suffix.lower() in suffixes
        if not p.is_symlink():
            if text_file and p.is_file():
                files.append(p)
            continue
        rel = p.relative_to(root).as_posix()
        try:
            target = p.resolve()
        except (OSError, RuntimeError):
            skipped.append(f"{rel} (a symlink loop)")
            continue
        if p.is_dir():
            skipped.append(f"{rel} -> {target} (a directory)")
        elif not text_file:
            continue
        elif not p.exists():
            skipped.append(f"{rel} -> {target} (dangling)")
        elif not target.is_relative_to(real_root):
            skipped.append(f"{rel} -> {target} (outside the folder)")
        elif p.is_file():
            files.append(p)
    return sorted(files), sorted(skipped)


def read_folder(path: str | Path) -> Iterator[Document]:
    """Documents from a folder of ``.txt``/``.md`` files; ``doc_id`` = the relative path.

    Symlinks that lead outside the folder are not followed (module docstring); the skipped
    ones are named in one warning.

    Raises
    ------
    DocumentError
        After the good files, listing every file that is not UTF-8 text.
    """
    root = Path(path)
    files, skipped = folder_files(root)
    if skipped:
        log.warning(
            "%s: not following %d symbolic link(s): %s",
            root,
            len(skipped),
            "; ".join(skipped[:10])
            + (f" (and {len(skipped) - 10} more)" if len(skipped) > 10 else ""),
        )
    problems: list[str] = []
    for file in files:
        rel = file.relative_to(root).as_posix()
        raw = file.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            problems.append(f"{rel}: not UTF-8 text (binary file?)")
            continue
        title = ""
        for line in text.splitlines():
            if line.strip():
                title = line.strip().lstrip("#").strip()
                break
        yield Document(doc_id=rel, text=text, title=title, source=str(file))
    if problems:  # every bad file, after the good ones
        raise DocumentError(problems)


def read_documents(source: str | Path) -> Iterator[Document]:
    """Documents from a ``.jsonl`` file, a folder, or a single ``.txt``/``.md`` file."""
    path = Path(source)
    if path.is_dir():
        yield from read_folder(path)
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        yield from read_jsonl(path)
    elif path.suffix.lower() in TEXT_SUFFIXES and path.is_file():
        yield from read_folder_file(path)
    elif not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    else:
        raise DocumentError([f"{path}: expected a folder, a .jsonl file or a .txt/.md file"])


def read_folder_file(path: Path) -> Iterator[Document]:
    """The one document of a single ``.txt``/``.md`` file; ``doc_id`` = its file name."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError([f"{path.name}: not UTF-8 text (binary file?)"]) from exc
    yield Document(doc_id=path.name, text=text, source=str(path))


def as_documents(docs: Iterable[Any]) -> list[Document]:
    """``coerce_document`` over a batch, naming each problem by its position."""
    return [coerce_document(d, f"document #{i}") for i, d in enumerate(docs)]
