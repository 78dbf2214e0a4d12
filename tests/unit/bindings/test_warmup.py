"""``graphstrata warmup`` / ``Index.warmup()``: every kernel compiled or loaded, reported."""

from __future__ import annotations

import json

from graphstrata.bindings.api import Index
from graphstrata.bindings.cli import main
from graphstrata.bindings.warmup import kernel_dispatchers


def test_index_warmup_calls_the_kernels_and_reports():
    steps: list[str] = []
    report = Index.warmup(lambda step, seconds: steps.append(step))
    assert steps == [name for name, _ in report.steps] and "query every mode" in steps
    assert steps[-1] == "reopen and query every mode"
    # Signatures come from the cache (a warm one) or are compiled now; none is missed.
    assert report.kernels > 0 and report.compiled + report.loaded > 0
    called = [name for name, d in kernel_dispatchers().items() if d.signatures]
    assert len(called) >= report.kernels
    assert any(name.startswith("graphstrata.core.ppr.") for name in called)
    assert report.seconds > 0 and report.cpu_seconds > 0 and report.cache_dir
    assert set(report.to_dict()) >= {"seconds", "cpu_seconds", "kernels", "compiled", "loaded"}


def test_cli_warmup_json(capsys):
    assert main(["warmup", "--json", "--embedder", "hashing:16"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kernels"] > 0 and out["embedder"]["name"] == "hashing-16"
    assert out["embedder"]["device"] is None


def test_cli_warmup_reports_an_embedder_that_cannot_load(capsys):
    assert main(["warmup", "--json", "--embedder", "st:/no/such/model"]) == 0
    captured = capsys.readouterr()
    assert "error" in json.loads(captured.out)["embedder"]
    assert "embedder not prepared" in captured.err
