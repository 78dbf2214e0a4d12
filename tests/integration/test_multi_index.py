"""Several indexes in one server process: per-index routes, isolation of writes, and tokens
scoped per index and per right (a real server in a subprocess on loopback)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from benchmarks.service.server_process import ServerHandle, server_process

pytestmark = pytest.mark.integration

ADMIN = "admin-token"
READ_A = "read-a-token"
NEW_DOC = {
    "doc_id": "news/lighthouse.md",
    "title": "Lighthouse",
    "text": "The Brakstad lighthouse was repainted in bright orange by the harbour guild in 2024.",
}


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def multi(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[ServerHandle]:
    from graphstrata.bindings.api import Index

    root: Path = tmp_path_factory.mktemp("multi")
    Index.create(root / "a", embedder=hashing_embedder).insert(sample_docs[:10])
    Index.create(root / "b", embedder=hashing_embedder).insert(sample_docs[10:20])
    (root / "not-an-index").mkdir()
    tokens = tmp_path_factory.mktemp("conf") / "tokens.json"
    tokens.write_text(json.dumps({READ_A: {"indexes": ["a"], "rights": ["read"]}}))
    with server_process(root, ["--token", ADMIN, "--tokens", str(tokens)]) as handle:
        yield handle
    assert "served " in handle.output


def test_indexes_are_listed_with_stats(multi) -> None:
    body = httpx.get(f"{multi.url}/v1/indexes", headers=auth(ADMIN)).json()
    names = [i["name"] for i in body["indexes"]]
    assert names == ["a", "b"]
    assert body["indexes"][0]["default"] is True
    assert body["indexes"][0]["index"]["documents"] == 10
    assert body["indexes"][1]["index"]["documents"] == 10
    # a scoped token sees only its indexes
    scoped = httpx.get(f"{multi.url}/v1/indexes", headers=auth(READ_A)).json()
    assert [i["name"] for i in scoped["indexes"]] == ["a"]


def test_a_write_to_one_index_is_invisible_in_the_other(multi) -> None:
    url = multi.url
    r = httpx.post(f"{url}/v1/indexes/b/documents", json=[NEW_DOC], headers=auth(ADMIN))
    assert r.status_code == 202, r.text
    assert r.headers["Location"].startswith("/v1/indexes/b/operations/")
    op = r.json()
    for _ in range(600):
        op = httpx.get(f"{url}{r.headers['Location']}", headers=auth(ADMIN)).json()
        if op["status"] not in ("queued", "running"):
            break
        time.sleep(0.1)
    assert op["status"] == "succeeded", op
    doc = f"/documents/{NEW_DOC['doc_id']}"
    assert httpx.get(f"{url}/v1/indexes/b{doc}", headers=auth(ADMIN)).json()["present"]
    assert httpx.get(f"{url}/v1/indexes/a{doc}", headers=auth(ADMIN)).status_code == 404
    assert httpx.get(f"{url}/v1{doc}", headers=auth(ADMIN)).status_code == 404  # alias of a
    query = {"query": "Who repainted the Brakstad lighthouse?", "mode": "bm25"}
    hits_b = httpx.post(f"{url}/v1/indexes/b/retrieve", json=query, headers=auth(ADMIN)).json()
    hits_a = httpx.post(f"{url}/v1/indexes/a/retrieve", json=query, headers=auth(ADMIN)).json()
    assert any(NEW_DOC["doc_id"] in n["docs"] for n in hits_b["nodes"])
    assert not any(NEW_DOC["doc_id"] in n["docs"] for n in hits_a["nodes"])
    stats = httpx.get(f"{url}/v1/indexes/b/stats", headers=auth(ADMIN)).json()
    assert stats["index"]["documents"] == 11


def test_read_token_is_refused_on_writes_and_other_indexes(multi) -> None:
    url = multi.url
    query = {"query": "Meridian Optics", "mode": "naive"}
    assert httpx.post(f"{url}/v1/indexes/a/retrieve", json=query, headers=auth(READ_A)).is_success
    assert httpx.post(f"{url}/v1/retrieve", json=query, headers=auth(READ_A)).is_success
    write = httpx.post(f"{url}/v1/indexes/a/documents", json=[NEW_DOC], headers=auth(READ_A))
    assert write.status_code == 403
    assert write.json()["error"]["code"] == "forbidden"
    alias_write = httpx.post(f"{url}/v1/documents", json=[NEW_DOC], headers=auth(READ_A))
    assert alias_write.status_code == 403
    other = httpx.post(f"{url}/v1/indexes/b/retrieve", json=query, headers=auth(READ_A))
    assert other.status_code == 403
    assert httpx.get(f"{url}/v1/indexes/b/stats", headers=auth(READ_A)).status_code == 403
    chat = {"model": "b", "messages": [{"role": "user", "content": "Meridian Optics?"}]}
    r = httpx.post(f"{url}/v1/chat/completions", json=chat, headers=auth(READ_A), timeout=60)
    assert r.status_code == 403
    chat["model"] = "a"
    r = httpx.post(f"{url}/v1/chat/completions", json=chat, headers=auth(READ_A), timeout=60)
    assert r.status_code == 200
    models = httpx.get(f"{url}/v1/models", headers=auth(READ_A)).json()
    assert {m["id"].split(":")[0] for m in models["data"]} == {"a"}
    assert httpx.get(f"{url}/v1/indexes", headers=auth("nope")).status_code == 401
