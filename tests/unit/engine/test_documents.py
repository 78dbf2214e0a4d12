from __future__ import annotations

import json
import re
from pathlib import Path

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


def test_folder_symlinks_inside_are_read_and_those_leading_out_are_not(tmp_path, caplog):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("private")
    (outside / "sub").mkdir()
    (outside / "sub" / "deep.md").write_text("private too")
    root = tmp_path / "corpus"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.md").write_text("# A\n\nInside.")
    (root / "link-inside.md").symlink_to(root / "real" / "a.md")
    (root / "relative-inside.md").symlink_to(Path("real") / "a.md")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "sneaky.md").symlink_to(Path("..") / "outside" / "secret.txt")
    (root / "dir-link").symlink_to(outside / "sub")
    (root / "dangling.md").symlink_to(root / "nowhere.md")
    (root / "binary-link.bin").symlink_to(outside / "secret.txt")  # not a text file: ignored
    with caplog.at_level("WARNING", logger="graphstrata.engine.documents"):
        docs = list(read_documents(root))
    assert [d.doc_id for d in docs] == ["link-inside.md", "real/a.md", "relative-inside.md"]
    assert all(d.text == "# A\n\nInside." for d in docs)
    (record,) = caplog.records
    message = record.getMessage()
    assert "not following 4 symbolic link(s)" in message
    for part in (
        "leak.txt -> ",
        "sneaky.md -> ",
        "(outside the folder)",
        "dir-link -> ",
        "(a directory)",
        "dangling.md",
        "(dangling)",
    ):
        assert part in message
    assert "binary-link" not in message


def test_a_symlinked_corpus_root_is_fine(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.md").write_text("Text.")
    (real / "b.md").symlink_to(real / "a.md")
    link = tmp_path / "link"
    link.symlink_to(real)
    assert [d.doc_id for d in read_documents(link)] == ["a.md", "b.md"]


@pytest.mark.parametrize(
    "doc_id, code",
    [
        ("tab\there", "U+0009"),
        ("new\nline", "U+000A"),
        ("bell\x07", "U+0007"),
        ("esc\x1b[31m", "U+001B"),
        ("del\x7f", "U+007F"),
        ("c1\x85", "U+0085"),
        ("sep\u2028", "U+2028"),
    ],
)
def test_control_characters_in_doc_ids_are_rejected(doc_id, code):
    with pytest.raises(DocumentError, match=re.escape(f"control character {code};")):
        validate_batch(as_documents([{"doc_id": doc_id, "text": "x"}]), IngestConfig())


def test_every_bad_file_name_is_listed_with_its_file(tmp_path):
    for name in ("ok.md", "a\x01.md", "b\x02.md", "c\r.md"):
        (tmp_path / name).write_text("text")
    (tmp_path / "latin-\udce9.md").write_text("text")  # the bytes b"latin-\xe9.md": not UTF-8
    docs = list(read_documents(tmp_path))
    with pytest.raises(DocumentError) as err:
        validate_batch(docs, IngestConfig())
    problems = err.value.problems
    assert len(problems) == 4
    assert [p.split(":")[0].split(" (file")[0] for p in problems] == [
        "doc 'a\\x01.md'",
        "doc 'b\\x02.md'",
        "doc 'c\\r.md'",
        "doc 'latin-\\udce9.md'",
    ]
    assert all(str(tmp_path) in p for p in problems)  # the file is named
    assert "not valid Unicode" in problems[3]
    assert "\n" not in str(err.value) and "\x01" not in str(err.value)


def test_ordinary_unicode_doc_ids_are_fine():
    docs = as_documents([{"doc_id": "notes/Ærøskøbing — 北京 🚲.md", "text": "x"}])
    validate_batch(docs, IngestConfig())
