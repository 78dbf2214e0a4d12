from __future__ import annotations

import numpy as np
import pytest

from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.bindings.registry import make_embedder
from graphstrata.engine.config import ConfigError
from graphstrata.engine.interfaces import Embedder


def test_packaged_minilm_loads_offline_and_normalizes(minilm_embedder):
    assert isinstance(minilm_embedder, Embedder)
    assert minilm_embedder.name == "all-MiniLM-L6-v2" and minilm_embedder.dim == 384
    assert minilm_embedder.max_input_tokens == 256
    vecs = minilm_embedder.embed(
        ["The Halvorsen Observatory sits on Mount Kjell.", "Lake Sundra froze early."]
    )
    assert vecs.dtype == np.float32 and vecs.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    same = minilm_embedder.embed(["The Halvorsen Observatory sits on Mount Kjell."])
    np.testing.assert_allclose(same[0], vecs[0], atol=1e-5)
    close = minilm_embedder.embed(["An observatory on a mountain called Kjell."])[0]
    assert float(close @ vecs[0]) > float(close @ vecs[1])


def test_hashing_embedder_is_deterministic_and_normalized():
    emb = HashingEmbedder(32)
    a = emb.embed(["alpha beta", "alpha beta", ""])
    np.testing.assert_array_equal(a[0], a[1])
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)


def test_embedder_specs():
    assert make_embedder("hashing:16").dim == 16
    assert make_embedder("all-MiniLM-L6-v2").name == "all-MiniLM-L6-v2"
    with pytest.raises(ConfigError):
        make_embedder("definitely-not-a-model")


def test_embedder_compatible_names():
    from graphstrata.bindings.embed.models import (
        MINILM_FP32_NAMES,
        OnnxMiniLMEmbedder,
        SentenceTransformerEmbedder,
    )

    torch_emb = SentenceTransformerEmbedder("all-MiniLM-L6-v2")  # lazy: nothing loads here
    assert torch_emb.compatible_names == MINILM_FP32_NAMES
    assert torch_emb.name in MINILM_FP32_NAMES
    assert OnnxMiniLMEmbedder("fp32").compatible_names == MINILM_FP32_NAMES
    assert OnnxMiniLMEmbedder("int8").compatible_names == frozenset({"minilm-int8"})
    assert make_embedder("hashing:16").compatible_names == frozenset({"hashing-16"})
    assert SentenceTransformerEmbedder("/some/model").compatible_names == frozenset({"/some/model"})


def test_gpu_embed_benchmark_runs_on_cpu(tmp_path):
    """benchmarks/gpu/embed.py: --prepare writes an fp16 copy < 64 MiB; without CUDA the
    benchmark falls back to the CPU, says so, and its rows agree with each other."""
    import json
    import os
    import subprocess
    import sys

    from benchmarks.gpu import embed as bench
    from tests.helpers import REPO

    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    model = bench.prepare(tmp_path / "fp16")  # what `embed.py --prepare DIR` does
    size = sum(p.stat().st_size for p in model.rglob("*") if p.is_file())
    assert size < 64 * 2**20 and (model / "tokenizer.json").exists()
    out = tmp_path / "gpu.json"
    # graphstrata made unimportable: the script must run on a machine without it.
    no_graphstrata = (
        "import runpy, sys; sys.modules['graphstrata'] = None; "
        "runpy.run_module('benchmarks.gpu.embed', run_name='__main__', alter_sys=True)"
    )
    run = subprocess.run(
        [
            *(sys.executable, "-c", no_graphstrata, "--model", str(model)),
            *("--chunks", "6", "--queries", "2", "--batch-sizes", "4", "--json-out", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "falling back to the CPU" in run.stdout
    assert run.stdout.strip().splitlines()[-1].startswith("embed_gpu: OK ")
    result = json.loads(out.read_text())
    assert result["fallback_cpu"] is True and result["chunks"] == 6
    assert set(result["rows"]) >= {"torch-fp32"}
    for row in result["rows"].values():
        assert row["chunks_per_s"] > 0 and row["cos_min"] > 0.9999
