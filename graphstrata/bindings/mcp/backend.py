"""What the MCP tools call: a :class:`Backend`, and the local one over an open ``Index``.

The tools (:mod:`.tools`) are the same whatever serves them; a backend decides where the work
happens and who may do it. :class:`LocalBackend` is ``graphstrata mcp INDEX`` (stdio): one index
opened in the process, writes applied directly unless the server is read-only. The HTTP
service's backend (``graphstrata/bindings/server/mcp.py``) checks the caller's bearer token
per index and right and queues writes to the service's writer, as ``POST /v1/documents`` does.

Every backend method takes ``caller`` first: the ``Authorization`` header of the HTTP request
that carried the tool call, or None (stdio). A refusal or bad input raises
:class:`ToolFailure` with the same stable codes as the HTTP API's errors (``bad_request``,
``forbidden``, ``not_found``, ``backend_error``, ...).
"""

from __future__ import annotations

import abc
import logging
import os
from typing import Any

import anyio

from graphstrata.bindings.api import (
    MANIFEST,
    BackendError,
    ConfigError,
    DocumentError,
    Index,
    IndexLockedError,
    QueryError,
    StoreError,
)
from graphstrata.bindings.integrations.source import query_kwargs

log = logging.getLogger(__name__)


class ToolFailure(Exception):
    """A tool call that cannot be served; the client sees ``"CODE: message"``.

    Parameters
    ----------
    code:
        The stable error code (those of the HTTP API: ``bad_request``, ``forbidden``,
        ``unauthorized``, ``not_found``, ``read_only``, ``backend_error``, ``overloaded``...).
    message:
        One human-readable line.
    """

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Backend(abc.ABC):
    """The operations behind the MCP tools (see the module's docstring).

    ``index`` is an index name, or None for the default (first) one. Results are the JSON
    forms of the HTTP API: a retrieval is ``QueryResult.to_dict()``, an answer adds
    ``answer`` and ``citations``, documents follow the documents contract of ``Index``.
    """

    #: Whether the write tools (insert, delete) are offered at all.
    writes: bool = True

    @abc.abstractmethod
    async def indexes(self, caller: str | None) -> list[dict[str, Any]]:
        """The indexes the caller may read: ``{"name", "default", **index_summary}``."""

    @abc.abstractmethod
    async def search(
        self,
        caller: str | None,
        index: str | None,
        query: str,
        mode: str,
        budget_tokens: int | None,
        top_k: int | None,
        params: dict[str, Any],
        filter: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """One retrieval (``Index.query``; ``filter`` passed on only when given): its JSON
        form with ``index``, the name of the index that answered."""

    @abc.abstractmethod
    async def answer(
        self,
        caller: str | None,
        index: str | None,
        query: str,
        mode: str,
        budget_tokens: int | None,
        top_k: int | None,
        params: dict[str, Any],
        filter: dict[str, Any] | None,
        max_tokens: int,
    ) -> dict[str, Any]:
        """Retrieve, then answer with the index's LLM (``Index.answer``)."""

    @abc.abstractmethod
    async def documents(
        self,
        caller: str | None,
        index: str | None,
        offset: int,
        limit: int,
        query: str | None,
        filter: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """A page of the index's documents (``Index.documents``)."""

    @abc.abstractmethod
    async def document(self, caller: str | None, index: str | None, doc_id: str) -> dict[str, Any]:
        """One document's information (``Index.document``); ``not_found`` when absent."""

    @abc.abstractmethod
    async def insert(
        self, caller: str | None, index: str | None, docs: list[dict[str, Any]], wait_s: float
    ) -> dict[str, Any]:
        """Insert or update documents; waits up to ``wait_s`` for a queued write."""

    @abc.abstractmethod
    async def delete(
        self, caller: str | None, index: str | None, doc_id: str, wait_s: float
    ) -> dict[str, Any]:
        """Delete one document; waits up to ``wait_s`` for a queued write."""

    @abc.abstractmethod
    async def stats(self, caller: str | None, index: str | None) -> dict[str, Any]:
        """The index's statistics (``Index.stats``, without its path)."""


def index_summary(index: Index) -> dict[str, Any]:
    """What ``list_indexes`` tells of one index: its modes, documents and version."""
    pinned = index.pinned()
    return {
        "modes": sorted(index.modes),
        "documents": pinned.document_count,
        "version": pinned.version,
    }


class LocalBackend(Backend):
    """The tools over one :class:`Index` opened in this process (``graphstrata mcp``).

    Blocking engine calls run in worker threads; writes run one at a time. A stdio server
    lives as long as its client (a desktop app, for days), so before each read it follows the
    versions other processes committed (``graphstrata insert`` beside it): one ``stat`` of the
    manifest, and ``Index.refresh`` when it changed, as the HTTP service's watcher does.

    Parameters
    ----------
    index:
        The open index (its directory name is the index's name in the tools).
    read_only:
        Offer no write tools (``graphstrata mcp --read-only``).
    """

    def __init__(self, index: Index, read_only: bool = False):
        self.index = index
        self.name = index.path.name
        self.writes = not read_only
        self._write_lock = anyio.Lock()
        self._seen = self._manifest_signature()

    def _manifest_signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.index.path / MANIFEST)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    async def _follow(self) -> None:
        """Move to the newest committed version if the manifest changed since last seen (a
        failed load is retried at the next call)."""
        signature = self._manifest_signature()
        if signature == self._seen:
            return
        try:
            await anyio.to_thread.run_sync(self.index.refresh)
        except StoreError as exc:  # e.g. a version compacted away meanwhile: serve this one
            log.warning("could not load the newest version of %s: %s", self.index.path, exc)
            return
        self._seen = signature

    async def _check(self, index: str | None) -> None:
        """Refuse another index's name; follow the index's newest version."""
        if index is not None and index != self.name:
            raise ToolFailure("not_found", f"no index {index!r}; this server serves {self.name!r}")
        await self._follow()

    async def _run(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` in a worker thread, its input errors as :class:`ToolFailure`."""
        try:
            return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
        except (QueryError, DocumentError, ConfigError) as exc:
            raise ToolFailure("bad_request", " ".join(str(exc).split())) from exc
        except BackendError as exc:
            raise ToolFailure("backend_error", " ".join(str(exc).split())) from exc
        except IndexLockedError as exc:  # a writer beside this process (graphstrata serve)
            raise ToolFailure("overloaded", " ".join(str(exc).split())) from exc

    async def indexes(self, caller: str | None) -> list[dict[str, Any]]:
        await self._follow()
        return [{"name": self.name, "default": True, **index_summary(self.index)}]

    async def search(
        self,
        caller: str | None,
        index: str | None,
        query: str,
        mode: str,
        budget_tokens: int | None,
        top_k: int | None,
        params: dict[str, Any],
        filter: dict[str, Any] | None,
    ) -> dict[str, Any]:
        await self._check(index)
        kwargs = query_kwargs(params, filter)
        result = await self._run(self.index.query, query, mode, budget_tokens, top_k, **kwargs)
        return {"index": self.name, **result.to_dict()}

    async def answer(
        self,
        caller: str | None,
        index: str | None,
        query: str,
        mode: str,
        budget_tokens: int | None,
        top_k: int | None,
        params: dict[str, Any],
        filter: dict[str, Any] | None,
        max_tokens: int,
    ) -> dict[str, Any]:
        await self._check(index)
        kwargs = query_kwargs(params, filter)
        if top_k is not None:
            kwargs["top_k"] = top_k
        result = await self._run(
            self.index.answer, query, mode, budget_tokens, max_tokens=max_tokens, **kwargs
        )
        return {"index": self.name, **result.to_dict()}

    async def documents(
        self,
        caller: str | None,
        index: str | None,
        offset: int,
        limit: int,
        query: str | None,
        filter: dict[str, Any] | None,
    ) -> dict[str, Any]:
        await self._check(index)
        page = await self._run(
            self.index.documents,
            offset=offset,
            limit=limit,
            query=query,
            filter=filter,
        )
        return dict(page)

    async def document(self, caller: str | None, index: str | None, doc_id: str) -> dict[str, Any]:
        await self._check(index)
        found = await self._run(self.index.document, doc_id)
        if found is None:
            raise ToolFailure("not_found", f"document {doc_id!r} is not in the index")
        return dict(found)

    async def _check_write(self, index: str | None) -> None:
        await self._check(index)
        if not self.writes:
            raise ToolFailure("read_only", "this MCP server was started with --read-only")

    async def insert(
        self, caller: str | None, index: str | None, docs: list[dict[str, Any]], wait_s: float
    ) -> dict[str, Any]:
        await self._check_write(index)
        async with self._write_lock:
            report = await self._run(self.index.insert, docs)
        return {"status": "succeeded", "doc_ids": [d["doc_id"] for d in docs], **_report(report)}

    async def delete(
        self, caller: str | None, index: str | None, doc_id: str, wait_s: float
    ) -> dict[str, Any]:
        await self._check_write(index)
        async with self._write_lock:
            report = await self._run(self.index.delete, [doc_id])
        return {"status": "succeeded", "doc_ids": [doc_id], **_report(report)}

    async def stats(self, caller: str | None, index: str | None) -> dict[str, Any]:
        await self._check(index)
        stats = dict(await self._run(self.index.stats))
        stats.pop("path", None)  # the same view as the HTTP service's
        return stats


def _report(report: Any) -> dict[str, Any]:
    """The committed version and the write's report (``OperationReport``)."""
    return {"version": report.version, "report": report.to_dict()}
