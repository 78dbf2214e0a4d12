"""PDF files with pypdf (pure Python, BSD, no model): the text layer of each page.

A PDF whose pages give no text (a scan without OCR) is an error, never an empty document:
``no text layer: scanned PDF? run OCR first``. Encrypted PDFs that need a password and
files pypdf cannot read are errors with their cause.
"""

from __future__ import annotations

import io
import logging

from graphstrata.bindings.extras import require
from graphstrata.bindings.files.base import FileError, Parsed, TextBuilder

NO_TEXT = "no text layer: scanned PDF? run OCR first"


def parse(data: bytes, name: str) -> Parsed:
    """A PDF as a document: each page's text, the pages' offsets recorded.

    Raises
    ------
    FileError
        When the file is not a readable PDF, needs a password, or has no text layer.
    MissingExtraError
        When pypdf is not installed (the ``files`` extra).
    """
    pypdf = require("pypdf", "files", f"reading {name}")
    # pypdf logs every recoverable defect of a damaged file; the outcome says what matters.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise FileError("encrypted PDF: remove the password first")
        out = TextBuilder()
        for page in reader.pages:
            out.page()
            out.block(page.extract_text() or "")
        meta = reader.metadata
        title = str(meta.title or "") if meta is not None else ""
    except FileError:
        raise
    except Exception as exc:  # pypdf raises many types on damaged files
        raise FileError(f"not a readable PDF ({type(exc).__name__}: {exc})"[:300]) from exc
    parsed = out.parsed(title)
    if not parsed.text.strip():
        raise FileError(NO_TEXT)
    return parsed if parsed.title else _titled(parsed)


def _titled(parsed: Parsed) -> Parsed:
    first = next((line.strip() for line in parsed.text.splitlines() if line.strip()), "")
    return Parsed(parsed.text, first[:500], parsed.pages, parsed.sections)
