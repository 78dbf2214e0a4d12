"""End-to-end smoke test of the ``vllm`` backend on a GPU machine (a few minutes).

    python -m benchmarks.gpu.vllm_smoke --model /models/Qwen2.5-1.5B-Instruct

1. loads the model in-process with vLLM and times the load;
2. sends one batch per LLM stage straight to the backend (summaries, decompositions, query
   entities) and checks that each stage was one ``generate`` call and that every JSON answer
   parses with its schema's keys;
3. builds an index of examples/sample.jsonl with the vllm backend (hierarchy summaries and,
   where the heterograph component exists, decompositions, attributes, communities), then
   queries it in every mode and answers two questions;
4. prints tokens/second per stage and overall, and a JSON summary line.

Exits 0 when every check passed, 1 when one failed (the message says which), 2 when the
machine cannot run it (no CUDA, no vLLM), and 1 if the run took longer than ``--time-limit``.
Importing this file does not import vLLM.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

SAMPLE = REPO / "examples" / "sample.jsonl"
SAMPLE_QA = REPO / "examples" / "sample_qa.jsonl"


class SmokeFailure(Exception):
    """A check failed: exit 1 with this message."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SmokeFailure(message)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", required=True, help="local path of the model for vllm.LLM")
    p.add_argument("--embedder", default="all-MiniLM-L6-v2", help="embedder spec (CUDA if present)")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel size")
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument(
        "--gpu-mem",
        type=float,
        default=0.7,
        help="vLLM's share of GPU memory (the embedder uses the rest)",
    )
    p.add_argument("--docs", type=int, default=30, help="how many sample documents to index")
    p.add_argument("--out", help="index directory (default: a temporary one, removed after)")
    p.add_argument("--time-limit", type=float, default=300.0, help="fail when slower (seconds)")
    p.add_argument("--json-out", help="also write the summary to this file")
    return p.parse_args(argv)


def environment_problem() -> str | None:
    """Why this machine cannot run the smoke test, or None."""
    from graphstrata.bindings.llm.vllm import vllm_available

    if not vllm_available():
        return "vLLM is not installed (pip install 'graphstrata[gpu]')"
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device is visible"
    return None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def rate(tokens: int, seconds: float) -> float:
    return round(tokens / seconds, 1) if seconds > 0 else 0.0


def stage_batches(backend: Any, docs: list[dict[str, Any]]) -> dict[str, Any]:
    """One batch per stage straight to the backend; checks one generate call per stage."""
    from graphstrata.bindings.llm.repair import parse_json_answer
    from graphstrata.engine import prompts

    texts = [d["text"][:1500] for d in docs[:8]]
    stages = {
        "summarize": [prompts.summarize_request([t], 100) for t in texts],
        "decompose": [prompts.decompose_request(t, 1024) for t in texts],
        "query_entities": [
            prompts.query_entities_request(q["question"]) for q in read_jsonl(SAMPLE_QA)[:6]
        ],
    }
    out: dict[str, Any] = {}
    for stage, requests in stages.items():
        calls_before = backend.generate_calls
        start = time.perf_counter()
        responses = backend.complete(requests)
        seconds = time.perf_counter() - start
        # One generate call per stage (a second one only if some JSON answers were re-asked).
        check(
            backend.generate_calls - calls_before in (1, 2),
            f"{stage}: {backend.generate_calls - calls_before} generate calls for one stage",
        )
        check(len(responses) == len(requests), f"{stage}: {len(responses)} answers")
        for request, response in zip(requests, responses, strict=True):
            check(bool(response.text.strip()), f"{stage}: an empty answer")
            check(response.completion_tokens > 0, f"{stage}: no completion tokens counted")
            if request.schema is not None:
                parse_json_answer(response.text, request.schema)  # raises if unusable
        completion = sum(r.completion_tokens for r in responses)
        prompt = sum(r.prompt_tokens for r in responses)
        out[stage] = {
            "prompts": len(requests),
            "seconds": round(seconds, 3),
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "completion_tokens_per_s": rate(completion, seconds),
            "example": responses[0].text[:200],
        }
        print(
            f"stage {stage:<15} {len(requests):>3} prompts {seconds:7.2f}s "
            f"{completion:>6} completion tokens  {rate(completion, seconds):>8} tok/s",
            flush=True,
        )
    out["structured_api"] = backend.structured_api
    return out


def build_and_query(backend: Any, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from graphstrata.bindings.api import Index

    docs = read_jsonl(SAMPLE)[: args.docs]
    index = Index.create(root / "index", embedder=args.embedder, llm=backend)
    components = [c.name for c in index.engine.components]
    start = time.perf_counter()
    report = index.insert(docs)
    build_seconds = time.perf_counter() - start
    stats = index.stats()
    print(f"built {report.chunks_added} chunks, nodes {stats['nodes']}, components {components}")
    check(report.llm_calls > 0, f"the build made no LLM call (components: {components})")
    if "hierarchy" in components:
        check(stats["nodes"].get("L", 0) > 0, "the hierarchy wrote no summary node")
    if "heterograph" in components:
        check(stats["nodes"].get("N", 0) > 0, "the heterograph found no entity")
    llm_seconds = sum(v for k, v in report.stages.items() if k.startswith("llm:"))
    questions = [q["question"] for q in read_jsonl(SAMPLE_QA)]
    for mode in index.modes:
        for question in questions[:4]:
            result = index.query(question, mode=mode, budget_tokens=1000)
            check(bool(result.nodes), f"mode {mode} found nothing for {question!r}")
    answers = []
    for question in questions[:2]:
        result = index.answer(question, mode=index.modes[0], budget_tokens=1000)
        check(bool(result.answer), f"no answer to {question!r}")
        answers.append({"question": question, "answer": result.answer[:300]})
        print(f"Q: {question}\nA: {result.answer[:300]}")
    return {
        "components": components,
        "modes": index.modes,
        "build_seconds": round(build_seconds, 2),
        "llm_calls": report.llm_calls,
        "llm_by_stage": report.llm_by_stage,
        "llm_seconds": round(llm_seconds, 2),
        "prompt_tokens": report.prompt_tokens,
        "completion_tokens": report.completion_tokens,
        "completion_tokens_per_s": rate(report.completion_tokens, llm_seconds),
        "total_tokens_per_s": rate(report.total_tokens, llm_seconds),
        "nodes": stats["nodes"],
        "answers": answers,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    from graphstrata.bindings.registry import make_llm

    started = time.perf_counter()
    spec = (
        f"vllm:{args.model}?dtype={args.dtype}&tp={args.tp}"
        f"&max_model_len={args.max_model_len}&gpu_memory_utilization={args.gpu_mem}"
    )
    backend = make_llm(spec, use_cache=False)  # measure generation, not the cache
    t0 = time.perf_counter()
    backend.load()
    load_seconds = time.perf_counter() - t0
    print(f"loaded {args.model} in {load_seconds:.1f}s", flush=True)
    summary: dict[str, Any] = {"model": args.model, "load_seconds": round(load_seconds, 1)}
    summary["stages"] = stage_batches(backend, read_jsonl(SAMPLE))
    root = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="vllm-smoke-"))
    try:
        summary["index"] = build_and_query(backend, args, root)
    finally:
        if not args.out:
            shutil.rmtree(root, ignore_errors=True)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    index = summary["index"]
    print(
        f"index build: {index['llm_calls']} LLM calls in {index['llm_seconds']}s of generation, "
        f"{index['completion_tokens_per_s']} completion tokens/s, "
        f"{index['total_tokens_per_s']} prompt+completion tokens/s"
    )
    check(
        summary["seconds"] <= args.time_limit,
        f"took {summary['seconds']}s, over the {args.time_limit}s limit",
    )
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    problem = environment_problem()
    if problem:
        print(f"vllm_smoke: cannot run here: {problem}", file=sys.stderr)
        return 2
    try:
        summary = run(args)
    except SmokeFailure as exc:
        print(f"vllm_smoke: FAILED: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # any other failure is a failed smoke test, with its cause
        print(f"vllm_smoke: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    line = json.dumps(summary, ensure_ascii=False)
    print(f"vllm_smoke: OK {line}")
    if args.json_out:
        Path(args.json_out).write_text(line + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
