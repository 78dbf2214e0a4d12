"""Concurrent graph-mode queries: do the PPR / top-k / pack kernels scale across threads?

The HTTP server answers queries from a thread pool. A ``graph`` query runs, per request,
``core.ppr.shallow_ppr`` (alpha 0.5, 2 steps from 5-20 seed nodes), ``core.ppr.top_k_by_kind``
over the nodes reached and ``core.budget.pack`` of the selected nodes under a token budget.
Those kernels are compiled with ``nogil=True``: a thread inside one does not hold the GIL,
so queries on different threads overlap. This script measures it on a synthetic power-law
graph (seeded), from a ``ThreadPoolExecutor`` with 1, 2 and 4 threads.

With ``--baseline`` the same kernels are also run re-jitted from their Python source
(``dispatcher.py_func``) with ``nogil=False`` (what they were before): the module attributes
that the public wrappers call are swapped for the GIL-holding twins during those cells, so
"before" and "after" come from one process, one graph and the same queries. Cells are
interleaved (``--rounds`` rounds of every (kernels, threads) cell) so that load from other
jobs on a shared machine hits both variants alike; the 1-minute load average is printed
beside each row.

    python -m benchmarks.service.concurrent_graph --baseline          # ~1.5 min on 2 cores
    python -m benchmarks.service.concurrent_graph --quick --baseline  # small graph, smoke test

Writes benchmarks/results/concurrent_graph.md (not with ``--quick``) and prints the table.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from benchmarks.common import RESULTS, command_line, load1, machine
from graphstrata.core import budget as budget_mod
from graphstrata.core import ppr as ppr_mod
from graphstrata.core.budget import pack
from graphstrata.core.graph import csr_from_edges
from graphstrata.core.ppr import shallow_ppr, shallow_ppr_stats
from graphstrata.core.topk import top_k_by_kind

#: The compiled entry points a graph query crosses (module, attribute): the public
#: wrappers look these up at call time, so swapping the attribute swaps the kernel.
KERNELS: tuple[tuple[ModuleType, str], ...] = (
    (ppr_mod, "_seed_distribution"),
    (ppr_mod, "_push"),
    (ppr_mod, "_top_k_positions"),
    (budget_mod, "_pack"),
)
N_KINDS = 6
K_PER_KIND = {kind: 10 for kind in range(N_KINDS)} | {3: 30}  # relations: more, as the engine
BUDGET_TOKENS = 2000


# --------------------------------------------------------------------------- inputs


def power_law_graph(n: int, e: int, gamma: float, seed: int) -> dict[str, Any]:
    """Chung-Lu style graph: both endpoints drawn with P(i) ~ (i + 1)^(-1/(gamma - 1)),
    node ids shuffled, self-loops dropped, duplicates summed by ``csr_from_edges``; random
    float32 weights in [0.5, 1.5), node kinds in 0..5, token counts in 16..511."""
    rng = np.random.default_rng(seed)
    p = (np.arange(1, n + 1, dtype=np.float64)) ** (-1.0 / (gamma - 1.0))
    p /= p.sum()
    perm = rng.permutation(n).astype(np.int64)
    src = perm[rng.choice(n, e, p=p)]
    dst = perm[rng.choice(n, e, p=p)]
    keep = src != dst
    src, dst = src[keep], dst[keep]
    w = (rng.random(src.shape[0]) + 0.5).astype(np.float32)
    t0 = time.perf_counter()
    ip, ix, wt = csr_from_edges(src, dst, w, n)
    build_s = time.perf_counter() - t0
    return {
        "csr": (ip, ix, wt),
        "kinds": rng.integers(0, N_KINDS, n).astype(np.uint8),
        "tokens": rng.integers(16, 512, n).astype(np.int64),
        "n": n,
        "edges_drawn": e,
        "nnz": int(ip[-1]),
        "max_degree": int(np.diff(ip).max()),
        "build_s": build_s,
    }


def seed_sets(n: int, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` seed sets of 5-20 distinct random nodes with weights in [0.5, 1.5)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        size = int(rng.integers(5, 21))
        seeds = np.sort(rng.choice(n, size, replace=False)).astype(np.int64)
        out.append((seeds, rng.random(size) + 0.5))
    return out


# --------------------------------------------------------------------------- the query


def graph_query(g: dict[str, Any], seeds: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """What a ``graph`` query computes in the kernels: PPR, top-k per kind, packing.

    ``top_k_by_kind`` returns the cross nodes ranked by score, so ``pack`` gets them with
    their rank as the score (the engine packs its candidates already ranked too); the only
    glue is the two gathers of node attributes, as in the engine.
    """
    ip, ix, wt = g["csr"]
    nodes, scores = shallow_ppr(ip, ix, wt, seeds, weights, alpha=0.5, iters=2)
    cross = top_k_by_kind(nodes, scores, g["kinds"][nodes], K_PER_KIND)
    rank = np.arange(cross.shape[0], 0, -1, dtype=np.float64)
    chosen = pack(rank, g["tokens"][cross], BUDGET_TOKENS)
    return cross[chosen]


# --------------------------------------------------------------------------- variants


def gil_twins() -> dict[tuple[ModuleType, str], Any]:
    """The kernels of :data:`KERNELS` re-jitted from their Python source without nogil."""
    from numba import njit

    twins = {}
    for mod, name in KERNELS:
        disp = getattr(mod, name)
        if not disp.targetoptions.get("nogil"):
            raise SystemExit(f"{mod.__name__}.{name} is not compiled with nogil=True")
        twins[(mod, name)] = njit(cache=False, nogil=False)(disp.py_func)
    return twins


@contextlib.contextmanager
def kernels(twins: dict[tuple[ModuleType, str], Any] | None) -> Iterator[None]:
    """Run the block with the GIL-holding twins in place (``None``: the real kernels)."""
    if twins is None:
        yield
        return
    saved = {key: getattr(*key) for key in twins}
    try:
        for (mod, name), fn in twins.items():
            setattr(mod, name, fn)
        yield
    finally:
        for (mod, name), fn in saved.items():
            setattr(mod, name, fn)


# --------------------------------------------------------------------------- measure


def spin_kernel() -> Callable[[int], float]:
    """A compiled busy loop that releases the GIL: perfectly parallel work, the ceiling."""
    from numba import njit

    @njit(cache=False, nogil=True)
    def spin(n: int) -> float:
        acc = 0.0
        for i in range(n):
            acc += (i % 7) * 0.5
        return acc

    spin(1)
    return spin  # type: ignore[no-any-return]


def run_cell(task: Callable[[int], object], n: int, threads: int) -> tuple[float, float, list]:
    """``task(0..n-1)`` submitted one call per task to a pool of ``threads``.

    Returns the wall time, the process CPU time and the per-task latencies.
    """

    def one(i: int) -> float:
        t0 = time.perf_counter()
        task(i)
        return time.perf_counter() - t0

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(one, range(min(n, 4 * threads))))  # warm the workers
        c0 = time.process_time()
        t0 = time.perf_counter()
        lat = list(pool.map(one, range(n)))
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
    return wall, cpu, lat


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.2f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--gamma", type=float, default=2.5, help="degree exponent")
    ap.add_argument("--queries", type=int, default=1000, help="queries per cell and round")
    ap.add_argument("--rounds", type=int, default=4, help="interleaved rounds of all cells")
    ap.add_argument("--threads", default="1,2,4")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--baseline", action="store_true", help="also run the kernels re-jitted with nogil=False"
    )
    ap.add_argument("--quick", action="store_true", help="small graph, few queries (smoke)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.quick:
        args.nodes, args.edges, args.queries, args.rounds = 20_000, 100_000, 100, 1
    thread_counts = [int(x) for x in args.threads.split(",")]
    t_start = time.perf_counter()
    load_start = load1()

    print(f"graph: {args.nodes:,} nodes, {args.edges:,} edges drawn ...", flush=True)
    g = power_law_graph(args.nodes, args.edges, args.gamma, args.seed)
    queries = seed_sets(args.nodes, 500, args.seed + 1)
    ip, ix, wt = g["csr"]
    touched = [shallow_ppr_stats(ip, ix, wt, s, w, 0.5, 2) for s, w in queries[:100]]
    reached = float(np.mean([t[0].size for t in touched]))
    edges_read = float(np.mean([t[2] for t in touched]))

    def query(i: int) -> np.ndarray:
        seeds, weights = queries[i % len(queries)]
        return graph_query(g, seeds, weights)

    # (twins, task) per row group: the real kernels, their GIL-holding twins, the ceiling
    NOW, BEFORE, CEILING = "nogil (now)", "GIL held (before)", "ceiling: nogil busy loop"
    variants: dict[str, tuple[dict[tuple[ModuleType, str], Any] | None, Callable]] = {
        NOW: (None, query)
    }
    if args.baseline:
        variants[BEFORE] = (gil_twins(), query)
    compile_s = {}
    reference = [query(i) for i in range(20)]
    for name, (twins, _) in variants.items():
        with kernels(twins):
            t0 = time.perf_counter()
            got = [query(i) for i in range(20)]  # compiles the twins
            compile_s[name] = time.perf_counter() - t0
        assert all(np.array_equal(a, b) for a, b in zip(got, reference, strict=True)), name
    # the ceiling: a nogil loop as long as one query, through the same pool
    # (CPU time of this thread: wall time on a loaded machine would count other jobs)
    t0 = time.thread_time()
    for i in range(200):
        query(i)
    per_query = (time.thread_time() - t0) / 200
    spin = spin_kernel()
    t0 = time.thread_time()
    spin(20_000_000)
    spin_iters = int(per_query / ((time.thread_time() - t0) / 20_000_000))
    variants[CEILING] = (None, lambda i: spin(spin_iters))

    cells: dict[tuple[str, int], dict[str, list]] = {
        (v, t): {"wall": [], "cpu": [], "lat": [], "load": []}
        for v in variants
        for t in thread_counts
    }
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds} ...", flush=True)
        for t in thread_counts:
            for name, (twins, task) in variants.items():
                with kernels(twins):
                    wall, cpu, lat = run_cell(task, args.queries, t)
                c = cells[(name, t)]
                c["wall"].append(wall)
                c["cpu"].append(cpu)
                c["lat"] += lat
                c["load"].append(load1())

    rows = []
    base_qps: dict[str, float] = {}
    for name in variants:
        for t in thread_counts:
            c = cells[(name, t)]
            qps = len(c["lat"]) / sum(c["wall"])
            base_qps.setdefault(name, qps)
            lats = np.asarray(c["lat"], dtype=np.float64)
            rows.append(
                f"| {name} | {t} | {qps:,.0f} | {qps / base_qps[name]:.2f}x | "
                f"{fmt_ms(float(np.percentile(lats, 50)))} | "
                f"{fmt_ms(float(np.percentile(lats, 99)))} | "
                f"{sum(c['cpu']) / sum(c['wall']):.2f} | "
                f"{min(c['load']):.2f}-{max(c['load']):.2f} |"
            )
    wall_s = time.perf_counter() - t_start
    load_end = load1()
    cmd = command_line(__spec__.name, argv)
    import numba

    md = [
        "# Concurrent graph queries: nogil kernels",
        "",
        f"Command: `{cmd}`",
        "",
        f"Machine: {machine()}, numpy {np.__version__}, Numba {numba.__version__}. "
        f"1-minute load average at start {load_start:.2f}, at end {load_end:.2f} "
        "(shared machine: other jobs were running). "
        f"Total wall time {wall_s:.0f} s.",
        "",
        f"Graph: power-law (Chung-Lu, degree exponent {args.gamma}), {g['n']:,} nodes, "
        f"{g['edges_drawn']:,} edges drawn ({g['nnz']:,} CSR entries after merging, max "
        f"degree {g['max_degree']:,}), seed {args.seed}. A query: `shallow_ppr` (alpha 0.5, "
        f"2 steps, 5-20 random seeds) + `top_k_by_kind` ({K_PER_KIND}) + `pack` (budget "
        f"{BUDGET_TOKENS} tokens); on average it reads {edges_read:,.0f} CSR entries and "
        f"reaches {reached:,.0f} nodes.",
        "",
        f"Each cell: {args.queries} queries x {args.rounds} interleaved rounds, submitted "
        "one task per query to a `ThreadPoolExecutor`; queries/s = queries / wall time of "
        "the cell; latency = one query, measured inside the worker. Speed-up: against the "
        "same kernels on 1 thread. CPU: process CPU time / wall time of the cell (1.00 = one "
        "core busy). Load: the 1-minute load average after each round of the cell (min-max).",
        "",
        "| kernels | threads | queries/s | speed-up | p50 | p99 | CPU | load 1m |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    md += [
        f'"{CEILING}": a compiled loop that releases the GIL, {spin_iters:,} iterations '
        f"(the CPU time of one query, {per_query * 1e3:.2f} ms), through the same pool: "
        "the speed-up that perfectly parallel work got on this machine at that moment. With "
        "other jobs holding the cores, it stays near 1x and so must the kernels.",
        "",
    ]
    if args.baseline:
        md += [
            '"GIL held (before)": the same kernels re-jitted from `py_func` with '
            f"`nogil=False` ({', '.join(f'{m.__name__}.{a}' for m, a in KERNELS)}), swapped "
            "into the modules for those cells; results checked equal to the nogil kernels. "
            f"First calls (compile or cache load): "
            + ", ".join(f"{k} {v:.1f} s" for k, v in compile_s.items())
            + ".",
            "",
        ]
    text = "\n".join(md)
    print(text)
    if not args.quick:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "concurrent_graph.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
