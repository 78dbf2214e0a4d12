"""What ``hybrid``'s sparse feedback costs a warm search: ``hybrid`` with and without it
(``FusionConfig.feedback_terms`` 0), interleaved on the same index (decision 0037).

    python -m benchmarks.kernels.hybrid_feedback [--datasets ...] [--questions 200] [--rounds 3]

On each shared set's hierarchy index of ``benchmarks.quality.retrieval`` (built or reused under
``build/bench-indexes/``), one question at a time at 2,000 tokens with the questions' vectors
computed beforehand: ``rounds`` alternating passes without and with the feedback terms over the
first ``questions`` questions, after one untimed pass of each. Reported: the p50 of each
variant's search (``report["search_seconds"]``) per round, and ``naive``'s p50 on the same
index in the same rounds (the machine's floor for a search of these chunks). Prints a Markdown
table and the load average; writes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common import load_text, machine, markdown_table
from benchmarks.kernels.warm import index_and_questions, parse_args

#: The index timed: the one that serves ``naive`` and ``hybrid`` in the retrieval benchmark.
HIERARCHY = ("hierarchy", "sparse", "hybrid")

#: The variants timed: (label, mode, query parameters).
VARIANTS = (
    ("naive", "naive", {}),
    ("hybrid, feedback_terms 0", "hybrid", {"feedback_terms": 0}),
    ("hybrid, defaults", "hybrid", {}),
)


def measure(dataset: str, questions: int, rounds: int) -> dict[str, Any]:
    """Each variant's p50 per round on one dataset."""
    engine, texts, vectors = index_and_questions(dataset, HIERARCHY, questions)

    def p50(mode: str, params: dict[str, Any]) -> float:
        ms = [
            1000.0
            * engine.query_vectors([t], vectors[i : i + 1], mode, 2000, **params)[0].report[
                "search_seconds"
            ]
            for i, t in enumerate(texts)
        ]
        return float(np.percentile(ms, 50))

    for _, mode, params in VARIANTS:  # warm
        p50(mode, params)
    out: dict[str, list[float]] = {label: [] for label, _, _ in VARIANTS}
    for _ in range(rounds):
        for label, mode, params in VARIANTS:
            out[label].append(p50(mode, params))
    return {"p50": out, "load": load_text(1, ", ")}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__, argv)
    if args is None:
        return 0
    results = {d: measure(d, args.questions, args.rounds) for d in args.datasets}
    print(f"Machine: {machine()}\n")
    labels = [label for label, _, _ in VARIANTS]
    rows = [
        [d, *(" / ".join(f"{x:.2f}" for x in r["p50"][label]) for label in labels), r["load"]]
        for d, r in results.items()
    ]
    header = ["dataset", *(f"{label} p50 ms" for label in labels), "load"]
    print("\n".join(markdown_table(header, rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
