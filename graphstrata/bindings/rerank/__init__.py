"""Rerankers: the rerank HTTP APIs that inference servers expose (docs/guide/rerank.md).

Specs (``PREFIX:BODY[?key=value&...]``, registered in ``bindings/registry.py``,
:data:`~graphstrata.bindings.registry.RERANK_BACKENDS`):

* ``tei:URL``: text-embeddings-inference ``POST URL/rerank`` (``{query, texts}`` ->
  ``[{index, score}]``);
* ``vllm:MODEL@URL``: vLLM ``POST URL/v1/rerank`` (Jina/Cohere shape: ``{model, query,
  documents, top_n}`` -> ``{results: [{index, relevance_score}]}``; ``?path=/rerank`` for
  its other route);
* ``cohere:MODEL@URL``: Cohere ``POST URL/v2/rerank`` (``?path=/v1/rerank`` for v1;
  without ``@URL`` the Cohere API);
* ``jina:MODEL@URL``: Jina ``POST URL/v1/rerank`` (without ``@URL`` the Jina API).

Options: ``timeout`` (seconds per request, default 10), ``max_retries`` (default 1),
``batch_size`` (texts per request, default 32: TEI's default client batch limit), ``path``.
The API key comes from ``GRAPHSTRATA_RERANK_API_KEY``, else ``GRAPHSTRATA_API_KEY`` /
``OPENAI_API_KEY`` (never from the spec, which an index may record).

Which reranker an index gets: the argument (``Index.open(reranker=...)``), else
``GRAPHSTRATA_RERANKER``, else the index's ``search.reranker``, else none
(:func:`resolve_reranker`).
"""

from __future__ import annotations

import os
from typing import Any

from graphstrata.bindings.registry import RERANK_BACKENDS, choose_spec
from graphstrata.bindings.rerank.http import SPECS, HttpReranker, from_spec
from graphstrata.bindings.specs import split_options
from graphstrata.engine import ConfigError, Reranker

__all__ = ["RERANKER_ENV", "HttpReranker", "make_reranker", "resolve_reranker"]

#: The environment variable that chooses the reranker (see :func:`resolve_reranker`).
RERANKER_ENV = "GRAPHSTRATA_RERANKER"


def make_reranker(spec: str | Reranker, **options: Any) -> Reranker:
    """Build a reranker from a spec string (or pass a :class:`Reranker` through).

    Parameters
    ----------
    spec:
        See the module docstring.
    options:
        Options (override those in the spec).

    Raises
    ------
    ConfigError
        For an unknown spec or option, or a bad URL.
    """
    if not isinstance(spec, str):
        return spec
    head, raw = split_options(spec.strip())
    if "api_key" in raw:
        raise ConfigError(
            "an API key does not belong in a spec: set GRAPHSTRATA_RERANK_API_KEY, or pass "
            "api_key= to the Python API"
        )
    prefix, sep, body = head.partition(":")
    if not sep or prefix not in RERANK_BACKENDS:
        raise ConfigError(f"unknown reranker {spec!r}; use {SPECS}")
    return from_spec(prefix, body, {**raw, **options})


def resolve_reranker(
    explicit: str | Reranker | None, recorded: str | None, environ: dict[str, str] | None = None
) -> Reranker | None:
    """The reranker of an index: argument > ``GRAPHSTRATA_RERANKER`` > recorded > none.

    Parameters
    ----------
    explicit:
        The caller's spec or reranker (None: not given; ``""``: none, whatever else says).
    recorded:
        The index's ``search.reranker`` (``""`` or None: none).
    environ:
        The environment to read (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    spec, _source = choose_spec(explicit, env.get(RERANKER_ENV), recorded, "")
    return make_reranker(spec) if spec else None
