from __future__ import annotations

import json

import pytest

from graphstrata.engine.config import IngestConfig
from graphstrata.engine.documents import (
    Document,
    DocumentError,
    as_documents,
    read_documents,
    validate_batch,
)


def test_jsonl_reader_reads_the_shared_format(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(
        json.dumps({"doc_id": "1", "title": "T", "text": "Hello.", "metadata": {"a": 1}})
        + "\n\n"
        + json.dumps({"doc_id": 2, "text": "World."})
        + "\n"
    )
    docs = list(read_documents(path))
    assert [d.doc_id for d in docs] == ["1", "2"]
    assert docs[0].title == "T" and docs[0].metadata == {"a": 1}


def test_jsonl_reader_names_the_bad_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"doc_id": "1", "text": "ok"}) + "\n" + '{"doc_id": "2"}\n')
    with pytest.raises(DocumentError, match=r"c.jsonl:2: missing field\(s\) \['text'\]"):
        list(read_documents(path))
    path.write_text("{not json\n")
    with pytest.raises(DocumentError, match="not valid JSON"):
        list(read_documents(path))


def test_folder_reader_uses_relative_paths_and_rejects_binary(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.md").write_text("# Title X\n\nBody.")
    (tmp_path / "y.txt").write_text("Plain text.")
    (tmp_path / "ignored.bin").write_bytes(b"\x00\x01")
    docs = list(read_documents(tmp_path))
    assert [d.doc_id for d in docs] == ["a/x.md", "y.txt"]
    assert docs[0].title == "Title X"
    (tmp_path / "z.txt").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(DocumentError, match=r"z\.txt: not UTF-8"):
        list(read_documents(tmp_path))


@pytest.mark.parametrize(
    "docs, message",
    [
        ([{"doc_id": "a", "text": ""}], "empty text"),
        ([{"doc_id": "a", "text": "  \n "}], "empty text"),
        ([{"doc_id": "", "text": "x"}], "empty doc_id"),
        ([{"doc_id": "a", "text": "x"}, {"doc_id": "a", "text": "y"}], "duplicate doc_id"),
        ([{"doc_id": "a", "text": "nul\x00byte"}], "NUL"),
        ([{"doc_id": "a", "text": "x" * (5 * 1024 * 1024)}], "over max_doc_bytes"),
    ],
)
def test_invalid_batches_are_rejected_with_a_clear_message(docs, message):
    with pytest.raises(DocumentError, match=message):
        validate_batch(as_documents(docs), IngestConfig())


def test_missing_fields_and_wrong_types():
    with pytest.raises(DocumentError, match="missing field"):
        as_documents([{"text": "x"}])
    with pytest.raises(DocumentError, match="text must be a string"):
        as_documents([{"doc_id": "a", "text": 3}])
    with pytest.raises(DocumentError, match="not UTF-8"):
        as_documents([{"doc_id": "a", "text": b"\xff\xfe"}])
    with pytest.raises(DocumentError, match="expected an object"):
        as_documents(["just a string"])


def test_content_hash_ignores_doc_id_but_not_text_or_metadata():
    a = Document("a", "text", metadata={"k": 1})
    assert a.sha256 == Document("b", "text", metadata={"k": 1}).sha256
    assert a.sha256 != Document("a", "text!", metadata={"k": 1}).sha256
    assert a.sha256 != Document("a", "text", metadata={"k": 2}).sha256
