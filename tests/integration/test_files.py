"""Files in, pages out (issue 47.1-2), with real files the test writes: a three-page PDF
with a text layer, an image-only "scan", a Word document, an HTML page, Markdown, a corrupt
PDF and an unsupported type, through ``Index.insert_files``, the CLI and the HTTP upload;
the documents as a resource; an index written before spans existed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from graphstrata.bindings.api import Index, QueryError
from graphstrata.bindings.files import parse_file
from tests.helpers.cli import run
from tests.helpers.files import write_docx, write_html, write_pdf, write_scanned_pdf
from tests.helpers.servers import threaded_server

pytestmark = pytest.mark.integration

FILLER = (
    "The quarterly survey of the estate lists fences, barns, wells and the state of each "
    "field. Nothing in this paragraph concerns the company history. "
)
PAGES = [
    "Orchards of the northern valley grow apples and pears. " + FILLER * 3,
    "The river Tern is crossed by three stone bridges near the mill. " + FILLER * 3,
    "Meridian Optics was founded by the glassmaker Ada Varga in 1911. " + FILLER * 3,
]
QUESTION = "Who founded Meridian Optics?"
CONFIG = {"chunking": {"chunk_tokens": 60, "overlap_tokens": 10}}
ADMIN, READER = "admin-token", "read-only-token"


def _files(folder: Path) -> list[Path]:
    folder.mkdir()
    return [
        write_pdf(folder / "history.pdf", PAGES, title="Company history"),
        write_scanned_pdf(folder / "scan.pdf"),
        write_docx(
            folder / "study.docx",
            [
                (1, "Intro"),
                (0, "Why we looked."),
                (2, "Methods"),
                (0, "Lens curvature was measured with a spherometer."),
            ],
        ),
        write_html(
            folder / "guide.html", "Guide", [("Setup", "Polish the lens with cerium oxide.")]
        ),
        _write(folder / "notes.md", "# Notes\n\n## Mill\n\nThe mill wheel turns slowly.\n"),
        _write(folder / "broken.pdf", "%PDF-1.4 this is not a PDF"),
        _write(folder / "sheet.xlsx", "not a spreadsheet"),
    ]


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def indexed(tmp_path_factory, hashing_embedder):
    root = tmp_path_factory.mktemp("files")
    files = _files(root / "in")
    index = Index.create(root / "ix", CONFIG, embedder=hashing_embedder)
    report = index.insert_files(files, metadata={"team": "optics"})
    yield index, files, report
    index.close()


def _page_three_hit(nodes: list[dict]) -> dict:
    hit = next(n for n in nodes if n["docs"] == ["history.pdf"])
    assert "Ada Varga" in hit["text"], nodes[:3]
    return hit


def test_each_file_has_its_outcome_and_bad_files_do_not_stop_the_batch(indexed):
    _, _, report = indexed
    outcome = {f["name"]: f for f in report.files}
    assert outcome["history.pdf"]["status"] == "indexed" and outcome["history.pdf"]["pages"] == 3
    for name in ("study.docx", "guide.html", "notes.md"):
        assert outcome[name]["status"] == "indexed", outcome[name]
    assert outcome["scan.pdf"] == {
        "name": "scan.pdf",
        "doc_id": "scan.pdf",
        "format": "pdf",
        "status": "failed",
        "error": "no text layer: scanned PDF? run OCR first",
    }
    assert outcome["broken.pdf"]["status"] == "failed"
    assert "not a readable PDF" in outcome["broken.pdf"]["error"]
    assert "unsupported file type '.xlsx'" in outcome["sheet.xlsx"]["error"]
    assert report.docs_added == 4


def test_the_answer_on_page_three_cites_page_three_in_every_mode(indexed):
    index, files, _ = indexed
    text = parse_file("history.pdf", files[0].read_bytes()).text
    for mode in index.modes:
        result = index.query(QUESTION, mode=mode, budget_tokens=400)
        assert all(isinstance(n.spans, list) for n in result.nodes)
        chunks = [n.to_dict() for n in result.nodes if n.kind == "T"]
        hit = _page_three_hit(chunks)
        # A chunk that runs over a page break has one span per page, in order.
        pages = [s["page"] for s in hit["spans"]]
        assert pages == sorted(pages) and pages[-1] == 3, (mode, hit["spans"])
        for span in hit["spans"]:
            assert span["doc_id"] == "history.pdf" and span["section"] is None
            assert text[span["start"] : span["end"]] in hit["text"]
        cited = [s for s in hit["spans"] if "Ada Varga" in text[s["start"] : s["end"]]]
        assert [s["page"] for s in cited] == [3]


def test_headings_are_the_sections_of_docx_html_and_markdown(indexed):
    index, _, _ = indexed
    cases = {
        "spherometer lens curvature measured": ("study.docx", "Intro > Methods"),
        "cerium oxide polish": ("guide.html", "Guide > Setup"),
        "mill wheel turns slowly": ("notes.md", "Notes > Mill"),
    }
    for question, (doc_id, section) in cases.items():
        nodes = index.query(question, mode="bm25", budget_tokens=200).nodes
        hit = next(n for n in nodes if n.docs == [doc_id])
        assert hit.spans[-1]["section"] == section, hit.spans
        assert hit.spans[-1]["page"] is None


def test_documents_are_listed_paged_searched_and_described(indexed):
    index, _, _ = indexed
    page = index.documents(limit=2)
    assert page["total"] == 4 and page["offset"] == 0 and page["limit"] == 2
    assert [d["doc_id"] for d in page["documents"]] == ["guide.html", "history.pdf"]
    rest = index.documents(offset=2, limit=2)
    assert [d["doc_id"] for d in rest["documents"]] == ["notes.md", "study.docx"]
    assert [d["doc_id"] for d in index.documents(query="COMPANY")["documents"]] == ["history.pdf"]
    # The search filters' syntax filters the listing too, alone or with the substring.
    chosen = index.documents(filter={"doc_id": {"$in": ["notes.md", "guide.html"]}})
    assert [d["doc_id"] for d in chosen["documents"]] == ["guide.html", "notes.md"]
    assert chosen["total"] == 2
    both = index.documents(query="notes", filter={"team": "optics"})
    assert [d["doc_id"] for d in both["documents"]] == ["notes.md"]
    assert index.documents(filter={"team": {"$ne": "optics"}})["total"] == 0
    with pytest.raises(QueryError, match="operator"):
        index.documents(filter={"team": {"$like": "opt"}})
    info = index.document("history.pdf")
    assert info == {
        "doc_id": "history.pdf",
        "title": "Company history",
        "metadata": {"team": "optics"},
        "status": "committed",
        "chunks": info["chunks"],
        "version": 1,
        "source": {"filename": "history.pdf", "format": "pdf", "pages": 3},
    }
    assert info["chunks"] >= 3
    assert index.document("scan.pdf") is None
    for bad in ({"offset": -1}, {"limit": 0}, {"limit": 1001}):
        with pytest.raises(QueryError):
            index.documents(**bad)


def test_reinserting_the_same_files_skips_them(indexed):
    index, files, _ = indexed
    report = index.insert_files([files[0], files[4]], metadata={"team": "optics"})
    assert [f["status"] for f in report.files] == ["skipped", "skipped"]
    assert report.docs_unchanged == 2


def test_the_cli_prints_each_file_and_exits_1_when_one_failed(tmp_path):
    files = _files(tmp_path / "in")
    out = tmp_path / "ix"
    proc = run(
        "index",
        str(tmp_path / "in"),
        "--out",
        str(out),
        "--no-heterograph",
        "--embedder",
        "hashing:64",
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "history.pdf: indexed (3 pages)" in proc.stdout
    assert "scan.pdf: failed: no text layer: scanned PDF? run OCR first" in proc.stdout
    assert "2 of 6 files failed" in proc.stderr  # the .xlsx of a folder is not read
    proc = run("insert", str(out), str(files[0]), "--json", "--embedder", "hashing:64")
    assert json.loads(proc.stdout)["files"][0]["status"] == "skipped"
    proc = run("insert", str(out), str(files[1]), check=False)
    assert proc.returncode == 1 and "scan.pdf: no text layer" in proc.stderr


def _wait(url: str, location: str, headers: dict) -> dict:
    for _ in range(600):
        op = httpx.get(url + location, headers=headers).json()
        if op["status"] not in ("queued", "running"):
            return op
        time.sleep(0.05)
    raise AssertionError(op)


def test_upload_over_http_cites_pages_and_lists_documents(tmp_path, hashing_embedder):
    files = _files(tmp_path / "in")
    Index.create(tmp_path / "ix", CONFIG, embedder=hashing_embedder).close()
    admin, reader = {"Authorization": f"Bearer {ADMIN}"}, {"Authorization": f"Bearer {READER}"}
    tokens = {ADMIN: {}, READER: {"rights": ["read"]}}
    with threaded_server(tmp_path / "ix", tokens=tokens) as (url, _, _):
        parts = [("files", (p.name, p.read_bytes())) for p in (files[0], files[1], files[2])]
        refused = httpx.post(f"{url}/v1/documents/upload", files=parts, headers=reader)
        assert refused.status_code == 403, refused.text
        r = httpx.post(
            f"{url}/v1/documents/upload",
            files=parts,
            data={"metadata": json.dumps({"team": "optics"})},
            headers=admin,
        )
        assert r.status_code == 202, r.text
        op = _wait(url, r.headers["Location"], admin)
        assert op["status"] == "succeeded", op
        assert op["documents"] == {
            "history.pdf": "indexed",
            "study.docx": "indexed",
            "scan.pdf": "failed",
        }
        assert [(f["name"], f["status"]) for f in op["files"]] == [
            ("history.pdf", "indexed"),
            ("scan.pdf", "failed"),
            ("study.docx", "indexed"),
        ]
        body = httpx.post(
            f"{url}/v1/retrieve",
            json={"query": QUESTION, "mode": "hybrid", "budget_tokens": 400},
            headers=reader,
        ).json()
        assert _page_three_hit(body["nodes"])["spans"][-1]["page"] == 3
        listed = httpx.get(f"{url}/v1/documents", params={"limit": 1}, headers=reader).json()
        assert listed["total"] == 2 and [d["doc_id"] for d in listed["documents"]] == [
            "history.pdf"
        ]
        found = httpx.get(f"{url}/v1/documents", params={"q": "docx"}, headers=reader).json()
        assert [d["doc_id"] for d in found["documents"]] == ["study.docx"]
        only = {"filter": json.dumps({"doc_id": "study.docx"})}
        found = httpx.get(f"{url}/v1/documents", params=only, headers=reader).json()
        assert [d["doc_id"] for d in found["documents"]] == ["study.docx"]
        for flt in ("{not json", json.dumps({"doc_id": {"$like": "x"}})):
            bad_filter = httpx.get(f"{url}/v1/documents", params={"filter": flt}, headers=reader)
            assert bad_filter.status_code == 422, bad_filter.text
            assert bad_filter.json()["error"]["code"] == "bad_request"
        bad = httpx.get(f"{url}/v1/documents", params={"limit": 0}, headers=reader)
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "bad_request"
        one = httpx.get(f"{url}/v1/documents/history.pdf", headers=reader).json()
        assert one["status"] == "committed" and one["present"] is True
        assert one["source"] == {"filename": "history.pdf", "format": "pdf", "pages": 3}
        assert one["metadata"] == {"team": "optics"}
        ops = httpx.get(f"{url}/v1/operations", headers=reader).json()["operations"]
        assert ops[0]["id"] == op["id"]
        cancel = httpx.delete(f"{url}/v1/operations/{op['id']}", headers=reader)
        assert cancel.status_code == 403  # cancelling is a write
        only_scan = [("files", ("scan.pdf", files[1].read_bytes()))]
        none = httpx.post(f"{url}/v1/documents/upload", files=only_scan, headers=admin)
        assert none.status_code == 422 and "no text layer" in none.json()["error"]["message"]
        plain = httpx.post(f"{url}/v1/documents/upload", json=[], headers=admin)
        assert plain.status_code == 415


def test_a_queued_operation_is_cancelled_and_a_running_one_is_not(tmp_path, hashing_embedder):
    from graphstrata.engine.store.lock import held_lock

    Index.create(tmp_path / "ix", CONFIG, embedder=hashing_embedder).close()
    with threaded_server(tmp_path / "ix") as (url, _, _):
        with held_lock(tmp_path / "ix"):  # the writer's first operation waits for the lock
            first = httpx.post(f"{url}/v1/documents", json=[{"doc_id": "a", "text": "one"}])
            second = httpx.post(f"{url}/v1/documents", json=[{"doc_id": "b", "text": "two"}])
            for _ in range(200):
                if httpx.get(url + first.headers["Location"]).json()["status"] == "running":
                    break
                time.sleep(0.02)
            cancelled = httpx.delete(url + second.headers["Location"])
            assert cancelled.status_code == 200, cancelled.text
            assert cancelled.json()["status"] == "cancelled"
            assert cancelled.json()["documents"] == {"b": "cancelled"}
            running = httpx.delete(url + first.headers["Location"])
            assert running.status_code == 409 and running.json()["error"]["code"] == "conflict"
        assert _wait(url, first.headers["Location"], {})["status"] == "succeeded"
        assert httpx.get(f"{url}/v1/documents/b").status_code == 404
        again = httpx.delete(url + first.headers["Location"])
        assert again.status_code == 409
        assert httpx.delete(f"{url}/v1/operations/nope").status_code == 404


def test_an_index_written_before_spans_opens_and_cites_without_pages(tmp_path, hashing_embedder):
    from graphstrata.engine.store.files import seal, sha256_file

    path = tmp_path / "old"
    index = Index.create(path, CONFIG, embedder=hashing_embedder)
    index.insert([{"doc_id": "a", "text": PAGES[2]}])
    index.close()
    manifest = json.loads((path / "manifest.json").read_text())
    for entry in manifest["segments"]["docs"]:  # as an older release wrote them
        file = path / entry["file"]
        pq.write_table(pq.read_table(file).drop_columns(["layout"]), file)
        entry["sha256"], entry["bytes"] = sha256_file(file), file.stat().st_size
    (path / "manifest.json").write_bytes(seal(manifest))
    old = Index.open(path, embedder=hashing_embedder)
    try:
        hit = old.query(QUESTION, mode="naive").nodes[0]
        assert hit.spans == [
            {"doc_id": "a", "page": None, "section": None, "start": None, "end": None}
        ]
        assert old.document("a")["source"] is None
        old.insert([{"doc_id": "b", "text": PAGES[0]}])  # new rows beside the old ones
        nodes = old.query("quarterly survey fences", mode="bm25", budget_tokens=2000).nodes
        starts = {d: {s["start"] for n in nodes if n.docs == [d] for s in n.spans} for d in "ab"}
        assert starts["a"] == {None} and 0 in starts["b"] and None not in starts["b"]
    finally:
        old.close()
