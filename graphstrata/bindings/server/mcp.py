"""``/mcp``: the MCP tools (:mod:`graphstrata.bindings.mcp`) over streamable HTTP, in the app.

Served only when the ``mcp`` package is installed (extra ``mcp``); otherwise the route is
absent and one log line says why. The transport is the SDK's streamable HTTP in its stateless
JSON form: every JSON-RPC message is one ``POST /mcp`` answered with one JSON body, so each
call passes through the app's middleware (tokens, body limit, deadline, metrics) like any
other request, and no session outlives it (decision 0027).

Tokens are those of the HTTP API. :func:`~.app.route_access` lets a known token with the read
right reach ``/mcp`` (else 401/403 before the body is read); then each tool checks the right
it needs on the index it names, from the ``Authorization`` header of the request that carried
it: ``read`` for search, answer, documents and stats, ``write`` for inserts and deletes,
refused as ``forbidden: this token has no write right on index 'a'``. Writes are queued to
the index's writer, as ``POST /v1/documents`` queues them, and the tool waits for the
operation up to its ``wait_seconds``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI

from graphstrata.bindings.extras import available, hint
from graphstrata.bindings.mcp.backend import Backend, ToolFailure, index_summary
from graphstrata.bindings.server.auth import TokenTable
from graphstrata.bindings.server.errors import ApiError, api_error
from graphstrata.bindings.server.routes.documents import validated_documents
from graphstrata.bindings.server.runtime import Service
from graphstrata.bindings.server.settings import ServerSettings
from graphstrata.bindings.server.writer import Operation

log = logging.getLogger("graphstrata.server")

#: The path of the MCP endpoint.
PATH = "/mcp"


class ServiceBackend(Backend):
    """The MCP tools over the app's services (see the module's docstring).

    Parameters
    ----------
    services:
        The served indexes by name (the first is the default).
    tokens:
        The app's tokens (empty: an open service).
    settings:
        The app's settings (query length limit, request timeout).
    """

    def __init__(
        self, services: dict[str, Service], tokens: TokenTable, settings: ServerSettings
    ) -> None:
        self.services = services
        self.default = next(iter(services))
        self.tokens = tokens
        self.settings = settings

    def _service(self, caller: str | None, index: str | None, right: str) -> Service:
        """The service of ``index`` once the caller's token may use ``right`` on it."""
        name = self.default if index is None else index
        try:
            self.tokens.require(caller, name, right)
        except ApiError as exc:
            raise ToolFailure(exc.code, exc.message) from exc
        service = self.services.get(name)
        if service is None:
            raise ToolFailure("not_found", f"no index {name!r}; list_indexes names them")
        return service

    async def _served(self, where: str, work: Callable[[], Any]) -> Any:
        """Await ``work()``, its errors mapped as the HTTP API maps them."""
        try:
            return await work()
        except ToolFailure:
            raise
        except Exception as exc:
            err = api_error(exc, f"MCP {where}")
            raise ToolFailure(err.code, err.message) from exc

    def _checked(self, service: Service, query: str, mode: str, params: dict[str, Any]) -> Any:
        service.check_mode(mode)
        service.check_query(query)
        limit = self.settings.max_query_chars
        if len(query) > limit:
            raise ApiError(422, "bad_request", f"query is over {limit} characters")
        return service.check_params(mode, params)

    async def indexes(self, caller: str | None) -> list[dict[str, Any]]:
        scope = self.tokens.scope_of_header(caller)
        out = []
        for i, (name, service) in enumerate(self.services.items()):
            if self.tokens and (scope is None or not scope.allows(name, "read")):
                continue
            out.append({"name": name, "default": i == 0, **index_summary(service.index)})
        return out

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
        service = self._service(caller, index, "read")

        async def work() -> dict[str, Any]:
            # As POST /v1/retrieve: the filter checked first, then micro-batched with the
            # concurrent requests' queries (the runner passes the filter to the engine).
            checked = service.with_filter(self._checked(service, query, mode, params), filter)
            async with service.slots.hold():
                result = await service.runner.retrieve(query, mode, budget_tokens, top_k, checked)
            return {"index": service.name, **result.to_dict()}

        return dict(await self._served("search", work))

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
        service = self._service(caller, index, "read")

        async def work() -> dict[str, Any]:
            kwargs = service.with_filter(self._checked(service, query, mode, params), filter)
            async with service.slots.hold():
                start = time.perf_counter()
                result = await service.runner.run_answer(
                    service.index.answer,
                    query,
                    mode,
                    budget_tokens,
                    top_k=top_k,
                    max_tokens=max_tokens,
                    **kwargs,
                )
                service.metrics.query_seconds.labels(f"answer:{mode}").observe(
                    time.perf_counter() - start
                )
            service.runner.account([result])
            return {"index": service.name, **result.to_dict()}

        return dict(await self._served("answer", work))

    async def documents(
        self,
        caller: str | None,
        index: str | None,
        offset: int,
        limit: int,
        query: str | None,
        filter: dict[str, Any] | None,
    ) -> dict[str, Any]:
        service = self._service(caller, index, "read")

        def page() -> Any:
            return service.index.documents(offset=offset, limit=limit, query=query, filter=filter)

        async def work() -> dict[str, Any]:
            return dict(await asyncio.get_running_loop().run_in_executor(None, page))

        return dict(await self._served("list_documents", work))

    async def document(self, caller: str | None, index: str | None, doc_id: str) -> dict[str, Any]:
        service = self._service(caller, index, "read")

        def one() -> Any:
            return service.index.document(doc_id)

        async def work() -> dict[str, Any] | None:
            return await asyncio.get_running_loop().run_in_executor(None, one)

        found = await self._served("get_document", work)
        if found is None:
            raise ToolFailure("not_found", f"document {doc_id!r} is not in the index")
        return dict(found)

    async def insert(
        self, caller: str | None, index: str | None, docs: list[dict[str, Any]], wait_s: float
    ) -> dict[str, Any]:
        service = self._service(caller, index, "write")
        ingest = service.index.config.ingest

        async def work() -> Operation:
            loop = asyncio.get_running_loop()
            valid = await loop.run_in_executor(None, validated_documents, docs, ingest)
            return service.writer.submit("insert", [d.doc_id for d in valid], valid)

        op = await self._served("insert_documents", work)
        return await self._waited(op, wait_s)

    async def delete(
        self, caller: str | None, index: str | None, doc_id: str, wait_s: float
    ) -> dict[str, Any]:
        service = self._service(caller, index, "write")

        async def work() -> Operation:
            known = service.index.pinned().document(doc_id) is not None
            if not known and not service.writer.pending_for(doc_id):
                raise ApiError(404, "not_found", f"document {doc_id!r} is not in the index")
            return service.writer.submit("delete", [doc_id], None)

        op = await self._served("delete_document", work)
        return await self._waited(op, wait_s)

    async def _waited(self, op: Operation, wait_s: float) -> dict[str, Any]:
        """The operation once finished, or as it stands after ``wait_s`` (bounded by the
        request's deadline, which would otherwise cut the answer)."""
        deadline = time.monotonic() + min(wait_s, 0.9 * self.settings.request_timeout_s)
        pause = 0.02
        while not op.finished and time.monotonic() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)
        return op.to_dict()

    async def stats(self, caller: str | None, index: str | None) -> dict[str, Any]:
        service = self._service(caller, index, "read")

        async def work() -> dict[str, Any]:
            loop = asyncio.get_running_loop()
            return dict((await loop.run_in_executor(None, service.stats))["index"])

        return dict(await self._served("stats", work))


def mount(
    app: FastAPI, services: dict[str, Service], tokens: TokenTable, settings: ServerSettings
) -> Callable[[], contextlib.AbstractAsyncContextManager[None]] | None:
    """Add ``POST /mcp`` to ``app`` when the ``mcp`` package is installed.

    Parameters
    ----------
    app:
        The app (its router gains the route).
    services, tokens, settings:
        As for :class:`ServiceBackend`.

    Returns
    -------
    callable or None
        The context manager the app's lifespan must enter while it serves (the SDK's
        session manager), or None when the route is absent (logged).
    """
    if not available("mcp"):
        log.info("MCP at %s is off: %s", PATH, hint("the /mcp endpoint", "mcp"))
        return None
    from mcp.server.transport_security import TransportSecuritySettings

    from graphstrata.bindings.mcp.tools import build_server

    server = build_server(ServiceBackend(services, tokens, settings))
    sub = server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_body_bytes,
        # The app's bearer tokens guard the endpoint as they guard the rest of the API; the
        # SDK's Host/Origin allow-list (on by default only for a loopback bind) is left off
        # so that /mcp answers under the same names as /v1.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app.router.routes.extend(sub.routes)
    manager = server.session_manager

    @contextlib.asynccontextmanager
    async def running() -> AsyncIterator[None]:
        async with manager.run():
            yield

    return running
