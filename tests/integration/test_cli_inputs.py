"""One-line CLI errors for hostile inputs (issue 51, #15), through the real CLI and real files:
deeply nested JSONL metadata, a 5,000-digit number, ``--budget 99999999999999999999``, a
folder with several bad files (each one named, the good ones indexed), ``NaN`` in JSONL metadata (refused like the
server refuses it).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.cli import run

pytestmark = pytest.mark.integration

CITY = REPO / "examples" / "sample" / "city"
FAST = ("--no-heterograph",)


def _one_line_error(proc, *needles: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    line = proc.stderr.strip()
    assert len(line.splitlines()) == 1 and "Traceback" not in line, proc.stderr
    for needle in needles:
        assert needle in line, line
    return line


def _jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        (
            '{"doc_id": "deep", "text": "x", "metadata": {"a": ' + "[" * 5000 + "]" * 5000 + "}}",
            "nested too deeply",
        ),
        (
            '{"doc_id": "deep2", "text": "x", "metadata": {"a": ' + "[" * 300 + "]" * 300 + "}}",
            "nested deeper than 200",
        ),
        ('{"doc_id": "big", "text": "x", "metadata": {"n": ' + "9" * 5000 + "}}", "digits"),
        ('{"doc_id": "nan", "text": "x", "metadata": {"score": NaN}}', "NaN and infinities"),
        ('{"doc_id": "inf", "text": "x", "metadata": {"s": [1, -Infinity]}}', "not JSON"),
    ],
    ids=["recursion", "deep", "5000-digits", "nan", "infinity"],
)
def test_hostile_jsonl_lines_are_one_line_errors(tmp_path, line, needle):
    src = _jsonl(tmp_path / "docs.jsonl", ['{"doc_id": "ok", "text": "fine text"}', line])
    proc = run("index", str(src), "--out", str(tmp_path / "ix"), *FAST, check=False)
    _one_line_error(proc, "DocumentError", "docs.jsonl:2", needle)
    assert not (tmp_path / "ix").exists()


def test_every_bad_line_and_every_bad_file_is_listed(tmp_path):
    src = _jsonl(
        tmp_path / "docs.jsonl",
        ['{"doc_id": "a", "text": "x", "metadata": {"s": NaN}}', "{not json", '{"doc_id": "c"}'],
    )
    proc = run("index", str(src), "--out", str(tmp_path / "ix"), *FAST, check=False)
    _one_line_error(proc, "3 invalid", "docs.jsonl:1", "docs.jsonl:2", "docs.jsonl:3")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nFine text.\n")
    for name in ("bad1.md", "bad2.txt", "sub/bad3.md"):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_bytes(b"\xff\xfe\x00binary")
    # Files are read one by one (issue 47): the good one is indexed, each bad one is named
    # with its cause, and the command exits 1.
    proc = run("index", str(folder), "--out", str(tmp_path / "ix2"), *FAST, check=False)
    assert proc.returncode == 1, proc.stderr
    assert "good.md: indexed" in proc.stdout
    for name in ("bad1.md", "bad2.txt", "sub/bad3.md"):
        assert f"{name}: failed: not UTF-8 text" in proc.stdout, proc.stdout
    assert "3 of 4 files failed" in proc.stderr
    (folder / "good.md").unlink()
    proc = run("index", str(folder), "--out", str(tmp_path / "ix3"), *FAST, check=False)
    _one_line_error(proc, "3 invalid", "bad1.md", "bad2.txt", "sub/bad3.md")
    assert not (tmp_path / "ix3").exists()


def test_an_absurd_budget_is_a_one_line_error(tmp_path):
    out = tmp_path / "ix"
    run("index", str(CITY), "--out", str(out), *FAST)
    for flag in ("--budget", "--top-k"):
        proc = run("query", str(out), "ferry", flag, "99999999999999999999", check=False)
        _one_line_error(proc, "QueryError", "between")


def test_nan_metadata_is_refused_through_the_api_as_by_the_server(tmp_path):
    from graphstrata.bindings.api import DocumentError, Index

    index = Index.create(tmp_path / "ix", embedder="hashing:64")
    try:
        with pytest.raises(DocumentError, match="NaN and infinities"):
            index.insert([{"doc_id": "a", "text": "x", "metadata": {"v": float("nan")}}])
        index.insert([{"doc_id": "a", "text": "x", "metadata": {"v": 1.5, "n": [1, {"k": 2}]}}])
        assert json.loads(json.dumps(index.stats()))["documents"] == 1
    finally:
        index.close()
