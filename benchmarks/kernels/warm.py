"""What the warm-search benchmarks share (``graph_stages``, ``variant_latency``): their
arguments, and a shared set's index of ``benchmarks.quality.retrieval`` with its questions'
vectors computed beforehand."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.quality import retrieval as R


def parse_args(
    doc: str, argv: list[str] | None, comparisons: list[str] | None = None
) -> argparse.Namespace | None:
    """``--datasets`` (default every shared set), ``--questions`` (200), ``--rounds`` (3), and
    a positional ``comparison`` when ``comparisons`` names the choices; None, after saying so,
    when the shared evaluation data is absent."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    if comparisons:
        parser.add_argument("comparison", choices=comparisons)
    parser.add_argument("--datasets", default=",".join(R.DATASETS))
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    if not R.DATA.is_dir():
        print(f"skipped: {R.DATA} not found (the shared evaluation data is absent)")
        return None
    args.datasets = [d for d in args.datasets.split(",") if d]
    return args


def index_and_questions(
    dataset: str, group: Sequence[str], questions: int
) -> tuple[Any, list[str], np.ndarray]:
    """The index of ``group``'s components on ``dataset`` (built or reused under
    ``build/bench-indexes/``), and the first ``questions`` questions with their vectors."""
    from graphstrata.evaluation import load_qa

    comps = R.components_for(list(group))
    R._CODE_AT_START.setdefault(tuple(c.name for c in comps), R.code_sha256(comps))
    engine, _ = R.build_or_reuse(dataset, comps, "minilm-onnx")
    items = load_qa(R.DATA / dataset / "qa.jsonl")[:questions]
    vectors = R.embed_questions(engine, items).vectors
    return engine, [q.question for q in items], vectors
