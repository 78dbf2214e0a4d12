"""Answer containment of the extractive backend, before and after issue #15 (item 2).

    python -m benchmarks.quality.answers [--limit 100] [--budget 2000] [--rebuild]

For each shared set (``../shared/data``) it builds (or reuses) one small index with the
heterograph, the sparse and the hybrid components (no hierarchy: none of the modes measured
reads it), embedder ``minilm-onnx`` (vectors cached by text under
``build/graph-tuning/embed-cache``, shared with ``graph_tuning.py``), extractive LLM:

* HotpotQA: all 994 documents, the first ``--limit`` (100) questions;
* MultiHop-RAG: all 609 documents, the first ``--limit`` (100) questions. Its vectors are in
  the cache (``graph_tuning.py`` embedded them), so the build takes ~4 minutes here instead
  of the ~48 of a first build; ``--multihop-docs 150`` takes the 150-document subset of
  ``graph_tuning.py --docs 150`` (the union of the gold documents of seeded-random non-null
  questions) and the first ``--limit`` of its 274 questions instead.

Then it runs ``graphstrata.evaluation.evaluate(..., answers=True)`` (what ``graphstrata eval
--answers`` runs) for ``naive``, ``hybrid`` and ``graph`` at ``--budget`` tokens twice on the
same index: with the extractive answer as it was before issue #15 (``BeforeExtractiveLLM``:
the one context sentence with the best question-term overlap / sqrt(its terms), as
reproduced in ``build/h15-extractive-before.py``; every other task unchanged, so retrieval is
identical) and with today's (``ExtractiveLLM``: the few best sentences by BM25 against the
question, with citation markers, under a length limit). ``gen. answer`` is the containment of
a gold answer in the generated answer; ``context`` the same rule on the retrieved context (the
ceiling of any extractive answer). Yes/no and "Insufficient information." questions are
skipped (``graphstrata.evaluation.scoring``).

Writes ``benchmarks/results/answers.{md,json}`` with the command, the load average and the
CPU time. Skips cleanly (exit 0) when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import resource
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DATA,
    REPO,
    RESULTS,
    command_line,
    load_text,
    log,
    machine,
    read_jsonl,
    write_report,
)

# graph_tuning: its cached embedder, MultiHop-RAG subset and build identity
from benchmarks.quality import graph_tuning
from graphstrata.bindings.llm.extractive import ExtractiveLLM, _terms, split_sentences
from graphstrata.engine.interfaces import LLMRequest

ROOT = REPO / "build" / "answers"
MODES = ("naive", "hybrid", "graph")


class BeforeExtractiveLLM(ExtractiveLLM):
    """The extractive backend with its answer task as before issue #15: the one context
    sentence that best overlaps the question's terms (``build/h15-extractive-before.py``)."""

    def _task_answer(self, request: LLMRequest) -> str:
        question, context = request.inputs
        q_terms = set(_terms(question))
        best, best_score = "", 0.0
        for line in context.splitlines():
            line = re.sub(r"^\s*-\s*", "", line)
            line = re.sub(r"\s*\[[^\]]*\]\s*$", "", line)
            for sentence in split_sentences(line):
                terms = set(_terms(sentence))
                score = len(q_terms & terms) / math.sqrt(len(terms) + 1)
                if score > best_score:
                    best, best_score = sentence, score
        return best if best else "Insufficient information."


def load(
    dataset: str, limit: int, multihop_docs: int | None
) -> tuple[list[dict], list[dict], dict]:
    """(documents, questions, description) of the set measured."""
    if dataset == "multihop_rag" and multihop_docs:
        docs, questions, info = graph_tuning.multihop_subset(multihop_docs)
        info["subset"] = (
            f"the {multihop_docs}-document union of the gold documents of seeded-random "
            "non-null questions (`graph_tuning.py --docs`)"
        )
    else:
        docs = read_jsonl(DATA / dataset / "corpus.jsonl")
        questions = read_jsonl(DATA / dataset / "qa.jsonl")
        info = {"docs": len(docs), "questions": len(questions)}
    info = {**info, "questions_evaluated": min(limit, len(questions))}
    return docs, questions[:limit], info


def make_config() -> Any:
    from graphstrata.engine.config import IndexConfig

    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    return cfg


def open_or_build(dataset: str, docs: list[dict], embedder: Any, rebuild: bool) -> Path:
    """The index of ``docs`` (default components, hierarchy off), built when absent or stale."""
    from graphstrata.bindings.api import Index

    ident = {
        "dataset": dataset,
        "docs": sorted(d["doc_id"] for d in docs),
        "embedder": embedder.name,
        "config": graph_tuning.build_config(),
    }
    key = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:10]
    path = ROOT / f"{dataset}-{len(docs)}-{key}"
    record_path = path.with_suffix(".build.json")
    code = graph_tuning.code_sha256()
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    if record.get("code") == code and not rebuild and (path / "manifest.json").exists():
        log(f"{dataset}: reusing {path.relative_to(REPO)}")
        return path
    record_path.unlink(missing_ok=True)
    if path.exists():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    log(f"{dataset}: building {len(docs)} documents into {path.relative_to(REPO)}")
    index = Index.create(path, make_config(), embedder=embedder, llm=ExtractiveLLM())
    report = index.insert(docs)
    record = {"code": code, "seconds": round(report.seconds, 1), "nodes": index.stats()["nodes"]}
    record_path.write_text(json.dumps(record, indent=1))
    log(f"{dataset}: built in {report.seconds:.0f} s, nodes {record['nodes']}")
    return path


def measure(path: Path, embedder: Any, items: list[dict], budget: int) -> dict[str, Any]:
    """``evaluate(..., answers=True)`` with the answer before and after issue #15."""
    from graphstrata.bindings.api import Index
    from graphstrata.evaluation import evaluate

    out: dict[str, Any] = {}
    for name, llm in (("before", BeforeExtractiveLLM()), ("after", ExtractiveLLM())):
        index = Index.open(path, embedder=embedder, llm=llm)
        start = time.perf_counter()
        result = evaluate(index, items, list(MODES), budget=budget, answers=True)
        log(f"{path.name} {name}: {time.perf_counter() - start:.0f} s")
        out[name] = result.to_dict()
    for mode in MODES:  # the answer backend must not change what was retrieved
        context = [out[n]["modes"][mode]["overall"]["answer_contained"] for n in out]
        if len(set(context)) != 1:
            raise RuntimeError(f"{path.name} {mode}: retrieval differs between runs: {context}")
    return out


def cell(agg: dict[str, Any], key: str) -> str:
    value = agg.get(key)
    return "–" if value is None else f"{value:.3f}"


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# Answer containment of the extractive backend, before and after issue #15",
        "",
        f"Command: `{payload['command']}`  ",
        f"Machine: {payload['machine']}; load average before / after: "
        f"{payload['load_before']} / {payload['load_after']} (the cores were shared with other "
        f"work); CPU time {payload['cpu_seconds']:.0f} s, wall {payload['wall_seconds']:.0f} s.",
        "",
        "`gen. answer`: share of questions whose generated answer contains a gold answer "
        "(case-insensitive, whitespace-normalized; yes/no and 'Insufficient information.' "
        "questions skipped, `n` answered); `context`: the same rule on the retrieved context "
        f"(the ceiling of an extractive answer); budget {payload['budget']} tokens; "
        "`tokens`: mean answer length (cl100k).",
        "",
        "*Before*: the extractive answer before issue #15, the one context sentence with the "
        "best question-term overlap / sqrt(its terms) (`BeforeExtractiveLLM`, reproducing "
        "`build/h15-extractive-before.py`). *After*: today's `ExtractiveLLM` answer, the few "
        "sentences that best answer the question (BM25 against its terms, rank prior), with "
        "citation markers, at most 120 tokens. Same index, same retrieval (the `context` "
        "column is equal in both runs: checked).",
        "",
    ]
    for dataset, data in payload["datasets"].items():
        info = data["subset"]
        lines += [f"## {dataset}", ""]
        subset = f" ({info['subset']})" if "subset" in info else " (all)"
        lines += [
            f"Index: {info['docs']} documents{subset}, "
            f"{info['questions_evaluated']} questions evaluated (the first of "
            f"{info['questions']}); built in {data['build']['seconds']} s (cached vectors), "
            f"nodes {json.dumps(data['build']['nodes'])}.",
            "",
            "| mode | n | context | gen. answer before | gen. answer after | tokens before "
            "| tokens after |",
            "|---|---|---|---|---|---|---|",
        ]
        for mode in MODES:
            before = data["before"]["modes"][mode]["overall"]
            after = data["after"]["modes"][mode]["overall"]
            lines.append(
                f"| {mode} | {after['answer_generated_n']} | {cell(after, 'answer_contained')} "
                f"| {cell(before, 'answer_generated')} | {cell(after, 'answer_generated')} "
                f"| {before['answer_tokens']:.0f} | {after['answer_tokens']:.0f} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=100, help="questions per set")
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--datasets", default="hotpotqa,multihop_rag")
    parser.add_argument(
        "--multihop-docs", type=int, default=None, help="a MultiHop-RAG subset of N documents"
    )
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--out", default=str(RESULTS / "answers"), help="results stem")
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"skipped: {DATA} not found")
        return 0
    from graphstrata.bindings.registry import make_embedder

    start = time.perf_counter()
    load_before = load_text()
    embedder = graph_tuning.CachedEmbedder(
        make_embedder("minilm-onnx"), REPO / "build" / "graph-tuning" / "embed-cache"
    )
    datasets: dict[str, Any] = {}
    for dataset in args.datasets.split(","):
        docs, items, info = load(dataset, args.limit, args.multihop_docs)
        path = open_or_build(dataset, docs, embedder, args.rebuild)
        build = json.loads(path.with_suffix(".build.json").read_text())
        datasets[dataset] = {
            "subset": info,
            "build": build,
            **measure(path, embedder, items, args.budget),
        }
    usage = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    payload = {
        "command": command_line(__spec__.name, argv),
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_text(),
        "cpu_seconds": sum(u.ru_utime + u.ru_stime for u in usage),
        "wall_seconds": time.perf_counter() - start,
        "budget": args.budget,
        "embedder_cache": {"hits": embedder.hits, "misses": embedder.misses},
        "datasets": datasets,
    }
    stem = Path(args.out)
    print(write_report(stem.name, payload, markdown(payload), out_dir=stem.parent).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
