"""Shared fixtures: the sample corpus, fast deterministic backends, index factories."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import SAMPLE_JSONL

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Servers started by tests warm their own indexes only, not every kernel in a throwaway index
# (seconds of CPU per server); tests/unit/bindings/server/test_readiness.py covers "full".
os.environ.setdefault("GRAPHSTRATA_SERVE_WARMUP", "index")


@pytest.fixture(scope="session")
def sample_docs() -> list[dict[str, Any]]:
    """The 30 bundled sample documents as dicts (doc_id, title, text)."""
    with open(SAMPLE_JSONL, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="session")
def hashing_embedder():
    """A deterministic, model-free embedder (feature hashing) for fast pipeline tests."""
    from graphstrata.bindings.embed.models import HashingEmbedder

    return HashingEmbedder(64)


@pytest.fixture(scope="session")
def minilm_embedder():
    """The packaged all-MiniLM-L6-v2 on torch (loaded once per session; ~5 s); the tests that
    use it are skipped without the ``torch`` extra."""
    pytest.importorskip("sentence_transformers")
    from graphstrata.bindings.embed.models import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder("all-MiniLM-L6-v2")


@pytest.fixture
def make_index(tmp_path: Path, hashing_embedder) -> Callable[..., Any]:
    """Factory: ``make_index(config=None, embedder=None, llm=None, name="idx")`` -> Index."""
    from graphstrata.bindings.api import Index

    def factory(
        config: Any = None, embedder: Any = None, llm: Any = None, name: str = "idx"
    ) -> Index:
        return Index.create(tmp_path / name, config, embedder=embedder or hashing_embedder, llm=llm)

    return factory
