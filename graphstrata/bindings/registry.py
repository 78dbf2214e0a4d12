"""Backend specs -> backend objects, shared by the CLI, the Python API and the server.

An LLM backend is one module (``SPEC`` and ``from_spec(body, options)``) and one line of
:data:`LLM_BACKENDS`; spec options are parsed by :mod:`graphstrata.bindings.specs`.

Which spec an index gets (argument > ``GRAPHSTRATA_LLM`` / ``GRAPHSTRATA_EMBEDDER`` > the
index's > default, the embedder of an existing index being fixed) is decided in one place,
:func:`graphstrata.bindings.registry.resolve_backends`; :func:`make_llm` and
:func:`make_embedder` called without a spec read the same variables. Options go after ``?``
as ``key=value`` pairs joined by ``&``, or as keyword arguments of :func:`make_llm` /
:func:`make_embedder` (those win):

* LLM:

  - ``extractive`` (default): no model, CPU.
  - ``vllm:MODEL_PATH[?dtype=bfloat16&tp=2&max_model_len=8192&gpu_memory_utilization=0.8]``:
    in-process vLLM (extra ``gpu``); also ``seed``, ``chat_template``, ``thinking``,
    ``enforce_eager``, ``quantization``.
  - ``openai:MODEL@URL[?max_concurrency=8&timeout=120&max_retries=5&json_mode=auto]``: any
    OpenAI-compatible server, e.g. ``openai:qwen2.5-7b@http://127.0.0.1:8000/v1``. Without
    ``@URL``: ``OPENAI_BASE_URL``, else the OpenAI API. The key comes from
    ``GRAPHSTRATA_API_KEY`` or ``OPENAI_API_KEY`` (never from the spec, which is recorded
    in the index). Also ``seed``, ``base_delay``, ``max_delay``.
  - ``gguf:PATH`` / ``hf:PATH_OR_NAME`` / ``smollm2`` (= ``gguf:smollm2``, the packaged
    SmolLM2-135M-Instruct): local generation with transformers on torch (extra ``torch``);
    options ``threads``, ``batch_size``, ``timeout``, ``max_tokens``, ``dtype``.

  ``vllm``, ``openai``, ``gguf`` and ``hf`` answers are cached in ``cache_path`` (the API passes
  ``INDEX/llm-cache.sqlite``) unless ``use_cache=False``.

* Embedder: ``minilm-onnx`` (default) / ``minilm-int8`` (the packaged all-MiniLM-L6-v2 on
  ONNX Runtime, fp32 or int8, no torch at query time; options
  ``threads``, ``batch_size``, ``max_padding``, ``spin``), ``all-MiniLM-L6-v2`` (the same packaged model
  through sentence-transformers and torch), ``st:PATH_OR_NAME`` (any local
  sentence-transformers model; options ``batch_size``, ``device``), ``hashing[:DIM]``
  (feature hashing, no model), ``openai-embed:MODEL@URL`` (an OpenAI-compatible
  ``/v1/embeddings`` server; options ``dim``, ``batch_size``, ``max_input_tokens``,
  ``timeout``, ``max_retries``; without ``@URL``: ``GRAPHSTRATA_EMBED_URL``, then
  ``OPENAI_BASE_URL``, else the OpenAI API).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from graphstrata.bindings.embed.models import (
    ONNX_SPECS,
    PACKAGED_MINILM,
    HashingEmbedder,
    OnnxMiniLMEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
)
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.bindings.specs import (
    OPENAI_DEFAULT_URL,
    OptionTable,
    convert_options,
    optional_int,
    split_model_url,
    split_options,
    to_bool,
)
from graphstrata.engine import LLM, ConfigError, Embedder, check_embedder

#: ``IndexConfig.embedder``'s default (see there for the measurement behind it).
DEFAULT_EMBEDDER = "minilm-onnx"
DEFAULT_LLM = "extractive"
#: The LLM response cache of an index, in its folder (``cache_path`` of :func:`make_llm`).
LLM_CACHE_FILE = "llm-cache.sqlite"

#: LLM spec prefix (``PREFIX:BODY[?opts]``) -> its backend module, imported when a spec names
#: it. The module defines ``SPEC`` (the spec's form, for messages) and
#: ``from_spec(body, options) -> LLM``; a new backend is that module and one line here.
LLM_BACKENDS: dict[str, str] = {
    "vllm": "graphstrata.bindings.llm.vllm",
    "openai": "graphstrata.bindings.llm.openai",
    "gguf": "graphstrata.bindings.llm.gguf",
    "hf": "graphstrata.bindings.llm.hf",
}
#: Reranker spec prefixes (``bindings/rerank``: one HTTP client, one wire shape per prefix).
RERANK_BACKENDS = ("tei", "vllm", "cohere", "jina")
#: Short names of LLM specs (a named model): ``smollm2`` is the packaged SmolLM2-135M GGUF.
LLM_ALIASES: dict[str, str] = {"smollm2": "gguf:smollm2"}
EMBEDDER_SPECS = (
    "all-MiniLM-L6-v2, minilm-onnx, minilm-int8, st:PATH_OR_NAME, hashing[:DIM], "
    "or openai-embed:MODEL@URL"
)


# --------------------------------------------------------------------------- embedder options
_ST_OPTIONS: OptionTable = {
    "batch_size": ("batch_size", int),
    "device": ("device", str),
}

_ONNX_OPTIONS: OptionTable = {
    "threads": ("threads", optional_int),
    "batch_size": ("batch_size", int),
    "max_padding": ("max_padding", float),
    "spin": ("spin", to_bool),
}

_OPENAI_EMBED_OPTIONS: OptionTable = {
    "dim": ("dim", optional_int),
    "batch_size": ("batch_size", int),
    "max_input_tokens": ("max_input_tokens", int),
    "timeout": ("timeout", float),
    "max_retries": ("max_retries", int),
    "api_key": ("api_key", str),
}


# --------------------------------------------------------------------------- embedders
def make_embedder(spec: str | Embedder | None = None, **options: Any) -> Embedder:
    """Build an embedder from a spec string (or pass an Embedder through).

    Parameters
    ----------
    spec:
        See the module docstring; default ``GRAPHSTRATA_EMBEDDER``, else minilm-onnx.
    options:
        Backend options (override those in the spec).

    Raises
    ------
    ConfigError
        For an unknown spec or option.
    """
    if spec is not None and not isinstance(spec, str):
        return spec
    spec = (spec or os.environ.get("GRAPHSTRATA_EMBEDDER") or DEFAULT_EMBEDDER).strip()
    spec, raw = split_options(spec)
    raw = {**raw, **options}
    if spec in PACKAGED_MINILM:
        return SentenceTransformerEmbedder(spec, **convert_options(spec, raw, _ST_OPTIONS))
    if spec in ONNX_SPECS:
        onnx_opts = convert_options(spec, raw, _ONNX_OPTIONS)
        try:
            return OnnxMiniLMEmbedder(ONNX_SPECS[spec], **onnx_opts)
        except ValueError as exc:
            raise ConfigError(f"bad options for embedder {spec!r}: {exc}") from exc
    if spec.startswith("hashing"):
        return _hashing_embedder(spec, raw)
    if spec.startswith("openai-embed:"):
        return _openai_embedder(spec, raw)
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:], **convert_options(spec, raw, _ST_OPTIONS))
    if Path(spec).exists():
        return SentenceTransformerEmbedder(spec, **convert_options(spec, raw, _ST_OPTIONS))
    raise ConfigError(f"unknown embedder {spec!r}; use {EMBEDDER_SPECS}")


def _hashing_embedder(spec: str, raw: Mapping[str, Any]) -> Embedder:
    if raw:
        raise ConfigError(f"the hashing embedder takes no options, got {sorted(raw)}")
    _, _, dim = spec.partition(":")
    if not dim and spec.startswith("hashing-"):
        dim = spec.split("-", 1)[1]
    if spec not in ("hashing", f"hashing:{dim}", f"hashing-{dim}"):
        raise ConfigError(f"bad embedder spec {spec!r}: expected hashing[:DIM]")
    try:
        return HashingEmbedder(int(dim) if dim else 384)
    except ValueError as exc:
        raise ConfigError(f"bad embedder spec {spec!r}: expected hashing[:DIM] ({exc})") from exc


def _openai_embedder(spec: str, raw: Mapping[str, Any]) -> Embedder:
    default_url = (
        os.environ.get("GRAPHSTRATA_EMBED_URL")
        or os.environ.get("OPENAI_BASE_URL")
        or OPENAI_DEFAULT_URL
    )
    from graphstrata.bindings.http import RetryPolicy

    model, url = split_model_url(spec.split(":", 1)[1], "openai-embed", default_url)
    opts = convert_options("openai-embed", raw, _OPENAI_EMBED_OPTIONS)
    retry = RetryPolicy(max_retries=opts.pop("max_retries", RetryPolicy.max_retries))
    return OpenAIEmbedder(model, url, retry=retry, **opts)


# --------------------------------------------------------------------------- LLMs
def llm_specs() -> str:
    """The LLM spec forms, for messages (imports every registered backend module)."""
    forms = ["extractive"] + [importlib.import_module(m).SPEC for m in LLM_BACKENDS.values()]
    return f"{', '.join(forms[:-1])}, or {forms[-1]}"


def make_llm(
    spec: str | LLM | None = None,
    *,
    cache_path: str | Path | None = None,
    use_cache: bool = True,
    **options: Any,
) -> LLM:
    """Build an LLM backend from a spec string (or pass an LLM through).

    Parameters
    ----------
    spec:
        See the module docstring; default ``GRAPHSTRATA_LLM``, else ``extractive``.
    cache_path:
        SQLite response cache for the generative backends (``INDEX/llm-cache.sqlite``).
    use_cache:
        ``False`` bypasses the cache (``--no-cache``).
    options:
        Backend options (override those in the spec).

    Raises
    ------
    ConfigError
        For an unknown spec or option, or ``vllm`` without vLLM installed.
    """
    if spec is not None and not isinstance(spec, str):
        return spec
    spec = (spec or os.environ.get("GRAPHSTRATA_LLM") or DEFAULT_LLM).strip()
    spec, raw = split_options(spec)
    if "api_key" in raw:
        raise ConfigError(
            "an API key does not belong in a spec (specs are recorded in the index): set "
            "GRAPHSTRATA_API_KEY or OPENAI_API_KEY, or pass api_key= to the Python API"
        )
    raw = {**raw, **options}
    spec = LLM_ALIASES.get(spec, spec)
    if spec == "extractive":
        if raw:
            raise ConfigError(f"the extractive backend takes no options, got {sorted(raw)}")
        return ExtractiveLLM()
    prefix, sep, body = spec.partition(":")
    module = LLM_BACKENDS.get(prefix) if sep else None
    if module is None:
        raise ConfigError(f"unknown LLM backend {spec!r}; use {llm_specs()}")
    llm: LLM = importlib.import_module(module).from_spec(body, raw)
    if cache_path is not None and use_cache:
        from graphstrata.bindings.llm.cache import CachedLLM

        return CachedLLM(llm, cache_path)
    return llm


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
