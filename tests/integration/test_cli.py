"""The CLI end to end in subprocesses: index, query --json, stats, insert, delete, errors."""

from __future__ import annotations

import json

import pytest

from graphstrata.engine.policies import MaintenanceConfig
from tests.helpers import REPO
from tests.helpers.cli import run

pytestmark = pytest.mark.integration


def test_index_query_stats_insert_delete(tmp_path):
    out = tmp_path / "ix"
    report = json.loads(
        run("index", str(REPO / "examples" / "sample"), "--out", str(out), "--json").stdout
    )
    assert report["docs_added"] == 30 and report["version"] == 1
    for key in (
        "llm_calls",
        "prompt_tokens",
        "completion_tokens",
        "embedded",
        "bytes_written",
        "seconds",
        "stages",
    ):
        assert key in report

    result = json.loads(
        run("query", str(out), "Meridian Optics gratings", "--budget", "300", "--json").stdout
    )
    assert set(result) == {"nodes", "report"}
    assert result["nodes"], "expected hits"
    for node in result["nodes"]:
        keys = {"id", "kind", "layer", "text", "score", "tokens", "docs", "documents", "spans"}
        assert set(node) == keys
    assert sum(n["tokens"] for n in result["nodes"]) <= 300

    stats = json.loads(run("stats", str(out), "--json").stdout)
    assert stats["documents"] == 30 and stats["embedder"]["name"] == "hashing-64"
    assert stats["maintenance"] == MaintenanceConfig().policies()  # the fold policies

    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps(
            {"doc_id": "new/doc.md", "text": "The Brekkvik ferry got a new captain, Ola Nordmann."}
        )
        + "\n"
    )
    inserted = json.loads(run("insert", str(out), str(extra), "--json").stdout)
    assert inserted["docs_added"] == 1 and inserted["version"] == 2
    deleted = json.loads(run("delete", str(out), "new/doc.md", "--json").stdout)
    assert deleted["docs_deleted"] == 1 and deleted["version"] == 3

    human = run("query", str(out), "Who founded Meridian Optics?", "--budget", "300").stdout
    assert human.startswith("mode=naive version=3")


def test_failures_exit_nonzero_with_one_line(tmp_path):
    proc = run("query", str(tmp_path / "missing"), "anything", check=False)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no graphstrata index" in lines[0]

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"doc_id": "a"}\n')
    proc = run("index", str(bad), "--out", str(tmp_path / "ix"), check=False)
    assert proc.returncode == 1 and "missing field" in proc.stderr

    out = tmp_path / "ix2"
    run("index", str(REPO / "examples" / "sample" / "city"), "--out", str(out))
    proc = run("index", str(REPO / "examples" / "sample" / "city"), "--out", str(out), check=False)
    assert proc.returncode == 1 and "already holds an index" in proc.stderr
    proc = run("query", str(out), "x", "--mode", "nonexistent", check=False)
    assert proc.returncode == 1 and "not available" in proc.stderr


def test_bad_mode_params_exit_1_with_one_line_naming_the_allowed_ones(tmp_path):
    out = tmp_path / "ix"
    run("index", str(REPO / "examples" / "sample" / "city"), "--out", str(out), "--no-heterograph")
    for mode, allowed in (("naive", "rerank_candidates"), ("detailed", "bias_share")):
        proc = run(
            "query", str(out), "ferry", "--mode", mode, "--params", '{"nonsense":1}', check=False
        )
        assert proc.returncode == 1, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, proc.stderr
        assert "nonsense" in lines[0] and f"allowed parameters: {allowed}" in lines[0]
    for bad in ("[1]", "{not json", '{"bias_share": "half"}'):
        proc = run("query", str(out), "ferry", "--mode", "detailed", "--params", bad, check=False)
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    params = '{"bias_share": 0.5}'
    ok = run("query", str(out), "ferry", "--mode", "detailed", "--params", params, "--json")
    assert json.loads(ok.stdout)["report"]["mode"] == "detailed"
