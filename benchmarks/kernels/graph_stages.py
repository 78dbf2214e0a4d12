"""Where a warm ``graph`` search spends its time, stage by stage, beside ``naive``'s search
on the same index (issue 48: ``graph`` p50 at most 4x ``naive``'s).

    python -m benchmarks.kernels.graph_stages [--datasets ...] [--questions 200] [--rounds 3]

On each shared set's heterograph index of ``benchmarks.quality.retrieval`` (built or reused
under ``build/bench-indexes/``; it serves ``naive`` too), one question at a time at 2,000
tokens with the questions' vectors computed beforehand: ``rounds`` alternating passes of
``naive`` and ``graph`` over the first ``questions`` questions, after one untimed pass of
each. Reported: the p50 of each mode's search (``report["search_seconds"]``) per round and
their ratio, then the mean wall time per ``graph`` query of each stage, timed by wrapping the
view's methods during the ``graph`` passes (inclusive: ``bridge_entities`` holds ``follow``
calls, the walks are ``walk``, the packing ``pack_ranked``; ``search`` is the whole).
Prints a Markdown table and the load average; writes nothing.
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.common import load_text, machine, markdown_table
from benchmarks.kernels.warm import index_and_questions, parse_args

#: ``HeterographView`` methods timed, and the functions of ``search``'s module.
VIEW_STAGES = (
    "search", "_query_entities", "_exact_seeds", "_vector_lists", "_sparse_lists", "walk",
    "_ranked_text", "bridge_entities", "top_by_kind", "_passages",
)  # fmt: skip
MODULE_STAGES = ("make_hits", "merge_seeds", "coverage_ranked", "pack_ranked")


def _timer(fn: Callable[..., Any], label: str, spent: dict[str, float], on: list[bool]) -> Any:
    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        if not on[0]:
            return fn(*args, **kwargs)
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - t

    return timed


def measure(dataset: str, questions: int, rounds: int) -> dict[str, Any]:
    """Both modes' p50 per round and the ``graph`` stages of one dataset."""
    import graphstrata.engine.heterograph.query.search as search

    engine, texts, vectors = index_and_questions(dataset, ["heterograph"], questions)
    spent: dict[str, float] = defaultdict(float)
    on = [False]
    saved: list[tuple[Any, str, Any]] = []
    targets = [(search.HeterographView, n) for n in VIEW_STAGES]
    targets += [(search, n) for n in MODULE_STAGES]
    targets += [(search.SparseIndex, "term_scores")]
    for owner, name in targets:
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, _timer(getattr(owner, name), name, spent, on))

    def p50(mode: str) -> float:
        ms = [
            1000.0
            * engine.query_vectors([t], vectors[i : i + 1], mode, 2000)[0].report["search_seconds"]
            for i, t in enumerate(texts)
        ]
        return float(np.percentile(ms, 50))

    try:
        p50("naive"), p50("graph")  # warm
        naive, graph = [], []
        for _ in range(rounds):
            naive.append(p50("naive"))
            on[0] = True
            graph.append(p50("graph"))
            on[0] = False
    finally:
        for owner, name, fn in saved:
            setattr(owner, name, fn)
    n = rounds * len(texts)
    stages = {k: 1000.0 * v / n for k, v in sorted(spent.items(), key=lambda kv: -kv[1])}
    return {"naive": naive, "graph": graph, "stages": stages, "load": load_text(1, ", ")}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv)
    if args is None:
        return 0
    results = {d: measure(d, args.questions, args.rounds) for d in args.datasets}
    print(f"Machine: {machine()}\n")
    rows = []
    for d, r in results.items():
        ratios = [g / n for g, n in zip(r["graph"], r["naive"], strict=True)]
        rows.append([
            d, " / ".join(f"{x:.2f}" for x in r["naive"]),
            " / ".join(f"{x:.2f}" for x in r["graph"]),
            " / ".join(f"{x:.1f}x" for x in ratios), r["load"],
        ])  # fmt: skip
    print("\n".join(markdown_table(["dataset", "naive p50 ms", "graph p50 ms", "ratio", "load"],
                                   rows)))  # fmt: skip
    names = list(dict.fromkeys(k for r in results.values() for k in r["stages"]))
    rows = [[k] + [f"{r['stages'].get(k, 0.0):.3f}" for r in results.values()] for k in names]
    print("\nMean ms per graph query, by stage (inclusive):\n")
    print("\n".join(markdown_table(["stage", *results], rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
