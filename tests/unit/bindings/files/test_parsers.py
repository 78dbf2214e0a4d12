"""Each format's parser on real files: text, title, pages and headings as offsets, and the
one-line error of a file that gives no document."""

from __future__ import annotations

import sys

import pytest

from graphstrata.bindings.files import FileError, parse_file, path_items, read_files
from graphstrata.bindings.files.markdown import headings
from graphstrata.engine import IngestConfig
from tests.helpers.files import write_docx, write_html, write_pdf, write_scanned_pdf

PAGES = [
    "Orchards of the northern valley grow apples and pears.",
    "The river Tern is crossed by three stone bridges.",
    "Meridian Optics was founded by Ada Varga in 1911.",
]


def test_pdf_pages_are_offsets_into_the_text(tmp_path):
    path = write_pdf(tmp_path / "report.pdf", PAGES, title="Annual report")
    doc = parse_file("report.pdf", path.read_bytes())
    assert doc.title == "Annual report"
    assert doc.source_map is not None and doc.source_map.format == "pdf"
    starts = doc.source_map.pages
    assert len(starts) == 3 and starts[0] == 0
    for i, text in enumerate(PAGES):
        end = starts[i + 1] if i + 1 < len(starts) else len(doc.text)
        assert doc.text[starts[i] : end].strip() == text


def test_a_scanned_pdf_is_an_error_not_an_empty_document(tmp_path):
    path = write_scanned_pdf(tmp_path / "scan.pdf")
    with pytest.raises(FileError, match=r"no text layer: scanned PDF\? run OCR first"):
        parse_file("scan.pdf", path.read_bytes())


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog", "not a readable PDF"),
        ("broken.docx", b"PK\x03\x04 not really a zip", "not a readable Word document"),
        ("notes.txt", b"\xff\xfe\x00binary", "not UTF-8"),
        ("table.xlsx", b"whatever", "unsupported file type '.xlsx'"),
        ("empty.md", b"   \n\n", "holds no text"),
    ],
)
def test_bad_files_have_a_one_line_cause(name, data, message):
    with pytest.raises(FileError, match=message) as info:
        parse_file(name, data)
    assert "\n" not in str(info.value)


def test_docx_headings_are_section_paths(tmp_path):
    path = write_docx(
        tmp_path / "study.docx",
        [(1, "Intro"), (0, "Why we looked."), (2, "Methods"), (0, "We counted."), (1, "End")],
    )
    doc = parse_file("study.docx", path.read_bytes())
    assert doc.title == "Intro"
    paths = [p for _, p in doc.source_map.sections]
    assert paths == ["Intro", "Intro > Methods", "End"]
    for offset, path_text in doc.source_map.sections:
        assert doc.text[offset:].startswith(path_text.split(" > ")[-1])


def test_html_visible_text_and_headings(tmp_path):
    path = write_html(
        tmp_path / "p.html", "Guide", [("Setup", "Install it &amp; run."), ("Use", "Ask.")]
    )
    doc = parse_file("p.html", path.read_bytes())
    assert doc.title == "Guide"
    assert "Install it & run." in doc.text
    assert "hidden" not in doc.text and "color" not in doc.text
    assert [p for _, p in doc.source_map.sections] == ["Guide", "Guide > Setup", "Guide > Use"]
    for offset, path_text in doc.source_map.sections:
        assert doc.text[offset:].startswith(path_text.split(" > ")[-1])


def test_markdown_headings_skip_code_fences_and_read_setext():
    text = "# Title\n\nintro\n\n## Part A\n\n```\n# not a heading\n```\n\nSetext\n------\n\nend\n"
    found = headings(text)
    assert [(lvl, t) for _, lvl, t in found] == [(1, "Title"), (2, "Part A"), (2, "Setext")]
    doc = parse_file("n.md", text.encode())
    assert doc.text == text  # the source as written: offsets point into the file
    assert [p for _, p in doc.source_map.sections] == ["Title", "Title > Part A", "Title > Setext"]


def test_a_batch_gives_one_outcome_per_file_and_keeps_the_good_ones(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    write_pdf(folder / "a.pdf", PAGES)
    write_scanned_pdf(folder / "scan.pdf")
    (folder / "b.md").write_text("# B\n\nfine\n")
    (folder / "c.pdf").write_bytes(b"%PDF-1.4 garbage")
    (folder / "ignored.bin").write_bytes(b"\x00")  # not a supported file: not read
    batch = read_files(path_items([folder]), IngestConfig(), {"team": "x"})
    by_name = {o["name"]: o for o in batch.outcomes}
    assert set(by_name) == {"a.pdf", "b.md", "c.pdf", "scan.pdf"}
    assert by_name["a.pdf"] == {
        "name": "a.pdf",
        "doc_id": "a.pdf",
        "format": "pdf",
        "pages": 3,
        "status": "parsed",
    }
    assert by_name["scan.pdf"]["status"] == "failed"
    assert "no text layer" in by_name["scan.pdf"]["error"]
    assert by_name["c.pdf"]["status"] == "failed"
    assert [d.doc_id for d in batch.docs] == ["a.pdf", "b.md"]
    assert all(d.metadata == {"team": "x"} for d in batch.docs)


def test_a_missing_parser_fails_its_file_naming_the_extra(tmp_path, monkeypatch):
    path = write_pdf(tmp_path / "a.pdf", PAGES[:1])
    monkeypatch.setitem(sys.modules, "pypdf", None)
    batch = read_files(path_items([path]), IngestConfig())
    (outcome,) = batch.outcomes
    assert outcome["status"] == "failed"
    assert "needs the files extra: pip install 'graphstrata[files]'" in outcome["error"]


def test_an_oversized_text_fails_alone(tmp_path):
    (tmp_path / "big.txt").write_text("word " * 400)
    (tmp_path / "small.txt").write_text("ok")
    batch = read_files(path_items([tmp_path]), IngestConfig(max_doc_bytes=1000))
    status = {o["name"]: o["status"] for o in batch.outcomes}
    assert status == {"big.txt": "failed", "small.txt": "parsed"}
