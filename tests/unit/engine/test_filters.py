"""The filter syntax (``engine.filters``): validation, one document's evaluation
(``matches``), and the columnar evaluation over a version's documents
(``DocRecords.mask``) against ``matches`` on random documents and filters."""

from __future__ import annotations

import json
import random

import numpy as np
import pyarrow as pa
import pytest

from graphstrata.engine.doc_records import DocRecords, DocRows
from graphstrata.engine.filters import MAX_CONDITIONS, MAX_DEPTH, matches, parse_filter
from graphstrata.engine.params import QueryError
from graphstrata.engine.store.schema import DOC_SCHEMA

DOC = {
    "doc_id": "d1",
    "title": "Halvorsen report",
    "year": 2021,
    "score": 0.5,
    "source": "news",
    "tags": ["optics", "radio"],
    "draft": False,
    "editor": None,
    "published": "2021-03-04",
    "updated": "2021-03-04T10:30:00+02:00",
}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"year": 2021}, True),
        ({"year": 2021.0}, True),
        ({"year": 2020}, False),
        ({"year": {"$eq": 2021}}, True),
        ({"year": {"$ne": 2021}}, False),
        ({"year": {"$ne": 1999}}, True),
        ({"missing": {"$ne": 1}}, True),
        ({"year": {"$in": [1999, 2021]}}, True),
        ({"year": {"$in": [1999]}}, False),
        ({"year": {"$nin": [1999, 2000]}}, True),
        ({"year": {"$nin": [2021]}}, False),
        ({"year": {"$gt": 2020}}, True),
        ({"year": {"$gt": 2021}}, False),
        ({"year": {"$gte": 2021}}, True),
        ({"year": {"$lt": 2021}}, False),
        ({"year": {"$lte": 2021, "$gte": 2021}}, True),
        ({"score": {"$gt": 0.25, "$lt": 0.75}}, True),
        ({"source": "news"}, True),
        ({"source": {"$in": ["blog", "paper"]}}, False),
        ({"tags": "radio"}, True),
        ({"tags": {"$in": ["solar", "optics"]}}, True),
        ({"tags": {"$nin": ["radio"]}}, False),
        ({"tags": {"$ne": "solar"}}, True),
        ({"draft": False}, True),
        ({"draft": 0}, False),  # a boolean never equals a number
        ({"year": True}, False),
        ({"editor": None}, True),
        ({"missing": None}, True),
        ({"source": None}, False),
        ({"doc_id": "d1"}, True),
        ({"title": {"$in": ["Halvorsen report"]}}, True),
        ({"published": {"$gte": "2021-01-01"}}, True),
        ({"published": {"$gt": "2021-03-04"}}, False),
        ({"published": {"$lt": "2021-03-04T00:00:01"}}, True),
        ({"updated": {"$lt": "2021-03-04T09:00:00Z"}}, True),  # 08:30 UTC
        ({"updated": {"$gt": "2021-03-04T09:00:00Z"}}, False),
        ({"source": {"$gt": 3}}, False),  # a string never passes a number's range
        ({"year": {"$gt": "2020-01-01"}}, False),  # nor a number a date's
        ({"$or": [{"year": 1999}, {"source": "news"}]}, True),
        ({"$or": [{"year": 1999}, {"source": "blog"}]}, False),
        ({"$and": [{"year": 2021}, {"tags": "optics"}]}, True),
        ({"$and": [{"year": 2021}, {"$or": [{"tags": "solar"}, {"draft": True}]}]}, False),
        ({"year": 2021, "source": "blog"}, False),
        ({}, True),
    ],
)
def test_each_operator_on_one_document(flt, expected):
    assert matches(DOC, flt) is expected
    assert bool(records([DOC]).mask(parse_filter(flt))[0]) is expected


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        ([1, 2], "must be a JSON object"),
        ({"year": {"$regex": "x"}}, "unknown operator '$regex'"),
        ({"$not": {"year": 1}}, "unknown operator '$not'"),
        ({"year": {}}, "needs an operator"),
        ({"year": {"$in": []}}, "non-empty list"),
        ({"year": {"$in": 2021}}, "non-empty list"),
        ({"year": {"$in": [[1]]}}, "takes strings, numbers"),
        ({"year": {"$eq": [2021]}}, "needs a string, number"),
        ({"year": [2021]}, "needs a string, number"),
        ({"year": {"$gt": True}}, "needs a number or an ISO-8601 date string"),
        ({"year": {"$gt": None}}, "needs a number or an ISO-8601 date string"),
        ({"published": {"$gte": "last year"}}, "ISO-8601 date"),
        ({"published": {"$gte": "2021-02-30"}}, "ISO-8601 date"),
        ({"$and": []}, "non-empty list"),
        ({"$or": {"year": 1}}, "non-empty list"),
        ({"$and": [5]}, "must be a JSON object"),
        ({"": 1}, "non-empty string"),
        ({"year": 10**400}, "not a finite number"),
        ({"year": {"$gt": float("inf")}}, "not a finite number"),
        ({"year": {"$in": [1, float("nan")]}}, "not a finite number"),
    ],
)
def test_bad_filters_name_the_problem(flt, message):
    with pytest.raises(QueryError, match=message.replace("$", r"\$").replace("(", r"\(")):
        parse_filter(flt)


def test_filters_are_bounded():
    deep: dict = {"year": 1}
    for _ in range(MAX_DEPTH):
        deep = {"$and": [deep]}
    with pytest.raises(QueryError, match="nest deeper"):
        parse_filter(deep)
    wide = {f"f{i}": i for i in range(MAX_CONDITIONS + 1)}
    with pytest.raises(QueryError, match="at most"):
        parse_filter(wide)
    assert parse_filter(None) is None


def records(docs: list[dict]) -> DocRecords:
    """A version's docs table holding ``docs`` (records ``{doc_id, title, **metadata}``)."""
    rows = []
    for key, doc in enumerate(docs):
        meta = {k: v for k, v in doc.items() if k not in ("doc_id", "title")}
        rows.append(
            {
                "key": 100 + 3 * key,
                "doc_id": doc["doc_id"],
                "title": doc["title"],
                "source": "",
                "sha256": "",
                "metadata": json.dumps(meta),
                "n_chars": 1,
                "n_chunks": 1,
                "version": 1,
            }
        )
    return DocRecords(pa.Table.from_pylist(rows, schema=DOC_SCHEMA))


def random_value(rng: random.Random):
    pick = rng.randrange(7)
    if pick == 0:
        return rng.randint(0, 5)
    if pick == 1:
        return rng.choice([0.5, 1.0, 2.5])
    if pick == 2:
        return rng.choice(["a", "b", "c"])
    if pick == 3:
        return rng.choice([True, False])
    if pick == 4:
        return None
    if pick == 5:
        return f"2020-0{rng.randint(1, 3)}-1{rng.randint(0, 2)}"
    return [random_value(rng) for _ in range(rng.randint(0, 3))]


def random_filter(rng: random.Random, depth: int = 0) -> dict:
    if depth < 2 and rng.random() < 0.3:
        op = rng.choice(["$and", "$or"])
        return {op: [random_filter(rng, depth + 1) for _ in range(rng.randint(1, 3))]}
    field = rng.choice(["x", "y", "missing"])
    op = rng.choice(["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", None])
    if op is None:
        value = random_value(rng)
        return {field: value if not isinstance(value, list) else 1}
    if op in ("$in", "$nin"):
        wants = [random_value(rng) for _ in range(rng.randint(1, 3))]
        return {field: {op: [w if not isinstance(w, list) else "a" for w in wants]}}
    if op in ("$eq", "$ne"):
        value = random_value(rng)
        return {field: {op: value if not isinstance(value, list) else "b"}}
    bound = rng.choice([rng.randint(0, 5), 1.5, f"2020-02-1{rng.randint(0, 2)}"])
    return {field: {op: bound}}


def test_columnar_evaluation_equals_matches_on_random_documents():
    rng = random.Random(3)
    docs = [
        {"doc_id": f"d{i}", "title": f"t{i}"}
        | {f: random_value(rng) for f in ("x", "y") if rng.random() < 0.8}
        for i in range(60)
    ]
    table = records(docs)
    for _ in range(300):
        flt = random_filter(rng)
        expected = np.asarray([matches(d, flt) for d in docs])
        got = table.mask(parse_filter(flt))
        assert np.array_equal(got, expected), flt
        keys = np.asarray([100 + 3 * i for i in np.flatnonzero(expected)], np.int64)
        assert np.array_equal(table.allowed_keys(parse_filter(flt)), keys)


def test_numbers_too_large_for_a_float_match_nothing():
    doc = {"doc_id": "a", "title": "", "v": 10**400}
    assert not matches(doc, {"v": {"$gt": 1}})
    assert not records([doc]).mask(parse_filter({"v": {"$gt": 1}}))[0]


def test_booleans_and_numbers_are_memoized_apart():
    table = records([{"doc_id": "a", "title": "", "v": True}, {"doc_id": "b", "title": "", "v": 1}])
    assert table.allowed_keys(parse_filter({"v": True})).tolist() == [100]
    assert table.allowed_keys(parse_filter({"v": 1})).tolist() == [103]


def test_cited_reads_the_documents_of_keys():
    table = records([DOC, {"doc_id": "d2", "title": "Other"}])
    found = table.cited([103, 100, 999])
    assert set(found) == {100, 103}
    assert found[103] == {"doc_id": "d2", "title": "Other", "metadata": {}}
    assert found[100]["metadata"]["tags"] == ["optics", "radio"]


def test_cited_rows_are_read_once_per_version_and_each_call_gets_its_own():
    table = records([DOC, {"doc_id": "d2", "title": "Other"}])
    first = table.cited([100])
    first[100]["metadata"]["tags"].append("changed")  # a caller's change stays its own
    again = table.cited([100, 103])
    assert again[100]["metadata"]["tags"] == ["optics", "radio"]
    # once read, a document's row comes from the memo: the table is not read again
    table._cited._docs = table._cited._docs.slice(0, 0)
    assert table.cited([103, 100]) == again
    assert table.layouts([100]) == {100: None}  # a row without a layout


def test_rows_of_finds_keys_in_sorted_and_unsorted_tables():
    table = records([{"doc_id": f"d{i}", "title": ""} for i in range(3)])  # keys 100, 103, 106
    for order in ([0, 1, 2], [2, 0, 1]):
        docs = table._docs.take(pa.array(order))
        keys = docs.column("key").to_pylist()
        found, rows = DocRecords(docs).rows_of(np.array([103, 101, 106, 100, 200]))
        assert found.tolist() == [True, False, True, True, False]
        assert rows.tolist() == [keys.index(103), keys.index(106), keys.index(100)]


def test_layouts_are_parsed_once_per_version():
    table = records([DOC])
    layout = {"first": 7, "chunks": [0, 5, 5, 9]}
    docs = table._docs.set_column(
        table._docs.schema.get_field_index("layout"),
        "layout",
        pa.array([json.dumps(layout)], pa.string()),
    )
    table = DocRecords(docs)
    first = table.layouts([100, 999])
    assert first == {100: layout}
    assert table.layouts([100])[100] is first[100]  # parsed once, shared by the span readers


def test_cited_rows_start_over_past_their_character_bound():
    table = records([{"doc_id": f"d{i}", "title": "t" * 10} for i in range(6)])
    rows = DocRows(table._docs, max_chars=30)  # a row holds 12 characters
    keys = [100 + 3 * i for i in range(6)]
    for key in keys:
        _, at = table.rows_of(np.asarray([key]))
        assert rows.read([key], at)[key].doc_id == f"d{(key - 100) // 3}"
        assert rows._chars <= 30 and len(rows._rows) <= 2
    assert rows.read(keys[:2], table.rows_of(np.asarray(keys[:2]))[1])[keys[1]].title == "t" * 10
