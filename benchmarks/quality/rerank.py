"""Retrieval quality with and without a reranker, on the three shared QA sets.

    python -m benchmarks.quality.rerank --reranker SPEC
        [--datasets multihop_rag,hotpotqa,graphrag_bench_novel] [--modes naive,hybrid,collapsed]
        [--candidates 30] [--budget 2000] [--limit N] [--embedder minilm-onnx] [--rebuild]

``SPEC`` is a reranker of ``graphstrata.bindings.rerank``, e.g. ``tei:http://HOST:8080``
(text-embeddings-inference serving a cross-encoder such as BAAI/bge-reranker-v2-m3) or
``vllm:MODEL@http://HOST:8000`` (``vllm serve MODEL --task score``). For each dataset of
``../shared/data`` the hierarchy+sparse+hybrid index is built or reused exactly as
``benchmarks/quality/retrieval.py`` builds it (extractive LLM, default config), the
questions are embedded once, and every mode is scored at one budget twice: alone, and with
the reranker over its top ``--candidates`` (``engine.rerank``, decision 0031).

Measures per mode and run: document recall, fact recall (chunk), answer containment
(``graphstrata.evaluation.score_hits``) and evidence-token recall (the share of the gold
evidence's content words, stemmed and without stop words, found in the retrieved text: the
measure ``../shared/data/README.md`` asks for GraphRAG-Bench Novel, whose evidence is
paraphrased); search ms p50/p99 (the engine's ``search_seconds``, reranker included), the
reranker's own ms p50/p99 and how many queries it failed (those keep the mode's order).

Writes ``benchmarks/results/rerank.md`` and ``rerank.json`` with the machine, the load
average and the reranker. Skips (exit 0) when ``../shared/data`` is absent. On the machine
this was written on no reranker model could run (decision 0031 says why): the script is
ready for one that can.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.common import (
    DATA,
    command_line,
    load_text,
    log,
    machine,
    markdown_table,
    write_report,
)

DATASETS = ("multihop_rag", "hotpotqa", "graphrag_bench_novel")
MODES = ("naive", "hybrid", "collapsed")
#: The components of the index the modes are scored on (retrieval.py's first group).
GROUP = ("hierarchy", "sparse", "hybrid")
MEASURES = ("doc_recall", "fact_recall_chunk", "answer_contained", "evidence_token_recall")
BATCH = 64


def evidence_token_recall(texts: Sequence[str], facts: Sequence[str]) -> float | None:
    """The share of the facts' content words (``engine.sparse.analysis.analyze``) that occur
    in ``texts``; None without facts."""
    from graphstrata.engine.sparse.analysis import analyze

    wanted = set(analyze(" ".join(facts)))
    if not wanted:
        return None
    found = set(analyze(" ".join(texts)))
    return len(wanted & found) / len(wanted)


def score_run(
    engine: Any,
    items: Sequence[Any],
    vectors: np.ndarray,
    chunk_map: Any,
    mode: str,
    budget: int,
    candidates: int,
) -> dict[str, Any]:
    """Every question of ``items`` in ``mode`` at ``budget``, reranked over ``candidates``
    (0: the mode alone), aggregated (the measures, latency, reranker cost and failures)."""
    from graphstrata.evaluation import aggregate, score_hits

    params = {"rerank_candidates": candidates} if candidates else {}
    rows: list[dict[str, Any]] = []
    rerank_ms: list[float] = []
    failures = 0
    for start in range(0, len(items), BATCH):
        part = items[start : start + BATCH]
        texts = [q.question for q in part]
        results = engine.query_vectors(
            texts, vectors[start : start + BATCH], mode, budget, **params
        )
        for item, result in zip(part, results, strict=True):
            score = score_hits(result.nodes, item, chunk_map)
            score["evidence_token_recall"] = evidence_token_recall(
                [h.text for h in result.nodes], item.gold_facts
            )
            score.update(id=item.id, type=item.type)
            score["search_ms"] = 1000.0 * float(result.report["search_seconds"])
            entry = result.report.get("rerank")
            if entry is not None:
                rerank_ms.append(1000.0 * float(entry.get("seconds", 0.0)))
                failures += int("warning" in entry)
            rows.append(score)
    out = aggregate(rows)
    out["evidence_token_recall"] = _mean([r["evidence_token_recall"] for r in rows])
    search = [r["search_ms"] for r in rows]
    out["search_ms_p50"] = float(np.percentile(search, 50)) if search else 0.0
    out["search_ms_p99"] = float(np.percentile(search, 99)) if search else 0.0
    out["rerank_ms_p50"] = float(np.percentile(rerank_ms, 50)) if rerank_ms else None
    out["rerank_ms_p99"] = float(np.percentile(rerank_ms, 99)) if rerank_ms else None
    out["rerank_failures"] = failures
    out["questions"] = len(rows)
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def compare(
    engine: Any,
    items: Sequence[Any],
    vectors: np.ndarray,
    chunk_map: Any,
    modes: Sequence[str],
    budget: int,
    candidates: int,
) -> dict[str, dict[str, Any]]:
    """``{mode: {"alone": ..., "reranked": ...}}`` for the modes ``engine`` serves."""
    out: dict[str, dict[str, Any]] = {}
    for mode in modes:
        if mode not in engine.modes:
            log(f"{mode}: not served by this index, skipped")
            continue
        out[mode] = {
            run: score_run(engine, items, vectors, chunk_map, mode, budget, n)
            for run, n in (("alone", 0), ("reranked", candidates))
        }
    return out


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def markdown(all_data: dict[str, Any], header: dict[str, Any]) -> str:
    """The tables: one row per dataset, mode and run."""
    lines = [
        "# Reranking before packing",
        "",
        f"`{header['command']}` on {header['machine']}; reranker `{header['reranker']}`, "
        f"top {header['candidates']} candidates, budget {header['budget']} tokens; "
        f"load average {header['load_before']} before, {header['load_after']} after.",
        "",
    ]
    rows = []
    for dataset, modes in all_data.items():
        for mode, runs in modes.items():
            for run, agg in runs.items():
                cost = ("search_ms_p50", "search_ms_p99", "rerank_ms_p50", "rerank_failures")
                rows.append([dataset, mode, run, *(_cell(agg.get(m)) for m in MEASURES + cost)])
    head = ["dataset", "mode", "run", "doc R", "fact R chunk", "answer", "evidence tokens"]
    head += ["search ms p50", "p99", "rerank ms p50", "failed"]
    lines += markdown_table(head, rows)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reranker", required=True, help="a reranker spec (bindings/rerank)")
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--embedder", default="minilm-onnx")
    parser.add_argument("--rebuild", action="store_true")
    args = parser.parse_args(argv)
    if not DATA.exists():
        log(f"{DATA} is absent: nothing to measure")
        return 0
    from benchmarks.quality.retrieval import build_or_reuse, components_for, embed_questions
    from graphstrata.bindings.rerank import make_reranker
    from graphstrata.evaluation import ChunkMap, load_qa

    reranker = make_reranker(args.reranker)
    header = {
        "command": command_line("benchmarks.quality.rerank", argv),
        "machine": machine(),
        "reranker": reranker.name,
        "candidates": args.candidates,
        "budget": args.budget,
        "load_before": load_text(1, ", "),
    }
    all_data: dict[str, Any] = {}
    for dataset in args.datasets.split(","):
        engine, _record = build_or_reuse(
            dataset, components_for(GROUP), args.embedder, args.rebuild
        )
        engine.reranker = reranker
        items = load_qa(DATA / dataset / "qa.jsonl")[: args.limit]
        questions = embed_questions(engine, items)
        chunk_map = ChunkMap.from_snapshot(engine.state.snapshot)
        log(f"{dataset}: {len(items)} questions, reranked by {reranker.name}")
        all_data[dataset] = compare(
            engine,
            items,
            questions.vectors,
            chunk_map,
            args.modes.split(","),
            args.budget,
            args.candidates,
        )
    header["load_after"] = load_text(1, ", ")
    path = write_report("rerank", {**header, "results": all_data}, markdown(all_data, header))
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
