"""Making a vector base anew against copying it (``scale.py remake``), per kind of a kept index.

Nothing is removed from a usearch base (``engine.vectors``): dead vectors stay in it,
filtered, until more than ``removal_limit`` of it (``MaintenanceConfig.vector_removed``: one
in eight) are dead, and then the write that passes the bound makes the base anew from its
live vectors (``VectorIndex._remade``: inserts, or the k-NN graph from
``vector_graph_build_min`` vectors).
Until commit d66a5fe such a write copied the base and removed the dead ids from the copy
(usearch ``copy`` then ``remove``), which usearch 2.25.3 corrupts. Per kind of at least
``vector_exact_below`` vectors this times, on the kept index's own base:

* **copy**: usearch's ``copy`` of the base, the O(n) step of the old way, a memory copy
  (the machine's floor for rewriting a base);
* **read out**: the base's vectors read out as float32 (the first step of making it anew);
* **made anew**: ``_remade`` with no dead id, wall and process CPU seconds;
* **per dead vector**: made anew over ``removal_limit``, the amortized cost each dead vector
  carries, and the bound's dead count.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import markdown_table


def run(vectors: Any, max_vectors: int, load1: Callable[[], float]) -> list[dict[str, Any]]:
    """One row per kind of ``vectors`` (a ``VectorIndex``) searched by HNSW, up to
    ``max_vectors`` vectors (larger kinds are skipped: a million-vector base takes minutes)."""
    from graphstrata.engine.exact_vectors import read_out
    from graphstrata.engine.types import NodeKind

    policy = vectors.maintenance  # the index's MaintenanceConfig

    rows = []
    for kind in vectors.kinds():
        base = vectors.by_kind[kind]
        n = len(base)
        if n < policy.vector_exact_below or n > max_vectors:
            continue
        row: dict[str, Any] = {
            "kind": NodeKind(kind).name,
            "vectors": n,
            "removal_limit": int(policy.vector_removed.limit(n)),
            "load1_before": load1(),
        }
        t = time.perf_counter()
        copied = base.copy()
        row["copy_s"] = round(time.perf_counter() - t, 3)
        del copied
        t = time.perf_counter()
        read_out(base)
        row["read_s"] = round(time.perf_counter() - t, 3)
        wall, cpu = time.perf_counter(), time.process_time()
        made = vectors._remade(kind)
        row["remade_wall_s"] = round(time.perf_counter() - wall, 2)
        row["remade_cpu_s"] = round(time.process_time() - cpu, 2)
        assert len(made) == vectors.count([kind])  # the live vectors, none dead
        row["ms_per_dead"] = round(1000 * row["remade_wall_s"] / row["removal_limit"], 2)
        row["load1"] = load1()
        print(row, flush=True)
        rows.append(row)
    return rows


def markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The section of ``scale.md`` for the rows of ``run`` (none: no section)."""
    if not rows:
        return []
    lines = [
        "## A vector base made anew against copied (`scale.py remake`)",
        "",
        "Per kind of a kept index searched by HNSW: usearch's `copy` of its base (the O(n)"
        " step of the rewrite before commit d66a5fe, which removed the dead ids from the copy"
        " and which usearch 2.25.3 corrupts), its vectors read out, and the base made anew"
        " from them (`VectorIndex._remade`, what a write does once more than `removal_limit`"
        " of a base is dead), with that cost spread over the bound's dead vectors.",
        "",
    ]
    header = [
        "index",
        "kind",
        "vectors",
        "removal_limit",
        "copy s",
        "read out s",
        "made anew wall / CPU s",
        "ms per dead vector",
        "load1",
    ]
    cells = [
        [
            r.get("index", ""),
            r["kind"],
            r["vectors"],
            r["removal_limit"],
            r["copy_s"],
            r["read_s"],
            f"{r['remade_wall_s']} / {r['remade_cpu_s']}",
            r["ms_per_dead"],
            f"{r['load1_before']} / {r['load1']}",
        ]
        for r in rows
    ]
    return [*lines, *markdown_table(header, cells), ""]
