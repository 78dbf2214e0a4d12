"""Embedding benchmark: every CPU embedder backend side by side, in one run.

Contenders, on the same inputs:

* ``all-MiniLM-L6-v2``: sentence-transformers on torch (the default embedder);
* ``minilm-onnx``: the same weights exported to ONNX, fp32, on ONNX Runtime;
* ``minilm-int8``: that export dynamically quantized to int8;
* ``hashing``: feature hashing, no model (the floor of what "embedding" can cost).

Measured for each: chunks/s on full 200-token chunks (cl100k, graphstrata's chunker with
its default ``ChunkingConfig``) of ``../shared/data/multihop_rag/corpus.jsonl`` (the run
says so and skips the corpus rows if the file is absent), single-query latency p50/p99
(one question at a time, the MultiHop-RAG questions, else synthetic ones), and cosine
agreement with the torch vectors (mean and min, chunks and queries together). The
1-minute load average is recorded beside every row: the reference machine has 2 shared
cores and other jobs move the numbers.

The machine limit: the FLOPs of one chunk through MiniLM-L6 (6 layers, hidden 384, FFN
1536, 12 heads; from the word-piece lengths actually fed, attention included) against the
best float32 GEMM rate reached in the same run on the layer's product shapes, by numpy
(OpenBLAS; at the start and at the end) and by a one-MatMul ONNX Runtime graph (MLAS). No
fp32 implementation can beat that number by much; int8 kernels can (twice the
multiply-adds per instruction on AVX2).

Backends run interleaved (chunk slices round-robin, queries round-robin), so that the load
of a shared machine hits every backend alike.

    python -m benchmarks.kernels.embed               # 256 chunks, 100 queries (~2 min)
    python -m benchmarks.kernels.embed --chunks 64 --queries 20 --backends minilm-onnx,hashing

Writes benchmarks/results/embed.md and embed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import DATA, REPO, RESULTS, command_line, load1, write_json

CORPUS = DATA / "multihop_rag" / "corpus.jsonl"
QUESTIONS = DATA / "multihop_rag" / "qa.jsonl"

BACKENDS = ("all-MiniLM-L6-v2", "minilm-onnx", "minilm-int8", "hashing")

# MiniLM-L6-H384 (the packaged config.json)
LAYERS, HIDDEN, FFN = 6, 384, 1536


def chunker() -> Any:
    """graphstrata's chunk_text, wherever the engine keeps it."""
    try:
        from graphstrata.engine.ingest.chunking import chunk_text
    except ImportError:  # older layout
        from graphstrata.engine.chunking import chunk_text  # type: ignore[no-redef]
    return chunk_text


def corpus_chunks(path: Path, n: int) -> list[str]:
    """The first ``n`` full 200-token chunks of the corpus, in corpus order."""
    from graphstrata.engine.config import ChunkingConfig

    chunk_text = chunker()
    config = ChunkingConfig()
    out: list[str] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            for chunk in chunk_text(json.loads(line)["text"], config):
                if chunk.tokens == config.chunk_tokens:
                    out.append(chunk.text)
                    if len(out) >= n:
                        return out
    return out


def questions(path: Path, n: int) -> list[str]:
    if path.exists():
        with open(path, encoding="utf-8") as fh:
            qs = [json.loads(line)["question"] for line in fh if line.strip()]
        if qs:
            return [qs[i % len(qs)] for i in range(n)]
    return [f"Which company reported quarterly result number {i} in the news?" for i in range(n)]


def chunk_flops(word_pieces: np.ndarray) -> np.ndarray:
    """FLOPs (2 per multiply-add) of MiniLM-L6 over sequences of the given lengths."""
    L = word_pieces.astype(np.float64)
    dense = 4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN  # Q, K, V, O projections + FFN, per token
    attention = 2 * L * HIDDEN  # QK^T and AV, per token
    return 2.0 * LAYERS * L * (dense + attention)


def gemm_gflops(seconds: float = 2.0) -> float:
    """Best float32 GEMM rate of numpy on the layer's shapes, GFLOP/s.

    The products of one layer over a 32-chunk batch (``7360 = 32 * 230`` rows): the Q/K/V/O
    projections ``[7360, 384] @ [384, 384]``, the FFN ``[7360, 384] @ [384, 1536]`` and
    ``[7360, 1536] @ [1536, 384]``; the best time of each over ``seconds``.
    """
    rng = np.random.default_rng(0)
    best_rate = 0.0
    for k, n in ((HIDDEN, HIDDEN), (HIDDEN, FFN), (FFN, HIDDEN)):
        a = rng.standard_normal((32 * 230, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        flops = 2.0 * a.shape[0] * k * n
        a @ b  # warm-up
        best = float("inf")
        deadline = time.perf_counter() + seconds / 3
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - t0)
        best_rate = max(best_rate, flops / best / 1e9)
    return best_rate


def ort_gemm_gflops(seconds: float = 2.0) -> float:
    """The same products through a one-node ONNX Runtime MatMul graph (MLAS, the kernels the
    ``minilm-onnx`` backend runs), GFLOP/s; 0 if onnx or onnxruntime is missing."""
    try:
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError:
        return 0.0
    rng = np.random.default_rng(0)
    best_rate = 0.0
    for k, n in ((HIDDEN, HIDDEN), (HIDDEN, FFN), (FFN, HIDDEN)):
        weight = rng.standard_normal((k, n), dtype=np.float32)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["a", "w"], ["y"])],
            "gemm",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [None, k])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])],
            [onnx.numpy_helper.from_array(weight, "w")],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        options = ort.SessionOptions()
        options.intra_op_num_threads = len(os.sched_getaffinity(0))
        session = ort.InferenceSession(model.SerializeToString(), options)
        a = rng.standard_normal((32 * 230, k), dtype=np.float32)
        session.run(None, {"a": a})
        best = float("inf")
        deadline = time.perf_counter() + seconds / 3
        while time.perf_counter() < deadline:
            t0 = time.perf_counter()
            session.run(None, {"a": a})
            best = min(best, time.perf_counter() - t0)
        best_rate = max(best_rate, 2.0 * a.shape[0] * k * n / best / 1e9)
    return best_rate


def make(spec: str) -> Any:
    from graphstrata.bindings.registry import make_embedder

    return make_embedder(spec)


def run_backends(
    specs: list[str], chunks: list[str], queries: list[str], rounds: int
) -> list[dict[str, Any]]:
    """Every backend on the same inputs, interleaved so that a load spike hits all of them.

    Chunks go in ``rounds`` slices; in each round every backend embeds the slice (in a
    rotating order). chunks/s is the median over the rounds (and the best round). Queries go
    one at a time, each to every backend in turn.
    """
    rows: list[dict[str, Any]] = []
    embedders = []
    for spec in specs:
        row: dict[str, Any] = {"backend": spec, "load1_start": load1()}
        t0 = time.perf_counter()
        emb = make(spec)
        emb.embed(["warm-up: the model loads, exports if needed, and runs once"])
        if chunks:
            emb.embed(chunks[:8])  # warm the batch shapes
        row["first_call_s"] = time.perf_counter() - t0
        row["name"] = emb.name
        row["threads"] = getattr(emb, "threads", None)
        if row["threads"] is None and spec == "all-MiniLM-L6-v2":
            import torch

            row["threads"] = torch.get_num_threads()
        row["_chunk_vecs"], row["_round_rates"], row["_lat"], row["_query_vecs"] = [], [], [], []
        rows.append(row)
        embedders.append(emb)
    size = max(1, -(-len(chunks) // rounds)) if chunks else 0
    slices = [chunks[i : i + size] for i in range(0, len(chunks), size)] if chunks else []
    for r, part in enumerate(slices):
        for j in range(len(rows)):
            i = (j + r) % len(rows)
            t0 = time.perf_counter()
            vecs = embedders[i].embed(part)
            rows[i]["_round_rates"].append(len(part) / (time.perf_counter() - t0))
            rows[i]["_chunk_vecs"].append(vecs)
        print(f"round {r + 1}/{len(slices)} done, load {load1():.2f}", flush=True)
    for q_index, q in enumerate(queries):
        for j in range(len(rows)):
            i = (j + q_index) % len(rows)
            t0 = time.perf_counter()
            rows[i]["_query_vecs"].append(embedders[i].embed([q])[0])
            rows[i]["_lat"].append((time.perf_counter() - t0) * 1e3)
    for row in rows:
        if row["_round_rates"]:
            rates = np.asarray(row["_round_rates"])
            row["chunks_per_s"] = float(np.median(rates))
            row["chunks_per_s_best"] = float(rates.max())
            row["chunks_per_s_rounds"] = [float(x) for x in rates]
        lat = np.asarray(row["_lat"])
        row["query_p50_ms"] = float(np.percentile(lat, 50))
        row["query_p99_ms"] = float(np.percentile(lat, 99))
        row["query_mean_ms"] = float(lat.mean())
        row["load1_end"] = load1()
    for emb in embedders:
        close = getattr(emb, "close", None)
        if callable(close):
            close()
    return rows


def agreement(rows: list[dict[str, Any]]) -> None:
    """Cosine of every MiniLM backend's vectors to the torch ones (chunks and queries)."""
    ref = next((r for r in rows if r["backend"] == "all-MiniLM-L6-v2"), None)
    for row in rows:
        chunk_vecs = np.concatenate(row.pop("_chunk_vecs")) if row["_round_rates"] else None
        query_vecs = np.stack(row.pop("_query_vecs"))
        row["_vecs"] = (chunk_vecs, query_vecs)
    for row in rows:
        if ref is None or row["backend"].startswith("hashing"):
            continue
        parts = [np.sum(row["_vecs"][1] * ref["_vecs"][1], axis=1)]
        if row["_vecs"][0] is not None:
            chunk_cos = np.sum(row["_vecs"][0] * ref["_vecs"][0], axis=1)
            parts.append(chunk_cos)
            row["chunk_cos_mean"] = float(chunk_cos.mean())
            row["chunk_cos_min"] = float(chunk_cos.min())
        cos = np.concatenate(parts)
        row["cos_mean"] = float(cos.mean())
        row["cos_min"] = float(cos.min())
    for row in rows:
        for key in ("_vecs", "_round_rates", "_lat"):
            row.pop(key, None)


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for mod in ("torch", "onnxruntime", "tokenizers", "sentence_transformers"):
        try:
            out[mod] = __import__(mod).__version__
        except ImportError:
            out[mod] = "absent"
    return out


def fmt(value: Any, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "# Embedding benchmark",
        "",
        f"Machine: {m['cpus']} CPUs ({m['arch']}), "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
        + f". Total wall time {result['wall_s']:.0f} s.",
        "",
        f"Inputs: {result['chunks']} full 200-token chunks (cl100k, `ChunkingConfig()` defaults) "
        f"from {result['corpus']}, mean {result['word_pieces_mean']:.0f} word pieces (max "
        f"{result['word_pieces_max']}); {result['queries']} single queries ({result['query_source']}), "
        "embedded one at a time. Cosines are against the torch vectors, chunks and queries together.",
        "",
        f"Machine limit: {result['gflop_per_chunk']:.2f} GFLOP per chunk (mean over these chunks; "
        "6 layers x (Q/K/V/O + FFN + attention) x word pieces) at "
        f"{result['gemm_gflops']:.1f} GFLOP/s, the best fp32 GEMM rate on the layer's shapes "
        "(`[7360, k] @ [k, n]`) measured in this run: numpy "
        + " / ".join(f"{g:.1f}" for g in result["gemm_gflops_runs"])
        + f" (start / end), ONNX Runtime MatMul {result['ort_gemm_gflops']:.1f}"
        + f" = **{result['limit_chunks_per_s']:.1f} chunks/s** for any fp32 implementation.",
        "",
        f"Backends run interleaved ({result['rounds']} rounds of chunk slices, each backend in "
        "turn; queries one at a time, each to every backend in turn), so load spikes hit all of "
        "them; chunks/s is the median round (best round in the JSON).",
        "",
        "| backend | name | threads | chunks/s | % of fp32 limit | query p50 | query p99 | cos mean | cos min | first call | load (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        pct = (
            f"{100 * r['chunks_per_s'] / result['limit_chunks_per_s']:.0f}%"
            if r.get("chunks_per_s") and r["backend"] != "hashing"
            else "-"
        )
        lines.append(
            f"| `{r['backend']}` | {r['name']} | {fmt(r['threads'], 'd') if r['threads'] else '-'} "
            f"| {fmt(r.get('chunks_per_s'))} | {pct} | {r['query_p50_ms']:.1f} ms "
            f"| {r['query_p99_ms']:.1f} ms | {fmt(r.get('cos_mean'), '.5f')} "
            f"| {fmt(r.get('cos_min'), '.5f')} | {r['first_call_s']:.1f} s "
            f"| {r['load1_start']:.2f} → {r['load1_end']:.2f} |"
        )
    by_name = {r["backend"]: r for r in result["rows"]}
    torch_row = by_name.get("all-MiniLM-L6-v2")
    if torch_row and torch_row.get("chunks_per_s"):
        lines += ["", "Against torch, this run:"]
        for r in result["rows"]:
            if r is torch_row or r["backend"] == "hashing" or not r.get("chunks_per_s"):
                continue
            lines.append(
                f"- `{r['backend']}`: {r['chunks_per_s'] / torch_row['chunks_per_s']:.2f}x "
                f"torch's chunks/s (the fp32 limit allows at most "
                f"{result['limit_chunks_per_s'] / torch_row['chunks_per_s']:.2f}x for fp32); "
                f"query p50 {r['query_p50_ms'] / torch_row['query_p50_ms']:.3f} of torch's"
            )
    lines += [
        "",
        "`first call`: constructing the embedder and embedding one text (model load; for the ONNX "
        "backends the export to the cache on the very first run, a file load afterwards). "
        "`% of fp32 limit` for int8 can pass 100%: its kernels do more multiply-adds per "
        "instruction than fp32 ones.",
        "",
        f"Command: `{result['command']}`",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=256)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4, help="interleaved chunk rounds")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--out-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    start = time.perf_counter()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]

    chunks: list[str] = []
    corpus_note = os.path.relpath(args.corpus, REPO)
    if args.corpus.exists():
        chunks = corpus_chunks(args.corpus, args.chunks)
    else:
        corpus_note = f"(absent: {args.corpus}; chunk rows skipped)"
        print(f"embed.py: no corpus at {args.corpus}; measuring queries only", file=sys.stderr)
    queries = questions(QUESTIONS, args.queries)

    from tokenizers import Tokenizer

    from graphstrata.bindings.embed.onnx import packaged_model_dir

    tok = Tokenizer.from_file(str(packaged_model_dir() / "tokenizer.json"))
    tok.enable_truncation(max_length=256)
    pieces = np.asarray([len(e.ids) for e in tok.encode_batch(chunks)] or [0])
    gflop_chunk = float(chunk_flops(pieces).mean() / 1e9)
    gemm_runs = [gemm_gflops()]
    print(
        f"fp32 GEMM {gemm_runs[0]:.1f} GFLOP/s; {gflop_chunk:.2f} GFLOP per chunk; "
        f"load {load1():.2f}"
    )

    rows = run_backends(backends, chunks, queries, args.rounds)
    agreement(rows)
    for row in rows:
        print(
            f"{row['backend']:18s} chunks/s {fmt(row.get('chunks_per_s'))} "
            f"p50 {row['query_p50_ms']:.1f} ms p99 {row['query_p99_ms']:.1f} ms "
            f"cos {fmt(row.get('cos_mean'), '.5f')}/{fmt(row.get('cos_min'), '.5f')}",
            flush=True,
        )
    gemm_runs.append(gemm_gflops())  # again at the end: the best of both is the limit
    ort_gemm = ort_gemm_gflops()
    gemm = max([*gemm_runs, ort_gemm])
    result = {
        "machine": {
            "cpus": len(os.sched_getaffinity(0)),
            "arch": platform.machine(),
            "versions": versions(),
        },
        "corpus": corpus_note,
        "chunks": len(chunks),
        "word_pieces_mean": float(pieces.mean()),
        "word_pieces_max": int(pieces.max()),
        "queries": len(queries),
        "query_source": "MultiHop-RAG questions" if QUESTIONS.exists() else "synthetic",
        "rounds": args.rounds,
        "gemm_gflops": gemm,
        "gemm_gflops_runs": gemm_runs,
        "ort_gemm_gflops": ort_gemm,
        "gflop_per_chunk": gflop_chunk,
        "limit_chunks_per_s": gemm / gflop_chunk if gflop_chunk else 0.0,
        "rows": rows,
        "wall_s": time.perf_counter() - start,
        "command": command_line(__spec__.name, argv),
    }
    write_json(args.out_dir / "embed.json", result, indent=2)
    md = render(result)
    (args.out_dir / "embed.md").write_text(md, encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
