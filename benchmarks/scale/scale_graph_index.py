"""A vector base made three ways (``scale.py graph-index``): time and recall.

The build's ``vector_index`` stage makes one usearch base per node kind. Per size, over the
hashing embeddings of the corpus' chunks, this makes one base:

* **ours**: the kind's k-NN graph (``core.nndescent``), pruned into a search graph
  (``core.search_graph``) and loaded into usearch (``core.ann.hnsw_from_graph``), with the
  engine's settings (``engine.graph_bases.graph_base``, which it uses for a new base of
  ``MaintenanceConfig.vector_graph_build_min`` vectors or more);
* **inserted, one thread**: usearch's own inserts as the engine made every base before
  (``ADD_THREADS`` 1: reproducible), hnswlib's and NodeRAG's way;
* **inserted, every core**: usearch's inserts on its thread pool, the fastest way usearch
  offers, whose graph varies from run to run;
* **exact**: the queries' top 10 by one matrix product and a full sort of each row, which
  every recall is measured against (its time is an upper bound of an exact search: the
  sort, not a partial selection, dominates it).

Per way: wall and process CPU seconds, recall@10 of ``queries`` rows (the base searched at
the engine's ``expansion_search``, one thread), search microseconds and distances computed
per query.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import markdown_table

#: Neighbours a recall is measured at.
K = 10
#: The ways a base is made, in the order they run.
WAYS = ("ours", "inserted_1", "inserted_all")


def _recall(index: Any, x: np.ndarray, q: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    from graphstrata.core.ann import match_arrays

    t = time.perf_counter()
    found = index.search(x[q], K, threads=1)
    per_query = (time.perf_counter() - t) / q.size
    keys, _, valid = match_arrays(found, q.size, K)
    hits = sum(np.intersect1d(keys[i][valid[i]], truth[i]).size for i in range(q.size))
    return {
        "recall": round(hits / (q.size * K), 4),
        "search_us": round(1e6 * per_query, 1),
        "distances": round(found.computed_distances / q.size),
    }


def run(
    vectors: np.ndarray, sizes: list[int], n_queries: int, load1: Callable[[], float]
) -> list[dict[str, Any]]:
    """One row per size: the first ``size`` rows of ``vectors`` made into a base each way."""
    from graphstrata.engine.config import IndexConfig, SearchConfig

    dtype, ef = IndexConfig.vector_dtype, SearchConfig.expansion_search
    small = np.ascontiguousarray(vectors[:3000], dtype=np.float32)
    _make("ours", np.arange(small.shape[0]), small, dtype, ef)  # compile, untimed
    rows = []
    for n in sorted(sizes):
        x = np.ascontiguousarray(vectors[:n], dtype=np.float32)
        ids = np.arange(n, dtype=np.int64)
        rng = np.random.default_rng(5)
        q = np.sort(rng.choice(n, min(n_queries, n), replace=False))
        row: dict[str, Any] = {"vectors": n, "queries": int(q.size), "load1_before": load1()}
        t = time.perf_counter()
        truth = np.argsort(-(x[q] @ x.T), axis=1, kind="stable")[:, :K]
        row["exact_us_per_query"] = round(1e6 * (time.perf_counter() - t) / q.size, 1)
        for name in WAYS:
            wall, cpu = time.perf_counter(), time.process_time()
            index = _make(name, ids, x, dtype, ef)
            row[name] = {
                "wall_s": round(time.perf_counter() - wall, 2),
                "cpu_s": round(time.process_time() - cpu, 2),
            }
            row[name].update(_recall(index, x, q, truth))
            del index
        row["load1"] = load1()
        print(row, flush=True)
        rows.append(row)
    return rows


def _make(name: str, ids: np.ndarray, x: np.ndarray, dtype: str, ef: int) -> Any:
    """A base of ``x`` made the way ``name`` says (``WAYS``)."""
    from graphstrata.core.ann import hnsw_index
    from graphstrata.engine.graph_bases import graph_base

    if name == "ours":
        return graph_base(ids, x, dtype, ef)
    index = hnsw_index(x.shape[1], dtype, ef)
    index.add(ids, x, threads=1 if name == "inserted_1" else 0)
    return index


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The section of ``scale.md`` for the rows of ``run`` (none: no section)."""
    if not rows:
        return []
    lines = [
        "## A vector base three ways (the `vector_index` stage)",
        "",
        "One usearch base (f16, ef 64) of the first N hashing embeddings of the corpus'"
        " chunks: **ours** (k-NN graph, `core.search_graph`, loaded by"
        " `core.ann.hnsw_from_graph`), usearch's **inserts on one thread** (the engine"
        " before, hnswlib's and NodeRAG's way) and **on every core** (usearch's fastest,"
        " a graph that varies from run to run). Wall / CPU seconds; recall@10 of the"
        " sampled rows against the exact top 10 (a matrix product and a full sort per row,"
        " microseconds per query: an upper bound of exact search); search microseconds and"
        " distances per query.",
        "",
    ]
    header = [
        "vectors",
        "ours wall / CPU s",
        "inserted, 1 thread",
        "inserted, every core",
        "recall@10 ours / 1 / every",
        "search us ours / 1 / every",
        "distances ours / 1 / every",
        "exact us / query",
        "load1",
    ]
    cells = []
    for r in rows:
        ways = (r["ours"], r["inserted_1"], r["inserted_all"])
        cells.append(
            [
                r["vectors"],
                *(f"{w['wall_s']} / {w['cpu_s']}" for w in ways),
                *(
                    " / ".join(str(w[key]) for w in ways)
                    for key in ("recall", "search_us", "distances")
                ),
                r["exact_us_per_query"],
                f"{r['load1_before']} / {r['load1']}",
            ]
        )
    return [*lines, *markdown_table(header, cells), ""]
