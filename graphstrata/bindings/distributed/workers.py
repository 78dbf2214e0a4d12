"""What runs on the cluster: model actors, the extractive LLM task and the chunking task.

A backend is described by a :class:`BackendSpec` (a spec string of
``bindings/registry.py``, or a picklable zero-argument callable that returns the backend)
and built where it runs, so a model is loaded once per actor and never shipped. The LLM
response cache stays on the driver (``llm_cache.CachedLLM`` wraps the Ray LLM there): only
the prompts it has not seen reach the cluster.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from graphstrata.bindings.distributed.arrow import (
    responses_table,
    table_requests,
    vectors_table,
)
from graphstrata.bindings.threads import apply as apply_threads
from graphstrata.engine import ChunkingConfig, DocumentError, chunk_text, coerce_document


@dataclass(frozen=True)
class BackendSpec:
    """A backend to build on a worker.

    Attributes
    ----------
    kind:
        ``"embedder"`` or ``"llm"``.
    spec:
        A spec string (``make_embedder`` / ``make_llm``), or a picklable zero-argument
        callable returning the backend (a class, a ``functools.partial``).
    """

    kind: str
    spec: str | Callable[[], Any]

    def build(self) -> Any:
        """The backend (an LLM never gets the cache here: the driver keeps it)."""
        if callable(self.spec):
            return self.spec()
        from graphstrata.bindings.registry import make_embedder, make_llm

        return make_embedder(self.spec) if self.kind == "embedder" else make_llm(self.spec)

    @property
    def stateless(self) -> bool:
        """The built-in ``extractive`` LLM: no model, so it runs in tasks, not actors."""
        return self.kind == "llm" and isinstance(self.spec, str) and self.spec == "extractive"


def describe(backend: Any) -> dict[str, Any]:
    """What the driver needs of a backend it does not hold (names, sizes, cache identity)."""
    info: dict[str, Any] = {"name": str(backend.name)}
    if hasattr(backend, "dim"):
        info["dim"] = int(backend.dim)
        info["max_input_tokens"] = int(backend.max_input_tokens)
        names = getattr(backend, "compatible_names", None)
        info["compatible_names"] = sorted(names) if names else [backend.name]
    else:
        info["backend"] = str(getattr(backend, "backend", backend.name.split(":", 1)[0]))
        info["model"] = str(getattr(backend, "model", backend.name))
    return info


def limit_threads(threads: int) -> None:
    """Run the models of this process with ``threads`` threads (``cluster.py`` says why): the
    ``worker`` thread budget of :mod:`graphstrata.bindings.threads` over ``threads`` cores,
    plus ``OMP_NUM_THREADS`` for an OpenMP runtime loaded later (torch's)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    apply_threads("worker", threads)


class ModelActor:
    """One model in one actor (wrapped with ``ray.remote`` by the pool).

    Parameters
    ----------
    spec:
        The backend to build (once, here).
    threads:
        Threads of the model on CPU (``None``: the library's default, e.g. on a GPU).
    """

    def __init__(self, spec: BackendSpec, threads: int | None = None):
        if threads is not None:
            limit_threads(threads)
        self.spec = spec
        # A spec that cannot be built (a ConfigError) is raised by every call, so the driver
        # sees the error itself; raised here, Ray would report only that the actor died.
        self.failure: Exception | None = None
        try:
            self.backend = spec.build()
        except Exception as exc:
            self.failure, self.backend = exc, None

    def _backend(self) -> Any:
        if self.failure is not None:
            raise self.failure
        return self.backend

    def describe(self) -> dict[str, Any]:
        """:func:`describe` of the actor's backend."""
        return describe(self._backend())

    def embed(self, table: pa.Table) -> pa.Table:
        """``(pos, text)`` rows -> ``(pos, vector)`` rows."""
        texts = table.column("text").to_pylist()
        return vectors_table(table.column("pos"), np.asarray(self._backend().embed(texts)))

    def complete(self, table: pa.Table) -> pa.Table:
        """Prompt rows -> answer rows (the backend's own concurrency inside the piece)."""
        answers = self._backend().complete(table_requests(table))
        return responses_table(table.column("pos"), answers)

    def close(self) -> None:
        """Close the backend (HTTP client, engine) before the actor is killed."""
        close = getattr(self.backend, "close", None)
        if callable(close):
            close()


#: One stateless backend per worker process and spec (tasks reuse their worker).
_TASK_BACKENDS: dict[str, Any] = {}


def extractive_batch(batch: pa.Table, spec: BackendSpec) -> pa.Table:
    """Ray Data ``map_batches`` function: answer a block of prompts with a stateless LLM."""
    key = repr(spec.spec)
    backend = _TASK_BACKENDS.get(key)
    if backend is None:
        backend = _TASK_BACKENDS[key] = spec.build()
    answers = backend.complete(table_requests(batch))
    return responses_table(batch.column("pos"), answers)


def chunk_counts(batch: pa.Table, chunking: ChunkingConfig) -> pa.Table:
    """Ray Data function: ``(pos, text)`` -> ``(pos, n_chunks, chunk_tokens)`` per document.

    The same ``chunk_text`` as the engine's write path, so the counts are the chunks the
    engine will record (the build checks that they are).
    """
    n_chunks: list[int] = []
    tokens: list[int] = []
    for text in batch.column("text").to_pylist():
        chunks = chunk_text(text, chunking)
        n_chunks.append(len(chunks))
        tokens.append(sum(c.tokens for c in chunks))
    return pa.table(
        {
            "pos": batch.column("pos"),
            "n_chunks": pa.array(n_chunks, pa.int64()),
            "chunk_tokens": pa.array(tokens, pa.int64()),
        }
    )


#: Rows of :func:`coerce_rows`: a document as JSON-safe columns, or the problem with it.
DOC_COLUMNS = ("doc_id", "text", "title", "metadata", "source", "problem")


def coerce_rows(batch: pa.Table, where: str) -> pa.Table:
    """Ray Data function over Parquet rows: ``coerce_document`` on each (the JSONL rules).

    Parameters
    ----------
    batch:
        Rows with ``doc_id`` and ``text`` columns (``title``, ``metadata``, ``source``
        optional).
    where:
        The source's name, for the problems.

    Returns
    -------
    pyarrow.Table
        :data:`DOC_COLUMNS`; ``metadata`` as JSON text, ``problem`` set (and the rest empty)
        for a row ``coerce_document`` rejects.
    """
    out: dict[str, list[Any]] = {name: [] for name in DOC_COLUMNS}
    for row in batch.to_pylist():
        try:
            doc = coerce_document(row, where)
        except DocumentError as exc:
            for name in DOC_COLUMNS:
                out[name].append("")
            out["problem"][-1] = "; ".join(exc.problems)
            continue
        out["doc_id"].append(doc.doc_id)
        out["text"].append(doc.text)
        out["title"].append(doc.title)
        out["metadata"].append(json.dumps(dict(doc.metadata), default=str, ensure_ascii=False))
        out["source"].append(doc.source)
        out["problem"].append(None)
    return pa.table({k: pa.array(v, pa.large_string()) for k, v in out.items()})
