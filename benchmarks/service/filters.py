"""Filtered against unfiltered search latency, and the vector cut-over (decision 0025).

A synthetic corpus of short documents (seeded; metadata ``bucket`` = doc number mod 100, so
``bucket < s`` keeps s % of the documents) is indexed with the hashing embedder at 384
dimensions (the MiniLM width), without the hierarchy and heterograph (their modes filter
through the same restricted indexes; their build would dominate the run). Then, interleaved
over ``--rounds`` rounds so load from other jobs hits every cell alike:

* ``naive``, ``bm25`` and ``hybrid`` queries through ``Index.query`` without a filter and
  with filters keeping 1 %, 10 % and 50 % of the documents: p50 and p90 wall ms, p50 CPU ms
  of the calling thread (``time.thread_time``: these modes search on it below 10k vectors,
  and it is what the shared machine's load does not inflate), and the p50 of the filter's
  own evaluation (``report["filter"]["seconds"]``);
* the dense list alone (``FilteredVectors.search``, k 50) by each method at 1 to 50 %:
  exact over the allowed rows, and the ANN index asked for k / share, CPU ms, with the
  ANN's recall of the exact top 50 (the cut-over ``SearchConfig.filter_exact_share``).

    python -m benchmarks.service.filters            # ~1.5-2.5 min on 2 shared cores
    python -m benchmarks.service.filters --quick    # small corpus, smoke test, no file

Writes benchmarks/results/filters.md (not with ``--quick``) and prints it; the 1-minute load
average is printed beside each row.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import RESULTS, command_line, load1, load_text, machine, markdown_table
from graphstrata.bindings.api import Index, IndexConfig
from graphstrata.bindings.embed.models import HashingEmbedder

SELECTIVITY = (None, 1, 10, 50)
#: Selectivities of the cut-over table.
CUT_OVER = (1, 2, 5, 10, 20, 50)
MODES = ("naive", "bm25", "hybrid")
WORDS = [
    "river",
    "mountain",
    "engine",
    "copper",
    "harbor",
    "signal",
    "orbit",
    "lantern",
    "archive",
    "meadow",
    "quartz",
    "falcon",
    "ledger",
    "canyon",
    "violet",
    "summit",
    "turbine",
    "glacier",
    "beacon",
    "cobalt",
    "prairie",
    "marble",
    "cipher",
    "tundra",
    "voyage",
    "harvest",
    "nebula",
    "granite",
    "willow",
    "compass",
]


def corpus(n: int, seed: int = 11) -> list[dict[str, Any]]:
    """``n`` documents of ~40 words each; ``bucket`` = i mod 100, ``year`` 1990-2024."""
    rng = random.Random(seed)
    return [
        {
            "doc_id": f"d{i}",
            "title": f"note {i}",
            "text": " ".join(rng.choice(WORDS) for _ in range(40)) + f" item{i}.",
            "metadata": {"bucket": i % 100, "year": 1990 + i % 35},
        }
        for i in range(n)
    ]


def questions(n: int, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(6)) for _ in range(n)]


def flt(share: int | None) -> dict[str, Any] | None:
    return None if share is None else {"bucket": {"$lt": share}}


def ms(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)) * 1000, 3)


def run(docs: int, n_questions: int, rounds: int) -> tuple[str, dict[str, Any]]:
    from graphstrata.engine.component import DocNames
    from graphstrata.engine.filtered import FilteredVectors
    from graphstrata.engine.filters import parse_filter
    from graphstrata.engine.types import NodeKind

    cfg = IndexConfig()
    cfg.hierarchy.enabled = cfg.heterograph.enabled = False
    root = Path(tempfile.mkdtemp()) / "idx"
    t0 = time.perf_counter()
    index = Index.create(root, cfg, embedder=HashingEmbedder(384), llm="extractive")
    index.insert(corpus(docs))
    build = time.perf_counter() - t0
    qs = questions(n_questions)
    for mode in MODES:  # warm: kernels, BM25 postings, the filters' columns
        for share in SELECTIVITY:
            index.query(qs[0], mode, filter=flt(share))
    seconds: dict[tuple[str, Any], list[float]] = {}
    cpu: dict[tuple[str, Any], list[float]] = {}
    filter_s: dict[tuple[str, Any], list[float]] = {}
    loads: dict[tuple[str, Any], list[float]] = {}
    for _ in range(rounds):
        for q in qs:
            for mode in MODES:
                for share in SELECTIVITY:
                    start, start_cpu = time.perf_counter(), time.thread_time()
                    result = index.query(q, mode, filter=flt(share))
                    seconds.setdefault((mode, share), []).append(time.perf_counter() - start)
                    cpu.setdefault((mode, share), []).append(time.thread_time() - start_cpu)
                    if share is not None:
                        filter_s.setdefault((mode, share), []).append(
                            result.report["filter"]["seconds"]
                        )
        for key in seconds:
            loads.setdefault(key, []).append(load1())
    rows = []
    for mode in MODES:
        for share in SELECTIVITY:
            key = (mode, share)
            rows.append(
                [
                    mode,
                    "none" if share is None else f"{share} %",
                    ms(seconds[key], 50),
                    ms(seconds[key], 90),
                    ms(cpu[key], 50),
                    "-" if share is None else ms(filter_s[key], 50),
                    round(float(np.mean(loads[key])), 2),
                ]
            )
    # The dense list alone by each method (exact over the allowed rows / ANN with k / share).
    state = index.engine.state
    vecs = np.asarray(index.engine.embedder.embed(qs), np.float32)
    method_rows = []
    kinds = [int(NodeKind.T)]
    for share in CUT_OVER:
        parsed = parse_filter(flt(share))
        times: dict[str, list[float]] = {"exact": [], "ann": [], "cold": []}
        recall: list[float] = []
        for _ in range(rounds):
            # A version's first filtered query: its doc -> nodes index, its metadata columns.
            fresh, start = DocNames(state.snapshot), time.perf_counter()
            fresh.allowed(parsed, 0.05)
            times["cold"].append(time.perf_counter() - start)
            for v in vecs:
                found = {}
                for method, cut in (("exact", 1.0), ("ann", 0.0)):
                    allowed = state.doc_names.allowed(parsed, cut)
                    searcher = FilteredVectors(state.vectors, allowed, state.snapshot)
                    start = time.thread_time()
                    ids, _ = searcher.search(v, kinds, 50)
                    times[method].append(time.thread_time() - start)
                    found[method] = set(ids[0].tolist())
                recall.append(len(found["exact"] & found["ann"]) / max(len(found["exact"]), 1))
        method_rows.append(
            [
                f"{share} %",
                ms(times["exact"], 50),
                ms(times["ann"], 50),
                round(float(np.mean(recall)), 4),
                ms(times["cold"], 50),
                load1(),
            ]
        )
    chunks = int(state.snapshot.nodes.ids_of_kind(int(NodeKind.T)).size)
    lines = [
        "# Metadata filters: latency by selectivity",
        "",
        f"`{command_line(__spec__.name if __spec__ else 'benchmarks.service.filters')}`; "
        f"{machine()}; load at the end {load_text()}.",
        "",
        f"{docs} documents ({chunks} chunks, hashing embedder 384-d, f16 HNSW above 4,096 "
        f"vectors), built in {build:.1f} s; {n_questions} questions x {rounds} rounds, every "
        "cell interleaved. Filter `bucket < s` keeps s % of the documents. Latency of "
        "`Index.query` (embedding included); `filter p50` is the filter's evaluation "
        "(documents to allowed nodes, memoized per filter and version).",
        "",
        *markdown_table(
            ["mode", "filter keeps", "p50 ms", "p90 ms", "CPU p50 ms", "filter p50 ms", "load"],
            rows,
        ),
        "",
        "The dense list alone (`FilteredVectors.search`, top 50 chunks; CPU ms of the thread) "
        "by each method: exact (one product over the allowed rows) and ANN (usearch asked for "
        "50 / share, widened until 50 allowed), with the ANN's recall of the exact top 50. "
        "`SearchConfig.filter_exact_share` (0.05) picks the exact method at or below 5 %. "
        "`first filter ms`: the filter's evaluation on a version's first filtered query "
        "(its doc -> nodes index and metadata columns built; later ones are memoized).",
        "",
        *markdown_table(
            [
                "filter keeps",
                "exact CPU p50 ms",
                "ANN CPU p50 ms",
                "ANN recall@50",
                "first filter ms",
                "load",
            ],
            method_rows,
        ),
    ]
    payload = {"rows": rows, "methods": method_rows, "docs": docs, "chunks": chunks}
    return "\n".join(lines) + "\n", payload


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=8_000)
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="500 docs, 5 questions, 1 round")
    args = parser.parse_args(argv)
    if args.quick:
        args.docs, args.questions, args.rounds = 500, 5, 1
    markdown, _ = run(args.docs, args.questions, args.rounds)
    print(markdown)
    if not args.quick:
        (RESULTS / "filters.md").write_text(markdown, encoding="utf-8")


if __name__ == "__main__":
    main()
