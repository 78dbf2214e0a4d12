"""The public Python API: ``graphstrata.Index``.

>>> from graphstrata import Index
>>> index = Index.create("my-index")                 # packaged MiniLM + extractive LLM
>>> index.insert([{"doc_id": "a", "text": "..."}])   # or index.insert_path("docs/")
>>> result = index.query("who founded X?", mode="naive", budget_tokens=1000)
>>> [(h.kind, h.docs, h.text) for h in result.nodes]
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from graphstrata.bindings.backends import make_embedder, make_llm
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.documents import read_documents
from graphstrata.engine.index import Engine, QueryResult
from graphstrata.engine.interfaces import LLM, Embedder
from graphstrata.engine.report import OperationReport
from graphstrata.engine.store import Store

LLM_CACHE_FILE = "llm-cache.sqlite"


def _config(config: IndexConfig | dict[str, Any] | None, **overrides: Any) -> IndexConfig:
    if config is None:
        cfg = IndexConfig()
    elif isinstance(config, IndexConfig):
        cfg = dataclasses.replace(config)
    else:
        cfg = IndexConfig.from_dict(config)
    for key, value in overrides.items():
        if value is not None:
            setattr(cfg, key, value)
    cfg.validate()
    return cfg


class Index:
    """An index on disk with its embedder and LLM. Thread-safe for concurrent queries."""

    def __init__(self, engine: Engine):
        self.engine = engine

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(
        cls,
        path: str | Path,
        config: IndexConfig | dict[str, Any] | None = None,
        *,
        embedder: str | Embedder | None = None,
        llm: str | LLM | None = None,
        use_cache: bool = True,
    ) -> Index:
        """Create an empty index at ``path`` (which must not hold one)."""
        cfg = _config(config)
        # Precedence: argument, then environment, then the config (whose defaults are the
        # packaged MiniLM and the extractive backend).
        env_embedder = os.environ.get("GRAPHSTRATA_EMBEDDER")
        emb = make_embedder(embedder if embedder is not None else env_embedder or cfg.embedder)
        cfg.embedder = emb.name
        llm_spec = llm if llm is not None else os.environ.get("GRAPHSTRATA_LLM") or cfg.llm
        llm_obj = make_llm(llm_spec, cache_path=Path(path) / LLM_CACHE_FILE, use_cache=use_cache)
        cfg.llm = llm_obj.name
        return cls(Engine.create(path, cfg, emb, llm_obj))

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        embedder: str | Embedder | None = None,
        llm: str | LLM | None = None,
        version: int | None = None,
        use_cache: bool = True,
    ) -> Index:
        """Open an existing index (the newest version, or a pinned ``version``)."""
        manifest = Store.open(path, version=version).manifest
        emb = make_embedder(embedder if embedder is not None else manifest["embedder"]["name"])
        llm_spec = llm if llm is not None else manifest["config"].get("llm", "extractive")
        llm_obj = make_llm(llm_spec, cache_path=Path(path) / LLM_CACHE_FILE, use_cache=use_cache)
        return cls(Engine.open(path, emb, llm_obj, version=version))

    @classmethod
    def open_or_create(
        cls, path: str | Path, config: IndexConfig | dict[str, Any] | None = None, **kwargs: Any
    ) -> Index:
        if (Path(path) / "manifest.json").exists():
            return cls.open(path, **kwargs)
        return cls.create(path, config, **kwargs)

    # ------------------------------------------------------------------ writes
    def insert(
        self, docs: Iterable[Any], progress: Callable[[str, int, int], None] | None = None
    ) -> OperationReport:
        """Insert documents (dicts with doc_id, text, title?, metadata? — or ``Document``)."""
        return self.engine.insert(docs, progress=progress)

    def insert_path(
        self, source: str | Path, progress: Callable[[str, int, int], None] | None = None
    ) -> OperationReport:
        """Insert a folder of .txt/.md files (doc_id = relative path) or a JSONL file."""
        return self.engine.insert(list(read_documents(source)), progress=progress)

    def delete(self, doc_ids: Sequence[str], missing_ok: bool = False) -> OperationReport:
        return self.engine.delete(list(doc_ids), missing_ok=missing_ok)

    def compact(self) -> OperationReport:
        return self.engine.compact()

    # ------------------------------------------------------------------ reads
    def query(
        self,
        text: str,
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        **params: Any,
    ) -> QueryResult:
        return self.engine.query(text, mode, budget_tokens, top_k, **params)

    def query_batch(
        self,
        texts: Sequence[str],
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        **params: Any,
    ) -> list[QueryResult]:
        return self.engine.query_batch(texts, mode, budget_tokens, top_k, **params)

    def answer(
        self, text: str, mode: str = "naive", budget_tokens: int | None = None, **params: Any
    ) -> QueryResult:
        return self.engine.answer(text, mode, budget_tokens, **params)

    def evaluate(
        self,
        qa: str | Path | Iterable[Any],
        modes: str | Sequence[str] | None = None,
        budget_tokens: int = 2000,
        limit: int | None = None,
        top_k: int | None = None,
    ) -> Any:
        """Retrieval quality of each mode on a QA set (see ``graphstrata.engine.evaluation``).

        Returns an ``EvalResult``: ``.to_dict()`` for JSON, ``.table()`` for a readable table.
        """
        from graphstrata.engine.evaluation import evaluate

        return evaluate(self.engine, qa, modes, budget_tokens, limit=limit, top_k=top_k)

    def stats(self) -> dict[str, Any]:
        return self.engine.stats()

    def refresh(self) -> bool:
        return self.engine.refresh()

    @property
    def version(self) -> int:
        return self.engine.version

    @property
    def modes(self) -> list[str]:
        return self.engine.modes

    @property
    def path(self) -> Path:
        return self.engine.store.root
