"""Word files (``.docx``) with python-docx: paragraphs and tables in document order,
``Heading N`` and ``Title`` paragraphs as sections."""

from __future__ import annotations

import io
import re
import zipfile

from graphstrata.bindings.extras import require
from graphstrata.bindings.files.base import FileError, Parsed, TextBuilder

_HEADING = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def _level(style_name: str) -> int | None:
    if style_name.lower() == "title":
        return 1
    found = _HEADING.match(style_name.strip())
    return int(found.group(1)) if found else None


def parse(data: bytes, name: str) -> Parsed:
    """A ``.docx`` file as a document.

    Raises
    ------
    FileError
        When the file is not a readable Word document.
    MissingExtraError
        When python-docx is not installed (the ``files`` extra).
    """
    docx = require("docx", "files", f"reading {name}")
    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise FileError(f"not a readable Word document ({type(exc).__name__}: {exc})") from exc
    out = TextBuilder()
    for item in document.iter_inner_content():
        if hasattr(item, "rows"):  # a table: one line per row, cells separated by " | "
            for row in item.rows:
                out.block(" | ".join(c.text.strip() for c in row.cells if c.text.strip()))
            continue
        style = item.style.name if item.style is not None else ""
        level = _level(style or "")
        if level is not None:
            out.heading(level, item.text)
        else:
            out.block(item.text)
    title = document.core_properties.title or ""
    return out.parsed(title)
