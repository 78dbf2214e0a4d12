"""What a mechanism costs a warm search: a mode with and without it, and ``naive``, timed in
interleaved rounds on the same index.

    python -m benchmarks.kernels.variant_latency COMPARISON [--datasets ...] [--questions 200]
        [--rounds 3]

``COMPARISON`` names one entry of ``COMPARISONS``: ``hybrid-feedback`` (``hybrid`` with and
without its sparse feedback terms, decision 0037) or ``graph-entries`` (``graph`` with its BM25
entry points scaled with the budget, the default, and with 20 at the 2,000 tokens timed here,
as before; decision 0038) or ``graph-push`` (``graph``'s walk exact, ``ppr_epsilon`` 0, with a
lighter push threshold, 2e-6, and with the default; decision 0039) or ``graph-lean``
(``graph`` with its stages taken away one after another, ``retrieval.GRAPH_LEAN``: the BM25
entry points, the second hop, the query-term coverage and one walk step;
decision 0040). On each shared set's index of ``benchmarks.quality.retrieval``
(built or reused under ``build/bench-indexes/``), one question at a time at 2,000 tokens with
the questions' vectors computed beforehand: ``rounds`` alternating passes of every variant over
the first ``questions`` questions, after one untimed pass of each. Reported: each variant's p50
(``report["search_seconds"]``) per round; ``naive`` on the same index is the machine's floor
for a search of these chunks. Prints a Markdown table and the load average; writes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common import load_text, machine, markdown_table
from benchmarks.kernels.warm import index_and_questions, parse_args
from benchmarks.quality import retrieval as R

#: name -> (the index's components, the variants timed: (label, mode, query parameters)).
COMPARISONS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str, dict[str, Any]], ...]]] = {
    "hybrid-feedback": (
        ("hierarchy", "sparse", "hybrid"),
        (
            ("naive", "naive", {}),
            ("hybrid, feedback_terms 0", "hybrid", {"feedback_terms": 0}),
            ("hybrid, defaults", "hybrid", {}),
        ),
    ),
    "graph-entries": (
        ("heterograph",),
        (
            ("naive", "naive", {}),
            ("graph, sparse_top_k 20", "graph", {"sparse_top_k": 20}),
            ("graph, defaults", "graph", {}),
        ),
    ),
    "graph-push": (
        ("heterograph",),
        (
            ("naive", "naive", {}),
            ("graph, ppr_epsilon 0", "graph", {"ppr_epsilon": 0.0}),
            ("graph, ppr_epsilon 2e-6", "graph", {"ppr_epsilon": 2e-6}),
            ("graph, defaults", "graph", {}),
        ),
    ),
    "graph-lean": (
        ("heterograph",),
        (
            ("naive", "naive", {}),
            ("graph, defaults", "graph", {}),
            *((label, "graph", params) for label, params in R.GRAPH_LEAN),
        ),
    ),
}


def measure(dataset: str, comparison: str, questions: int, rounds: int) -> dict[str, Any]:
    """Each variant's p50 per round on one dataset."""
    group, variants = COMPARISONS[comparison]
    engine, texts, vectors = index_and_questions(dataset, group, questions)

    def p50(mode: str, params: dict[str, Any]) -> float:
        ms = [
            1000.0
            * engine.query_vectors([t], vectors[i : i + 1], mode, 2000, **params)[0].report[
                "search_seconds"
            ]
            for i, t in enumerate(texts)
        ]
        return float(np.percentile(ms, 50))

    for _, mode, params in variants:  # warm
        p50(mode, params)
    out: dict[str, list[float]] = {label: [] for label, _, _ in variants}
    for _ in range(rounds):
        for label, mode, params in variants:
            out[label].append(p50(mode, params))
    return {"p50": out, "load": load_text(1, ", ")}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv, comparisons=list(COMPARISONS))
    if args is None:
        return 0
    results = {d: measure(d, args.comparison, args.questions, args.rounds) for d in args.datasets}
    print(f"Machine: {machine()}\n")
    labels = [label for label, _, _ in COMPARISONS[args.comparison][1]]
    rows = [
        [d, *(" / ".join(f"{x:.2f}" for x in r["p50"][label]) for label in labels), r["load"]]
        for d, r in results.items()
    ]
    header = ["dataset", *(f"{label} p50 ms" for label in labels), "load"]
    print("\n".join(markdown_table(header, rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
