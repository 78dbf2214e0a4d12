"""Real files for the file-ingestion tests, written by the libraries users' files come from:
fpdf2 (a PDF with a text layer per page, and an image-only "scan"), python-docx, and plain
HTML and Markdown."""

from __future__ import annotations

from pathlib import Path


def write_pdf(path: Path, pages: list[str], title: str = "") -> Path:
    """A PDF with one page per string, each with a real text layer."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    if title:
        pdf.set_title(title)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 6, text)
    pdf.output(str(path))
    return path


def write_scanned_pdf(path: Path, pages: int = 2) -> Path:
    """A PDF whose pages hold only a drawn image (filled shapes), no text layer: what a
    scanner without OCR produces."""
    from fpdf import FPDF

    pdf = FPDF()
    for i in range(pages):
        pdf.add_page()
        pdf.set_fill_color(40 * i, 90, 160)
        pdf.rect(20, 20, 120, 160, style="F")
    pdf.output(str(path))
    return path


def write_docx(path: Path, blocks: list[tuple[int, str]], title: str = "") -> Path:
    """A Word document: ``(level, text)`` blocks, level 1-3 a heading, 0 a paragraph."""
    import docx

    document = docx.Document()
    if title:
        document.core_properties.title = title
    for level, text in blocks:
        if level:
            document.add_heading(text, level)
        else:
            document.add_paragraph(text)
    document.save(str(path))
    return path


def write_html(path: Path, title: str, sections: list[tuple[str, str]]) -> Path:
    """An HTML page: a ``<title>``, a script and a style (not text), one ``<h2>`` per
    section under one ``<h1>``."""
    body = "".join(f"<h2>{h}</h2><p>{p}</p>" for h, p in sections)
    path.write_text(
        f"<!doctype html><html><head><title>{title}</title><style>p {{color: red}}</style>"
        f"<script>var hidden = 'not text';</script></head><body><h1>{title}</h1>{body}"
        "</body></html>",
        encoding="utf-8",
    )
    return path
