"""``create_app``: the FastAPI app over one or several open indexes (docs/architecture.md,
"Service").

Every index has its own :class:`~.runtime.Service` (query runner, retrieval slots, writer,
snapshot swap, limits) and its routes under ``/v1/indexes/{name}/...`` (``retrieve``,
``retrieve/batch``, ``answer``, ``documents``, ``operations``, ``stats``, ``metrics``); the
first index is also served by the single-index routes (``/v1/retrieve``, ... and
``/metrics``), which are the ones the OpenAPI document lists (the per-index copies take the
same bodies). ``/v1/indexes`` lists the indexes, ``/v1/models`` and ``/v1/chat/completions``
serve them all as chat models, ``/`` is the web page (:mod:`.routes.page`) and ``/mcp`` the
MCP tools over streamable HTTP when the ``mcp`` package is installed (:mod:`.mcp`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.routing import BaseRoute, Route

from graphstrata.bindings.api import ConfigError, Index
from graphstrata.bindings.server.auth import TokenTable, bearer_guard
from graphstrata.bindings.server.deadline import DeadlineMiddleware
from graphstrata.bindings.server.dialects import ErrorDialectMiddleware
from graphstrata.bindings.server.errors import install_error_handlers
from graphstrata.bindings.server.mcp import PATH as MCP_PATH
from graphstrata.bindings.server.mcp import mount as mount_mcp
from graphstrata.bindings.server.metrics import AppMetrics
from graphstrata.bindings.server.middleware import (
    AuthMiddleware,
    BodyBudget,
    BodyLimitMiddleware,
    ErrorMiddleware,
    MetricsMiddleware,
)
from graphstrata.bindings.server.models import build_models
from graphstrata.bindings.server.readiness import Readiness
from graphstrata.bindings.server.routes import (
    answer,
    chat,
    docs,
    documents,
    indexes,
    metrics,
    nodes,
    ollama,
    page,
    retrieve,
    status,
    vector_stores,
)
from graphstrata.bindings.server.runtime import QueryVectorCache, Service
from graphstrata.bindings.server.settings import ServerSettings, set_embed_threads

DESCRIPTION = (
    "Graph retrieval over an incremental index (EraRAG hierarchy + NodeRAG heterograph). "
    "Errors are JSON with a stable `error.code`. With several indexes, "
    "`/v1/indexes/{name}/...` serves each one (the same routes as `/v1/...`, which serve "
    "the first); `/v1/chat/completions` is OpenAI-compatible (`model` = index[:mode])."
)

#: Index names that can be a path segment of ``/v1/indexes/{name}``.
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")

_INDEX_PATH = re.compile(r"^/v1/indexes/([^/]+)(/.*)?$")
_VECTOR_STORE_PATH = re.compile(r"^/v1/vector_stores/([^/]+)(/.*)?$")


def create_app(
    index_path: str | Path | Sequence[str | Path],
    *,
    settings: ServerSettings | None = None,
    index: Index | None = None,
) -> FastAPI:
    """A FastAPI app serving the index(es) at ``index_path``.

    Parameters
    ----------
    index_path:
        The index directory, or several (each served under its directory name, which must be
        unique; opened with the settings' embedder and LLM specs).
    settings:
        Limits and tuning (:class:`ServerSettings`; defaults documented there), shared by the
        indexes (each has its own slots, writer and queues).
    index:
        An already open :class:`Index` to serve instead of opening the (single) path.

    Returns
    -------
    FastAPI
        The app; ``app.state.service`` is the first index's :class:`~.runtime.Service`,
        ``app.state.services`` maps every name to its service.

    Raises
    ------
    ConfigError
        For invalid settings, duplicate or unusable index names, or a bad tokens table.

    Notes
    -----
    Each search thread runs its Numba kernels on one thread whatever the process does; the
    process-wide pools (BLAS, OpenMP's wait policy, Numba's layer) are sized by
    :func:`~.run.run_server`, which applies the ``server`` role of
    :mod:`graphstrata.bindings.threads` first. An application that serves this app itself
    calls ``graphstrata.bindings.threads.apply("server")`` before creating it.
    """
    settings = settings or ServerSettings()
    settings.check()
    paths = [index_path] if isinstance(index_path, str | Path) else list(index_path)
    if not paths:
        raise ConfigError("no index to serve")
    if index is not None and len(paths) != 1:
        raise ConfigError("an open index can only be served alone")
    services: dict[str, Service] = {}
    # One cache for the app: it is keyed by embedder name, so indexes that share an
    # embedding function share their query vectors and the others never see them.
    query_cache = QueryVectorCache(settings.query_cache_size)
    app_metrics = AppMetrics()
    for path in paths:
        opened = index
        if opened is None:
            opened = Index.open(
                path, embedder=settings.embedder, llm=settings.llm, use_cache=settings.use_cache
            )
        if settings.embed_threads is not None:
            set_embed_threads(opened.embedder, settings.embed_threads)
        service = Service(opened, settings, query_cache, app_metrics)
        if not NAME.match(service.name):
            raise ConfigError(f"index name {service.name!r} cannot be served (use [A-Za-z0-9._-])")
        if service.name in services:
            raise ConfigError(f"two served indexes are named {service.name!r}")
        services[service.name] = service
    first = next(iter(services.values()))
    tokens = TokenTable.build(first.token, settings.tokens, names=list(services))
    readiness = Readiness(services.values())

    @contextlib.asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for s in services.values():
                await stack.enter_async_context(s.lifespan(app))
            if mcp_running is not None:
                await stack.enter_async_context(mcp_running())
            readiness.start()  # /readyz answers 503 until it ends
            stack.callback(readiness.stop, settings.shutdown_grace_s)
            yield

    app = FastAPI(
        title="graphstrata",
        version=_package_version(),
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # served from packaged files by routes.docs (FastAPI's use CDNs)
        redoc_url=None,
    )
    app.state.service = first
    app.state.services = services
    app.state.tokens = tokens
    app.state.readiness = readiness
    routes: list[BaseRoute] = []
    app.state.routes = routes
    install_error_handlers(app)
    # The last added is the outermost: metrics see every answer, the token is checked before
    # a byte of the body is read, the body limit, the body memory budget and the body timeout
    # come before the app reads it, an escaped exception is answered inside all of them, and
    # the request's deadline runs from the moment its body is in.
    app.add_middleware(DeadlineMiddleware, timeout_s=settings.request_timeout_s)
    app.add_middleware(ErrorMiddleware)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        timeout_s=settings.body_timeout_s,
        max_header_bytes=settings.max_header_bytes,
        budget=BodyBudget(settings.max_body_memory_bytes, settings.retry_after_s),
    )
    if tokens:
        open_paths = {
            "/healthz",
            "/readyz",
            app.openapi_url,
            *docs.PATHS,
            *page.FILES,
        }
        app.add_middleware(
            AuthMiddleware,
            token=tokens,
            open_paths={p for p in open_paths if p},
            timeout_s=settings.body_timeout_s,
            access=lambda method, path: route_access(first.name, method, path),
        )
    # Inside the metrics: they count the status the client gets (400, not the service's 422).
    app.add_middleware(ErrorDialectMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=first.metrics, routes=routes)
    guard = bearer_guard(tokens)
    routers = []
    first_models = None
    for i, (name, service) in enumerate(services.items()):
        models = build_models(settings, service.index.mode_params)
        first_models = first_models or models
        bases = [(f"/v1/indexes/{name}", False)]
        if i == 0:
            bases.insert(0, ("/v1", True))  # the single-index routes: aliases of the first
        for base, listed in bases:
            routers += [
                resource.router(service, models, guard, base, listed)
                for resource in (retrieve, answer, documents, nodes, status)
            ]
    assert first_models is not None
    routers.append(chat.router(services, first_models, guard, tokens))
    routers.append(indexes.router(services, first_models, guard, tokens))
    routers.append(metrics.router(services, first_models, guard, tokens))
    routers.append(ollama.router(services, guard, tokens))
    routers.append(vector_stores.router(services, guard))
    routers.append(status.health_router(first))
    routers.append(readiness.router())
    routers.append(page.router())
    routers.append(docs.router(app.title, app.openapi_url or "/openapi.json"))
    for api in routers:
        app.include_router(api)
    mcp_running = mount_mcp(app, services, tokens, settings)
    app.state.mcp = mcp_running is not None
    # Every route, flat (FastAPI nests included routers), for the metrics labels and the
    # ``Allow`` header of OPTIONS and 405 answers (:mod:`.routing`).
    routes.extend(r for r in app.router.routes if isinstance(r, Route))
    routes.extend(route for api in routers for route in api.routes)
    return app


def route_access(default: str, method: str, path: str) -> tuple[str | None, str]:
    """The index and the right a request needs (checked by :class:`AuthMiddleware`).

    Parameters
    ----------
    default:
        The first index's name (served by the ``/v1/...`` routes).
    method, path:
        The request's.

    Returns
    -------
    tuple
        ``(index name or None, "read" or "write")``: document inserts, uploads and
        deletes and cancelling an operation need ``write``, everything else ``read``; the
        chat, model, index and metrics lists, Ollama's routes and ``/mcp`` name no index here
        (the chat routes and the MCP tools check the index and right themselves, the lists
        show the indexes the token may read).
    """
    match = _INDEX_PATH.match(path) or _VECTOR_STORE_PATH.match(path)
    if match:
        index: str | None = match.group(1)
        rest = match.group(2) or ""
    elif path in (
        "/v1/chat/completions",
        "/v1/models",
        "/v1/indexes",
        "/metrics",
        MCP_PATH,
    ) or path.startswith("/api/"):
        return None, "read"
    else:
        index, rest = default, path.removeprefix("/v1")
    write = method.upper() in ("POST", "DELETE", "PUT", "PATCH") and rest.startswith(
        ("/documents", "/operations")
    )
    return index, "write" if write else "read"


def _package_version() -> str:
    from graphstrata import __version__

    return __version__
