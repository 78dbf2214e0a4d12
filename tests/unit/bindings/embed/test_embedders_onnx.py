"""The ONNX Runtime embedders (``minilm-onnx``, ``minilm-int8``) against the torch model.

One export per session into a temporary cache (``onnx_cache``), shared by every test here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from graphstrata.bindings.embed import onnx as eo
from graphstrata.bindings.embed.models import HashingEmbedder, OnnxMiniLMEmbedder
from graphstrata.bindings.registry import make_embedder
from graphstrata.engine.config import ConfigError
from graphstrata.engine.interfaces import Embedder

REPO = Path(__file__).resolve().parents[4]

#: fp32 ONNX and torch compute the same function: cosine >= 1 - 1e-5 (measured: 1 - 1.2e-7).
FP32_COS = 1 - 1e-5
#: int8 (per-channel weights, reduce_range) is another function. Measured on TEXTS: mean
#: cosine 0.9875, min 0.974 (the degenerate "", " " and "aaaa..." are the worst); on 256
#: MultiHop-RAG 200-token chunks: mean 0.993, min 0.983 (benchmarks/results/embed.md).
#: The thresholds leave about twice the measured gap to 1 (other CPUs pick other int8
#: kernels: VNNI, AVX-512).
INT8_MEAN_COS = 0.975
INT8_MIN_COS = 0.95

TEXTS = [
    "",
    " ",
    "a",
    "Who founded Meridian Optics?",
    "The Halvorsen Observatory sits on Mount Kjell.",
    "  leading and trailing whitespace\n\t",
    "Ünïcödé — 東京タワー は 高い; naïve café, Straße, ½ ≠ 0.5 🚀",
    "Lake Sundra froze early that year, and the fishermen stayed ashore. " * 30,  # > 256 pieces
    "word " * 400,
    "a" * 3000,
    "Quarterly revenue rose 12% to $4.5B, beating estimates; shares gained 3.1% after hours.",
    "def f(x):\n    return x ** 2  # squares",
]


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private cache with both variants exported once (~10 s)."""
    cache = tmp_path_factory.mktemp("graphstrata-cache")
    eo.ensure_onnx_model("int8", cache=cache)  # exports fp32 first, then quantizes
    return cache


@pytest.fixture(scope="module")
def fp32(onnx_cache: Path) -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder("fp32", cache=onnx_cache).load()


@pytest.fixture(scope="module")
def int8(onnx_cache: Path) -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder("int8", cache=onnx_cache).load()


@pytest.fixture(scope="module")
def torch_vectors(minilm_embedder) -> np.ndarray:
    return minilm_embedder.embed(TEXTS)


def test_interface_names_and_compatibility(fp32, int8, minilm_embedder):
    for emb in (fp32, int8):
        assert isinstance(emb, Embedder)
        assert emb.dim == 384 and emb.max_input_tokens == 256
    assert fp32.name == "minilm-onnx" and int8.name == "minilm-int8"
    assert minilm_embedder.name == "all-MiniLM-L6-v2"
    # fp32 ONNX and torch are one function; int8 is compatible only with itself.
    assert fp32.compatible_names == minilm_embedder.compatible_names
    assert {"all-MiniLM-L6-v2", "minilm-onnx"} <= fp32.compatible_names
    assert int8.compatible_names == frozenset({"minilm-int8"})
    assert HashingEmbedder(16).compatible_names == frozenset({"hashing-16"})


def test_fp32_equals_torch(fp32, torch_vectors):
    vecs = fp32.embed(TEXTS)
    assert vecs.dtype == np.float32 and vecs.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    cos = np.sum(vecs * torch_vectors, axis=1)
    assert cos.min() >= FP32_COS, dict(zip(TEXTS, cos.tolist(), strict=True))


def test_int8_within_tolerance(int8, torch_vectors):
    vecs = int8.embed(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    cos = np.sum(vecs * torch_vectors, axis=1)
    assert cos.mean() >= INT8_MEAN_COS and cos.min() >= INT8_MIN_COS, cos.tolist()


def test_truncates_at_max_seq_length(fp32):
    # Both exceed 256 word pieces, so both read the same first 254 words.
    a, b = fp32.embed(["word " * 300, "word " * 600])
    assert float(a @ b) > 1 - 1e-6


@pytest.mark.parametrize("max_padding", [0.0, 0.1, 1.0])
def test_input_order_kept_across_length_sorted_batches(onnx_cache, max_padding):
    emb = OnnxMiniLMEmbedder("fp32", cache=onnx_cache, batch_size=3, max_padding=max_padding)
    batched = emb.embed(TEXTS)
    single = np.concatenate([emb.embed([t]) for t in TEXTS])
    assert np.sum(batched * single, axis=1).min() >= FP32_COS
    # Each row is its own text's vector (not merely close to some other row's).
    assert (np.argmax(batched @ single.T, axis=1) == np.arange(len(TEXTS)))[3:].all()
    assert emb.embed([]).shape == (0, 384)
    assert emb.embedded == 2 * len(TEXTS) and emb.throughput > 0


def test_length_groups_bound_padding_and_size():
    lengths = np.array([100, 95, 91, 90, 60, 59, 58, 57, 10, 1])
    groups = eo.length_groups(lengths, batch_size=3, max_padding=0.1)
    assert groups == [(0, 3), (3, 4), (4, 7), (7, 8), (8, 9), (9, 10)]
    for lo, hi in groups:
        assert hi - lo <= 3 and lengths[hi - 1] >= 0.9 * lengths[lo]
    assert eo.length_groups(lengths, 32, 1.0) == [(0, 10)]
    assert eo.length_groups(lengths, 1, 1.0) == [(i, i + 1) for i in range(10)]
    assert eo.length_groups(np.array([5, 5, 5]), 32, 0.0) == [(0, 3)]
    assert eo.length_groups(np.array([], dtype=np.int64), 4, 0.1) == []


def test_bad_max_padding_is_refused(onnx_cache):
    with pytest.raises(ValueError, match="max_padding"):
        OnnxMiniLMEmbedder("fp32", cache=onnx_cache, max_padding=1.5)
    with pytest.raises(ConfigError, match="max_padding"):
        make_embedder("minilm-onnx?max_padding=-0.1")


def test_export_is_reused_not_redone(onnx_cache, fp32):
    before = dict(eo.EXPORT_COUNTS)
    path = eo.cached_model_path("fp32", cache=onnx_cache)
    mtime = path.stat().st_mtime_ns
    again = OnnxMiniLMEmbedder("fp32", cache=onnx_cache).load()
    again_int8 = OnnxMiniLMEmbedder("int8", cache=onnx_cache).load()
    assert again.model_path == path == fp32.model_path
    assert again_int8.model_path == eo.cached_model_path("int8", cache=onnx_cache)
    assert before == eo.EXPORT_COUNTS
    assert path.stat().st_mtime_ns == mtime
    # Only finished files in the cache: no temporary leftovers.
    assert not [p for p in (onnx_cache / "onnx").iterdir() if ".tmp" in p.name]


def test_cache_key_tracks_weights_and_settings(tmp_path):
    digest = "0" * 64
    keys = {
        eo.export_key(digest, "fp32"),
        eo.export_key(digest, "int8"),
        eo.export_key(digest, "fp32", opset=18),
        eo.export_key("1" * 64, "fp32"),
    }
    assert len(keys) == 4
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights v1")
    first = eo.cached_model_path("fp32", model, tmp_path / "cache")
    assert eo.cached_model_path("fp32", model, tmp_path / "cache") == first
    (model / "model.safetensors").write_bytes(b"weights v2, other size")
    assert eo.cached_model_path("fp32", model, tmp_path / "cache") != first


_RACER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from graphstrata.bindings.embed import onnx as eo

    def slow_export(model_dir, dest, opset=eo.DEFAULT_OPSET):
        with open(dest, "wb") as fh:          # a partial file a reader must never see
            fh.write(b"first half|")
            fh.flush()
            time.sleep(1.0)
            fh.write(b"second half")

    eo.export_fp32 = slow_export
    model, cache, go = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    time.sleep(max(0.0, go - time.time()))
    path = eo.ensure_onnx_model("fp32", model, cache)
    print(json.dumps({"path": str(path), "exports": eo.EXPORT_COUNTS["fp32"],
                      "data": path.read_bytes().decode()}))
    """
)


def test_concurrent_processes_export_once_atomically(tmp_path):
    import time

    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"fake weights")
    cache = tmp_path / "cache"
    go = time.time() + 2.5  # start together, after the imports
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _RACER, str(model), str(cache), str(go)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert len({r["path"] for r in results}) == 1
    assert sum(r["exports"] for r in results) == 1
    assert all(r["data"] == "first half|second half" for r in results)
    leftovers = [p.name for p in (cache / "onnx").iterdir() if ".tmp" in p.name]
    assert leftovers == []


def test_query_path_does_not_import_torch(onnx_cache, fp32):
    code = textwrap.dedent(
        """
        import json, sys
        from graphstrata.bindings.registry import make_embedder
        out = {}
        for spec in ("minilm-onnx", "minilm-int8"):
            emb = make_embedder(spec)
            vec = emb.embed(["Who founded Meridian Optics?"])[0]
            out[spec] = [float(x) for x in vec[:4]]
        heavy = sorted(m for m in sys.modules
                       if m.split(".")[0] in ("torch", "transformers", "sentence_transformers",
                                              "onnx"))
        print(json.dumps({"heavy": heavy, "vectors": out}))
        """
    )
    env = {**os.environ, "GRAPHSTRATA_CACHE": str(onnx_cache)}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["heavy"] == []
    want = fp32.embed(["Who founded Meridian Optics?"])[0][:4]
    np.testing.assert_allclose(result["vectors"]["minilm-onnx"], want, atol=1e-5)


def test_onnx_runtime_loads_after_the_engine_imported_usearch(onnx_cache):
    """An index opened first (the engine imports usearch), then embedding with minilm-onnx
    (which imports onnxruntime lazily): usearch 2.26's compiled module made that second
    import segfault (setup.cfg pins usearch below 2.26)."""
    code = textwrap.dedent(
        """
        import usearch.index
        import graphstrata.engine.vectors
        from graphstrata.bindings.registry import make_embedder
        print(make_embedder("minilm-onnx").embed(["Who founded Meridian Optics?"]).shape)
        """
    )
    env = {**os.environ, "GRAPHSTRATA_CACHE": str(onnx_cache)}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout.strip().splitlines()[-1] == "(1, 384)"


def test_specs_and_options(onnx_cache, monkeypatch):
    monkeypatch.setenv("GRAPHSTRATA_CACHE", str(onnx_cache))
    emb = make_embedder("minilm-onnx?threads=1&batch_size=8&spin=true")
    assert isinstance(emb, OnnxMiniLMEmbedder)
    assert (emb.variant, emb.threads, emb.batch_size, emb.spin) == ("fp32", 1, 8, True)
    int8 = make_embedder("minilm-int8", threads=2)
    assert int8.name == "minilm-int8" and int8.threads == 2
    default = make_embedder("minilm-onnx")
    assert default.threads == len(os.sched_getaffinity(0))
    with pytest.raises(ConfigError):
        make_embedder("minilm-onnx?device=cuda")
    with pytest.raises(ConfigError):
        make_embedder("minilm-onnx?threads=0")
    # The name is the spec: an index records it and reopens with it.
    assert make_embedder(emb.name).name == "minilm-onnx"


def test_set_threads_rebuilds_session(onnx_cache):
    emb = OnnxMiniLMEmbedder("fp32", cache=onnx_cache, threads=2)
    first = emb.embed(["alpha"])
    emb.set_threads(1)
    assert emb.threads == 1
    np.testing.assert_allclose(emb.embed(["alpha"]), first, atol=1e-6)
    with pytest.raises(ValueError):
        emb.set_threads(0)


def test_an_index_accepts_a_compatible_embedder_and_refuses_another(
    tmp_path, sample_docs, fp32, int8, minilm_embedder
):
    from graphstrata.bindings.api import Index
    from graphstrata.engine.config import IndexConfig

    config = IndexConfig()
    config.hierarchy.enabled = config.heterograph.enabled = False
    built = Index.create(tmp_path / "torch", config, embedder=minilm_embedder, llm="extractive")
    built.insert(sample_docs[:6])
    question = "Who founded Meridian Optics?"
    expected = [h.id for h in built.query(question, mode="naive").nodes]
    # fp32 ONNX computes the same function: the index opens and answers alike.
    same = Index.open(tmp_path / "torch", embedder=fp32)
    assert [h.id for h in same.query(question, mode="naive").nodes] == expected
    # int8 is another function: refused with the names it is compatible with.
    with pytest.raises(ConfigError, match=r"built with embedder 'all-MiniLM-L6-v2'.*minilm-int8"):
        Index.open(tmp_path / "torch", embedder=int8)
    quantized = Index.create(tmp_path / "int8", config, embedder=int8, llm="extractive")
    quantized.insert(sample_docs[:2])
    with pytest.raises(ConfigError, match="built with embedder 'minilm-int8'"):
        Index.open(tmp_path / "int8", embedder=minilm_embedder)
    assert Index.open(tmp_path / "int8", embedder=int8).query(question, mode="naive").nodes
