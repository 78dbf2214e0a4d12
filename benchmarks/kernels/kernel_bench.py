"""Kernel benchmarks: graphstrata.core against the peers' way and the machine's floor.

One run, fixed seeds, same inputs for every contender:

* LSH projection, 200,000 x 384 float32 (2,000 normalized gaussian clusters), 16 bits:
  ``core.lsh.project_codes`` vs numpy ``X @ H.T > 0`` + ``packbits`` vs EraRAG's per-vector
  loop with a string join (timed on a subsample, scaled) vs the bare float32 GEMM (floor).
* partition of those codes into [8, 12] segments: ``core.partition.partition`` vs
  ``np.unique`` grouping (floor) vs EraRAG's greedy walk over integer-sorted codes; again
  with 20-bit codes (the other end of EraRAG's 16-20 range), plus segment quality.
* shallow PPR (alpha 0.5, 2 steps) per query on a 300,000-node heterograph-like graph
  (~1.5M undirected weighted edges, heavy-tailed entity degrees), 200 seed sets of 5-20
  nodes: ``core.ppr.shallow_ppr`` vs the formula with scipy.sparse over the whole graph plus
  a full argsort (NodeRAG's way) vs igraph ``personalized_pagerank`` with prpack (HippoRAG's
  way; ~1 s per query, so timed on the first 20 seed sets).
* betweenness from k = 10 sources: ``core.centrality.sampled_betweenness`` vs
  ``networkx.betweenness_centrality(G, k=10)`` vs igraph ``betweenness(sources=...)``, all
  from the same sources.

Times are wall-clock: median, min and max of ``--runs`` runs after one warm-up (per-query
percentiles for PPR). Numba compile (or cache-load) time is measured on the first call and
reported apart. Writes benchmarks/results/kernels.json and kernels.md and prints the table.

Not named ``kernels.py``: transformers probes for the Hugging Face ``kernels`` package, and
a script run by its path puts its folder first on ``sys.path``, where such a file was found
instead ("cannot import name 'CUDAProperties' from 'kernels'").

    python -m benchmarks.kernels.kernel_bench            # full run (~5-10 min on 2 cores)
    python -m benchmarks.kernels.kernel_bench --quick    # small inputs, a smoke test
    python -m benchmarks.kernels.kernel_bench --cold     # fresh Numba cache: compiles timed
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import RESULTS, busy_process, load1, load_text, write_json

# --------------------------------------------------------------------------- timing


def timed(fn: Callable[[], Any], runs: int, warmup: int = 1) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def first_call(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def stats(ts: list[float]) -> dict[str, float]:
    a = np.asarray(ts, dtype=np.float64)
    return {
        "median_s": float(np.median(a)),
        "min_s": float(a.min()),
        "max_s": float(a.max()),
        "runs": int(a.size),
    }


def pct(ts: list[float]) -> dict[str, float]:
    a = np.asarray(ts, dtype=np.float64)
    return {
        "p50_s": float(np.percentile(a, 50)),
        "p99_s": float(np.percentile(a, 99)),
        "min_s": float(a.min()),
        "max_s": float(a.max()),
        "queries": int(a.size),
    }


# --------------------------------------------------------------------------- inputs


def make_embeddings(n: int, d: int, k: int, noise: float, seed: int) -> np.ndarray:
    """Normalized mixture of k gaussian clusters (mean cosine to the centre ~0.7)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d), dtype=np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    X = centers[rng.integers(0, k, n)]
    X += np.float32(noise) * rng.standard_normal((n, d), dtype=np.float32)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


KINDS = ("T", "S", "N", "R", "A", "H")


def make_graph(n: int, seed: int) -> dict[str, Any]:
    """A heterograph shaped like NodeRAG's: T chunks, S units, N entities (Zipf-popular,
    so a few hubs), R relationships, A attributes, H high-level elements, plus semantic
    neighbour edges between embedded nodes. Weights 1 per edge; duplicates add."""
    rng = np.random.default_rng(seed)
    share = {"T": 0.10, "S": 0.30, "N": 0.25, "R": 0.20, "A": 0.05, "H": 0.10}
    counts = {k: int(n * share[k]) for k in KINDS}
    counts["S"] += n - sum(counts.values())
    start, acc = {}, 0
    for k in KINDS:
        start[k] = acc
        acc += counts[k]
    kinds = np.repeat(np.arange(len(KINDS), dtype=np.uint8), [counts[k] for k in KINDS])

    def ids(k: str, size: int | None = None, idx: np.ndarray | None = None) -> np.ndarray:
        if idx is not None:
            return start[k] + idx
        return start[k] + rng.integers(0, counts[k], size)

    n_ent = counts["N"]
    pop = 1.0 / np.arange(1, n_ent + 1) ** 1.1  # Zipf popularity of entities
    pop /= pop.sum()
    src, dst = [], []
    s_ids = ids("S", idx=np.arange(counts["S"]))
    src.append(s_ids)  # each unit in one chunk
    dst.append(ids("T", counts["S"]))
    mentions = 1 + rng.poisson(3.0, counts["S"])  # unit -> entities
    src.append(np.repeat(s_ids, mentions))
    dst.append(start["N"] + rng.choice(n_ent, mentions.sum(), p=pop))
    r_ids = ids("R", idx=np.arange(counts["R"]))  # relationship -> its two entities
    for _ in range(2):
        src.append(r_ids)
        dst.append(start["N"] + rng.choice(n_ent, counts["R"], p=pop))
    src.append(ids("A", idx=np.arange(counts["A"])))  # attribute -> an important entity
    dst.append(start["N"] + rng.integers(0, min(n_ent, 20_000), counts["A"]))
    h_ids = ids("H", idx=np.arange(counts["H"]))  # element -> 10 members
    members = np.concatenate([ids("S", idx=np.arange(counts["S"])), start["N"] + np.arange(n_ent)])
    src.append(np.repeat(h_ids, 10))
    dst.append(rng.choice(members, h_ids.size * 10))
    embedded = np.flatnonzero(np.isin(kinds, [0, 1, 4, 5]))  # T, S, A, H
    src.append(np.repeat(embedded, 4))  # semantic neighbours
    dst.append(rng.choice(embedded, embedded.size * 4))
    s = np.concatenate(src).astype(np.int64)
    d = np.concatenate(dst).astype(np.int64)
    keep = s != d
    s, d = s[keep], d[keep]
    w = np.ones(s.shape[0], dtype=np.float32)
    seed_pool = np.flatnonzero(np.isin(kinds, [1, 2, 4, 5]))  # S, N, A, H entry points
    seeds = []
    for _ in range(200):
        size = int(rng.integers(5, 21))
        seeds.append(np.sort(rng.choice(seed_pool, size, replace=False)).astype(np.int64))
    return {"src": s, "dst": d, "w": w, "n": n, "kinds": kinds, "seeds": seeds}


# --------------------------------------------------------------------------- peers


def erarag_bucket_ids(X: np.ndarray, hyperplanes: np.ndarray) -> list[int]:
    """EraRAG's hashing: per vector, a dot product, then the bits joined as a string."""
    out = []
    for vec in X:
        projections = np.dot(vec, hyperplanes.T)
        binary_hash = (projections > 0).astype(int)
        out.append(int("".join(map(str, binary_hash)), 2))
    return out


def numpy_codes(X: np.ndarray, H: np.ndarray) -> np.ndarray:
    bits = (X @ H.T) > 0
    packed = np.packbits(bits, axis=1, bitorder="little")
    packed = np.pad(packed, ((0, 0), (0, 8 - packed.shape[1])))
    return np.ascontiguousarray(packed).view("<u8").ravel()


def erarag_partition(codes: np.ndarray, min_size: int, max_size: int) -> np.ndarray:
    """EraRAG's greedy walk (public code, rewritten): buckets by code, walked in integer
    order of the code; a cluster closes as soon as it reaches min_size, a bucket that does
    not fit is split across clusters, the last cluster may stay small."""
    buckets: dict[int, list[int]] = defaultdict(list)
    for idx, code in enumerate(codes.tolist()):
        buckets[code].append(idx)
    queue = deque(sorted(buckets.items(), key=lambda x: x[0]))
    clusters: list[list[int]] = []
    current: list[int] = []
    while queue:
        bid, items = queue.popleft()
        if len(items) >= max_size:
            clusters.append(items[:max_size])
            if items[max_size:]:
                queue.appendleft((bid, items[max_size:]))
            continue
        if len(current) + len(items) <= max_size:
            current.extend(items)
        else:
            available = max_size - len(current)
            current.extend(items[:available])
            queue.appendleft((bid, items[available:]))
        if len(current) >= min_size:
            clusters.append(current)
            current = []
    if current:
        clusters.append(current)
    labels = np.empty(codes.shape[0], dtype=np.int64)
    for cid, cl in enumerate(clusters):
        labels[cl] = cid
    return labels


def segment_quality(codes: np.ndarray, seg: np.ndarray, s_min: int, s_max: int) -> dict:
    """Mean Hamming distance of an item to the other items of its segment, and bounds."""
    order = np.argsort(seg, kind="stable")
    c = codes[order]
    s = seg[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    ends = np.r_[starts[1:], s.size]
    total, pairs = 0.0, 0
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        if b - a > 1:
            block = c[a:b]
            d = np.bitwise_count(block[:, None] ^ block[None, :]).sum()
            total += float(d)
            pairs += (b - a) * (b - a - 1)
    sizes = ends - starts
    return {
        "segments": int(sizes.size),
        "mean_pair_hamming": total / max(pairs, 1),
        "below_s_min": int((sizes < s_min).sum()),
        "above_s_max": int((sizes > s_max).sum()),
    }


class FixedSources(random.Random):
    """networkx ``seed`` whose ``sample`` returns our sources (same sources for all)."""

    def __init__(self, sources: np.ndarray) -> None:
        super().__init__(0)
        self.sources = [int(x) for x in sources]

    def sample(self, population, k, **_):  # type: ignore[override]
        return list(self.sources)


# --------------------------------------------------------------------------- sections


def bench_lsh(X: np.ndarray, n_bits: int, runs: int, loop_sample: int) -> dict:
    from graphstrata.core.lsh import project_codes, sample_hyperplanes

    H = sample_hyperplanes(X.shape[1], n_bits, seed=0)
    HT = H.T
    compile_s = first_call(lambda: project_codes(X[:8], H))
    ours = timed(lambda: project_codes(X, H), runs)
    gemm = timed(lambda: X @ HT, runs)
    peer_np = timed(lambda: numpy_codes(X, H), runs)
    sub = X[:loop_sample]
    loop = timed(lambda: erarag_bucket_ids(sub, H), max(1, runs // 2))
    scale = X.shape[0] / loop_sample
    codes = project_codes(X, H)
    assert np.array_equal(codes, numpy_codes(X, H)), "project_codes != numpy oracle"
    return {
        "n_bits": n_bits,
        "rows": int(X.shape[0]),
        "dim": int(X.shape[1]),
        "compile_s": compile_s,
        "ours": stats(ours),
        "floor_gemm": stats(gemm),
        "numpy_packbits": stats(peer_np),
        "erarag_loop_scaled": stats([t * scale for t in loop]),
        "erarag_loop_sample_rows": loop_sample,
        "codes": codes,
    }


def bench_partition(codes: np.ndarray, runs: int, s_min: int = 8, s_max: int = 12) -> dict:
    from graphstrata.core.partition import partition

    compile_s = first_call(lambda: partition(codes[:64], s_min, s_max))
    ours = timed(lambda: partition(codes, s_min, s_max), runs)
    floor = timed(lambda: np.unique(codes, return_inverse=True), runs)
    peer = timed(lambda: erarag_partition(codes, s_min, s_max), max(1, runs // 2))
    seg = partition(codes, s_min, s_max)
    era = erarag_partition(codes, s_min, s_max)
    return {
        "items": int(codes.shape[0]),
        "distinct_codes": int(np.unique(codes).size),
        "bounds": [s_min, s_max],
        "compile_s": compile_s,
        "ours": stats(ours),
        "floor_unique": stats(floor),
        "erarag_walk": stats(peer),
        "quality_ours": segment_quality(codes, seg, s_min, s_max),
        "quality_erarag": segment_quality(codes, era, s_min, s_max),
    }


def bench_ppr(graph: dict, csr: tuple, alpha: float, iters: int, igraph_queries: int) -> dict:
    import igraph as ig
    import scipy.sparse as sp

    from graphstrata.core.kcore import igraph_from_csr
    from graphstrata.core.ppr import shallow_ppr, shallow_ppr_stats

    ip, ix, w = csr
    n = ip.shape[0] - 1
    seeds = graph["seeds"]
    compile_s = first_call(lambda: shallow_ppr(ip, ix, w, seeds[0][:2]))
    # NodeRAG's way: P^T once (not timed), then per query two mat-vecs over the whole
    # graph and a full sort of the scores.
    A = sp.csr_matrix((w.astype(np.float64), ix, ip), shape=(n, n))
    rs = np.asarray(A.sum(axis=1)).ravel()
    inv = np.divide(1.0, rs, out=np.zeros_like(rs), where=rs > 0)
    PT = (sp.diags(inv) @ A).T.tocsr()

    def scipy_query(s: np.ndarray) -> np.ndarray:
        p = np.zeros(n)
        np.add.at(p, s, 1.0)
        p /= p.sum()
        pi = p.copy()
        for _ in range(iters):
            pi = alpha * p + (1 - alpha) * (PT @ pi)
        return np.argsort(-pi)

    g = igraph_from_csr(ip, ix)
    rows = np.repeat(np.arange(n), np.diff(ip))
    g.es["weight"] = w[rows < ix].astype(np.float64).tolist()

    def igraph_query(s: np.ndarray) -> np.ndarray:
        reset = np.zeros(n)
        reset[s] = 1.0
        pr = g.personalized_pagerank(
            directed=False,
            damping=1 - alpha,
            reset=reset.tolist(),
            weights="weight",
            implementation="prpack",
        )
        return np.argsort(-np.asarray(pr))

    # correctness: the same formula as the scipy peer, on the nodes we touch
    nodes, scores = shallow_ppr(ip, ix, w, seeds[0])
    p = np.zeros(n)
    np.add.at(p, seeds[0], 1.0)
    p /= p.sum()
    pi = p.copy()
    for _ in range(iters):
        pi = alpha * p + (1 - alpha) * (PT @ pi)
    full = np.zeros(n)
    full[nodes] = scores
    assert np.allclose(full, pi, atol=1e-12), "shallow_ppr != scipy oracle"
    assert isinstance(g, ig.Graph)

    for s in seeds[:5]:  # warm-up
        shallow_ppr(ip, ix, w, s, alpha=alpha, iters=iters)
        scipy_query(s)
    igraph_query(seeds[0])
    ours, touched, reached = [], [], []
    for s in seeds:
        t0 = time.perf_counter()
        shallow_ppr(ip, ix, w, s, alpha=alpha, iters=iters)
        ours.append(time.perf_counter() - t0)
        nd, _, edges = shallow_ppr_stats(ip, ix, w, s, None, alpha, iters)
        touched.append(edges)
        reached.append(nd.size)
    peer_scipy = []
    for s in seeds:
        t0 = time.perf_counter()
        scipy_query(s)
        peer_scipy.append(time.perf_counter() - t0)
    peer_ig = []
    for s in seeds[:igraph_queries]:
        t0 = time.perf_counter()
        igraph_query(s)
        peer_ig.append(time.perf_counter() - t0)
    return {
        "nodes": n,
        "undirected_edges": int((ip[-1] + np.count_nonzero(rows == ix)) // 2),
        "nnz": int(ip[-1]),
        "alpha": alpha,
        "iters": iters,
        "compile_s": compile_s,
        "ours": pct(ours),
        "noderag_scipy": pct(peer_scipy),
        "hipporag_igraph": pct(peer_ig),
        "edges_touched_mean": float(np.mean(touched)),
        "ns_per_edge_median": float(
            np.median(np.asarray(ours) / np.maximum(np.asarray(touched), 1)) * 1e9
        ),
        "edges_touched_p99": float(np.percentile(touched, 99)),
        "nodes_reached_mean": float(np.mean(reached)),
    }


def bench_betweenness(graph: dict, csr: tuple, runs: int, nx_runs: int) -> dict:
    import networkx as nx

    from graphstrata.core.centrality import sampled_betweenness
    from graphstrata.core.kcore import igraph_from_csr

    ip, ix, _ = csr
    n = ip.shape[0] - 1
    k = 10
    sources = np.sort(np.random.default_rng(0).choice(n, k, replace=False)).astype(np.int64)
    from graphstrata.core.graph import csr_from_edges

    tiny = csr_from_edges([0, 1], [1, 2], [1.0, 1.0], 3)
    compile_s = first_call(lambda: sampled_betweenness(tiny[0], tiny[1], k=2, seed=0))
    ours = timed(lambda: sampled_betweenness(ip, ix, k=k, seed=0, sources=sources), runs)
    g = igraph_from_csr(ip, ix)
    src_list = sources.tolist()
    peer_ig = timed(lambda: g.betweenness(sources=src_list, directed=False), runs)
    G = nx.Graph()
    G.add_nodes_from(range(n))
    rows = np.repeat(np.arange(n), np.diff(ip))
    up = rows < ix
    G.add_edges_from(zip(rows[up].tolist(), ix[up].tolist(), strict=True))
    result: dict[str, Any] = {}

    def nx_run() -> None:
        result["bc"] = nx.betweenness_centrality(G, k=k, seed=FixedSources(sources))

    peer_nx = timed(nx_run, nx_runs, warmup=0)
    ref = np.array([result["bc"][i] for i in range(n)])
    got = sampled_betweenness(ip, ix, k=k, seed=0, sources=sources)
    return {
        "nodes": n,
        "k": k,
        "compile_s": compile_s,
        "ours": stats(ours),
        "igraph_same_sources": stats(peer_ig),
        "networkx": stats(peer_nx),
        "equals_networkx": bool(np.allclose(got, ref, rtol=1e-9, atol=1e-15)),
        "threads": int(__import__("numba").get_num_threads()),
    }


def bench_betweenness_contended(csr: tuple, runs: int, rounds: int) -> dict:
    """Sampled betweenness (k = 10) with this process's Numba threads, with one thread, and
    igraph on the same sources: idle and beside one busy process, interleaved by round."""
    import numba

    from graphstrata.core.centrality import sampled_betweenness
    from graphstrata.core.kcore import igraph_from_csr

    ip, ix, _ = csr
    n = ip.shape[0] - 1
    sources = np.sort(np.random.default_rng(0).choice(n, 10, replace=False)).astype(np.int64)
    g = igraph_from_csr(ip, ix)
    src_list = sources.tolist()
    threads = numba.get_num_threads()

    def one_thread() -> None:
        numba.set_num_threads(1)
        try:
            sampled_betweenness(ip, ix, k=10, seed=0, sources=sources)
        finally:
            numba.set_num_threads(threads)

    contenders: dict[str, Callable[[], Any]] = {
        "ours": lambda: sampled_betweenness(ip, ix, k=10, seed=0, sources=sources),
        "ours_one_thread": one_thread,
        "igraph_same_sources": lambda: g.betweenness(sources=src_list, directed=False),
    }
    times: dict[str, list[float]] = defaultdict(list)
    loads: dict[str, list[float]] = defaultdict(list)
    for r in range(rounds):
        for state in ("idle", "busy"):
            with busy_process(state == "busy"):
                names = list(contenders)
                for name in names[r % 3 :] + names[: r % 3]:
                    times[f"{state}|{name}"] += timed(contenders[name], runs)
                    loads[state].append(load1())
    out: dict[str, Any] = {"nodes": n, "k": 10, "threads": threads, "rounds": rounds}
    for key, ts in times.items():
        out[key] = stats(ts)
    for state in ("idle", "busy"):
        out[f"{state}|load"] = round(float(np.mean(loads[state])), 2)
    return out


# --------------------------------------------------------------------------- report


def fmt_t(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} us"


def fx(r: float) -> str:
    """A ratio: one decimal below 100 (so 9.9x does not print as 10x)."""
    return f"{r:.1f}x" if r < 100 else f"{r:.0f}x"


def row(name: str, st: dict, key: str = "median_s") -> str:
    if "p50_s" in st:
        return (
            f"| {name} | {fmt_t(st['p50_s'])} | {fmt_t(st['p99_s'])} | {fmt_t(st['min_s'])} | "
            f"{fmt_t(st['max_s'])} | {st['queries']} |"
        )
    return (
        f"| {name} | {fmt_t(st[key])} | {fmt_t(st['min_s'])} | {fmt_t(st['max_s'])} | "
        f"{st['runs']} |"
    )


def report(res: dict) -> str:
    env = res["env"]
    out = [
        "# Kernel benchmarks",
        "",
        f"Machine: {env['cpus']} CPUs ({env['machine']}), Numba {env['numba']} with "
        f"{env['numba_threads']} threads, numpy {env['numpy']}, scipy {env['scipy']}, "
        f"networkx {env['networkx']}, igraph {env['igraph']}. Load average at start / end: "
        f"{env['load_start']} / {env['load_end']} (shared machine: other jobs were running). "
        f"Total wall time {res['wall_s']:.0f} s. Numba cache: {env['numba_cache']}.",
        "",
        "Wall-clock times after one warm-up; median, min, max over the runs. Numba compile "
        "(or cache load) is the first call, reported apart and excluded.",
        "",
    ]
    L = res["lsh"]
    out += [
        f"## LSH projection: {L['rows']:,} x {L['dim']} float32, {L['n_bits']} bits",
        "",
        "| contender | median | min | max | runs |",
        "|---|---|---|---|---|",
        row("graphstrata `project_codes`", L["ours"]),
        row("floor: bare float32 GEMM `X @ H.T`", L["floor_gemm"]),
        row("numpy `X @ H.T > 0` + packbits", L["numpy_packbits"]),
        row(
            f"EraRAG per-vector loop + string join (timed on {L['erarag_loop_sample_rows']:,} "
            "rows, scaled)",
            L["erarag_loop_scaled"],
        ),
        "",
        f"Ratios: ours / GEMM = **{L['ratio_floor']:.2f}x** (target <= 1.3); EraRAG loop / "
        f"ours = **{fx(L['speedup_loop'])}** (target >= 10); numpy+packbits / ours = "
        f"{L['speedup_numpy']:.2f}x. Compile: {fmt_t(L['compile_s'])}.",
        "",
    ]
    for key in ("partition", "partition_20"):
        if key not in res:
            continue
        P = res[key]
        qo, qe = P["quality_ours"], P["quality_erarag"]
        out += [
            f"## partition: {P['items']:,} codes of {P['n_bits']} bits "
            f"({P['distinct_codes']:,} distinct), bounds {P['bounds']}",
            "",
            "| contender | median | min | max | runs |",
            "|---|---|---|---|---|",
            row("graphstrata `partition`", P["ours"]),
            row("floor: `np.unique(codes, return_inverse=True)`", P["floor_unique"]),
            row("EraRAG greedy walk over integer-sorted codes", P["erarag_walk"]),
            "",
            f"Ratios: ours / np.unique = **{P['ratio_floor']:.2f}x** (target <= 2); EraRAG / "
            f"ours = {fx(P['speedup_peer'])}. Compile: {fmt_t(P['compile_s'])}.",
            "",
            "| result | segments | mean Hamming distance inside a segment | below s_min | "
            "above s_max |",
            "|---|---|---|---|---|",
            f"| graphstrata | {qo['segments']:,} | {qo['mean_pair_hamming']:.2f} | "
            f"{qo['below_s_min']} | {qo['above_s_max']} |",
            f"| EraRAG walk | {qe['segments']:,} | {qe['mean_pair_hamming']:.2f} | "
            f"{qe['below_s_min']} | {qe['above_s_max']} |",
            "",
        ]
    R = res["ppr"]
    out += [
        f"## shallow PPR per query: {R['nodes']:,} nodes, {R['undirected_edges']:,} undirected "
        f"edges, alpha {R['alpha']}, {R['iters']} steps, 200 seed sets of 5-20 nodes",
        "",
        "| contender | p50 | p99 | min | max | queries |",
        "|---|---|---|---|---|---|",
        row("graphstrata `shallow_ppr` (sparse push)", R["ours"]),
        row("NodeRAG's way: scipy mat-vec over the whole graph + full argsort", R["noderag_scipy"]),
        row(
            "HippoRAG's way: igraph personalized_pagerank (prpack) + argsort", R["hipporag_igraph"]
        ),
        "",
        f"Ratios (p50): scipy / ours = **{fx(R['speedup_scipy'])}** (target >= 100); igraph / "
        f"ours = {fx(R['speedup_igraph'])}. Edges touched per query: mean "
        f"{R['edges_touched_mean']:,.0f}, p99 {R['edges_touched_p99']:,.0f} (of {R['nnz']:,} "
        f"CSR entries); nodes reached: mean {R['nodes_reached_mean']:,.0f}. Compile: "
        f"{fmt_t(R['compile_s'])}.",
        "",
    ]
    if R["hipporag_igraph"]["queries"] < R["ours"]["queries"]:
        out += [
            f"igraph was timed on the first {R['hipporag_igraph']['queries']} seed sets only "
            "(each query solves PageRank over the whole graph).",
            "",
        ]
    B = res["betweenness"]
    out += [
        f"## betweenness, k = {B['k']} sources: {B['nodes']:,} nodes (same sources for all)",
        "",
        "| contender | median | min | max | runs |",
        "|---|---|---|---|---|",
        row(f"graphstrata `sampled_betweenness` ({B['threads']} threads)", B["ours"]),
        row("igraph `betweenness(sources=...)`", B["igraph_same_sources"]),
        row("networkx `betweenness_centrality(G, k=10)`", B["networkx"]),
        "",
        f"Ratios: networkx / ours = **{fx(B['speedup_networkx'])}** (target >= 100); igraph / "
        f"ours = **{B['speedup_igraph']:.2f}x** (target >= 1). Values equal networkx's: "
        f"{B['equals_networkx']}. Compile: {fmt_t(B['compile_s'])}.",
        "",
    ]
    if B["networkx"]["runs"] < B["ours"]["runs"]:
        out += [f"networkx ran {B['networkx']['runs']} time(s) only (minutes per run).", ""]
    C = res.get("betweenness_contended")
    if C:
        out += [
            f"## betweenness idle and contended, k = {C['k']}: {C['nodes']:,} nodes",
            "",
            f"Interleaved, {C['rounds']} round(s) of idle then beside one busy process "
            "(`python -c 'while True: pass'`). This process applied the `build` thread budget "
            f"(Numba {C['threads']} threads, OpenMP threads sleep when idle: "
            "`OMP_WAIT_POLICY=PASSIVE`). The machine is shared with other jobs: see the loads.",
            "",
            "| contention | load | contender | median | min | max | runs |",
            "|---|---|---|---|---|---|---|",
        ]
        for state in ("idle", "busy"):
            for name, label in (
                ("ours", f"graphstrata ({C['threads']} threads)"),
                ("ours_one_thread", "graphstrata (1 thread)"),
                ("igraph_same_sources", "igraph (same sources)"),
            ):
                st = C[f"{state}|{name}"]
                out.append(
                    f"| {state} | {C[f'{state}|load']} | {label} | {fmt_t(st['median_s'])} | "
                    f"{fmt_t(st['min_s'])} | {fmt_t(st['max_s'])} | {st['runs']} |"
                )
        out.append("")
    out += ["## Targets", "", "| target | value | met |", "|---|---|---|"]
    for t in res["targets"]:
        out.append(f"| {t['name']} | {t['value']} | {'yes' if t['met'] else '**no**'} |")
    out += ["", "## Notes", ""]
    share_e = R["edges_touched_mean"] / R["nnz"]
    share_n = R["nodes_reached_mean"] / R["nodes"]
    out += [
        f"* PPR: two steps from 5-20 seeds reach hub entities (Zipf-popular), so a query "
        f"reads on average {share_e:.1%} of the CSR entries and reaches {share_n:.1%} of the "
        f"nodes; the whole-graph way reads 100% twice and sorts every node. The speed-up is "
        f"bounded by that ratio times the per-entry cost: ours spends "
        f"{R['ns_per_edge_median']:.0f} ns per entry touched (median over queries: a hash "
        "probe per entry, the table being local to the call), scipy's "
        f"streaming mat-vec about {R['noderag_scipy']['p50_s'] / (2 * R['nnz']) * 1e9:.0f} ns "
        "per entry including its sort.",
        f"* LSH: both our projection and its floor are one memory-bound float32 GEMM through "
        f"OpenBLAS; the bare GEMM ran at {L['rows'] * L['dim'] * 4 / L['floor_gemm']['median_s'] / 1e9:.1f} "
        "GB/s here. On a loaded machine BLAS threads wait on each other while the per-vector "
        "Python loop (one thread) is slowed less, so the loop ratio shrinks with load.",
        f"* partition: the work is one probe of the Hamming ball per merge, and merges grow "
        f"with distinct codes: {res['partition']['distinct_codes']:,} at 16 bits"
        + (
            f", {res['partition_20']['distinct_codes']:,} (nearly one per item) at 20 bits"
            if "partition_20" in res
            else ""
        )
        + ". np.unique only sorts.",
    ]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small inputs (smoke test)")
    ap.add_argument("--cold", action="store_true", help="fresh Numba cache (time compiles)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if args.cold:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="gs-numba-")
    # The build role's thread budget (graphstrata.bindings.threads) before the first kernel
    # starts Numba's pool: all cores, OpenMP threads that sleep when idle (issue 52).
    from graphstrata.bindings.threads import apply as apply_threads

    apply_threads("build")
    import igraph
    import networkx
    import numba
    import scipy

    t_start = time.perf_counter()
    load_start = load_text(1)
    q = args.quick
    n_emb, n_clusters = (20_000, 200) if q else (200_000, 2_000)
    n_graph = 30_000 if q else 300_000
    print("building inputs ...", flush=True)
    X = make_embeddings(n_emb, 384, n_clusters, noise=0.05, seed=0)
    graph = make_graph(n_graph, seed=1)
    from graphstrata.core.graph import csr_from_edges

    csr = csr_from_edges(graph["src"], graph["dst"], graph["w"], graph["n"])

    res: dict[str, Any] = {}
    print("LSH ...", flush=True)
    L = bench_lsh(X, 16, args.runs, loop_sample=2_000 if q else 5_000)
    codes16 = L.pop("codes")
    L["ratio_floor"] = L["ours"]["median_s"] / L["floor_gemm"]["median_s"]
    L["speedup_loop"] = L["erarag_loop_scaled"]["median_s"] / L["ours"]["median_s"]
    L["speedup_numpy"] = L["numpy_packbits"]["median_s"] / L["ours"]["median_s"]
    res["lsh"] = L
    print("partition ...", flush=True)
    from graphstrata.core.lsh import project_codes, sample_hyperplanes

    for key, bits, codes in (
        ("partition", 16, codes16),
        ("partition_20", 20, project_codes(X, sample_hyperplanes(384, 20, seed=0))),
    ):
        P = bench_partition(codes, args.runs)
        P["n_bits"] = bits
        P["ratio_floor"] = P["ours"]["median_s"] / P["floor_unique"]["median_s"]
        P["speedup_peer"] = P["erarag_walk"]["median_s"] / P["ours"]["median_s"]
        res[key] = P
    del X
    print("PPR ...", flush=True)
    R = bench_ppr(graph, csr, 0.5, 2, igraph_queries=20)
    R["speedup_scipy"] = R["noderag_scipy"]["p50_s"] / R["ours"]["p50_s"]
    R["speedup_igraph"] = R["hipporag_igraph"]["p50_s"] / R["ours"]["p50_s"]
    res["ppr"] = R
    print("betweenness ...", flush=True)
    B = bench_betweenness(graph, csr, args.runs, nx_runs=1)
    B["speedup_networkx"] = B["networkx"]["median_s"] / B["ours"]["median_s"]
    B["speedup_igraph"] = B["igraph_same_sources"]["median_s"] / B["ours"]["median_s"]
    res["betweenness"] = B
    print("betweenness, idle and contended ...", flush=True)
    BC = bench_betweenness_contended(csr, args.runs, rounds=1 if q else 2)
    res["betweenness_contended"] = BC

    P = res["partition"]
    res["targets"] = [
        {"name": "projection <= 1.3x bare GEMM", "value": f"{L['ratio_floor']:.2f}x",
         "met": L["ratio_floor"] <= 1.3},
        {"name": "projection >= 10x the per-vector loop", "value": fx(L["speedup_loop"]),
         "met": L["speedup_loop"] >= 10},
        {"name": "partition (16 bits) <= 2x np.unique", "value": f"{P['ratio_floor']:.2f}x",
         "met": P["ratio_floor"] <= 2},
        {"name": "PPR p50 >= 100x faster than scipy whole-graph",
         "value": fx(R["speedup_scipy"]), "met": R["speedup_scipy"] >= 100},
        {"name": "betweenness >= 100x faster than networkx",
         "value": fx(B["speedup_networkx"]), "met": B["speedup_networkx"] >= 100},
        {"name": "betweenness no slower than igraph (same sources)",
         "value": f"{B['speedup_igraph']:.2f}x", "met": B["speedup_igraph"] >= 1},
    ]  # fmt: skip
    # The contended targets (issue 52); the idle rows of that run are in its table.
    for peer, label in (
        ("ours_one_thread", "its one-thread run"),
        ("igraph_same_sources", "igraph"),
    ):
        ratio = BC[f"busy|{peer}"]["median_s"] / BC["busy|ours"]["median_s"]
        res["targets"].append(
            {
                "name": f"betweenness beside a busy process no slower than {label}",
                "value": f"{ratio:.2f}x",
                "met": ratio >= 1,
            }
        )
    res["wall_s"] = time.perf_counter() - t_start
    res["env"] = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "numba_threads": numba.get_num_threads(),
        "scipy": scipy.__version__,
        "networkx": networkx.__version__,
        "igraph": igraph.__version__,
        "load_start": load_start,
        "load_end": load_text(1),
        "numba_cache": "fresh (compiles timed)" if args.cold else "default (may be warm)",
        "quick": q,
    }
    md = report(res)
    print(md)
    if not q:
        write_json(args.out / "kernels.json", res, indent=2)
        (args.out / "kernels.md").write_text(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
