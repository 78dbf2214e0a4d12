"""The public Python API: ``graphstrata.Index``.

>>> from graphstrata import Index
>>> index = Index.create("my-index")                 # packaged MiniLM + extractive LLM
>>> index.insert([{"doc_id": "a", "text": "..."}])   # or index.insert_path("docs/")
>>> result = index.query("who founded X?", mode="naive", budget_tokens=1000)
>>> [(h.kind, h.docs, h.text) for h in result.nodes]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphstrata.bindings.registry import Backends, resolve_backends
from graphstrata.engine.config import IndexConfig, SearchConfig
from graphstrata.engine.documents import read_documents
from graphstrata.engine.index import Engine, QueryResult
from graphstrata.engine.interfaces import LLM, Embedder
from graphstrata.engine.report import OperationReport
from graphstrata.engine.store import Store

if TYPE_CHECKING:
    from graphstrata.bindings.warmup import WarmupReport

LLM_CACHE_FILE = "llm-cache.sqlite"

__all__ = ["LLM_CACHE_FILE", "Backends", "Index", "resolve_backends"]


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
        """Create an empty index at ``path`` (which must not hold one).

        The backends follow :func:`resolve_backends` (argument, then ``GRAPHSTRATA_*``, then
        the config); the names of those chosen are recorded in the index.
        """
        cfg = _config(config)
        chosen = resolve_backends(
            embedder,
            llm,
            recorded_embedder=cfg.embedder,
            recorded_llm=cfg.llm,
            cache_path=Path(path) / LLM_CACHE_FILE,
            use_cache=use_cache,
        )
        cfg.embedder = chosen.embedder.name
        cfg.llm = chosen.llm.name
        return cls(Engine.create(path, cfg, chosen.embedder, chosen.llm))

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        embedder: str | Embedder | None = None,
        llm: str | LLM | None = None,
        version: int | None = None,
        use_cache: bool = True,
        search: SearchConfig | None = None,
    ) -> Index:
        """Open an existing index (the newest version, or a pinned ``version``).

        The backends follow :func:`resolve_backends`: the LLM is the argument, else
        ``GRAPHSTRATA_LLM``, else the one recorded in the index; the embedder is the one that
        built the index unless the argument or ``GRAPHSTRATA_EMBEDDER`` names a compatible one.
        ``search`` replaces the query defaults recorded at creation (budget, top k, HNSW
        expansion) for this process, e.g. ``SearchConfig()`` for this release's defaults;
        the index keeps its own.

        Raises
        ------
        ConfigError
            When the embedder given (or from the environment) is not the one that built it.
        """
        manifest = Store.open(path, version=version).manifest
        chosen = resolve_backends(
            embedder,
            llm,
            recorded_embedder=manifest["embedder"]["name"],
            recorded_llm=manifest["config"].get("llm"),
            built_with=manifest["embedder"],
            cache_path=Path(path) / LLM_CACHE_FILE,
            use_cache=use_cache,
        )
        return cls(Engine.open(path, chosen.embedder, chosen.llm, version=version, search=search))

    @classmethod
    def open_or_create(
        cls, path: str | Path, config: IndexConfig | dict[str, Any] | None = None, **kwargs: Any
    ) -> Index:
        """:meth:`open` the index at ``path`` if it holds one, else :meth:`create` it.

        Parameters
        ----------
        path:
            The index directory.
        config:
            The config of a new index (ignored when one exists).
        kwargs:
            ``embedder``, ``llm``, ``use_cache`` (and ``version`` when opening).
        """
        if (Path(path) / "manifest.json").exists():
            return cls.open(path, **kwargs)
        return cls.create(path, config, **kwargs)

    # ------------------------------------------------------------------ writes
    def insert(
        self, docs: Iterable[Any], progress: Callable[[str, int, int], None] | None = None
    ) -> OperationReport:
        """Insert or update documents; an unchanged document is a no-op.

        Parameters
        ----------
        docs:
            Dicts with ``doc_id``, ``text``, ``title``?, ``metadata``? (or ``Document``).
        progress:
            ``progress(stage, done, total)`` on long work.

        Returns
        -------
        OperationReport
            What was written and what it cost.

        Raises
        ------
        DocumentError
            When a document is invalid (nothing is written).
        """
        return self.engine.insert(docs, progress=progress)

    def insert_path(
        self, source: str | Path, progress: Callable[[str, int, int], None] | None = None
    ) -> OperationReport:
        """Insert a folder of .txt/.md files (doc_id = relative path) or a JSONL file.

        Parameters
        ----------
        source:
            The folder or ``.jsonl`` file.
        progress:
            As for :meth:`insert`.

        Returns
        -------
        OperationReport
            As for :meth:`insert`.
        """
        return self.engine.insert(list(read_documents(source)), progress=progress)

    def delete(self, doc_ids: Sequence[str], missing_ok: bool = False) -> OperationReport:
        """Delete documents by id.

        Parameters
        ----------
        doc_ids:
            The documents to delete.
        missing_ok:
            Ignore ids that are not in the index (else ``DocumentError``).

        Returns
        -------
        OperationReport
            What was removed.
        """
        return self.engine.delete(list(doc_ids), missing_ok=missing_ok)

    def maintain(self, wait: float = 0.0) -> OperationReport:
        """Redo over the whole index what writes do locally (``Engine.maintain``): the
        heterograph's important entities and its Leiden communities over the whole graph.

        Parameters
        ----------
        wait:
            Seconds to wait for the index lock if a running service holds it.
        """
        return self.engine.maintain(wait=wait)

    def compact(self, wait: float = 0.0) -> OperationReport:
        """Merge segments and rewrite the vector cache (results do not change).

        ``wait``: seconds to wait for another writer (e.g. a running service) to let go of
        the index lock; 0 fails at once.
        """
        return self.engine.compact(wait=wait)

    @staticmethod
    def warmup(progress: Callable[[str, float], None] | None = None) -> WarmupReport:
        """Compile (or load from Numba's cache) every kernel the engine uses, so that the
        first query of a process does not pay for it (:func:`graphstrata.bindings.warmup.warmup`;
        the cache directory follows ``NUMBA_CACHE_DIR``).
        """
        from graphstrata.bindings.warmup import warmup

        return warmup(progress)

    # ------------------------------------------------------------------ reads
    def query(
        self,
        text: str,
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        **params: Any,
    ) -> QueryResult:
        """Retrieve a context for ``text`` with one search mode.

        Parameters
        ----------
        text:
            The question.
        mode:
            A mode of :attr:`modes`.
        budget_tokens, top_k:
            Token budget of the context and vector candidates per kind (default: the config's).
        params:
            The mode's typed parameters (``Engine.mode_params[mode]``, e.g. ``bias_share``).

        Returns
        -------
        QueryResult
            The retrieved nodes and the query's report.

        Raises
        ------
        QueryError
            On an unknown mode, unknown or ill-typed parameters, a bad budget or top-k, or an
            empty query.
        """
        return self.engine.query(text, mode, budget_tokens, top_k, **params)

    def query_batch(
        self,
        texts: Sequence[str],
        mode: str = "naive",
        budget_tokens: int | None = None,
        top_k: int | None = None,
        **params: Any,
    ) -> list[QueryResult]:
        """:meth:`query` for many questions, embedded in one call (one result per question)."""
        return self.engine.query_batch(texts, mode, budget_tokens, top_k, **params)

    def answer(
        self, text: str, mode: str = "naive", budget_tokens: int | None = None, **params: Any
    ) -> QueryResult:
        """Retrieve as :meth:`query` (``top_k`` may be among ``params``), then answer with the LLM.

        Returns
        -------
        QueryResult
            With ``answer`` set.

        Raises
        ------
        QueryError
            As for :meth:`query`.
        LLMError
            When the LLM backend fails.
        """
        return self.engine.answer(text, mode, budget_tokens, **params)

    def evaluate(
        self,
        qa: str | Path | Iterable[Any],
        modes: str | Sequence[str] | None = None,
        budget_tokens: int = 2000,
        limit: int | None = None,
        top_k: int | None = None,
        answers: bool = False,
    ) -> Any:
        """Retrieval quality of each mode on a QA set (see :mod:`graphstrata.evaluation`).

        Parameters
        ----------
        qa:
            A QA JSONL file or QA items.
        modes:
            Modes to evaluate (default: every served mode).
        budget_tokens, limit, top_k:
            Token budget, first N questions, candidates per query.
        answers:
            Also answer each question with the index's LLM and score the gold answer's
            containment in the generated answer (``gen. answer``).

        Returns
        -------
        EvalResult
            ``.to_dict()`` for JSON, ``.table()`` for a readable table.
        """
        from graphstrata.evaluation import evaluate

        return evaluate(
            self.engine, qa, modes, budget_tokens, limit=limit, top_k=top_k, answers=answers
        )

    def stats(self) -> dict[str, Any]:
        """Documents, nodes per kind, edges, segments, size, backends and modes."""
        return self.engine.stats()

    def refresh(self) -> bool:
        """Switch to the newest committed version if another process wrote one."""
        return self.engine.refresh()

    @property
    def version(self) -> int:
        """The committed version being read."""
        return self.engine.version

    @property
    def modes(self) -> list[str]:
        """The search modes this index serves."""
        return self.engine.modes

    @property
    def path(self) -> Path:
        """The index directory."""
        return self.engine.store.root
