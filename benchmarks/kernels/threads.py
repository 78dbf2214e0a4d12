"""One thread budget per process (issue 52): the budget against each library's default and
against every pool at one thread, idle and beside one busy process, in one interleaved run.

Three configurations, each in its own process (a thread pool is sized once per process):

* ``budget``: the role's budget of ``graphstrata.bindings.threads`` (``server`` for the
  search and serving sections; ``GRAPHSTRATA_THREADS`` unset);
* ``defaults``: ``GRAPHSTRATA_THREADS=default``, every library at its own default (what the
  code did before issue 52);
* ``one``: ``GRAPHSTRATA_THREADS=1``, every pool at one thread.

Sections:

* **search**: per mode search p50/p99 (``Engine.query_vectors``, the query embedded once
  beforehand, so only the search is timed) on two small indexes built with ``minilm-onnx``
  and the extractive LLM: ``examples/sample.jsonl`` (30 documents), the first
  ``--hotpot-docs`` documents of the shared HotpotQA corpus (every kind under
  ``MaintenanceConfig.vector_exact_below``: the exact path) and the first ``--multihop-docs``
  of the shared MultiHop-RAG corpus (sentences and entities above it: the HNSW path; the
  report lists each index's kinds and the path they take), both read-only;
* **serve**: ``graph`` req/s and p50 at concurrency 1/8/32 against a real server per
  configuration (``graphstrata serve --threads ...``, query cache off so every request embeds);
* **product**: ``ExactVectors.search`` of one query over 4,000 x 384 rows (the exact path of
  a small kind, and of every kind's fresh vectors), the per-query matrix product that numpy
  hands to OpenBLAS, p50/p99 per configuration in a fresh process;
* **crossover**: sampled betweenness forced serial against forced parallel (Numba's pool of
  this process, ``query`` role) over a range of work (sources x CSR entries), which is what
  ``core.centrality.BETWEENNESS_PARALLEL_MIN`` encodes.

Every cell runs once per contention state per round, configurations in rotating order, and
records the 1-minute load average beside it (``benchmarks.common.load1``).

    python -m benchmarks.kernels.threads               # ~8 min on 2 cores
    python -m benchmarks.kernels.threads --quick       # smoke test, ~1.5 min

Writes benchmarks/results/threads.md and threads.json (not with ``--quick``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import DATA, REPO, RESULTS, busy_process, load1, load_text, module_command

SAMPLE = REPO / "examples" / "sample.jsonl"
HOTPOT = DATA / "hotpotqa"
MULTIHOP = DATA / "multihop_rag"

#: Configuration -> value of GRAPHSTRATA_THREADS (None: unset, the role's budget).
CONFIGS: dict[str, str | None] = {"budget": None, "defaults": "default", "one": "1"}
CONTENTION = ("idle", "busy")


#: What ``threads.apply`` in this driver writes to the environment, kept from the children.
APPLIED_ENV = ("GRAPHSTRATA_THREADS", "OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def clean_env() -> dict[str, str]:
    """This process's environment as it was before any budget was applied here."""
    env = {k: v for k, v in os.environ.items() if k not in APPLIED_ENV}
    env.update(_ORIGINAL_ENV)
    env["PYTHONPATH"] = str(REPO)
    return env


_ORIGINAL_ENV = {k: os.environ[k] for k in APPLIED_ENV[1:] if k in os.environ}


@contextlib.contextmanager
def children_env(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` replaced by ``env`` (for helpers that start a process from it)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def config_env(name: str) -> dict[str, str]:
    env = clean_env()
    value = CONFIGS[name]
    if value is not None:
        env["GRAPHSTRATA_THREADS"] = value
    return env


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3) if values else float("nan")


# --------------------------------------------------------------------------- corpora
def read_jsonl(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                out.append(json.loads(line))
                if limit is not None and len(out) >= limit:
                    break
    return out


def corpora(
    hotpot_docs: int, n_queries: int, multihop_docs: int = 0
) -> dict[str, tuple[list[dict], list[str]]]:
    """name -> (documents, queries)."""
    docs = read_jsonl(SAMPLE)
    out = {"sample": (docs, [f"What is known about {d['title']}?" for d in docs][:n_queries])}
    shared = (("hotpotqa", HOTPOT, hotpot_docs), ("multihop_rag", MULTIHOP, multihop_docs))
    for name, folder, limit in shared:
        if limit and (folder / "corpus.jsonl").exists():
            sdocs = read_jsonl(folder / "corpus.jsonl", limit)
            has_qa = (folder / "qa.jsonl").exists()
            qa = read_jsonl(folder / "qa.jsonl", n_queries) if has_qa else []
            queries = [q["question"] for q in qa] or [d["title"] for d in sdocs[:n_queries]]
            out[name] = (sdocs, queries)
    return out


#: Kinds that carry vectors: chunks, summaries and the heterograph's embedded kinds.
VECTOR_KINDS = "TLSAH"


def vector_paths(index: Any) -> dict[str, str]:
    """Kind letter -> "exact" or "HNSW" for the kinds with vectors (their node count against
    ``MaintenanceConfig.vector_exact_below``)."""
    stats = index.stats()
    below = int(stats["maintenance"]["vector_exact_below"])
    return {
        kind: f"{n} {'exact' if int(n) < below else 'HNSW'}"
        for kind, n in stats["nodes"].items()
        if kind in VECTOR_KINDS
    }


def build(
    root: Path, hotpot_docs: int, n_queries: int, multihop_docs: int = 0
) -> dict[str, dict[str, Any]]:
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.threads import apply

    apply("build")
    built = {}
    for name, (docs, queries) in corpora(hotpot_docs, n_queries, multihop_docs).items():
        t = time.perf_counter()
        path = root / name
        index = Index.create(path, embedder="minilm-onnx", llm="extractive")
        index.insert(docs)
        built[name] = {
            "path": str(path),
            "docs": len(docs),
            "queries": queries,
            "build_s": round(time.perf_counter() - t, 1),
            "modes": list(index.modes),
            "paths": vector_paths(index),
        }
        del index
        print(f"built {name}: {len(docs)} docs in {built[name]['build_s']} s", flush=True)
    return built


# --------------------------------------------------------------------------- search worker
def worker(spec_path: str) -> int:
    """A search process: applies the server role, then times the cells asked on stdin."""
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.threads import apply

    b = apply("server")
    spec = json.loads(Path(spec_path).read_text())
    engines, vectors = {}, {}
    for name, info in spec.items():
        engine = Index.open(info["path"]).engine
        engines[name] = engine
        vectors[name] = engine.embedder.embed(info["queries"])
        for mode in info["modes"]:  # warm: compile and first-touch caches
            engine.query_vectors(info["queries"][:2], vectors[name][:2], mode)
    print(json.dumps({"ready": True, "budget": b.__dict__}), flush=True)
    for line in sys.stdin:
        cell = json.loads(line)
        name, mode, n = cell["index"], cell["mode"], int(cell["n"])
        queries, vecs = spec[name]["queries"], vectors[name]
        times = []
        for i in range(n):
            j = i % len(queries)
            t = time.perf_counter()
            engines[name].query_vectors([queries[j]], vecs[j : j + 1], mode)
            times.append((time.perf_counter() - t) * 1e3)
        print(json.dumps(times), flush=True)
    return 0


class Worker:
    def __init__(self, config: str, spec_path: Path):
        self.proc = subprocess.Popen(
            [*module_command("benchmarks.kernels.threads"), "--worker", str(spec_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=config_env(config),
            cwd=REPO,
        )
        assert self.proc.stdout is not None
        self.budget = json.loads(self.proc.stdout.readline())["budget"]

    def run(self, index: str, mode: str, n: int) -> list[float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"index": index, "mode": mode, "n": n}) + "\n")
        self.proc.stdin.flush()
        return list(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def bench_search(built: dict, rounds: int, n: int, root: Path) -> dict[str, Any]:
    spec_path = root / "spec.json"
    spec_path.write_text(json.dumps(built))
    workers = {c: Worker(c, spec_path) for c in CONFIGS}
    cells: dict[str, dict[str, Any]] = {}
    try:
        for r in range(rounds):
            order = list(CONFIGS)[r % 3 :] + list(CONFIGS)[: r % 3]
            for state in CONTENTION:
                with busy_process(state == "busy"):
                    for name, info in built.items():
                        for mode in info["modes"]:
                            for c in order:
                                key = f"{name}|{mode}|{state}|{c}"
                                cell = cells.setdefault(key, {"ms": [], "load": []})
                                cell["ms"] += workers[c].run(name, mode, n)
                                cell["load"].append(load1())
            print(f"search round {r + 1}/{rounds} done (load {load1()})", flush=True)
    finally:
        budgets = {c: w.budget for c, w in workers.items()}
        for w in workers.values():
            w.close()
    out = {}
    for key, cell in cells.items():
        out[key] = {
            "p50_ms": pct(cell["ms"], 50),
            "p99_ms": pct(cell["ms"], 99),
            "n": len(cell["ms"]),
            "load": round(float(np.mean(cell["load"])), 2),
        }
    return {"cells": out, "budgets": budgets}


def product_worker() -> int:
    """A product process: applies the server role, then times ``ExactVectors.search``."""
    from graphstrata.bindings.threads import apply
    from graphstrata.engine.exact_vectors import ExactVectors

    apply("server")
    rng = np.random.default_rng(0)
    rows = rng.standard_normal((4000, 384), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    exact = ExactVectors(np.arange(4000, dtype=np.int64), rows)
    queries = rows[rng.integers(0, 4000, 64)]
    for i in range(50):
        exact.search(queries[i % 64 : i % 64 + 1], 10)
    times = []
    for i in range(400):
        t = time.perf_counter()
        exact.search(queries[i % 64 : i % 64 + 1], 10)
        times.append((time.perf_counter() - t) * 1e3)
    print(json.dumps(times), flush=True)
    return 0


def bench_product(rounds: int) -> dict[str, Any]:
    cells: dict[str, dict[str, Any]] = {}
    for r in range(rounds):
        order = list(CONFIGS)[r % 3 :] + list(CONFIGS)[: r % 3]
        for state in CONTENTION:
            with busy_process(state == "busy"):
                for c in order:
                    out = subprocess.run(
                        [*module_command("benchmarks.kernels.threads"), "--product"],
                        capture_output=True,
                        text=True,
                        env=config_env(c),
                        cwd=REPO,
                        check=True,
                    ).stdout
                    cell = cells.setdefault(f"{state}|{c}", {"ms": [], "load": []})
                    cell["ms"] += json.loads(out.strip().splitlines()[-1])
                    cell["load"].append(load1())
    return {
        k: {
            "p50_ms": pct(v["ms"], 50),
            "p99_ms": pct(v["ms"], 99),
            "n": len(v["ms"]),
            "load": round(float(np.mean(v["load"])), 2),
        }
        for k, v in cells.items()
    }


# --------------------------------------------------------------------------- serving
def bench_serve(
    built: dict, rounds: int, concurrencies: list[int], requests: int, cap: float
) -> dict[str, Any]:
    from benchmarks.service.loadgen import run_load
    from benchmarks.service.server_process import server_process

    name = "hotpotqa" if "hotpotqa" in built else "sample"
    info = built[name]
    cells: dict[str, dict[str, Any]] = {}
    with contextlib.ExitStack() as stack:
        servers = {}
        for c, value in CONFIGS.items():
            args = ["--query-cache", "0"] + (["--threads", value] if value else [])
            with children_env(clean_env()):
                servers[c] = stack.enter_context(server_process(info["path"], args))
        for r in range(rounds):
            order = list(CONFIGS)[r % 3 :] + list(CONFIGS)[: r % 3]
            for state in CONTENTION:
                with busy_process(state == "busy"):
                    for conc in concurrencies:
                        for c in order:
                            (res,) = run_load(
                                servers[c].url,
                                info["queries"],
                                modes=["graph"],
                                concurrencies=[conc],
                                requests=requests,
                                duration_cap=cap,
                            )
                            s = res.summary()
                            cell = cells.setdefault(
                                f"{name}|{conc}|{state}|{c}", {"rps": [], "p50": [], "load": []}
                            )
                            cell["rps"].append(s["rps"])
                            cell["p50"].append(s["p50_ms"])
                            cell["load"].append(load1())
            print(f"serve round {r + 1}/{rounds} done (load {load1()})", flush=True)
    return {
        k: {
            "rps": round(float(np.median(v["rps"])), 1),
            "p50_ms": round(float(np.median(v["p50"])), 2),
            "load": round(float(np.mean(v["load"])), 2),
        }
        for k, v in cells.items()
    }


def _cores() -> int:
    from graphstrata.bindings.threads import available_cores

    return available_cores()


# --------------------------------------------------------------------------- crossover
def random_graph(n: int, degree: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A connected-ish graph with Zipf-popular hubs (like the heterograph's entities)."""
    from graphstrata.core.graph import csr_from_edges

    rng = np.random.default_rng(seed)
    m = n * degree // 2
    src = rng.integers(0, n, m)
    pop = 1.0 / np.arange(1, n + 1) ** 1.1
    dst = rng.choice(n, m, p=pop / pop.sum())
    chain = np.arange(n - 1)
    src = np.concatenate([src, chain])
    dst = np.concatenate([dst, chain + 1])
    keep = src != dst
    ip, ix, _ = csr_from_edges(src[keep], dst[keep], np.ones(int(keep.sum()), np.float32), n)
    return ip, ix


def bench_crossover(rounds: int, quick: bool) -> dict[str, Any]:
    from graphstrata.bindings.threads import apply
    from graphstrata.core.centrality import sampled_betweenness

    b = apply("query")
    sizes = [(2_000, 4), (8_000, 4), (30_000, 2), (30_000, 8), (30_000, 32)]
    if quick:
        sizes = sizes[:3]
    graphs = {n: random_graph(n, 10, seed=n) for n, _ in sizes}
    for ip, ix in graphs.values():  # compile both paths
        sampled_betweenness(ip, ix, k=2, seed=0, parallel_min_work=0)
        sampled_betweenness(ip, ix, k=2, seed=0, parallel_min_work=1 << 62)
    cells: dict[str, dict[str, Any]] = {}
    for _ in range(rounds):
        for state in CONTENTION:
            with busy_process(state == "busy"):
                for n, k in sizes:
                    ip, ix = graphs[n]
                    work = k * int(ix.size)
                    for path, threshold in (("serial", 1 << 62), ("parallel", 0)):
                        times = []
                        for rep in range(5):
                            t = time.perf_counter()
                            sampled_betweenness(ip, ix, k=k, seed=rep, parallel_min_work=threshold)
                            times.append((time.perf_counter() - t) * 1e3)
                        cell = cells.setdefault(
                            f"{work}|{state}|{path}", {"ms": [], "load": [], "n": n, "k": k}
                        )
                        cell["ms"] += times
                        cell["load"].append(load1())
    out = {
        k: {
            "n": v["n"],
            "k": v["k"],
            "p50_ms": pct(v["ms"], 50),
            "load": round(float(np.mean(v["load"])), 2),
        }
        for k, v in cells.items()
    }
    return {"cells": out, "numba_threads": b.numba}


# --------------------------------------------------------------------------- report
def report(res: dict[str, Any]) -> str:
    env = res["env"]
    out = [
        "# Thread budget (issue 52): budget vs library defaults vs one thread",
        "",
        f"{env['cpus']} cores (affinity), {env['platform']}, Python {env['python']}, numba "
        f"{env['numba']}. Load average (1 min) at start {env['load_start']}, at end "
        f"{env['load_end']}; run took {env['seconds']} s.",
        "",
        "**The cores may be shared**: `idle` means no process of this benchmark competes "
        "(other jobs may; see each row's load average), `busy` adds one spinning process. "
        "Compare configurations within a row (interleaved cells), not rows across runs.",
        "",
        "Configurations: `budget` = the server role of `graphstrata.bindings.threads` "
        f"({_budget_line(res['search']['budgets']['budget'])}); `defaults` = "
        "`GRAPHSTRATA_THREADS=default` (every library's own pool, the behaviour before); "
        "`one` = `GRAPHSTRATA_THREADS=1`.",
        "",
        "Indexes (kind: vectors and the search path, exact below "
        "`MaintenanceConfig.vector_exact_below`): "
        + "; ".join(
            f"{name} {info['docs']} documents ("
            + ", ".join(f"{k} {p}" for k, p in info.get("paths", {}).items())
            + ")"
            for name, info in res["indexes"].items()
        )
        + ".",
        "",
        "## Search p50 / p99 (ms), search only (query embedded beforehand)",
        "",
        "| index | mode | contention | budget | defaults | one | budget / one (p50) | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    cells = res["search"]["cells"]
    for name, info in res["indexes"].items():
        for mode in info["modes"]:
            for state in CONTENTION:
                got = {c: cells[f"{name}|{mode}|{state}|{c}"] for c in CONFIGS}
                ratio = got["budget"]["p50_ms"] / got["one"]["p50_ms"]
                out.append(
                    f"| {name} | {mode} | {state} | "
                    + " | ".join(
                        f"{got[c]['p50_ms']:.2f} / {got[c]['p99_ms']:.2f}" for c in CONFIGS
                    )
                    + f" | {ratio:.2f} | {got['budget']['load']} |"
                )
    if res.get("serve"):
        out += [
            "",
            "## Serving `graph` (req/s, p50 ms), query cache off",
            "",
            "| index | concurrency | contention | budget | defaults | one | budget / defaults "
            "| budget / one | load |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for key in sorted({k.rsplit("|", 1)[0] for k in res["serve"]}, key=_serve_order):
            got = {c: res["serve"][f"{key}|{c}"] for c in CONFIGS}
            name, conc, state = key.split("|")
            out.append(
                f"| {name} | {conc} | {state} | "
                + " | ".join(f"{got[c]['rps']:.1f} ({got[c]['p50_ms']:.1f})" for c in CONFIGS)
                + f" | {got['budget']['rps'] / max(got['defaults']['rps'], 1e-9):.2f}"
                + f" | {got['budget']['rps'] / max(got['one']['rps'], 1e-9):.2f}"
                + f" | {got['budget']['load']} |"
            )
    P = res["product"]
    out += [
        "",
        "## Per-query product: `ExactVectors.search`, 1 query x 4,000 x 384 rows (ms)",
        "",
        "| contention | budget p50 / p99 | defaults p50 / p99 | one p50 / p99 | load |",
        "|---|---|---|---|---|",
    ]
    for state in CONTENTION:
        out.append(
            f"| {state} | "
            + " | ".join(
                f"{P[f'{state}|{c}']['p50_ms']:.3f} / {P[f'{state}|{c}']['p99_ms']:.2f}"
                for c in CONFIGS
            )
            + f" | {P[f'{state}|budget']['load']} |"
        )
    X = res["crossover"]["cells"]
    out += [
        "",
        "## Crossover: sampled betweenness, serial vs parallel (p50 ms)",
        "",
        f"Numba's pool of a `query`-role process ({res['crossover']['numba_threads']} "
        "threads, OpenMP layer, `OMP_WAIT_POLICY=PASSIVE`). Work = sources x CSR entries.",
        "",
        "| work | nodes | sources | contention | serial | parallel | parallel / serial | load |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for work in sorted({int(k.split("|")[0]) for k in X}):
        for state in CONTENTION:
            s, p = X[f"{work}|{state}|serial"], X[f"{work}|{state}|parallel"]
            out.append(
                f"| {work:,} | {s['n']:,} | {s['k']} | {state} | {s['p50_ms']:.2f} | "
                f"{p['p50_ms']:.2f} | {p['p50_ms'] / s['p50_ms']:.2f} | {s['load']} |"
            )
    return "\n".join(out) + "\n"


def _serve_order(key: str) -> tuple[str, int, int]:
    name, conc, state = key.split("|")
    return name, int(conc), CONTENTION.index(state)


def _budget_line(b: dict[str, Any]) -> str:
    return (
        f"BLAS {b['blas']}, Numba {b['numba']} per request thread, ONNX {b['onnx']}, torch "
        f"{b['torch']}, search pool {b['search_pool']}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--product", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="small run (smoke test), no files")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=20, help="search queries per cell")
    ap.add_argument("--hotpot-docs", type=int, default=300, dest="hotpot_docs")
    ap.add_argument(
        "--multihop-docs",
        type=int,
        default=120,
        dest="multihop_docs",
        help="MultiHop-RAG documents (120: ~5,000 sentences, above the exact-search bound)",
    )
    ap.add_argument("--no-serve", action="store_true", dest="no_serve")
    ap.add_argument(
        "--serve-requests",
        type=int,
        default=800,
        dest="serve_requests",
        help="requests per serving cell (at ~150 req/s, 200 took ~1.3 s: runs varied by 10 %%)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.product:
        return product_worker()
    import numba

    t0 = time.perf_counter()
    env = {
        "cpus": _cores(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numba": numba.__version__,
        "load_start": load_text(),
    }
    print(f"load at start: {env['load_start']}", flush=True)
    rounds = 1 if args.quick else args.rounds
    hotpot = 60 if args.quick else args.hotpot_docs
    multihop = 0 if args.quick else args.multihop_docs
    res: dict[str, Any] = {"env": env}
    with tempfile.TemporaryDirectory(prefix="gs-threads-") as tmp:
        # The crossover first, in this process, before anything else starts Numba's pool.
        res["crossover"] = bench_crossover(rounds, args.quick)
        print(f"crossover done (load {load1()})", flush=True)
        res["product"] = bench_product(rounds)
        print(f"product done (load {load1()})", flush=True)
        built = build(Path(tmp), hotpot, args.queries, multihop)
        res["indexes"] = {
            k: {
                "docs": v["docs"],
                "build_s": v["build_s"],
                "modes": v["modes"],
                "paths": v["paths"],
            }
            for k, v in built.items()
        }
        res["search"] = bench_search(built, rounds, args.queries, Path(tmp))
        if not args.no_serve:
            res["serve"] = bench_serve(
                built,
                max(1, rounds - 1),
                [1, 8, 32],
                args.serve_requests,
                4.0 if args.quick else 2 * args.serve_requests / 100,
            )
    env["load_end"] = load_text()
    env["seconds"] = round(time.perf_counter() - t0, 1)
    text = report(res)
    print(text)
    if not args.quick:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "threads.md").write_text(text)
        (args.out / "threads.json").write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
