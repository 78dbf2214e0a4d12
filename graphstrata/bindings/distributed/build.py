"""The distributed build: :class:`RaySession`, :func:`build_index`, :func:`insert`.

One build is: connect to the cluster, prepare the documents (``documents.prepare``: read,
validate, chunk in tasks), start one embedding pool and one LLM pool (or tasks), then run the
ordinary ``Engine.insert`` on the driver with those backends. Every global stage (LSH
partition per layer, entity merging, k-core, betweenness, Leiden, K-means, semantic edges)
and the one writer are the single-machine code, unchanged, so the index is the one a
single-process build of the same corpus with the same backends writes; only the batches of
model work leave the driver.

Backends follow the one precedence rule (``backend_choice.choose_spec``: argument >
``GRAPHSTRATA_*`` > the index's or config's > default), and an existing index accepts only a
compatible embedder (the engine's ``check_embedder``). The LLM response cache is the
index's ``llm-cache.sqlite``, on the driver, exactly as on one machine (generative specs are
cached, ``extractive`` and factories are not): a rerun after a failure, or a rebuild, pays
only for prompts it has not seen.

Faults: a dead actor or task is Ray's to retry (``pool.py``); any error before the commit
leaves the index at its last committed version (the store's guarantee: the commit is one
atomic manifest swap), including a driver killed outright, after which the writer lock
(``flock``) is free and the next run starts cleanly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from graphstrata.bindings.api import LLM_CACHE_FILE, Index
from graphstrata.bindings.distributed.backends import (
    RayEmbedder,
    RayLLM,
    close_quietly,
    embedding_pool,
    llm_gpus,
    llm_pool,
)
from graphstrata.bindings.distributed.cluster import Cluster, RayOptions, connect
from graphstrata.bindings.distributed.documents import PreparedDocs, prepare
from graphstrata.bindings.distributed.pool import Meter, ProgressFn, StageStats
from graphstrata.bindings.distributed.workers import BackendSpec
from graphstrata.bindings.llm.cache import CachedLLM
from graphstrata.bindings.registry import (
    DEFAULT_EMBEDDER,
    DEFAULT_LLM,
    EMBEDDER_ENV,
    LLM_ENV,
    choose_spec,
)
from graphstrata.engine import LLM, IndexConfig, OperationReport, check_embedder, stored_manifest

#: A backend given to the Python entry points: a spec string or a zero-argument factory.
BackendArg = str | Callable[[], Any] | None


@dataclass
class DistributedReport:
    """What a distributed build or insert did.

    Attributes
    ----------
    report:
        The engine's ``OperationReport`` (its ``notes`` end with one line per Ray stage).
    stages:
        Rows, calls and seconds per stage on the cluster (``read``, ``chunk``, ``embed``,
        ``llm:TASK``).
    cluster:
        ``{"cpus", "gpus", "actors"}`` seen at connection time.
    """

    report: OperationReport
    stages: dict[str, StageStats] = field(default_factory=dict)
    cluster: dict[str, float] = field(default_factory=dict)


def _spec(
    kind: str, value: BackendArg, env: str, recorded: str | None, default: str
) -> tuple[BackendSpec, str]:
    if value is not None and not isinstance(value, str) and not callable(value):
        raise TypeError(
            f"a distributed build needs the {kind} as a spec string or a zero-argument "
            f"factory (it is built on every worker), got {type(value).__name__}"
        )
    chosen, source = choose_spec(value, os.environ.get(env), recorded, default)
    return BackendSpec(kind, chosen), source


class RaySession:
    """A connection to the cluster, the build's meter and the pools it started.

    Use as a context manager: leaving it kills the pools and, if it started the cluster,
    shuts it down.

    Parameters
    ----------
    options:
        Cluster use (address, actors, batch sizes, retries).
    progress:
        ``progress(stage, done, total)``; each Ray stage reports as ``"STAGE rows"``.
    """

    def __init__(self, options: RayOptions | None = None, progress: ProgressFn | None = None):
        self.options = options or RayOptions()
        self.meter = Meter(progress)
        self._connection = connect(self.options)
        self.cluster: Cluster | None = None
        self._backends: list[Any] = []

    def __enter__(self) -> RaySession:
        self.cluster = self._connection.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        close_quietly(*self._backends)
        self._backends.clear()
        self._connection.__exit__(kind, exc, tb)

    def _cluster(self) -> Cluster:
        if self.cluster is None:
            raise RuntimeError("RaySession is used outside its `with` block")
        return self.cluster

    def prepare(self, source: str | Path, config: IndexConfig) -> PreparedDocs:
        """Read, validate and chunk ``source`` (``documents.prepare``).

        Call it before :meth:`create` / :meth:`open`: the chunking tasks then have the
        cluster's CPUs to themselves, and an invalid batch fails before any actor starts.
        """
        return prepare(source, config, self._cluster(), self.meter)

    def backends(
        self,
        embedder: BackendSpec,
        llm: BackendSpec,
        cache_path: Path | None,
        use_cache: bool,
    ) -> tuple[RayEmbedder, LLM]:
        """Start the pools; the LLM is wrapped in the index's response cache when generative."""
        cluster = self._cluster()
        emb_pool = embedding_pool(cluster, embedder, llm_gpus(cluster, llm))
        self._backends.append(emb_pool)
        lm_pool = llm_pool(cluster, llm)  # starts while the embedding actors load
        self._backends.append(lm_pool)
        emb = RayEmbedder(cluster, emb_pool, self.meter)
        ray_llm = RayLLM(cluster, llm, self.meter, lm_pool)
        cached = isinstance(llm.spec, str) and not llm.stateless
        if cache_path is not None and use_cache and cached:
            wrapped = CachedLLM(ray_llm, cache_path)
            self._backends.insert(0, wrapped.cache)  # closed before the pools
            return emb, wrapped
        return emb, ray_llm

    def create(
        self,
        path: str | Path,
        config: IndexConfig,
        *,
        embedder: BackendArg = None,
        llm: BackendArg = None,
        use_cache: bool = True,
    ) -> Index:
        """An empty index at ``path`` whose backends run on the cluster (``Index.create``)."""
        emb_spec, _ = _spec("embedder", embedder, EMBEDDER_ENV, config.embedder, DEFAULT_EMBEDDER)
        llm_spec, _ = _spec("llm", llm, LLM_ENV, config.llm, DEFAULT_LLM)
        emb, llm_obj = self.backends(emb_spec, llm_spec, Path(path) / LLM_CACHE_FILE, use_cache)
        return Index.create(path, config, embedder=emb, llm=llm_obj)

    def open(
        self,
        path: str | Path,
        *,
        embedder: BackendArg = None,
        llm: BackendArg = None,
        use_cache: bool = True,
    ) -> Index:
        """The index at ``path`` with backends on the cluster (``Index.open``'s rules)."""
        manifest = stored_manifest(path)
        emb_spec, source = _spec(
            "embedder", embedder, EMBEDDER_ENV, manifest["embedder"]["name"], DEFAULT_EMBEDDER
        )
        llm_spec, _ = _spec("llm", llm, LLM_ENV, manifest["config"].get("llm"), DEFAULT_LLM)
        emb, llm_obj = self.backends(emb_spec, llm_spec, Path(path) / LLM_CACHE_FILE, use_cache)
        if source in ("argument", "environment"):
            check_embedder(manifest, emb, given_by=f"the embedder {source}")
        return Index.open(path, embedder=emb, llm=llm_obj)

    def insert(
        self, index: Index, prepared: PreparedDocs, progress: ProgressFn | None = None
    ) -> DistributedReport:
        """``Engine.insert`` of the prepared documents; checks the chunking tasks' counts.

        Raises
        ------
        RuntimeError
            When the engine cut the documents into other chunks than the tasks did.
        """
        report = index.insert(prepared.docs, progress=progress)
        expected = int(prepared.n_chunks.sum())
        if report.docs_unchanged == 0 and report.chunks_added != expected:
            raise RuntimeError(
                f"the chunking tasks counted {expected} chunks but the engine wrote "
                f"{report.chunks_added}; the index was committed, rebuild it on one machine"
            )
        report.notes.extend(self.meter.notes())
        cluster = self._cluster()
        return DistributedReport(
            report=report,
            stages=dict(self.meter.stages),
            cluster={"cpus": cluster.cpus, "gpus": cluster.gpus, "actors": cluster.actors},
        )


def build_index(
    source: str | Path,
    out: str | Path,
    config: IndexConfig | None = None,
    *,
    embedder: BackendArg = None,
    llm: BackendArg = None,
    options: RayOptions | None = None,
    use_cache: bool = True,
    progress: ProgressFn | None = None,
) -> DistributedReport:
    """Build a new index of ``source`` at ``out`` on a Ray cluster.

    ``out`` must not hold an index (``Index.create``'s rule); the CLI's
    ``graphstrata index --ray`` adds the safe rebuild beside it (``cli/build.py``).

    Parameters
    ----------
    source:
        A ``.jsonl`` file, a folder of ``.txt``/``.md`` files, or Parquet.
    out:
        The new index directory.
    config:
        The index's config (default ``IndexConfig()``).
    embedder, llm:
        Spec strings or zero-argument factories (built on each worker).
    options:
        Cluster use (``RayOptions``; ``address`` picks the cluster).
    use_cache:
        Use ``out/llm-cache.sqlite`` for generative LLMs.
    progress:
        ``progress(stage, done, total)``.

    Returns
    -------
    DistributedReport
        The engine's report and the rows per stage.

    Raises
    ------
    DocumentError
        When a document is invalid (nothing is written).
    """
    cfg = IndexConfig() if config is None else config
    cfg.validate()
    with RaySession(options, progress) as session:
        prepared = session.prepare(source, cfg)
        index = session.create(out, cfg, embedder=embedder, llm=llm, use_cache=use_cache)
        return session.insert(index, prepared, progress)


def insert(
    index_path: str | Path,
    source: str | Path,
    *,
    embedder: BackendArg = None,
    llm: BackendArg = None,
    options: RayOptions | None = None,
    use_cache: bool = True,
    progress: ProgressFn | None = None,
) -> DistributedReport:
    """Insert or update the documents of ``source`` in an existing index, on a Ray cluster.

    Parameters are those of :func:`build_index`; the embedder defaults to the index's own.

    Returns
    -------
    DistributedReport
        As for :func:`build_index`.
    """
    with RaySession(options, progress) as session:
        # Chunking tasks first: once started, the pools may hold every CPU they may take.
        prepared = session.prepare(source, index_config(index_path))
        index = session.open(index_path, embedder=embedder, llm=llm, use_cache=use_cache)
        return session.insert(index, prepared, progress)


def index_config(path: str | Path) -> IndexConfig:
    """The config recorded in the index at ``path`` (its chunking and ingest limits)."""
    return IndexConfig.from_dict(stored_manifest(path)["config"])
