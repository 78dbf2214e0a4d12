"""Batch indexing past one machine with Ray Data (issue 14; extra ``ray``).

>>> from graphstrata.bindings.distributed import RayOptions, build_index
>>> result = build_index("corpus.jsonl", "my-index", embedder="minilm-onnx",
...                      llm="vllm:/models/qwen2.5-7b?gpu_memory_utilization=0.85",
...                      options=RayOptions(address="auto"))
>>> result.report.to_dict(); result.stages["embed"].rows_per_second

What runs where (the decisions, with their measurements in the modules named):

* **Documents** (``documents.py``): read (Parquet by Ray Data tasks, JSONL and folders by the
  engine's readers), validated as one batch, chunked by Ray Data tasks with the engine's
  ``chunk_text``.
* **Model work** (``backends.py``, ``pool.py``): the engine is handed an ``Embedder`` and an
  ``LLM`` whose batches run on the cluster as Arrow pieces: embedding over a pool of actors
  (one model per actor, a GPU share each when the cluster has GPUs), the ``openai`` HTTP
  client and the ``vllm`` engine over a pool of LLM actors, the ``extractive`` backend as
  Ray Data ``map_batches`` tasks. Pools live for the whole build: a Ray Data actor pool
  lives for one dataset, i.e. one engine call, and would load the model again each time.
* **Everything global** (LSH partition per layer, entity merging, k-core, betweenness,
  Leiden, K-means, semantic edges) and the one writer stay on the driver: it is the ordinary
  ``Engine.insert``, so the index is the single-machine build's (``build.py``).
* **Faults**: actors restart (``max_restarts``) and their calls are resent
  (``max_task_retries``); tasks are retried; every result carries row positions that the
  driver checks, so nothing is lost or duplicated; the LLM cache on the driver stores each
  piece as it returns; a driver killed mid-job leaves the last committed version.

Only :mod:`.cluster` knows how Ray is imported: without the extra, everything here fails with
one line saying ``pip install 'graphstrata[ray]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphstrata.bindings.distributed.build import (
        DistributedReport,
        RaySession,
        build_index,
        insert,
    )
    from graphstrata.bindings.distributed.cluster import (
        INSTALL_HINT,
        RayOptions,
        RayUnavailableError,
        require_ray,
    )
    from graphstrata.bindings.distributed.pool import StageStats

#: Export -> its module. Lazy, because Ray workers import ``workers`` through this package:
#: the engine's write path (``build``, which imports the whole engine and the Numba kernels)
#: is the driver's, and importing it cost each new actor about a second on 2 cores.
_EXPORTS = {
    "DistributedReport": "build",
    "RaySession": "build",
    "build_index": "build",
    "insert": "build",
    "INSTALL_HINT": "cluster",
    "RayOptions": "cluster",
    "RayUnavailableError": "cluster",
    "require_ray": "cluster",
    "StageStats": "pool",
}

__all__ = [
    "INSTALL_HINT",
    "DistributedReport",
    "RayOptions",
    "RaySession",
    "RayUnavailableError",
    "StageStats",
    "build_index",
    "insert",
    "require_ray",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
