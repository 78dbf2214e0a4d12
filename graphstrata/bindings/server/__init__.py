"""The HTTP service: retrieval, answers, document updates, stats, health and metrics, an
OpenAI-compatible chat API and a web page.

``create_app(index_path, settings=ServerSettings())`` returns a FastAPI app over one open index
or several (each under ``/v1/indexes/{name}/...``, the first also under ``/v1/...``);
``run_server`` serves it with uvicorn (``graphstrata serve DIR_OR_INDEX...``, or
``python -m graphstrata.bindings.server INDEX``). See docs/architecture.md, "Service".

* ``POST /v1/chat/completions`` / ``GET /v1/models`` (:mod:`.routes.chat`): ``model`` is
  ``INDEX[:MODE]``; the answer cites the retrieved nodes as ``[n]`` and the response carries
  ``citations`` (``Index.answer``, one answer path); ``stream: true`` is server-sent ``chat.completion.chunk``
  events. ``POST /v1/answer?stream=true`` streams too.
* Tokens (:mod:`.auth`): one all-rights token and scoped ones (per index, ``read``/``write``)
  from ``graphstrata serve --tokens FILE``; a known token without the right is a 403.
* ``GET /`` (:mod:`.routes.page`): the web page (``static/``), with its read routes
  ``/v1/nodes/{id}/neighbourhood`` and ``/v1/texts/{doc_id}`` (:mod:`.routes.nodes`).

How it stays fast and safe under load:

* Reads never block the event loop: retrievals run in a thread pool, and the query embeddings
  of concurrent requests are computed in one embedder call (:mod:`.runtime`,
  :mod:`graphstrata.bindings.embed.microbatch`), because the embedder dominates the cost of a
  query on CPU.
* Reads never wait for writes: document inserts and deletes are queued to one background
  writer thread (:mod:`.writer`) and answered ``202`` with an operation id. The engine swaps
  its immutable state after each commit, so a query sees either the previous or the new
  version, never a mix.
* Bounded work: at most ``max_concurrency`` retrievals in flight; one more is answered ``429``
  with ``Retry-After`` at once instead of queueing without bound. The writer queue is bounded
  the same way. Request bodies (8 MiB) and query strings (4,096 characters) are limited.
  Query parameters that multiply work have measured bounds, published in the schema. Every
  request has one deadline across search, upstream LLM and streaming (``request_timeout_s``,
  :mod:`.deadline`: 504, checked between the steps of a batch); answers run in their own
  threads, so a slow upstream cannot starve retrievals; a stopping server drains for
  ``shutdown_grace_s`` and then stops.
* Bounded memory: request bodies held at once across connections are within
  ``max_body_memory_bytes`` (counted before they are buffered; past it 503), and a list of
  bad documents is refused after its first few bad items.
* Bounded connections (:mod:`.protocol`, :class:`.settings.ServerSettings`): request headers
  must arrive within ``header_timeout_s`` and bodies within ``body_timeout_s`` (else 408 and
  the connection is closed: slowloris clients hold nothing), at most ``max_connections`` are
  open (one more gets 503), and the bearer token is checked before a byte of the body is
  read (an unauthenticated client cannot make the server buffer anything).
* Strict input: every body is parsed by one bounded JSON parser (:mod:`.jsonbody`: any
  nesting depth, any number size is a 422, never a 500) and validated strictly (``true`` is
  not 1, ``"5"`` is not 5, ``null`` is not an object, unknown members are refused).
* Errors are JSON ``{"error": {"code": ..., "message": ...}}`` with a stable ``code``; only
  the caller's mistakes are 4xx, backend failures 502/504, defects 500 with an ``error_id``
  (the table is in :mod:`.errors`). ``OPTIONS`` and 405 answers list the path's methods.
* Metrics labels come from closed sets (route templates, known methods, the statuses the
  service answers), so no request can create new time series.
* Mode parameters are typed: the schema of ``params`` is generated from the served modes'
  parameter classes (:mod:`.models`) and unknown names are refused with 422.
* Nothing in a request names a file: documents come only from the request body, and ids in
  paths are only looked up in tables.

Modules: :mod:`.settings`, :mod:`.errors`, :mod:`.middleware`, :mod:`.metrics`,
:mod:`.routing` (route templates, allowed methods, metrics labels), :mod:`.jsonbody`,
:mod:`.protocol` (uvicorn's h11 protocol with a header deadline and a connection cap),
:mod:`.deadline` (the per-request deadline), :mod:`.runtime`, :mod:`.writer`, :mod:`.models`, :mod:`.auth`, :mod:`.events` (server-sent
events), :mod:`.routes` (one router per resource), :mod:`.app` (``create_app``), :mod:`.run`
(``run_server``, ``uvicorn_config``) and :mod:`.command` (``graphstrata serve``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphstrata.bindings.server.app import create_app
    from graphstrata.bindings.server.errors import ApiError
    from graphstrata.bindings.server.run import bind_socket, run_server
    from graphstrata.bindings.server.settings import TOKEN_ENV, ServerSettings, set_embed_threads

#: Public name -> its module; loaded on first use (PEP 562), so that the command line can
#: build its parser (:mod:`.command`) without importing the web stack.
_PUBLIC = {
    "create_app": "app",
    "ApiError": "errors",
    "bind_socket": "run",
    "run_server": "run",
    "TOKEN_ENV": "settings",
    "ServerSettings": "settings",
    "set_embed_threads": "settings",
}

__all__ = [
    "TOKEN_ENV",
    "ApiError",
    "ServerSettings",
    "bind_socket",
    "create_app",
    "run_server",
    "set_embed_threads",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
