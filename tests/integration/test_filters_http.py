"""Metadata over HTTP: every node's documents (title, metadata) and the ``filter`` member of
``/v1/retrieve``, ``/v1/retrieve/batch`` and ``/v1/answer`` on a real server on loopback;
a bad filter is a 422 naming the problem (docs/guide/filters.md)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from graphstrata.engine.filters import matches
from tests.helpers.filter_corpus import corpus
from tests.helpers.servers import threaded_server

pytestmark = pytest.mark.integration

N_DOCS = 60
QUESTION = "Who calibrated the telescope of the Halvorsen Observatory?"
MODES = ("naive", "bm25", "hybrid", "collapsed", "detailed", "summarized", "graph")


@pytest.fixture(scope="module")
def server(tmp_path_factory, hashing_embedder):
    from graphstrata.bindings.api import Index

    path: Path = tmp_path_factory.mktemp("filters_http") / "ix"
    Index.create(path, embedder=hashing_embedder).insert(corpus(N_DOCS))
    with (
        threaded_server(path) as (url, _, _),
        httpx.Client(base_url=url, timeout=60, trust_env=False) as client,
    ):
        yield client


def record(doc: dict) -> dict:
    return {**doc["metadata"], "doc_id": doc["doc_id"], "title": doc["title"]}


def test_every_mode_filters_and_shows_metadata(server):
    flt = {"$and": [{"year": {"$gte": 2000, "$lte": 2010}}, {"source": {"$ne": "wiki"}}]}
    keep = {d["doc_id"]: d for d in corpus(N_DOCS) if matches(record(d), flt)}
    for mode in MODES:
        r = server.post("/v1/retrieve", json={"query": QUESTION, "mode": mode, "filter": flt})
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["nodes"], mode
        assert body["report"]["filter"]["documents"] == len(keep)
        for node in body["nodes"]:
            assert [d["doc_id"] for d in node["documents"]] == node["docs"]
            for doc in node["documents"]:
                assert doc["doc_id"] in keep, (mode, doc)
                assert doc["title"] == keep[doc["doc_id"]]["title"]
                assert doc["metadata"] == keep[doc["doc_id"]]["metadata"]


def test_unfiltered_hits_carry_metadata_too(server):
    body = server.post("/v1/retrieve", json={"query": QUESTION}).json()
    assert "filter" not in body["report"]
    doc = body["nodes"][0]["documents"][0]
    assert set(doc) == {"doc_id", "title", "metadata"}
    assert set(doc["metadata"]) == {"year", "source", "tags", "published"}


def test_batch_and_answer_take_the_filter(server):
    flt = {"doc_id": {"$in": ["doc-0003", "doc-0011"]}}
    r = server.post(
        "/v1/retrieve/batch",
        json={"queries": [QUESTION, "antenna"], "mode": "hybrid", "filter": flt},
    )
    assert r.status_code == 200, r.text
    for result in r.json()["results"]:
        assert result["nodes"]
        assert {d for n in result["nodes"] for d in n["docs"]} <= {"doc-0003", "doc-0011"}
    flt = {"published": {"$lt": "1991-01-01"}}
    r = server.post("/v1/answer", json={"query": QUESTION, "filter": flt})
    assert r.status_code == 200, r.text
    keep = {d["doc_id"] for d in corpus(N_DOCS) if matches(record(d), flt)}
    assert keep == {"doc-0000", "doc-0035"}
    assert {d for n in r.json()["nodes"] for d in n["docs"]} == keep


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        ({"year": {"$regex": "19"}}, "unknown operator '$regex'"),
        ({"year": {"$in": []}}, "non-empty list"),
        ({"published": {"$gte": "yesterday"}}, "ISO-8601"),
        ({"year": {"$gt": [1]}}, "needs a number"),
        ({"$or": []}, "non-empty list"),
    ],
)
@pytest.mark.parametrize("route", ["/v1/retrieve", "/v1/retrieve/batch", "/v1/answer"])
def test_bad_filters_are_422(server, route, flt, message):
    body = {"filter": flt, **({"queries": [QUESTION]} if "batch" in route else {"query": QUESTION})}
    r = server.post(route, json=body)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "bad_request"
    assert message in error["message"]


def test_a_filter_that_is_not_an_object_is_422(server):
    r = server.post("/v1/retrieve", json={"query": QUESTION, "filter": ["year"]})
    assert r.status_code == 422


def test_openapi_documents_the_filter_and_the_documents(server):
    schema = server.get("/openapi.json").json()
    models = schema["components"]["schemas"]
    request = next(v for k, v in models.items() if k.startswith("RetrieveRequest"))
    assert "Metadata filter" in request["properties"]["filter"]["description"]
    node = next(v for k, v in models.items() if k.startswith("NodeOut"))
    assert "documents" in node["properties"]
    assert set(models["DocumentRef"]["properties"]) == {"doc_id", "title", "metadata"}
