"""Clients as applications use them, against a live loopback server over two indexes:
LangChain's ``ChatOpenAI``, the ``ollama`` client, the ``openai`` client's vector-store search,
and Prometheus metrics labelled by index (issue 47, items 4, 5 and 8)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.servers import threaded_server

pytestmark = pytest.mark.integration

ADMIN = "admin-token"
READ_A = "read-only-a"
QUESTION = "Who founded Meridian Optics?"


@pytest.fixture(scope="module")
def served(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[str]:
    """Index ``a`` (the whole sample corpus) and ``b`` (its city documents), an all-rights
    token and a read-only token for ``a``."""
    from graphstrata.bindings.api import Index

    root: Path = tmp_path_factory.mktemp("clients")
    Index.create(root / "a", embedder=hashing_embedder).insert(sample_docs)
    city = [d for d in sample_docs if d["doc_id"].startswith("city/")]
    Index.create(root / "b", embedder=hashing_embedder).insert(city)
    tokens = {READ_A: {"indexes": ["a"], "rights": ["read"]}}
    with threaded_server([root / "a", root / "b"], token=ADMIN, tokens=tokens) as (url, _, _):
        yield url


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# ---------------------------------------------------------------------------- LangChain
def test_langchain_chat_openai_gets_the_cited_sources(served) -> None:
    import langchain_openai as chat_openai

    llm = chat_openai.ChatOpenAI(
        model="a",
        base_url=f"{served}/v1",
        api_key=READ_A,
        frequency_penalty=0,
        max_retries=0,
        include_response_headers=True,
    )
    message = llm.invoke(QUESTION)
    answer, footer = message.content.split("\n\nSources:\n")
    markers = {int(m) for m in re.findall(r"\[(\d+)\]", answer)}
    assert markers and "Veld" in answer
    # One line per cited marker, naming the document by its title.
    listed = dict(re.findall(r"^\[(\d+)\] (.+)$", footer, re.MULTILINE))
    assert {int(m) for m in listed} == markers
    assert "The Founding of Meridian Optics" in listed.values()
    # The same citations, as data, where LangChain keeps them (the response's headers).
    import json

    cited = json.loads(message.response_metadata["headers"]["x-graphstrata-citations"])
    assert {c["marker"] for c in cited} == markers
    assert {c["doc_id"] for c in cited} >= {"optics/meridian_founding.md"}
    # And streamed: the same text.
    streamed = "".join(chunk.content for chunk in llm.stream(QUESTION))
    assert streamed == message.content


# ---------------------------------------------------------------------------- Ollama
def ollama_client(url: str, token: str) -> Any:
    import ollama

    return ollama.Client(host=url, headers=auth(token))


def test_ollama_lists_the_readable_indexes_as_models(served) -> None:
    names = [m.model for m in ollama_client(served, ADMIN).list().models]
    assert names[0] == "a:latest" and "b:latest" in names and "a:hybrid" in names
    scoped = [m.model for m in ollama_client(served, READ_A).list().models]
    assert scoped and all(n.startswith("a:") for n in scoped)
    version = httpx.get(f"{served}/api/version", headers=auth(ADMIN)).json()["version"]
    assert version
    shown = ollama_client(served, READ_A).show("a:latest")
    assert shown.modelinfo["graphstrata.index"] == "a"


def test_ollama_chat_streams_as_ollama_does_and_a_read_only_token_works(served) -> None:
    client = ollama_client(served, READ_A)
    messages = [{"role": "user", "content": QUESTION}]
    whole = client.chat(model="a:latest", messages=messages, stream=False)
    assert whole.done and whole.done_reason == "stop"
    assert "Veld" in whole.message.content and "Sources:" in whole.message.content
    assert whole.eval_count > 0 and whole.prompt_eval_count > 0 and whole.total_duration > 0
    parts = list(client.chat(model="a", messages=messages, stream=True))
    assert len(parts) > 3 and parts[-1].done and not any(p.done for p in parts[:-1])
    assert "".join(p.message.content for p in parts) == whole.message.content
    # The raw stream is newline-delimited JSON, and stream defaults to true (the Python
    # client always sends it).
    with httpx.stream(
        "POST",
        f"{served}/api/chat",
        json={"model": "a", "messages": messages},
        headers=auth(READ_A),
        timeout=60,
    ) as r:
        assert r.headers["content-type"].startswith("application/x-ndjson")
        lines = [line for line in r.iter_lines() if line]
    assert len(lines) == len(parts)


def test_ollama_generate_and_a_follow_up(served) -> None:
    client = ollama_client(served, ADMIN)
    generated = client.generate(model="a:bm25", prompt=QUESTION, stream=False)
    assert generated.done and "Veld" in generated.response
    pieces = list(client.generate(model="a:bm25", prompt=QUESTION, stream=True))
    assert "".join(p.response for p in pieces) == generated.response
    follow_up = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": generated.response},
        {"role": "user", "content": "Where did he work before that?"},
    ]
    second = client.chat(model="a:bm25", messages=follow_up, stream=False)
    assert "Halvorsen Observatory" in second.message.content


def test_ollama_refuses_a_bad_token_an_unknown_model_and_another_index(served) -> None:
    import ollama

    with pytest.raises(ollama.ResponseError) as err:
        ollama_client(served, "wrong").list()
    assert err.value.status_code == 401
    with pytest.raises(ollama.ResponseError) as err:
        ollama_client(served, READ_A).chat(model="b", messages=[{"role": "user", "content": "x"}])
    assert err.value.status_code == 403
    with pytest.raises(ollama.ResponseError) as err:
        ollama_client(served, ADMIN).chat(model="nope", messages=[{"role": "user", "content": "x"}])
    assert err.value.status_code == 404 and "nope" in err.value.error
    r = httpx.post(
        f"{served}/api/chat",
        json={"model": "a", "messages": [{"role": "user", "content": "x"}], "format": "json"},
        headers=auth(ADMIN),
    )
    assert r.status_code == 400 and set(r.json()) == {"error"}


# ---------------------------------------------------------------------------- vector stores
def test_vector_store_search_with_the_openai_client(served) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{served}/v1", api_key=READ_A, max_retries=0)
    page = client.vector_stores.search("a", query=QUESTION, max_num_results=3)
    results = list(page)
    assert 0 < len(results) <= 3
    assert results[0].file_id == "optics/meridian_founding.md"
    assert results[0].content[0].type == "text" and "Veld" in results[0].content[0].text
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)
    raw = httpx.post(
        f"{served}/v1/vector_stores/a/search",
        json={"query": ["Meridian Optics", "founder"], "rewrite_query": True},
        headers=auth(READ_A),
    ).json()
    assert raw["object"] == "vector_store.search_results.page"
    assert raw["search_query"] == ["Meridian Optics", "founder"]
    assert raw["has_more"] is False and raw["next_page"] is None
    with pytest.raises(openai.PermissionDeniedError):
        client.vector_stores.search("b", query=QUESTION)
    with pytest.raises(openai.BadRequestError) as err:
        client.vector_stores.search("a", query=QUESTION, filters={"type": "like", "key": "x"})
    assert err.value.body["param"] == "filters"


def test_vector_store_search_filters_by_metadata(served) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=f"{served}/v1", api_key=ADMIN, max_retries=0)
    wanted = {"type": "eq", "key": "doc_id", "value": "city/ferry.md"}
    results = list(client.vector_stores.search("a", query=QUESTION, filters=wanted))
    assert results and {r.file_id for r in results} == {"city/ferry.md"}


# ---------------------------------------------------------------------------- metrics
def test_every_per_index_metric_names_its_index(served) -> None:
    for index in ("a", "b"):
        r = httpx.post(
            f"{served}/v1/indexes/{index}/retrieve", json={"query": "ferry"}, headers=auth(ADMIN)
        )
        assert r.status_code == 200
    text = httpx.get(f"{served}/metrics", headers=auth(ADMIN)).text
    for index, documents in (("a", 30), ("b", 7)):
        assert f'graphstrata_documents{{index="{index}"}} {float(documents)}' in text
        assert re.search(rf'graphstrata_index_version{{index="{index}"}} \d', text)
        assert re.search(rf'graphstrata_nodes{{index="{index}",kind="T"}} [1-9]', text)
        assert re.search(
            rf'graphstrata_query_seconds_count{{index="{index}",mode="naive"}} 1', text
        )
    # Every sample of a per-index family carries the label.
    per_index = ("graphstrata_documents", "graphstrata_nodes", "graphstrata_index_version")
    for line in text.splitlines():
        if line.startswith(per_index):
            assert 'index="' in line, line
    # A token sees only its indexes; one index's route shows only that index.
    scoped = httpx.get(f"{served}/metrics", headers=auth(READ_A)).text
    assert 'index="a"' in scoped and 'index="b"' not in scoped
    only_b = httpx.get(f"{served}/v1/indexes/b/metrics", headers=auth(ADMIN)).text
    assert 'index="b"' in only_b and 'index="a"' not in only_b
