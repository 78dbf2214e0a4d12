"""Load time and generation speed of the local LLM backend on this machine (decision 0029).

    python -m benchmarks.kernels.local_llm --spec smollm2 --threads 1,2 --batch-sizes 1,4

Loads the model once (seconds: reading the GGUF file, dequantizing it to torch tensors and
building the tokenizer), then asks the decomposition prompts of the first ``--chunks`` chunks
of the sample corpus at each thread count and batch size, each with ``--max-tokens`` to
generate. Per run: seconds, prompt and completion tokens, completion tokens per second of
wall time (prefill included), and the load average before the run. The process takes the ``build``
thread role first, as ``graphstrata index`` does. Writes
``benchmarks/results/local_llm.md`` (and ``.json``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.common import (
    REPO,
    command_line,
    commit,
    load1,
    log,
    machine,
    markdown_table,
    read_jsonl,
    write_report,
)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--spec", default="smollm2", help="a local LLM spec (without threads)")
    p.add_argument("--threads", default="1,2", help="torch threads, comma-separated")
    p.add_argument("--chunks", type=int, default=4, help="decomposition prompts per run")
    p.add_argument("--max-tokens", type=int, default=64, help="tokens to generate per prompt")
    p.add_argument("--batch-sizes", default="1,4", help="comma-separated")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    from graphstrata.bindings.registry import make_llm
    from graphstrata.bindings.threads import apply

    apply("build")  # as `graphstrata index` does: idle OpenMP threads sleep (decision 0022)
    from graphstrata.engine import ChunkingConfig, chunk_text
    from graphstrata.engine.prompts import decompose_request

    docs = read_jsonl(REPO / "examples" / "sample.jsonl")
    cut = ChunkingConfig()
    chunks = [c.text for d in docs for c in chunk_text(d["text"], cut)][: args.chunks]
    requests = [decompose_request(c, args.max_tokens) for c in chunks]
    rows: list[dict[str, Any]] = []
    load_before = load1()
    sep = "&" if "?" in args.spec else "?"
    runs = [(int(t), int(b)) for t in args.threads.split(",") for b in args.batch_sizes.split(",")]
    for threads, size in runs:
        llm = make_llm(f"{args.spec}{sep}threads={threads}&batch_size={size}", use_cache=False)
        loaded = llm.loaded()  # type: ignore[attr-defined]
        load = load1()
        start = time.perf_counter()
        answers = llm.complete(requests)
        seconds = time.perf_counter() - start
        completion = sum(a.completion_tokens for a in answers)
        rows.append(
            {
                "threads": threads,
                "batch_size": size,
                "seconds": round(seconds, 2),
                "prompt_tokens": sum(a.prompt_tokens for a in answers),
                "completion_tokens": completion,
                "completion_tokens_per_s": round(completion / seconds, 2),
                "load_before": load,
            }
        )
        log(f"threads {threads}, batch {size}: {completion} tokens in {seconds:.1f} s")
    header = [
        "threads",
        "batch size",
        "seconds",
        "prompt tokens",
        "completion tokens",
        "tokens/s",
        "load",
    ]
    table = [[r[k] for k in rows[0]] for r in rows]
    text = "\n".join(
        [
            "# Local LLM backend: load time and generation speed",
            "",
            f"Command: `{command_line('benchmarks.kernels.local_llm', argv)}`  ",
            f"Commit {commit()}; {machine()}; `{llm.name}`; {len(requests)} decomposition "
            f"prompts of the sample corpus, up to {args.max_tokens} tokens each.",
            "",
            f"Load (read the weights, dequantize, build the tokenizer): {loaded.seconds:.1f} s "
            f"at load average {load_before:.2f}.",
            "",
            *markdown_table(header, table),
            "",
            "tokens/s: completion tokens per second of wall time, prompt prefill included.",
        ]
    )
    payload = {"spec": args.spec, "load_seconds": round(loaded.seconds, 2), "runs": rows}
    write_report("local_llm", payload, text)
    print(text)
    return payload


if __name__ == "__main__":
    main()
