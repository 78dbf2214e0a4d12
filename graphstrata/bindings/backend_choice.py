"""Which embedder and LLM an index gets: the one precedence rule (:func:`resolve_backends`).

``Index.create`` and ``Index.open`` (and through them the CLI and the server) decide here;
see docs/architecture.md, "Backends".
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graphstrata.bindings.backends import DEFAULT_EMBEDDER, DEFAULT_LLM, make_embedder, make_llm
from graphstrata.engine.config import ConfigError
from graphstrata.engine.index import check_embedder
from graphstrata.engine.interfaces import LLM, Embedder

#: Environment variables that choose the backends (see :func:`resolve_backends`).
EMBEDDER_ENV = "GRAPHSTRATA_EMBEDDER"
LLM_ENV = "GRAPHSTRATA_LLM"


@dataclasses.dataclass(frozen=True)
class Backends:
    """The backends an index is created or opened with, and where each choice came from.

    Attributes
    ----------
    embedder, llm:
        The backend objects.
    embedder_source, llm_source:
        ``"argument"``, ``"environment"``, ``"index"`` (recorded in the manifest, or the
        config of a new index) or ``"default"``.
    """

    embedder: Embedder
    llm: LLM
    embedder_source: str
    llm_source: str


def choose_spec(
    explicit: Any, env_value: str | None, recorded: str | None, default: str
) -> tuple[Any, str]:
    """The first of argument, environment, recorded value, default that is set.

    Parameters
    ----------
    explicit:
        The caller's spec or backend object (None: not given).
    env_value:
        The environment variable's value (None or empty: unset).
    recorded:
        The spec recorded in the index (or in the config of a new one).
    default:
        The built-in default.

    Returns
    -------
    tuple
        ``(spec, source)`` with source ``"argument"``, ``"environment"``, ``"index"`` or
        ``"default"``.
    """
    if explicit is not None:
        return explicit, "argument"
    if env_value:
        return env_value, "environment"
    if recorded:
        return recorded, "index"
    return default, "default"


def resolve_backends(
    embedder: str | Embedder | None,
    llm: str | LLM | None,
    *,
    recorded_embedder: str | None,
    recorded_llm: str | None,
    built_with: Mapping[str, Any] | None = None,
    cache_path: str | Path | None = None,
    use_cache: bool = True,
    environ: Mapping[str, str] | None = None,
) -> Backends:
    """Decide the embedder and the LLM of an index: the one precedence rule of the package.

    The rule, for both backends: **explicit argument > environment > index > default**.

    * explicit argument: ``Index.create/open(embedder=..., llm=...)``, ``--embedder`` /
      ``--llm`` on the command line, ``ServerSettings.embedder`` / ``.llm``;
    * environment: ``GRAPHSTRATA_EMBEDDER`` / ``GRAPHSTRATA_LLM`` (empty = unset);
    * index: what the manifest records (opening), or the ``IndexConfig`` given to ``create``;
    * default: ``minilm-onnx`` and ``extractive``.

    The embedder of an existing index is constrained (``built_with`` given): the vectors on
    disk only make sense with the embedder that built them, so the recorded one is the default
    and an argument or environment spec is accepted only when it is compatible
    (``engine.index.check_embedder``: the same name, or listed in the embedder's
    ``compatible_names``, and the same dimension; an ``openai-embed`` spec may point at another
    server of the same model, for instance). Anything else is a ``ConfigError`` naming where
    the spec came from, before the index is read. The LLM is not constrained: the environment
    may switch an index to another LLM (later summaries and answers use it).

    Parameters
    ----------
    embedder, llm:
        Explicit specs or backend objects, or None.
    recorded_embedder, recorded_llm:
        The specs recorded in the index (or the config of a new index), or None.
    built_with:
        ``{"name", "dim"}`` of the embedder that built an existing index (its manifest), or
        None when creating.
    cache_path, use_cache:
        The LLM response cache (``INDEX/llm-cache.sqlite``) and whether to use it.
    environ:
        The environment to read (default ``os.environ``).

    Returns
    -------
    Backends
        The built backends and the source of each.

    Raises
    ------
    ConfigError
        For an unknown spec, or an embedder incompatible with ``built_with``.
    """
    env = os.environ if environ is None else environ
    emb_spec, emb_source = choose_spec(
        embedder, env.get(EMBEDDER_ENV), recorded_embedder, DEFAULT_EMBEDDER
    )
    llm_spec, llm_source = choose_spec(llm, env.get(LLM_ENV), recorded_llm, DEFAULT_LLM)
    emb = make_embedder(emb_spec)
    if built_with is not None and emb_source in ("argument", "environment"):
        where = "the embedder argument" if emb_source == "argument" else f"{EMBEDDER_ENV}"
        try:
            check_embedder({"embedder": dict(built_with)}, emb, given_by=where)
        except ConfigError as exc:
            if emb_source == "environment":
                raise ConfigError(f"{exc} or unset {EMBEDDER_ENV}") from None
            raise
    llm_obj = make_llm(llm_spec, cache_path=cache_path, use_cache=use_cache)
    return Backends(emb, llm_obj, emb_source, llm_source)
