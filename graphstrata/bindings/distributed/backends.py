"""An ``Embedder`` and an ``LLM`` (``engine/interfaces.py``) whose work runs on the cluster.

The engine sees ordinary backends: the same ``name`` (so the index records the spec it
would record on one machine), ``dim``, ``max_input_tokens``, ``compatible_names``; an LLM
with the wrapped backend's ``backend`` and ``model`` (so ``llm_cache`` keys are the ones a
single-machine build writes and reads). Each call cuts its batch into Arrow pieces:

* embedding: pieces of ``RayOptions.embed_batch_rows`` over the embedding actor pool;
* LLM, ``extractive``: a Ray Data dataset of prompt blocks, ``map_batches`` in tasks
  (``RayOptions.cpus_per_actor`` each, ``max_task_retries`` retries of a dead worker);
* LLM, any other backend (``openai`` HTTP client, ``vllm`` engine): pieces of
  ``RayOptions.llm_batch_rows`` over the LLM actor pool, one backend per actor.

The LLM declares ``streams_answers``: the driver's ``CachedLLM`` stores each piece's answers
the moment the piece returns, so a driver killed mid-stage loses only the pieces in flight.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from graphstrata.bindings.distributed.arrow import (
    check_positions,
    requests_table,
    split_rows,
    table_responses,
    table_vectors,
    texts_table,
)
from graphstrata.bindings.distributed.cluster import Cluster, require_ray
from graphstrata.bindings.distributed.pool import Meter, ModelPool, user_cause
from graphstrata.bindings.distributed.workers import BackendSpec, describe, extractive_batch
from graphstrata.engine import LLMRequest, LLMResponse

AnswerCallback = Callable[[int, LLMResponse], None]


class RayEmbedder:
    """The embedder of ``spec``, one copy per actor of a pool.

    Parameters
    ----------
    cluster:
        The connected cluster.
    pool:
        The embedding actors (:func:`embedding_pool`).
    meter:
        Rows per stage.
    """

    def __init__(self, cluster: Cluster, pool: ModelPool, meter: Meter):
        self.pool = pool
        self.cluster = cluster
        self.meter = meter
        info = self.pool.info
        self._name = str(info["name"])
        self._dim = int(info["dim"])
        self._max_input_tokens = int(info["max_input_tokens"])
        self._compatible = frozenset(info["compatible_names"])

    @property
    def name(self) -> str:
        return self._name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_input_tokens(self) -> int:
        return self._max_input_tokens

    @property
    def compatible_names(self) -> frozenset[str]:
        """The wrapped embedder's (``engine.index.check_embedder``)."""
        return self._compatible

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``float32[len(texts), dim]``, computed by the pool, rows in the order given."""
        texts = list(texts)
        out = np.empty((len(texts), self._dim), dtype=np.float32)
        if not texts:
            return out
        opts = self.cluster.options
        spans = split_rows(len(texts), opts.embed_batch_rows, len(self.pool.actors))
        pieces = [texts_table(texts[a:b], a) for a, b in spans]
        seen: list[np.ndarray] = []
        with self.meter.stage("embed", len(texts)) as advance:

            def take(table: pa.Table) -> None:
                pos, mat = table_vectors(table, self._dim)
                out[pos] = mat
                seen.append(pos)
                advance(len(pos))

            self.pool.run("embed", pieces, take)
        check_positions(np.concatenate(seen), len(texts), "embed")
        return out

    def close(self) -> None:
        """Kill the pool's actors."""
        self.pool.close()


class RayLLM:
    """The LLM of ``spec`` on the cluster: in tasks when stateless, else in an actor pool.

    Parameters
    ----------
    cluster:
        The connected cluster.
    spec:
        The LLM (a ``make_llm`` spec or a factory).
    meter:
        Rows per stage.
    pool:
        The LLM actors (:func:`llm_pool`), or None for a stateless backend (tasks).
    """

    #: ``complete`` takes ``on_answer`` (``llm_cache.CachedLLM`` stores answers as they come).
    streams_answers = True

    def __init__(self, cluster: Cluster, spec: BackendSpec, meter: Meter, pool: ModelPool | None):
        self.cluster = cluster
        self.spec = spec
        self.meter = meter
        self.pool = pool
        # A stateless backend has no model: building it here costs nothing.
        info = describe(spec.build()) if pool is None else pool.info
        self._name = str(info["name"])
        self.backend = str(info["backend"])
        self.model = str(info["model"])

    @property
    def name(self) -> str:
        return self._name

    def complete(
        self, requests: Sequence[LLMRequest], on_answer: AnswerCallback | None = None
    ) -> list[LLMResponse]:
        """Answer every request, in order; ``on_answer(i, answer)`` as each piece returns."""
        requests = list(requests)
        if not requests:
            return []
        answers: list[LLMResponse | None] = [None] * len(requests)
        seen: list[int] = []
        opts = self.cluster.options
        if self.pool is not None:
            spans = split_rows(len(requests), opts.llm_batch_rows, len(self.pool.actors))
        else:
            spans = split_rows(len(requests), opts.task_batch_rows, self.cluster.actors)
        pieces = [requests_table(requests[a:b], a) for a, b in spans]
        stage = f"llm:{requests[0].task}"
        with self.meter.stage(stage, len(requests)) as advance:

            def take(table: pa.Table) -> None:
                got = table_responses(table)
                for pos, answer in got:
                    answers[pos] = answer
                    seen.append(pos)
                    if on_answer is not None:
                        on_answer(pos, answer)
                advance(len(got))

            if self.pool is not None:
                self.pool.run("complete", pieces, take)
            else:
                self._run_tasks(pieces, take)
        check_positions(np.asarray(seen, dtype=np.int64), len(requests), stage)
        return [a for a in answers if a is not None]

    def _run_tasks(self, pieces: list[pa.Table], take: Callable[[pa.Table], None]) -> None:
        """The pieces as blocks of a Ray Data dataset, answered by ``map_batches`` tasks."""
        ray = require_ray()
        opts = self.cluster.options
        ds: Any = ray.data.from_arrow(pieces).map_batches(
            extractive_batch,
            fn_kwargs={"spec": self.spec},
            batch_format="pyarrow",
            batch_size=None,
            zero_copy_batch=True,
            num_cpus=opts.cpus_per_actor,
            max_retries=opts.max_task_retries,
        )
        try:
            for block in ds.iter_batches(batch_format="pyarrow", batch_size=None):
                take(block)
        except Exception as exc:
            cause = user_cause(exc)
            if cause is not None and cause is not exc:
                raise cause from None
            raise

    def close(self) -> None:
        """Close the backends and kill the pool's actors (if any)."""
        if self.pool is not None:
            self.pool.close()


def embedding_pool(cluster: Cluster, spec: BackendSpec, llm_gpus: float = 0.0) -> ModelPool:
    """The embedding actors: ``cluster.actors`` of them, each with
    ``cluster.embed_gpus(llm_gpus)`` GPUs (a whole one unless the LLM actors, of ``llm_gpus``
    GPUs each, leave too few)."""
    placement = cluster.placement(cluster.embed_gpus(llm_gpus))
    return ModelPool(cluster, spec, placement, cluster.actors)


def llm_gpus(cluster: Cluster, spec: BackendSpec) -> float:
    """GPUs of one LLM actor: a ``vllm`` actor the spec's ``tp`` (else
    ``llm_gpus_per_actor``), a factory ``llm_gpus_per_actor``, an ``openai`` HTTP client and
    the stateless ``extractive`` backend (tasks, no actors) none."""
    if spec.stateless:
        return 0.0
    if not isinstance(spec.spec, str):
        return cluster.options.llm_gpus_per_actor
    if not spec.spec.startswith("vllm:"):
        return 0.0
    from graphstrata.bindings.specs import split_options

    _, raw = split_options(spec.spec)
    tp = raw.get("tp") or raw.get("tensor_parallel_size")
    return float(tp) if tp else cluster.options.llm_gpus_per_actor


def llm_pool(cluster: Cluster, spec: BackendSpec) -> ModelPool | None:
    """The LLM actors (:func:`llm_gpus` GPUs each), or None for the stateless ``extractive``
    backend (it runs in tasks)."""
    if spec.stateless:
        return None
    return ModelPool(cluster, spec, cluster.placement(llm_gpus(cluster, spec)), cluster.actors)


def close_quietly(*backends: Any) -> None:
    """Close backends, ignoring one that is already gone."""
    for backend in backends:
        close = getattr(backend, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):  # best effort at the end of a build
                close()
