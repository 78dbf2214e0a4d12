"""Where ``minilm-onnx`` runs: ONNX Runtime's CUDA provider when it is there, else the CPU,
said in one log line and in the embedder's ``device``."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from graphstrata.bindings.embed import onnx as eo
from graphstrata.bindings.embed.onnx import OnnxMiniLMEmbedder

CUDA = [eo.CUDA_PROVIDER, eo.CPU_PROVIDER]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("device-cache")
    eo.ensure_onnx_model("fp32", cache=cache)
    return cache


def test_provider_choice_follows_onnxruntime(monkeypatch):
    import onnxruntime as ort

    monkeypatch.setattr(ort, "get_available_providers", lambda: CUDA)
    assert eo.session_providers("fp32") == CUDA
    # int8's quantized MatMuls are a CPU kernel: it stays there even beside a GPU.
    assert eo.session_providers("int8") == [eo.CPU_PROVIDER]
    monkeypatch.setattr(ort, "get_available_providers", lambda: [eo.CPU_PROVIDER])
    assert eo.session_providers("fp32") == [eo.CPU_PROVIDER]
    assert eo.session_providers("fp32", ["X"]) == ["X"]


def test_default_device_is_reported(cache, caplog):
    import onnxruntime as ort

    with caplog.at_level(logging.INFO, logger=eo.__name__):
        emb = OnnxMiniLMEmbedder("fp32", cache=cache).load()
    on_gpu = eo.CUDA_PROVIDER in ort.get_available_providers()
    assert emb.device == ("cuda" if on_gpu else "cpu")
    lines = [r.getMessage() for r in caplog.records if r.name == eo.__name__]
    assert len(lines) == 1
    assert ("on the GPU" if on_gpu else "embedding on the CPU") in lines[0]


def test_cuda_asked_without_a_gpu_falls_back_and_says_so(cache, caplog):
    import onnxruntime as ort

    if eo.CUDA_PROVIDER in ort.get_available_providers():
        pytest.skip("this machine has the CUDA provider: nothing to fall back from")
    cpu = OnnxMiniLMEmbedder("fp32", cache=cache, providers=[eo.CPU_PROVIDER])
    with caplog.at_level(logging.INFO, logger=eo.__name__):
        emb = OnnxMiniLMEmbedder("fp32", cache=cache, providers=CUDA).load()
    assert emb.device == "cpu"
    (line,) = [r.getMessage() for r in caplog.records if r.name == eo.__name__]
    assert "CUDAExecutionProvider asked for but not available" in line
    assert "falling back to the CPU" in line
    text = ["Who founded Meridian Optics?"]
    np.testing.assert_allclose(emb.embed(text), cpu.embed(text), atol=1e-6)
