"""The public Python API: ``graphstrata.Index``.

>>> from graphstrata import Index
>>> index = Index.create("my-index")                 # packaged MiniLM + extractive LLM
>>> index.insert([{"doc_id": "a", "text": "..."}])   # or index.insert_path("docs/")
>>> result = index.query("who founded X?", mode="naive", budget_tokens=1000)
>>> [(h.kind, h.docs, h.text) for h in result.nodes]
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphstrata.bindings.documents import DocumentsAPI
from graphstrata.bindings.files import FileBatch, read_source
from graphstrata.bindings.querying import QueryAPI
from graphstrata.bindings.rebuild import RebuildError, rebuild
from graphstrata.bindings.registry import LLM_CACHE_FILE, Backends, resolve_backends
from graphstrata.bindings.rerank import resolve_reranker
from graphstrata.engine import (
    LLM,
    MANIFEST,
    Answer,
    BackendError,
    ConfigError,
    Document,
    DocumentError,
    EdgeKind,
    Embedder,
    EmbedderError,
    Engine,
    IndexConfig,
    IndexLockedError,
    IngestConfig,
    LLMError,
    ModeParams,
    NodeKind,
    OperationReport,
    PinnedVersion,
    PromptConfig,
    QueryError,
    QueryResult,
    Reranker,
    RerankerError,
    SearchConfig,
    StoreError,
    StoreWriteError,
    as_documents,
    citations,
    conversation_query,
    live_writer,
    read_documents,
    read_version,
    sources_footer,
    stored_manifest,
    stream_pieces,
    validate_batch,
    verify_files,
)
from graphstrata.evaluation import QAError, load_qa

if TYPE_CHECKING:
    from graphstrata.bindings.warmup import WarmupReport

#: What the CLI, the server and integrations use beside :class:`Index` (they import nothing
#: else of the engine or the evaluation).
__all__ = [
    "LLM",
    "LLM_CACHE_FILE",
    "MANIFEST",
    "Answer",
    "BackendError",
    "Backends",
    "ConfigError",
    "Document",
    "DocumentError",
    "EdgeKind",
    "Embedder",
    "EmbedderError",
    "Index",
    "IndexConfig",
    "IndexLockedError",
    "IngestConfig",
    "LLMError",
    "ModeParams",
    "NodeKind",
    "OperationReport",
    "PinnedVersion",
    "PromptConfig",
    "QAError",
    "QueryError",
    "QueryResult",
    "RebuildError",
    "Reranker",
    "RerankerError",
    "SearchConfig",
    "StoreError",
    "StoreWriteError",
    "as_documents",
    "citations",
    "conversation_query",
    "load_qa",
    "read_documents",
    "read_source",
    "resolve_backends",
    "sources_footer",
    "stream_pieces",
    "validate_batch",
]


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


class Index(DocumentsAPI, QueryAPI):
    """An index on disk with its embedder and LLM. Thread-safe for concurrent queries."""

    def __init__(self, engine: Engine):
        self._engine = engine

    @property
    def engine(self) -> Engine:
        """The engine underneath, for tests and tools that study its internals; the CLI, the
        server and integrations use this class's methods only."""
        return self._engine

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
        reranker: str | Reranker | None = None,
    ) -> Index:
        """Create an empty index at ``path`` (which must not hold one).

        The backends follow :func:`resolve_backends` (argument, then ``GRAPHSTRATA_*``, then
        the config); the names of those chosen are recorded in the index. ``reranker``: as
        for :meth:`open`.
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
        reranks = resolve_reranker(reranker, cfg.search.reranker)
        return cls(Engine.create(path, cfg, chosen.embedder, chosen.llm, reranker=reranks))

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
        reranker: str | Reranker | None = None,
    ) -> Index:
        """Open an existing index (the newest version, or a pinned ``version``).

        The backends follow :func:`resolve_backends`: the LLM is the argument, else
        ``GRAPHSTRATA_LLM``, else the one recorded in the index; the embedder is the one that
        built the index unless the argument or ``GRAPHSTRATA_EMBEDDER`` names a compatible one.
        ``search`` replaces the query defaults recorded at creation (budget, top k, HNSW
        expansion) for this process, e.g. ``SearchConfig()`` for this release's defaults;
        the index keeps its own. ``reranker`` (a spec of :mod:`graphstrata.bindings.rerank`
        or a :class:`Reranker`; ``""`` none) rescores the top ``rerank_candidates`` of each
        query; else ``GRAPHSTRATA_RERANKER``, else ``search.reranker`` (docs/guide/rerank.md).

        Raises
        ------
        ConfigError
            When the embedder given (or from the environment) is not the one that built it.
        """
        manifest = stored_manifest(path, version)
        chosen = resolve_backends(
            embedder,
            llm,
            recorded_embedder=manifest["embedder"]["name"],
            recorded_llm=manifest["config"].get("llm"),
            built_with=manifest["embedder"],
            cache_path=Path(path) / LLM_CACHE_FILE,
            use_cache=use_cache,
        )
        recorded = (
            search.reranker if search else manifest["config"].get("search", {}).get("reranker")
        )
        engine = Engine.open(
            path,
            chosen.embedder,
            chosen.llm,
            version=version,
            search=search,
            reranker=resolve_reranker(reranker, recorded),
        )
        return cls(engine)

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

    @classmethod
    def rebuild(
        cls,
        path: str | Path,
        source: str | Path,
        config: IndexConfig | dict[str, Any] | None = None,
        *,
        force: bool = True,
        embedder: str | Embedder | None = None,
        llm: str | LLM | None = None,
        use_cache: bool = True,
        progress: Callable[[str, int, int], None] | None = None,
        ray: Any = None,
        on_recover: Callable[[str], None] | None = None,
    ) -> OperationReport:
        """Build an index of ``source`` beside ``path`` and swap it in once committed.

        The source is read and validated before anything on disk changes; the new index is
        built in a hidden sibling of ``path`` (with the old one's LLM cache copied in) and
        renamed in holding the old index's writer lock; a failed build leaves ``path`` as it
        was, keeping the LLM answers it paid for. A swap killed half-way is undone at the
        next rebuild. (:mod:`graphstrata.bindings.rebuild` has the whole contract.)

        Parameters
        ----------
        path:
            The index directory: absent, empty, or (with ``force``) holding an index.
        source:
            A ``.jsonl`` file, or a file or folder of files (:meth:`insert_files`; a file
            that gives no document fails alone, in the report's ``files``).
        config:
            The new index's config.
        force:
            Replace an index at ``path`` (else ``RebuildError``).
        embedder, llm, use_cache:
            As for :meth:`create`.
        progress:
            ``progress(stage, done, total)`` while inserting.
        ray:
            A ``graphstrata.bindings.distributed.RaySession``, entered here once ``path``
            passed its checks and left at the end: the source is prepared and the model work
            runs on its cluster.
        on_recover:
            Told one line per leftover of an earlier interrupted rebuild that was cleaned up.

        Returns
        -------
        OperationReport
            The insert's report (open the index with :meth:`open`).

        Raises
        ------
        RebuildError
            When ``path`` may not be (re)built, or ``source`` holds no documents.
        DocumentError
            When no file of ``source`` gives a document (each one named with its cause).
        DocumentError
            When a document is invalid (nothing changed).
        IndexLockedError
            While a server is registered as a live writer of ``path`` (named: pid, command),
            or when another writer committed to ``path`` while the rebuild ran (the build is
            discarded; nothing changed).
        """
        cfg = _config(config)
        backends: dict[str, Any] = {"embedder": embedder, "llm": llm, "use_cache": use_cache}
        with contextlib.ExitStack() as stack:
            if ray is None:
                batch: list[FileBatch] = []

                def read() -> list[Document]:
                    batch.append(read_source(source, cfg.ingest))
                    return batch[0].docs

                return rebuild(
                    Path(path),
                    source,
                    cfg,
                    force=force,
                    prepare=read,
                    create=lambda stage: cls.create(stage, cfg, **backends),
                    insert=lambda index, _: index.insert_parsed(batch[0], progress=progress),
                    on_recover=on_recover,
                )
            prepared: list[Any] = []

            def prepare() -> list[Document]:
                # The cluster is connected only once the target passed its checks.
                prepared.append(stack.enter_context(ray).prepare(source, cfg))  # validated there
                return list(prepared[0].docs)

            def create(stage: Path) -> Index:
                ray.meter.progress = progress
                return ray.create(stage, cfg, **backends)

            return rebuild(
                Path(path),
                source,
                cfg,
                force=force,
                prepare=prepare,
                create=create,
                insert=lambda index, _: ray.insert(index, prepared[0], progress).report,
                on_recover=on_recover,
            )

    def close(self) -> None:
        """Close the LLM and the embedder (the LLM cache's SQLite file first of all); the
        index is not used afterwards. Failures to close are ignored."""
        for backend in (self._engine.llm, self._engine.embedder):
            close = getattr(backend, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()

    @staticmethod
    def verify_files(path: str | Path, all_versions: bool = False) -> tuple[int, Any]:
        """Hash every file of the index at ``path`` (``graphstrata check``).

        Returns
        -------
        tuple
            ``(version, check)``: the current version, and the check (``ok``, ``files``,
            ``problems``).
        """
        return verify_files(path, all_versions)

    @staticmethod
    def read_version(path: str | Path) -> PinnedVersion:
        """The newest version of the index at ``path`` as a read view, without backends."""
        return read_version(path)

    # ------------------------------------------------------------------ writes
    def insert(
        self,
        docs: Iterable[Any],
        progress: Callable[[str, int, int], None] | None = None,
        wait: float = 0.0,
    ) -> OperationReport:
        """Insert or update documents; an unchanged document is a no-op.

        Parameters
        ----------
        docs:
            Dicts with ``doc_id``, ``text``, ``title``?, ``metadata``? (or ``Document``).
        progress:
            ``progress(stage, done, total)`` on long work.
        wait:
            Seconds to wait for the index lock while another writer (a server) holds it; the
            lock is taken only to commit (the embeddings and LLM work are done before).

        Returns
        -------
        OperationReport
            What was written and what it cost.

        Raises
        ------
        DocumentError
            When a document is invalid (nothing is written).
        """
        return self._engine.insert(docs, progress=progress, wait=wait)

    def insert_path(
        self, source: str | Path, progress: Callable[[str, int, int], None] | None = None
    ) -> OperationReport:
        """Insert a JSONL file (every line checked: one bad line rejects the batch), or a
        file or folder of files as :meth:`insert_files` (each file on its own).

        Parameters
        ----------
        source:
            The ``.jsonl`` file, the file or the folder.
        progress:
            As for :meth:`insert`.

        Returns
        -------
        OperationReport
            As for :meth:`insert`.
        """
        return self.insert_parsed(read_source(source, self.config.ingest), progress)

    def delete(
        self,
        doc_ids: Sequence[str],
        missing_ok: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
        wait: float = 0.0,
    ) -> OperationReport:
        """Delete documents by id.

        Parameters
        ----------
        doc_ids:
            The documents to delete.
        missing_ok:
            Ignore ids that are not in the index (else ``DocumentError``).
        progress:
            ``progress(stage, done, total)`` as each write stage starts and ends.
        wait:
            As for :meth:`insert`.

        Returns
        -------
        OperationReport
            What was removed.
        """
        return self._engine.delete(
            list(doc_ids), missing_ok=missing_ok, progress=progress, wait=wait
        )

    def maintain(self, wait: float = 0.0) -> OperationReport:
        """Redo over the whole index what writes do locally (``Engine.maintain``): the
        heterograph's important entities and its Leiden communities over the whole graph.

        Parameters
        ----------
        wait:
            Seconds to wait for the index lock if a running service holds it.
        """
        return self._engine.maintain(wait=wait)

    def compact(self, wait: float = 0.0) -> OperationReport:
        """Merge segments and rewrite the vector cache (results do not change).

        ``wait``: seconds to wait for another writer (e.g. a running service) to let go of
        the index lock; 0 fails at once.
        """
        return self._engine.compact(wait=wait)

    @staticmethod
    def warmup(progress: Callable[[str, float], None] | None = None) -> WarmupReport:
        """Compile (or load from Numba's cache) every kernel the engine uses, so that the
        first query of a process does not pay for it (:func:`graphstrata.bindings.warmup.warmup`;
        the cache directory follows ``NUMBA_CACHE_DIR``).
        """
        from graphstrata.bindings.warmup import warmup

        return warmup(progress)

    # ------------------------------------------------------------------ reads
    def evaluate(
        self,
        qa: str | Path | Iterable[Any],
        modes: str | Sequence[str] | None = None,
        budget_tokens: int = 2000,
        limit: int | None = None,
        top_k: int | None = None,
        answers: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
        baseline: str | None = None,
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
        progress:
            ``progress(stage, done, total)`` after each batch of questions.
        baseline:
            A mode among ``modes``: the others get paired bootstrap 95 % intervals of their
            difference to it (``EvalResult.comparisons``).

        Returns
        -------
        EvalResult
            ``.to_dict()`` for JSON, ``.table()`` for a readable table.
        """
        from graphstrata.evaluation import evaluate

        return evaluate(
            self.engine,
            qa,
            modes,
            budget_tokens,
            limit=limit,
            top_k=top_k,
            answers=answers,
            progress=progress,
            baseline=baseline,
        )

    def stats(self) -> dict[str, Any]:
        """Documents, nodes per kind, edges, segments, size, backends and modes."""
        return self._engine.stats()

    def refresh(self) -> bool:
        """Switch to the newest committed version if another process wrote one (never to an
        older one than the version served)."""
        return self._engine.refresh()

    def live_writer(self, command: str) -> contextlib.AbstractContextManager[None]:
        """Register this process as a long-lived writer of the index while the block runs.

        ``graphstrata index --force`` (:meth:`rebuild`) refuses to replace an index with a
        registered writer, naming its pid and ``command``: the writes it acknowledges would
        be lost with the old directory.

        Raises
        ------
        OSError
            When the index folder is read-only.
        """
        return live_writer(self.path, command)

    @property
    def version(self) -> int:
        """The committed version being read."""
        return self._engine.version

    @property
    def modes(self) -> list[str]:
        """The search modes this index serves."""
        return self._engine.modes

    @property
    def path(self) -> Path:
        """The index directory."""
        return self._engine.store.root

    @property
    def config(self) -> IndexConfig:
        """The index's config (its query defaults as opened)."""
        return self._engine.config

    @property
    def embedder(self) -> Embedder:
        """The embedder that embeds documents and questions."""
        return self._engine.embedder

    @property
    def llm(self) -> LLM:
        """The LLM backend of answers (and of the index's LLM stages)."""
        return self._engine.llm

    @property
    def mode_params(self) -> dict[str, type[ModeParams]]:
        """Each served mode's parameters class."""
        return self._engine.mode_params

    def parse_params(self, mode: str, params: dict[str, Any]) -> ModeParams:
        """The typed parameters of ``mode`` from user input.

        Raises
        ------
        QueryError
            For an unknown mode, or unknown or ill-typed parameters.
        """
        return self._engine.parse_params(mode, params)

    def pinned(self) -> PinnedVersion:
        """A read view of the version served now (nodes, edges, documents), kept while
        writers commit newer versions: the look-ups of one request read one version."""
        return self._engine.pinned()
