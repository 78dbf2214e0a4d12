"""``/mcp`` of ``graphstrata serve``: the MCP tools over streamable HTTP, driven by the
official MCP SDK's own client (``mcp.client.streamable_http`` + ``ClientSession``) against a
live loopback server whose tokens come from a tokens file."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import anyio
import httpx
import pytest

from tests.helpers.servers import threaded_server

pytest.importorskip("mcp")

import httpx2
from mcp import ClientSession, MCPError
from mcp.client.streamable_http import streamable_http_client

pytestmark = pytest.mark.integration

ADMIN = "admin-token"
READER = "reader-token"
NEW_DOC = {
    "doc_id": "news/lighthouse.md",
    "title": "Lighthouse",
    "text": "The Brakstad lighthouse was repainted in bright orange by the harbour guild in 2024.",
    "metadata": {"year": 2024},
}


@pytest.fixture(scope="module")
def served(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[str]:
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.server.auth import TokenTable

    root = tmp_path_factory.mktemp("mcp-http")
    index = Index.create(root / "sample", embedder=hashing_embedder)
    index.insert(sample_docs[:8])
    index.close()
    tokens_file = root / "tokens.json"
    tokens_file.write_text(
        json.dumps({ADMIN: {}, READER: {"indexes": ["sample"], "rights": ["read"]}})
    )
    with threaded_server(root / "sample", tokens=TokenTable.read(tokens_file)) as (url, _, _):
        yield url


def with_session(
    url: str, token: str | None, body: Callable[[ClientSession], Awaitable[None]]
) -> None:
    """Run ``body`` with an initialized client session of ``URL/mcp`` under ``token``."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def main() -> None:
        with anyio.fail_after(120):
            async with (
                # a write waits for the writer: more than httpx2's default 5 s read timeout
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=110)) as http,
                streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                await body(session)

    anyio.run(main)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured result of a successful tool call."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def test_a_read_token_searches_in_two_modes_and_answers(served, sample_docs) -> None:
    passage = sample_docs[0]["text"][:300]

    async def body(session: ClientSession) -> None:
        listed = await call(session, "list_indexes")
        assert [i["name"] for i in listed["indexes"]] == ["sample"]
        assert listed["indexes"][0]["documents"] == 8
        for mode in ("naive", "bm25"):
            found = await call(session, "search", query=passage, mode=mode, budget_tokens=800)
            assert found["index"] == "sample" and found["mode"] == mode
            hits = found["results"]
            assert {"text", "score", "kind", "docs", "id"} <= set(hits[0])
            assert any(sample_docs[0]["doc_id"] in h["docs"] for h in hits), mode
        answered = await call(session, "answer", query=passage)
        assert answered["answer"] and answered["citations"] and answered["results"]
        assert (await call(session, "stats"))["documents"] == 8

    with_session(served, READER, body)


def test_a_read_token_is_refused_a_write(served) -> None:
    async def body(session: ClientSession) -> None:
        for tool, args in (
            ("insert_documents", {"documents": [NEW_DOC]}),
            ("delete_document", {"doc_id": "city/brekkvik_overview.md"}),
        ):
            refused = await session.call_tool(tool, args)
            assert refused.is_error
            text = refused.content[0].text
            assert "forbidden" in text and "no write right on index 'sample'" in text
        assert (await call(session, "stats"))["documents"] == 8
        # its scope is one index: another name is refused before it is looked up
        other = await session.call_tool("search", {"query": "x", "index": "other"})
        assert other.is_error and "no read right on index 'other'" in other.content[0].text

    with_session(served, READER, body)


def test_an_insert_goes_through_the_writer_then_a_search_finds_it(served) -> None:
    async def body(session: ClientSession) -> None:
        op = await call(session, "insert_documents", documents=[NEW_DOC], wait_seconds=60)
        assert op["kind"] == "insert" and op["status"] == "succeeded", op
        assert op["report"]["docs_added"] == 1
        found = await call(session, "search", query="Brakstad lighthouse orange", mode="bm25")
        assert NEW_DOC["doc_id"] in found["results"][0]["docs"]
        # the writer's operation, as the HTTP API reports it
        r = httpx.get(
            f"{served}/v1/operations/{op['id']}", headers={"Authorization": f"Bearer {ADMIN}"}
        )
        assert r.status_code == 200 and r.json()["status"] == "succeeded"
        gone = await call(session, "delete_document", doc_id=NEW_DOC["doc_id"], wait_seconds=60)
        assert gone["kind"] == "delete" and gone["status"] == "succeeded"
        missing = await session.call_tool("delete_document", {"doc_id": NEW_DOC["doc_id"]})
        assert missing.is_error and "not_found" in missing.content[0].text
        bad = await session.call_tool("search", {"query": "x", "mode": "no-such-mode"})
        assert bad.is_error and "mode_unavailable" in bad.content[0].text
        bad = await session.call_tool("search", {"query": "x", "index": "other"})
        assert bad.is_error and "not_found: no index 'other'" in bad.content[0].text

    with_session(served, ADMIN, body)


def test_no_token_or_an_unknown_one_is_a_401(served) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer nope"}):
        r = httpx.post(f"{served}/mcp", json=message, headers=headers)
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "unauthorized"
    # the SDK's client is refused at its first message: the session never starts
    reached: list[bool] = []

    async def body(session: ClientSession) -> None:
        reached.append(True)

    with pytest.raises(BaseExceptionGroup) as caught:
        with_session(served, None, body)
    assert caught.group_contains(MCPError)
    assert not reached


def test_documents_tools_over_http(served, sample_docs) -> None:
    async def body(session: ClientSession) -> None:
        page = await call(session, "list_documents", limit=3)
        assert page["total"] >= 8 and len(page["documents"]) == 3
        one = await call(session, "get_document", doc_id=sample_docs[0]["doc_id"])
        assert one["doc_id"] == sample_docs[0]["doc_id"]

    with_session(served, READER, body)


def test_search_with_a_filter_over_http(served, sample_docs) -> None:
    wanted = sample_docs[1]["doc_id"]

    async def body(session: ClientSession) -> None:
        found = await call(
            session, "search", query=sample_docs[0]["text"][:300], filter={"doc_id": wanted}
        )
        assert found["results"]
        assert all(h["docs"] == [wanted] for h in found["results"])

    with_session(served, READER, body)
