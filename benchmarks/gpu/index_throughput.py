"""Indexing throughput against bare batched generation over the same prompts.

    python -m benchmarks.gpu.index_throughput --backend vllm:/models/Qwen2.5-7B-Instruct \\
        --dataset multihop_rag --docs 200 --rounds 2

Users of graph-RAG libraries report builds 5-10x slower than vLLM batching the same prompts
raw. This script measures that gap for graphstrata. Each round, interleaved:

1. **pipeline**: a fresh index of ``--docs`` documents of a shared set
   (``../shared/data/<set>/corpus.jsonl``, the first N; ``--dataset sample`` is
   ``examples/sample.jsonl``) built with the backend (no LLM cache, yield floor 0: this
   measures speed, not extraction quality), every prompt the engine sends recorded with the
   seconds each stage batch took;
2. **bare**: the same prompts in one call: ``vllm.LLM.generate`` with the backend's own chat
   template and sampling parameters for a ``vllm:`` backend, else the backend's ``complete``
   (one batch, no pipeline).

Documents per hour of both, the pipeline's share of time in LLM calls, tokens, and the load
average before each run go to ``benchmarks/results/gpu_index_throughput.md`` (and ``.json``;
``--results-dir`` elsewhere). On a CPU, ``--backend smollm2 --docs 2`` is the smoke mode the
test suite runs (tests/integration/test_local_llm.py) so the script is ready when
a GPU machine is lent.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DATA,
    REPO,
    RESULTS,
    command_line,
    commit,
    load1,
    log,
    machine,
    markdown_table,
    read_jsonl,
    write_report,
)

STEM = "gpu_index_throughput"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--backend", required=True, help="LLM spec: vllm:PATH, smollm2, gguf:PATH, ...")
    p.add_argument("--dataset", default="multihop_rag", help="shared set name, or 'sample'")
    p.add_argument("--docs", type=int, default=100, help="documents indexed per run")
    p.add_argument("--rounds", type=int, default=1, help="pipeline/bare pairs, interleaved")
    p.add_argument("--embedder", default="hashing:384", help="embedder spec (default: no model)")
    p.add_argument("--no-hierarchy", action="store_true", help="heterograph stages only")
    p.add_argument("--results-dir", default=str(RESULTS), help="where the report goes")
    return p.parse_args(argv)


def documents(dataset: str, n: int) -> list[dict[str, Any]]:
    """The first ``n`` documents of a shared set (or of the sample corpus).

    Raises
    ------
    SystemExit
        When the set is absent.
    """
    path = (
        REPO / "examples" / "sample.jsonl"
        if dataset == "sample"
        else DATA / dataset / "corpus.jsonl"
    )
    if not path.is_file():
        raise SystemExit(f"index_throughput: {path} not found")
    docs = read_jsonl(path)[:n]
    return [{"doc_id": d["doc_id"], "title": d.get("title"), "text": d["text"]} for d in docs]


class Recording:
    """An LLM that passes every batch to ``llm`` and records its requests and seconds."""

    def __init__(self, llm: Any):
        self.llm = llm
        self.requests: list[Any] = []
        self.batches: list[tuple[str, int, float]] = []

    @property
    def name(self) -> str:
        return str(self.llm.name)

    def complete(self, requests: Sequence[Any]) -> list[Any]:
        start = time.perf_counter()
        out = self.llm.complete(list(requests))
        task = requests[0].task if requests else "-"
        self.batches.append((task, len(requests), time.perf_counter() - start))
        self.requests.extend(requests)
        return list(out)


def pipeline(args: argparse.Namespace, llm: Any, docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One fresh index build through ``llm``: seconds, LLM seconds, tokens, the prompts."""
    from graphstrata.bindings.api import Index, IndexConfig

    sections: dict[str, Any] = {"yield_floor": {"min_yield": 0.0}}
    if args.no_hierarchy:
        sections["hierarchy"] = {"enabled": False}
    cfg = IndexConfig.from_dict(sections)
    recording = Recording(llm)
    folder = Path(tempfile.mkdtemp(prefix="gs-throughput-"))
    try:
        index = Index.create(folder / "idx", cfg, embedder=args.embedder, llm=recording)
        load = load1()
        start = time.perf_counter()
        report = index.insert(docs)
        seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return {
        "load": load,
        "seconds": seconds,
        "llm_seconds": sum(s for _, _, s in recording.batches),
        "batches": len(recording.batches),
        "prompts": len(recording.requests),
        "prompt_tokens": report.prompt_tokens,
        "completion_tokens": report.completion_tokens,
        "requests": recording.requests,
    }


def bare(llm: Any, requests: list[Any]) -> dict[str, Any]:
    """The same prompts in one call: ``vllm.LLM.generate`` for vLLM, else ``complete``."""
    load = load1()
    start = time.perf_counter()
    if hasattr(llm, "sampling_params") and hasattr(llm, "load"):  # the vllm backend
        engine = llm.load()
        prompts = [llm.format_prompt(r.prompt) for r in requests]
        outputs = engine.generate(prompts, [llm.sampling_params(r) for r in requests])
        ptok = sum(len(o.prompt_token_ids or ()) for o in outputs)
        ctok = sum(len(o.outputs[0].token_ids or ()) for o in outputs)
    else:
        answers = llm.complete(requests)
        ptok = sum(a.prompt_tokens for a in answers)
        ctok = sum(a.completion_tokens for a in answers)
    seconds = time.perf_counter() - start
    return {"load": load, "seconds": seconds, "prompt_tokens": ptok, "completion_tokens": ctok}


def per_hour(n_docs: int, seconds: float) -> float:
    return round(3600.0 * n_docs / seconds, 1) if seconds > 0 else 0.0


def markdown(args: argparse.Namespace, llm_name: str, n: int, runs: list[dict[str, Any]]) -> str:
    rows = []
    for run in runs:
        rows.append(
            [
                run["round"],
                run["kind"],
                f"{run['seconds']:.1f}",
                per_hour(n, run["seconds"]),
                f"{run['llm_seconds']:.1f}" if "llm_seconds" in run else "-",
                run.get("prompts", "-"),
                run["prompt_tokens"],
                run["completion_tokens"],
                f"{run['load']:.2f}",
            ]
        )
    pipe = [r["seconds"] for r in runs if r["kind"] == "pipeline"]
    raw = [r["seconds"] for r in runs if r["kind"] == "bare"]
    ratio = (sum(pipe) / sum(raw)) if raw and sum(raw) > 0 else float("nan")
    lines = [
        "# Indexing throughput: pipeline vs bare batched generation",
        "",
        f"Command: `{command_line('benchmarks.gpu.index_throughput', args.argv)}`  ",
        f"Commit {commit()}; {machine()}; backend `{llm_name}`; {n} documents of "
        f"`{args.dataset}`; embedder `{args.embedder}`.",
        "",
        *markdown_table(
            [
                "round",
                "run",
                "seconds",
                "docs/hour",
                "LLM seconds",
                "prompts",
                "prompt tokens",
                "completion tokens",
                "load before",
            ],
            rows,
        ),
        "",
        f"Pipeline / bare time: {ratio:.2f}x (bare = the pipeline's prompts in one call; "
        "the pipeline must wait for each stage's answers before the next stage's prompts).",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    args.argv = list(argv) if argv is not None else None
    from graphstrata.bindings.registry import make_llm

    docs = documents(args.dataset, args.docs)
    llm = make_llm(args.backend, use_cache=False)
    runs: list[dict[str, Any]] = []
    for r in range(1, args.rounds + 1):
        log(f"round {r}: pipeline over {len(docs)} documents ({llm.name})")
        built = pipeline(args, llm, docs)
        requests = built.pop("requests")
        runs.append({"round": r, "kind": "pipeline", **built})
        log(f"round {r}: bare, {len(requests)} prompts in one call")
        runs.append({"round": r, "kind": "bare", **bare(llm, requests)})
    text = markdown(args, llm.name, len(docs), runs)
    payload = {"backend": llm.name, "dataset": args.dataset, "docs": len(docs), "runs": runs}
    path = write_report(STEM, payload, text, out_dir=Path(args.results_dir))
    print(text)
    log(f"wrote {path}")
    return payload


if __name__ == "__main__":
    main()
