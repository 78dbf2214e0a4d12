"""Distributed build (Ray) against the single-process build: rows/s per stage, Ray's overhead.

    python -m benchmarks.scale.distributed                 # ~6-9 min on 2 shared cores
    python -m benchmarks.scale.distributed --docs 50 --minilm-texts 64   # a quick look

What it does, on one corpus (the 30 sample documents plus the first ``--docs`` MultiHop-RAG
documents of ../shared/data/multihop_rag/corpus.jsonl, read-only):

1. a single-process build (``Index.insert``), the report's stage seconds;
2. a local Ray cluster (``ray.init(num_cpus=2)``) and a distributed build with 1 and with 2
   actors per pool (``graphstrata.bindings.distributed.build_index``), the rows, calls and
   seconds of each Ray stage; each result is compared with the single-process build
   (documents, nodes, edges, vectors within 1e-6, every mode's query results);
3. the packaged MiniLM (``all-MiniLM-L6-v2``, torch) embedding ``--minilm-texts`` chunks in
   process and through 1 and 2 embedding actors (1 thread each): the per-row cost of the
   stage that dominates a real build;
4. the cost of one engine-sized call through a Ray Data actor pool, Ray Data tasks and a
   live actor (why the design keeps actors alive for the whole build);
5. from those measured per-row costs, the derived time of a full MultiHop-RAG build on N
   nodes like this one.

The model work uses the ``hashing`` embedder and the extractive LLM in steps 1-2 (so the
three builds fit in minutes); step 3 measures the neural embedder's rows/s. The 1-minute
load average is printed beside every table: the cores are shared with other processes.
Writes benchmarks/results/distributed.md and distributed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import DATA, REPO, RESULTS, load1, write_report
from graphstrata.bindings.api import Index
from graphstrata.bindings.distributed import RayOptions, RaySession, build_index
from graphstrata.bindings.distributed.arrow import texts_table, vectors_table
from graphstrata.bindings.distributed.backends import RayEmbedder, embedding_pool
from graphstrata.bindings.distributed.workers import BackendSpec
from graphstrata.bindings.registry import make_embedder
from graphstrata.engine.config import ChunkingConfig
from graphstrata.engine.ingest.chunking import chunk_text
from tests.helpers.ray_cluster import assert_same_index, index_tables

MULTIHOP = DATA / "multihop_rag" / "corpus.jsonl"
SAMPLE = REPO / "examples" / "sample.jsonl"
#: Ray stages and the single-process report stages they correspond to (prefixes).
STAGES = {
    "embed": ("embed_",),
    "llm:summarize": ("llm:summarize",),
    "llm:decompose": ("llm:decompose",),
    "llm:attribute": ("llm:attribute",),
    "llm:community": ("llm:community",),
}


def corpus(path: Path, n_multihop: int) -> int:
    lines = [line for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    with open(MULTIHOP, encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= n_multihop:
                break
            lines.append(line.rstrip("\n"))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def stage_seconds(stages: dict[str, float], prefixes: tuple[str, ...]) -> float:
    return sum(v for k, v in stages.items() if k.startswith(prefixes))


def equal(got: Path, want: Path, embedder: str) -> tuple[str, str]:
    """``(index, queries)``: "yes", or "NO: " and what differs."""
    a, b = index_tables(got, embedder), index_tables(want, embedder)
    try:
        assert_same_index(a, b, queries=False)
        same = "yes"
    except AssertionError as exc:
        same = "NO: " + (" ".join(str(exc).split())[:200] or "tables differ")
    modes = [m for m in b["queries"] if a["queries"].get(m) != b["queries"][m]]
    return same, "yes" if not modes else "differ in " + ", ".join(modes)


def minilm_rows(texts: list[str]) -> dict[str, Any]:
    """MiniLM rows/s in process (torch threads: 2) and through 1 and 2 actors (1 thread)."""
    out: dict[str, Any] = {"texts": len(texts)}
    emb = make_embedder("all-MiniLM-L6-v2")
    emb.embed(texts[:4])  # warm
    start = time.perf_counter()
    base = emb.embed(texts)
    out["in_process"] = {"seconds": time.perf_counter() - start, "load": load1()}
    for actors in (1, 2):
        with RaySession(RayOptions(actors=actors)) as session:
            assert session.cluster is not None
            t0 = time.perf_counter()
            pool = embedding_pool(session.cluster, BackendSpec("embedder", "all-MiniLM-L6-v2"))
            ray_emb = RayEmbedder(session.cluster, pool, session.meter)
            ray_emb.embed(texts[: 4 * actors])  # every actor loaded and warm
            started = time.perf_counter() - t0
            t1 = time.perf_counter()
            mat = ray_emb.embed(texts)
            seconds = time.perf_counter() - t1
            ray_emb.close()
        out[f"actors_{actors}"] = {
            "seconds": seconds,
            "pool_start_s": started,
            "max_abs_diff": float(np.abs(mat - base).max()),
            "load": load1(),
        }
    return out


class _PoolEmbed:
    """A Ray Data actor-pool UDF: the embedder is built when the pool's actor starts."""

    def __init__(self) -> None:
        self.embedder = make_embedder("hashing")

    def __call__(self, batch: Any) -> Any:
        return vectors_table(batch.column("pos"), self.embedder.embed(batch["text"].to_pylist()))


def _task_embed(batch: Any) -> Any:
    return vectors_table(
        batch.column("pos"), make_embedder("hashing").embed(batch["text"].to_pylist())
    )


def call_costs(rounds: int = 3) -> dict[str, list[float]]:
    """Seconds of one engine-sized embedding call (256 texts, hashing) three ways.

    A Ray Data ``map_batches`` over an actor pool (the pool, and the model, start per
    dataset, i.e. per engine call), Ray Data tasks, and a call to a live actor of a
    ``ModelPool`` (the design used).
    """
    import ray

    texts = texts_table([f"text number {i} about observatories" for i in range(256)])
    out: dict[str, list[float]] = {"data_actor_pool": [], "data_tasks": [], "live_actor": []}
    for _ in range(rounds):
        start = time.perf_counter()
        ds = ray.data.from_arrow(texts).map_batches(
            _PoolEmbed, compute=ray.data.ActorPoolStrategy(size=1), batch_format="pyarrow"
        )
        ds.materialize()
        out["data_actor_pool"].append(time.perf_counter() - start)
        start = time.perf_counter()
        ray.data.from_arrow(texts).map_batches(_task_embed, batch_format="pyarrow").materialize()
        out["data_tasks"].append(time.perf_counter() - start)
    with RaySession(RayOptions(actors=1)) as session:
        assert session.cluster is not None
        pool = embedding_pool(session.cluster, BackendSpec("embedder", "hashing"))
        emb = RayEmbedder(session.cluster, pool, session.meter)
        emb.embed(["warm"])
        for _ in range(rounds):
            start = time.perf_counter()
            emb.embed(texts.column("text").to_pylist())
            out["live_actor"].append(time.perf_counter() - start)
        emb.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--docs", type=int, default=200, help="MultiHop-RAG documents")
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--minilm-texts", type=int, default=192, help="0 skips step 3")
    parser.add_argument(
        "--from-json",
        action="store_true",
        help="only rewrite distributed.md from the distributed.json of the last run",
    )
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads((RESULTS / "distributed.json").read_text())
        args.docs, args.embedder = saved["args"]["docs"], saved["args"]["embedder"]
        (RESULTS / "distributed.md").write_text(report(saved, args))
        return
    import ray

    begin = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="gs-distributed-"))
    result: dict[str, Any] = {
        "machine": f"{platform.platform()}, {os.cpu_count()} CPUs",
        "args": {"docs": args.docs, "embedder": args.embedder},
    }
    try:
        source = tmp / "corpus.jsonl"
        result["docs"] = corpus(source, args.docs)
        # 1. one process
        load0 = load1()
        start = time.perf_counter()
        one = Index.create(tmp / "one", embedder=args.embedder, llm="extractive")
        rep = one.insert_path(source)
        result["single"] = {
            "wall": time.perf_counter() - start,
            "stages": rep.stages,
            "chunks": rep.chunks_added,
            "load": (load0, load1()),
        }
        del one
        # A second single-process build: how far one machine agrees with itself.
        again = Index.create(tmp / "again", embedder=args.embedder, llm="extractive")
        again.insert_path(source)
        del again
        result["single_again"] = equal(tmp / "again", tmp / "one", args.embedder)
        # 2. Ray, 1 and 2 actors per pool
        start = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        result["ray_init_s"] = time.perf_counter() - start
        for actors in (1, 2):
            load0 = load1()
            start = time.perf_counter()
            out = tmp / f"ray{actors}"
            res = build_index(
                source,
                out,
                embedder=args.embedder,
                llm="extractive",
                options=RayOptions(actors=actors),
            )
            wall = time.perf_counter() - start
            result[f"ray_{actors}"] = {
                "wall": wall,
                "engine_seconds": res.report.seconds,
                "stages": res.report.stages,
                "ray": {k: vars(v) for k, v in res.stages.items()},
                "equal": equal(out, tmp / "one", args.embedder),
                "load": (load0, load1()),
            }
            print(f"ray {actors} actors: {wall:.1f} s, equal: {result[f'ray_{actors}']['equal']}")
            shutil.rmtree(out, ignore_errors=True)
        # 3. MiniLM per row
        if args.minilm_texts:
            cfg = ChunkingConfig()
            texts: list[str] = []
            with open(MULTIHOP, encoding="utf-8") as fh:
                for line in fh:
                    texts.extend(c.text for c in chunk_text(json.loads(line)["text"], cfg))
                    if len(texts) >= args.minilm_texts:
                        break
            result["minilm"] = minilm_rows(texts[: args.minilm_texts])
        result["call_costs"] = call_costs()
        result["call_costs_load"] = load1()
        ray.shutdown()
        # 4. full MultiHop-RAG size (chunks of all documents)
        cfg = ChunkingConfig()
        with open(MULTIHOP, encoding="utf-8") as fh:
            result["multihop_chunks"] = sum(
                len(chunk_text(json.loads(line)["text"], cfg)) for line in fh
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["total_s"] = time.perf_counter() - begin
    print(write_report("distributed", result, report(result, args)).read_text())


def report(r: dict[str, Any], args: argparse.Namespace) -> str:
    single, r1, r2 = r["single"], r["ray_1"], r["ray_2"]
    lines = [
        "# Distributed build (Ray Data) against one process",
        "",
        f"Generated by `python -m benchmarks.scale.distributed --docs {args.docs}` in "
        f"{r['total_s']:.0f} s. Machine: {r['machine']}, ray 2.60.0. The cores were shared "
        "with other processes: the 1-minute load average is beside every row (above 2 on 2 "
        "cores, every figure is slower than the machine alone).",
        "",
        f"Corpus: {r['docs']} documents (30 sample + {args.docs} MultiHop-RAG), "
        f"{single['chunks']} chunks; embedder `{args.embedder}`, extractive LLM. Local cluster "
        f"`ray.init(num_cpus=2)`: {r['ray_init_s']:.1f} s to start (not in the walls below).",
        "",
        "## Builds",
        "",
        "| build | wall s | engine s | index equal to one process | query results equal "
        "| load1 (start / end) |",
        "|---|---|---|---|---|---|",
        f"| one process | {single['wall']:.1f} | {single['wall']:.1f} | - | - | "
        f"{single['load'][0]} / {single['load'][1]} |",
        f"| one process, again | - | - | {r['single_again'][0]} | {r['single_again'][1]} | - |",
    ]
    for n, rr in ((1, r1), (2, r2)):
        lines.append(
            f"| Ray, {n} actor(s) per pool | {rr['wall']:.1f} | {rr['engine_seconds']:.1f} | "
            f"{rr['equal'][0]} | {rr['equal'][1]} | {rr['load'][0]} / {rr['load'][1]} |"
        )
    lines += [
        "",
        "`wall` includes starting the pools (actor processes, one model each); `engine` is "
        "the `Engine.insert` inside it. Index equal: documents, chunk texts, every node "
        "(hierarchy segments and summaries), every edge, vectors within 1e-6, every component "
        "state array (Leiden, K-means, ...) (`tests/helpers/ray_cluster.py`, "
        "`assert_same_index`). Query results: every mode on three questions. They also "
        "depend on the usearch cache of the vectors; the row `one process, again` checks "
        "that two one-process builds agree (usearch inserts on one thread, "
        "`engine/vectors.py` `ADD_THREADS`: with all cores its HNSW graph was linked in a "
        "varying order and `graph` results differed between builds).",
        "",
        "## Per stage: rows/s and Ray's overhead",
        "",
        "| stage | rows | one process s | Ray 1 actor s (calls) | Ray 2 actors s | rows/s one / 1 / 2 "
        "| Ray's cost per engine call, 2 actors (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, prefixes in STAGES.items():
        a, b = r1["ray"].get(name), r2["ray"].get(name)
        if not a or not b:
            continue
        s = stage_seconds(single["stages"], prefixes)
        rows = a["rows"]
        per_call = (b["seconds"] - s) / max(1, b["calls"]) * 1000
        lines.append(
            f"| {name} | {rows} | {s:.2f} | {a['seconds']:.2f} ({a['calls']}) | "
            f"{b['seconds']:.2f} | {rows / max(s, 1e-9):.0f} / {rows / a['seconds']:.0f} / "
            f"{rows / b['seconds']:.0f} | {per_call:.0f} |"
        )
    lines += [
        "",
        "The last column is (Ray stage s - one-process stage s) / calls; the builds ran one "
        "after the other on shared cores, so it mixes Ray's cost with the change of load "
        "(negative where the one-process build ran under a higher load). Ray's own cost per "
        "call is measured directly in the next section but one.",
        "",
        "| stage | rows | one process s | Ray 1 actor s | Ray 2 actors s | - | - |",
        "|---|---|---|---|---|---|---|",
    ]
    c1, c2 = r1["ray"]["chunk"], r2["ray"]["chunk"]
    rechunk = r2["stages"].get("chunk", 0.0)
    lines += [
        f"| chunk (Ray tasks) | {c1['rows']} docs | {single['stages'].get('chunk', 0):.2f} | "
        f"{c1['seconds']:.2f} | {c2['seconds']:.2f} | - | - |",
        "",
        f"The engine chunks again on the driver (`Engine.insert` takes documents): "
        f"{rechunk:.2f} s of the 2-actor build ({100 * rechunk / r2['engine_seconds']:.1f}% "
        "of its engine time).",
        "",
        f"Load average during the Ray builds: {r1['load'][0]}-{r2['load'][1]}.",
    ]
    if "call_costs" in r:
        cc = r["call_costs"]
        lines += [
            "",
            "## One engine call of 256 texts (hashing embedder), three ways",
            "",
            "| how | seconds per call (3 calls) | load1 |",
            "|---|---|---|",
            "| Ray Data `map_batches`, actor pool of 1 (started per dataset) | "
            + " / ".join(f"{x:.3f}" for x in cc["data_actor_pool"])
            + f" | {r['call_costs_load']} |",
            "| Ray Data `map_batches`, tasks | "
            + " / ".join(f"{x:.3f}" for x in cc["data_tasks"])
            + f" | {r['call_costs_load']} |",
            "| a live actor of the build's pool (`ModelPool`, the design used) | "
            + " / ".join(f"{x:.3f}" for x in cc["live_actor"])
            + f" | {r['call_costs_load']} |",
            "",
            "The engine makes one call per 256 texts and per LLM stage (71 embedding calls for "
            "this corpus): a Ray Data actor pool lives for one dataset, so it would start its "
            "actors and load the model on every call. Hence one pool of live actors per build, "
            "and Ray Data tasks only for the stateless work (chunking, the extractive LLM).",
        ]
    if "minilm" in r:
        m = r["minilm"]
        n = m["texts"]
        lines += [
            "",
            "## MiniLM embedding, per row",
            "",
            "| where | s | rows/s | pool start s | max abs diff vs in process | load1 |",
            "|---|---|---|---|---|---|",
            f"| in process (torch, 2 threads) | {m['in_process']['seconds']:.1f} | "
            f"{n / m['in_process']['seconds']:.1f} | - | - | {m['in_process']['load']} |",
        ]
        for k in (1, 2):
            e = m[f"actors_{k}"]
            lines.append(
                f"| {k} actor(s), 1 thread each | {e['seconds']:.1f} | {n / e['seconds']:.1f} | "
                f"{e['pool_start_s']:.1f} | {e['max_abs_diff']:.1e} | {e['load']} |"
            )
        lines += derived(r)
    return "\n".join(lines) + "\n"


def derived(r: dict[str, Any]) -> list[str]:
    """Full MultiHop-RAG on N nodes like this one (2 cores, 2 MiniLM actors), from per-row costs."""
    single, r2, m = r["single"], r["ray_2"], r["minilm"]
    scale = r["multihop_chunks"] / max(1, single["chunks"])
    embed_rows = r2["ray"]["embed"]["rows"] * scale
    llm_s = sum(stage_seconds(single["stages"], p) for k, p in STAGES.items() if k != "embed")
    model_s = stage_seconds(single["stages"], ("embed_",)) + llm_s
    driver_s = (single["wall"] - model_s) * scale
    # A node's best measured rate (on shared cores a run can lose its second core).
    per_row_node = min(m[k]["seconds"] for k in ("in_process", "actors_1", "actors_2")) / m["texts"]
    model = [k for k in STAGES if k in r2["ray"]]
    calls = sum(r2["ray"][k]["calls"] for k in model) * scale
    # Ray's cost per call, measured directly (the per-stage differences above mix it with
    # the load on shared cores): a live actor's call for embedding, a Ray Data task run for
    # the extractive LLM, the median of three each.
    cc = r["call_costs"]
    per_call = float(np.median(cc["live_actor"]))
    per_llm_call = float(np.median(cc["data_tasks"]))
    embed_calls = r2["ray"]["embed"]["calls"] * scale
    ray_calls_s = embed_calls * per_call + (calls - embed_calls) * per_llm_call
    out = [
        "",
        "## Derived: full MultiHop-RAG (609 documents) on N nodes like this one",
        "",
        f"Measured: MiniLM {1 / per_row_node:.1f} rows/s per 2-core node (the best of the "
        "three rows above); the "
        f"extractive LLM stages {llm_s:.1f} s and the driver's own (global) work "
        f"{single['wall'] - model_s:.1f} s on {single['chunks']} chunks; Ray's cost "
        f"{per_call * 1000:.0f} ms per embedding call, {per_llm_call * 1000:.0f} ms per "
        "extractive LLM call. Derived: rows, driver time and calls scaled by "
        f"chunks ({r['multihop_chunks']} / {single['chunks']} = {scale:.2f}, assuming linear), "
        f"{embed_rows:.0f} rows to embed, each costed as a 200-token chunk (semantic units, "
        "attributes and summaries are shorter: an upper bound); LLM and embedding divide by "
        "N, the driver's work does not.",
        "",
        "| nodes | embedding s | LLM s | driver s | Ray calls s | total min |",
        "|---|---|---|---|---|---|",
    ]
    for n in (1, 2, 4, 8, 16):
        emb = embed_rows * per_row_node / n
        llm = llm_s * scale / n
        ray_s = ray_calls_s
        total = (emb + llm + driver_s + ray_s) / 60
        out.append(f"| {n} | {emb:.0f} | {llm:.0f} | {driver_s:.0f} | {ray_s:.0f} | {total:.1f} |")
    out += [
        "",
        "The driver's share (partition, entity merging, k-core, betweenness, Leiden, K-means, "
        "semantic edges, the writer) bounds the speed-up (Amdahl): it is the floor of the "
        "column `total` as N grows. GPU nodes change only the per-row costs of the embedding "
        "and LLM columns; they were not measured here (no GPU on this machine): put the rows/s "
        "of `benchmarks/gpu/embed.py` and the prompts/s of `benchmarks/gpu/vllm_smoke.py` in "
        "place of the CPU figures.",
    ]
    return out


if __name__ == "__main__":
    main()
