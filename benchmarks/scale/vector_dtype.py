"""The usearch HNSW storage types side by side: float32, float16 and int8, with the exact scan;
and float16 (the engine's default) at the query-time expansions around its default.

Why: ``IndexConfig.vector_dtype`` decides how the engine stores vectors and how usearch
holds them. float32 is the peers' way (hnswlib, FAISS ``HNSWFlat``, LightRAG's nano-vectordb
keep float32; usearch's own default on this CPU is bfloat16, not measured here); the exact float32 scan is the
machine's limit for recall (1 by definition) and the brute-force cost a vector database
avoids.

Per vector set and size, on the same vectors and queries:

* build: seconds per vector of a single-thread insert (the engine links its HNSW graphs on
  one thread so that builds are reproducible, ``engine/vectors.py`` ``ADD_THREADS``);
* search: p50 / p99 of a one-query search on the calling thread, rounds alternating the
  contenders query by query so that the load of a shared machine hits them alike; every
  storage type at ef 128, float16 also at 64 (``SearchConfig.expansion_search``, usearch's
  own default) and 96: one float16 index searched at each (the expansion is a query-time
  setting);
* recall@k: the share of the exact float32 top k (inner product) each one returns;
* bytes: the saved index (vectors and graph; what the engine's ``vcache/`` files hold).

Vector sets: ``hashing``, the synthetic corpus's chunks through the ``hashing`` embedder
(the T vectors of ``benchmarks/scale/scale.py``); ``minilm``, every text the retrieval benchmark
embedded with ``minilm-onnx`` (its cache, ``build/bench-indexes/embed-cache``: chunks,
semantic units, entities, relationships, summaries of MultiHop-RAG and HotpotQA), when it
exists. Queries are held-out vectors of the set, not in the index.

    python -m benchmarks.scale.vector_dtype --vectors 20000 200000 --queries 300

Writes ``benchmarks/results/vector_dtype.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.common import INDEX_ROOT, RESULTS, command_line, commit, load1
from benchmarks.scale.synthetic_corpus import chunk_vectors
from graphstrata.core.ann import hnsw_index, match_arrays

MINILM_CACHE = INDEX_ROOT / "embed-cache" / "minilm-onnx.f32"
DTYPES = ("f32", "f16", "i8")
#: (storage type, query-time expansion) of each HNSW contender.
CONTENDERS = (("f32", 128), ("f16", 128), ("f16", 96), ("f16", 64), ("i8", 128))
K = 50


def minilm_vectors() -> np.ndarray | None:
    """Every vector of the retrieval benchmark's minilm-onnx cache, distinct rows only."""
    if not MINILM_CACHE.exists():
        return None
    rows = np.fromfile(MINILM_CACHE, dtype=np.float32)
    rows = rows[: rows.size - rows.size % 384].reshape(-1, 384)
    return np.unique(rows, axis=0)


def exact_top(base: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Row numbers of each query's exact top k by float32 inner product."""
    sims = queries @ base.T
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    return np.take_along_axis(top, np.argsort(-np.take_along_axis(sims, top, 1), 1), 1)


def measure_set(name: str, x: np.ndarray, n_queries: int, rounds: int) -> list[dict[str, Any]]:
    """Build each contender over all but ``n_queries`` rows of ``x`` and search it with them."""
    rng = np.random.default_rng(17)
    perm = rng.permutation(x.shape[0])
    queries = np.ascontiguousarray(x[perm[:n_queries]])
    base = np.ascontiguousarray(x[np.sort(perm[n_queries:])])
    ids = np.arange(base.shape[0], dtype=np.int64)
    k = min(K, base.shape[0])
    truth = exact_top(base, queries, k)
    indexes: dict[str, Any] = {}
    built: dict[str, dict[str, Any]] = {}
    for dt in DTYPES:
        index = hnsw_index(base.shape[1], dt, 128)
        t0 = time.perf_counter()
        index.add(ids, base, threads=1)
        build = time.perf_counter() - t0
        indexes[dt] = index
        built[dt] = {
            "build_ms_per_vector": round(build / base.shape[0] * 1e3, 4),
            "bytes": len(index.save()),
            "load_build": load1(),
        }
        print(f"  {name} {base.shape[0]} {dt}: build {build:.1f} s", file=sys.stderr, flush=True)
    lat: dict[Any, list[float]] = {c: [] for c in (*CONTENDERS, "exact")}
    found = dict.fromkeys(CONTENDERS, 0)
    for r in range(rounds):
        for i in range(n_queries):
            q = queries[i : i + 1]
            for dt, ef in CONTENDERS:
                index = indexes[dt]
                index.expansion_search = ef
                t0 = time.perf_counter()
                matches = index.search(q, k, threads=1)
                lat[(dt, ef)].append(time.perf_counter() - t0)
                if r == 0:
                    keys, _, valid = match_arrays(matches, 1, k)
                    found[(dt, ef)] += np.intersect1d(keys[0][valid[0]], truth[i]).size
            t0 = time.perf_counter()
            exact_top(base, q, k)
            lat["exact"].append(time.perf_counter() - t0)
    load = load1()
    rows = [
        {
            "set": name,
            "vectors": int(base.shape[0]),
            "contender": f"HNSW {dt} ef {ef}",
            **built[dt],
            **_latency(lat[(dt, ef)]),
            "recall": round(found[(dt, ef)] / (k * n_queries), 4),
            "load_search": load,
        }
        for dt, ef in CONTENDERS
    ]
    exact = {
        "set": name,
        "vectors": int(base.shape[0]),
        "contender": "exact f32 scan",
        "build_ms_per_vector": 0.0,
        "bytes": int(base.nbytes),
        "recall": 1.0,
        "load_build": "–",
        "load_search": load,
        **_latency(lat["exact"]),
    }
    return [*rows, exact]


def _latency(samples: list[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1e3
    return {
        "search_p50_ms": round(float(np.median(ms)), 3),
        "search_p99_ms": round(float(np.percentile(ms, 99)), 3),
    }


def write_report(result: dict[str, Any]) -> None:
    """Write ``vector_dtype.json`` and ``vector_dtype.md`` under ``RESULTS``."""
    head = (
        "| set | vectors | contender | build ms / vector | search p50 ms | search p99 ms "
        f"| recall@{K} of exact | MB | load build / search |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join(
        f"| {r['set']} | {r['vectors']} | {r['contender']} | {r['build_ms_per_vector']} "
        f"| {r['search_p50_ms']} | {r['search_p99_ms']} | {r['recall']} "
        f"| {r['bytes'] / 1e6:.1f} | {r['load_build']} / {r['load_search']} |\n"
        for r in result["rows"]
    )
    text = (
        "# Vector storage types and query-time expansion: usearch HNSW and the exact scan\n\n"
        f"Generated by `benchmarks/scale/vector_dtype.py` ({result['command']}), code {result['code']}, "
        f"{result['date']}. One thread, {result['queries']} held-out queries x "
        f"{result['rounds']} rounds, contenders alternating query by query. Recall is the share "
        f"of the exact float32 top {K} returned. One index per storage type (built on one thread, "
        "build-time expansion 128): its build and size columns repeat on each of its expansion "
        "rows. Load: the 1-minute load average after the "
        "builds and after the searches (2 shared cores).\n\n" + head + body
    )
    common.write_report("vector_dtype", result, text, out_dir=RESULTS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vectors", type=int, nargs="+", default=[20000, 200000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    real = minilm_vectors()
    if real is None:
        print(f"no {MINILM_CACHE}: the minilm set is skipped", file=sys.stderr)
    else:
        rows += measure_set("minilm", real, args.queries, args.rounds)
    for n in args.vectors:
        rows += measure_set("hashing", chunk_vectors(n + args.queries), args.queries, args.rounds)
    write_report(
        {
            "command": command_line(__spec__.name),
            "code": commit(),
            "date": time.strftime("%Y-%m-%d"),
            "queries": args.queries,
            "rounds": args.rounds,
            "rows": rows,
        }
    )


if __name__ == "__main__":
    main()
