"""A missing optional dependency fails with one line naming its extra (``bindings/extras``).

The absence is simulated with ``sys.modules[name] = None`` (``import name`` then fails), in a
subprocess for the command line, so that nothing else in the test run sees it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphstrata.bindings.extras import MissingExtraError, available, hint, require
from graphstrata.bindings.registry import make_embedder, make_llm
from graphstrata.engine import ConfigError, EmbedderError
from tests.helpers import REPO, SAMPLE_DIR


def run_without(modules: list[str], args: list[str]) -> subprocess.CompletedProcess:
    """``graphstrata ARGS`` in a subprocess where ``modules`` cannot be imported."""
    code = (
        "import sys\n"
        f"for name in {modules!r}: sys.modules[name] = None\n"
        "from graphstrata.bindings.cli import main\n"
        f"sys.exit(main({args!r}))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("GRAPHSTRATA_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


def test_hint_and_require() -> None:
    assert hint("graphstrata serve", "server") == (
        "graphstrata serve needs the server extra: pip install 'graphstrata[server]'"
    )
    assert require("json", "server", "x").__name__ == "json"
    with pytest.raises(MissingExtraError, match=r"^x needs the gpu extra") as info:
        require("graphstrata_no_such_module", "gpu", "x")
    assert isinstance(info.value.__cause__, ImportError)
    with pytest.raises(ConfigError, match=r"graphstrata\[ray\]"):
        require("graphstrata_no_such_module", "ray", "y", error=ConfigError)
    assert available("json") and not available("graphstrata_no_such_module")


def test_available_honours_a_hidden_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "json", None)
    assert not available("json")


@pytest.mark.parametrize("module", ["fastapi", "uvicorn"])
def test_serve_without_the_server_extra(module: str, tmp_path: Path) -> None:
    done = run_without([module], ["serve", str(tmp_path)])
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "graphstrata serve needs the server extra: pip install 'graphstrata[server]'"
    )
    assert done.stdout == ""


def test_ray_flag_without_the_ray_extra(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    args = ["index", str(SAMPLE_DIR / "city"), "--out", str(out), "--embedder", "hashing"]
    done = run_without(["ray"], [*args, "--ray"])
    assert done.returncode == 1
    assert done.stderr.strip() == "--ray needs the ray extra: pip install 'graphstrata[ray]'"
    assert not out.exists()


def test_vllm_backend_without_the_gpu_extra(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    args = ["index", str(SAMPLE_DIR / "city"), "--out", str(out), "--embedder", "hashing"]
    done = run_without(["vllm"], [*args, "--llm", "vllm:/models/x"])
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "the vllm: LLM backend needs the gpu extra: pip install 'graphstrata[gpu]'" in lines[0]
    assert "Traceback" not in done.stderr


def test_vllm_spec_without_vllm_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ConfigError, match=r"needs the gpu extra: pip install 'graphstrata\[gpu\]'"):
        make_llm("vllm:/models/x")


@pytest.mark.parametrize("spec", ["all-MiniLM-L6-v2", "st:some/model"])
def test_torch_embedders_without_sentence_transformers(
    spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    embedder = make_embedder(spec)
    with pytest.raises(EmbedderError) as info:
        embedder.embed(["a text"])
    name = spec.removeprefix("st:")
    assert str(info.value) == (
        f"the {name} embedder needs the torch extra: pip install 'graphstrata[torch]'"
    )


def test_mcp_without_the_mcp_extra(tmp_path: Path) -> None:
    done = run_without(["mcp"], ["mcp", str(tmp_path)])
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "graphstrata mcp needs the mcp extra: pip install 'graphstrata[mcp]'"
    )


@pytest.mark.parametrize(
    ("module", "hidden", "extra"),
    [
        ("graphstrata.bindings.integrations.langchain", "langchain_core.retrievers", "langchain"),
        (
            "graphstrata.bindings.integrations.llamaindex",
            "llama_index.core.retrievers",
            "llamaindex",
        ),
        ("graphstrata.bindings.mcp.tools", "mcp.server.mcpserver", "mcp"),
    ],
)
def test_integrations_without_their_extra(
    module: str, hidden: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, hidden, None)
    with pytest.raises(MissingExtraError, match=rf"pip install 'graphstrata\[{extra}\]'$"):
        importlib.import_module(module)
