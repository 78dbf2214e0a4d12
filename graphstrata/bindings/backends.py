"""Backend specs -> backend objects, shared by the CLI, the Python API and the server.

Specs (also read from ``GRAPHSTRATA_LLM`` / ``GRAPHSTRATA_EMBEDDER``):

* LLM: ``extractive`` (default).
* Embedder: ``all-MiniLM-L6-v2`` (default, packaged), ``st:PATH_OR_NAME`` (any local
  sentence-transformers model), ``hashing[:DIM]`` (feature hashing, no model).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from graphstrata.bindings.embedders import (
    PACKAGED_MINILM,
    HashingEmbedder,
    SentenceTransformerEmbedder,
)
from graphstrata.bindings.extractive import ExtractiveLLM
from graphstrata.engine.config import ConfigError
from graphstrata.engine.interfaces import LLM, Embedder

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
DEFAULT_LLM = "extractive"


def make_embedder(spec: str | Embedder | None = None, **options: Any) -> Embedder:
    """Build an embedder from a spec string (or pass an Embedder through)."""
    if spec is not None and not isinstance(spec, str):
        return spec
    spec = spec or os.environ.get("GRAPHSTRATA_EMBEDDER") or DEFAULT_EMBEDDER
    if spec in PACKAGED_MINILM:
        return SentenceTransformerEmbedder(spec, **options)
    if spec.startswith("hashing"):
        _, _, dim = spec.partition(":")
        if not dim and spec.startswith("hashing-"):
            dim = spec.split("-", 1)[1]
        try:
            return HashingEmbedder(int(dim) if dim else 384)
        except ValueError as exc:
            raise ConfigError(f"bad embedder spec {spec!r}: expected hashing[:DIM]") from exc
    if spec.startswith("st:"):
        return SentenceTransformerEmbedder(spec[3:], **options)
    if Path(spec).exists():
        return SentenceTransformerEmbedder(spec, **options)
    raise ConfigError(
        f"unknown embedder {spec!r}; use all-MiniLM-L6-v2, st:PATH_OR_NAME, or hashing[:DIM]"
    )


def make_llm(
    spec: str | LLM | None = None,
    *,
    cache_path: str | Path | None = None,
    use_cache: bool = True,
    **options: Any,
) -> LLM:
    """Build an LLM backend from a spec string (or pass an LLM through)."""
    if spec is not None and not isinstance(spec, str):
        return spec
    spec = spec or os.environ.get("GRAPHSTRATA_LLM") or DEFAULT_LLM
    if spec == "extractive":
        return ExtractiveLLM()
    raise ConfigError(f"unknown LLM backend {spec!r}; use extractive")
