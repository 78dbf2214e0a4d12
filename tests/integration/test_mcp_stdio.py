"""``graphstrata mcp INDEX`` over stdio, driven by the official MCP SDK's own client
(``mcp.client.stdio`` + ``ClientSession``): the CLI runs as a real subprocess."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from graphstrata.engine.store.lock import live_writers
from tests.helpers import REPO

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = pytest.mark.integration

NEW_DOC = {
    "doc_id": "news/lighthouse.md",
    "title": "Lighthouse",
    "text": "The Brakstad lighthouse was repainted in bright orange by the harbour guild in 2024.",
    "metadata": {"year": 2024},
}


@pytest.fixture(scope="module")
def index_path(tmp_path_factory, sample_docs, hashing_embedder) -> Path:
    from graphstrata.bindings.api import Index

    path = tmp_path_factory.mktemp("mcp") / "sample"
    index = Index.create(path, embedder=hashing_embedder)
    index.insert(sample_docs[:8])
    index.close()
    return path


def with_session(
    index_path: Path, body: Callable[[ClientSession], Awaitable[None]], *extra: str
) -> None:
    """Run ``body`` with an initialized client session of ``graphstrata mcp INDEX EXTRA...``."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "graphstrata.bindings.cli", "mcp", str(index_path), *extra],
        env=dict(os.environ, PYTHONPATH=str(REPO), GRAPHSTRATA_EMBEDDER="hashing:64"),
    )

    async def main() -> None:
        with anyio.fail_after(240):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                await body(s)

    anyio.run(main)


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """The structured result of a successful tool call."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    # the text content is the same JSON, for clients that read only text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def test_search_answer_insert_delete_over_stdio(index_path, sample_docs) -> None:
    async def body(session: ClientSession) -> None:
        names = {t.name for t in (await session.list_tools()).tools}
        assert names == {
            "search",
            "answer",
            "list_documents",
            "get_document",
            "insert_documents",
            "delete_document",
            "list_indexes",
            "stats",
        }
        # while it may write, the server is a registered live writer (a rebuild refuses)
        assert [w.command for w in live_writers(index_path)] == ["graphstrata mcp"]
        listed = await call(session, "list_indexes")
        assert [i["name"] for i in listed["indexes"]] == ["sample"]
        assert {"naive", "bm25"} <= set(listed["indexes"][0]["modes"])

        passage = sample_docs[0]["text"][:300]
        for mode in ("naive", "bm25"):
            found = await call(session, "search", query=passage, mode=mode, top_k=5)
            assert found["index"] == "sample" and found["mode"] == mode
            hits = found["results"]
            assert hits, mode
            assert {"text", "score", "kind", "docs", "id"} <= set(hits[0])
            assert any(sample_docs[0]["doc_id"] in h["docs"] for h in hits)

        answered = await call(session, "answer", query=passage, mode="naive")
        assert answered["answer"]
        assert answered["citations"]
        assert answered["results"]

        before = await call(session, "stats")
        assert before["documents"] == 8
        assert "path" not in before

        inserted = await call(session, "insert_documents", documents=[NEW_DOC])
        assert inserted["status"] == "succeeded"
        assert inserted["report"]["docs_added"] == 1
        found = await call(session, "search", query="Brakstad lighthouse orange", mode="bm25")
        assert NEW_DOC["doc_id"] in found["results"][0]["docs"]

        deleted = await call(session, "delete_document", doc_id=NEW_DOC["doc_id"])
        assert deleted["status"] == "succeeded"
        assert (await call(session, "stats"))["documents"] == 8

        # bad input is a tool error naming the problem, with the HTTP API's code
        bad = await session.call_tool("search", {"query": "x", "mode": "no-such-mode"})
        assert bad.is_error and "bad_request" in bad.content[0].text
        assert "no-such-mode" in bad.content[0].text
        bad = await session.call_tool("search", {"query": "x", "index": "other"})
        assert bad.is_error and "not_found" in bad.content[0].text
        bad = await session.call_tool("insert_documents", {"documents": [{"text": "no id"}]})
        assert bad.is_error and "doc_id" in bad.content[0].text

    with_session(index_path, body)


def test_read_only_offers_no_write_tools_and_follows_other_writers(
    index_path, hashing_embedder
) -> None:
    from graphstrata.bindings.api import Index

    def write_elsewhere(change: Callable[[Index], object]) -> None:
        """A commit by another writer (this test's process) beside the server."""
        other = Index.open(index_path, embedder=hashing_embedder)
        change(other)
        other.close()

    async def body(session: ClientSession) -> None:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "insert_documents" not in names and "delete_document" not in names
        assert {"search", "answer", "stats"} <= names
        refused = await session.call_tool("insert_documents", {"documents": [NEW_DOC]})
        assert refused.is_error
        assert live_writers(index_path) == []
        assert (await call(session, "stats"))["documents"] == 8
        # the long-lived server serves what another process committed meanwhile
        await anyio.to_thread.run_sync(write_elsewhere, lambda i: i.insert([NEW_DOC]))
        found = await call(session, "search", query="Brakstad lighthouse orange", mode="bm25")
        assert NEW_DOC["doc_id"] in found["results"][0]["docs"]
        await anyio.to_thread.run_sync(write_elsewhere, lambda i: i.delete([NEW_DOC["doc_id"]]))
        assert (await call(session, "stats"))["documents"] == 8

    with_session(index_path, body, "--read-only")


def test_documents_tools_over_stdio(index_path, sample_docs) -> None:
    async def body(session: ClientSession) -> None:
        page = await call(session, "list_documents", limit=3)
        assert page["total"] == 8 and len(page["documents"]) == 3
        one = await call(session, "get_document", doc_id=sample_docs[0]["doc_id"])
        assert one["doc_id"] == sample_docs[0]["doc_id"] and one["status"] == "committed"
        missing = await session.call_tool("get_document", {"doc_id": "nope"})
        assert missing.is_error and "not_found" in missing.content[0].text

    with_session(index_path, body)


def test_search_with_a_filter_over_stdio(index_path, sample_docs) -> None:
    wanted = sample_docs[1]["doc_id"]

    async def body(session: ClientSession) -> None:
        found = await call(
            session, "search", query=sample_docs[0]["text"][:300], filter={"doc_id": wanted}
        )
        assert found["results"]
        assert all(h["docs"] == [wanted] for h in found["results"])

    with_session(index_path, body)
