"""What one HNSW insert costs as the index grows (``scale.py hnsw``).

The build's ``vector_index`` stage (usearch HNSW inserts, one thread) grew as N^1.46 between
10k and 100k chunks, faster than N log N. This grows one index the way a build does (the
engine's settings: ``core.ann.hnsw_index``, one thread, ids in order) over the hashing
embeddings of the corpus' chunks, step by step, and records per step:

* the process CPU per inserted vector, for the engine's storage type (``f16``,
  ``IndexConfig.vector_dtype``) and for ``f32`` (hnswlib's and NodeRAG's);
* the distances a search computes (``Matches.computed_distances``, ``--queries`` queries
  of k 10 at the engine's ``expansion_search``): the graph's work per lookup, which an
  insert repeats at ``EXPANSION_ADD``;
* the index's memory (``Index.memory_usage``), against the machine's last-level cache;
* ``log-model``: the first step's cost per vector scaled by the growth of the distances
  computed, i.e. what an insert would cost if each distance cost what it did while the
  index was small (the algorithm's own growth, memory apart).

A row's cost above its log-model is the memory's: once the index outgrows the cache each
distance reads its vector from DRAM.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import markdown_table

#: Storage types compared: the engine's, then the float32 of hnswlib / NodeRAG.
DTYPES = ("f16", "f32")


def _cache_bytes() -> int | None:
    """The last-level cache of CPU 0 in bytes (Linux sysfs), or None if not readable."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    best = None
    try:
        for entry in sorted(os.listdir(base)):
            if not entry.startswith("index"):
                continue
            with open(f"{base}/{entry}/size") as fh:
                text = fh.read().strip()
            size = int(text[:-1]) * (1024 if text.endswith("K") else 1024 * 1024)
            best = max(best or 0, size)
    except (OSError, ValueError):
        return None
    return best


def run(
    vectors: np.ndarray, step: int, n_queries: int, load1: Callable[[], float]
) -> list[dict[str, Any]]:
    """One row per step of ``step`` vectors inserted into one growing index per dtype;
    ``load1`` (``scale.load1``) is read after each step."""
    from graphstrata.core.ann import hnsw_index
    from graphstrata.engine.config import SearchConfig

    n = vectors.shape[0] - vectors.shape[0] % step
    rng = np.random.default_rng(1)
    queries = vectors[rng.choice(vectors.shape[0], n_queries, replace=False)]
    rows: dict[int, dict[str, Any]] = {}
    for dtype in DTYPES:
        index = hnsw_index(vectors.shape[1], dtype, SearchConfig.expansion_search)
        for start in range(0, n, step):
            ids = np.arange(start, start + step, dtype=np.int64)
            t = time.process_time()
            index.add(ids, np.ascontiguousarray(vectors[start : start + step]), threads=1)
            cpu = time.process_time() - t
            row = rows.setdefault(start + step, {"vectors": start + step})
            row[f"{dtype}_us_per_vector"] = round(1e6 * cpu / step, 1)
            row[f"{dtype}_memory_bytes"] = int(index.memory_usage)
            if dtype == DTYPES[0]:
                found = index.search(queries, 10, threads=1)
                row["distances_per_query"] = round(found.computed_distances / n_queries, 1)
            row[f"load1_{dtype}"] = load1()
            print(row, flush=True)
    out = [rows[k] for k in sorted(rows)]
    first = out[0]
    for row in out:
        growth = row["distances_per_query"] / first["distances_per_query"]
        row["log_model_us_per_vector"] = round(first[f"{DTYPES[0]}_us_per_vector"] * growth, 1)
    cache = _cache_bytes()
    for row in out:
        row["cache_bytes"] = cache
    return out


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The section of ``scale.md`` for the rows of ``run`` (none: no section)."""
    if not rows:
        return []
    cache = rows[0].get("cache_bytes")
    cache_text = f"{cache / 2**20:.0f} MiB" if cache else "not readable here"
    lines = [
        "## HNSW insert cost as the index grows (the `vector_index` stage)",
        "",
        "One usearch index grown step by step as a build grows it (`core.ann.hnsw_index`,"
        " one thread, ids in order) over hashing embeddings of the corpus' chunks; CPU per"
        " inserted vector in each step, `f16` (the engine's `vector_dtype`) and `f32`"
        " (hnswlib's, NodeRAG's). `distances / query`: what a search of k 10 computes"
        " (the graph's own work per lookup); `log-model`: the first step's cost scaled by"
        " that growth (each distance as cheap as in a small index). Memory: the f16 index,"
        f" against the last-level cache ({cache_text}).",
        "",
    ]
    header = [
        "vectors",
        "f16 us / vector",
        "f32 us / vector",
        "log-model us / vector",
        "distances / query",
        "f16 index MiB allocated",
        "load1 f16 / f32",
    ]
    cells = [
        [
            r["vectors"],
            r["f16_us_per_vector"],
            r.get("f32_us_per_vector", "–"),
            r["log_model_us_per_vector"],
            r["distances_per_query"],
            f"{r['f16_memory_bytes'] / 2**20:.1f}",
            f"{r['load1_f16']} / {r.get('load1_f32', '–')}",
        ]
        for r in rows
    ]
    return [*lines, *markdown_table(header, cells), ""]
