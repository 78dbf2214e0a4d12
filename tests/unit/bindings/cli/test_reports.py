"""The command line's reports in words (``bindings/cli/reports``) and the engine's notes."""

from __future__ import annotations

import json

import pytest

from graphstrata.bindings.api import EdgeKind, NodeKind
from graphstrata.bindings.cli.progress import Progress
from graphstrata.bindings.cli.reports import print_report, print_stats, stage_words
from graphstrata.engine.report import describe


def test_kinds_have_words() -> None:
    assert [k.words for k in NodeKind] == [
        "chunk", "semantic unit", "entity", "relationship", "attribute",
        "high-level element", "title", "summary",
    ]  # fmt: skip
    assert EdgeKind.CHUNK_UNIT.words == "chunk-unit" and EdgeKind.SEMANTIC.words == "semantic"
    assert stage_words("embed_S") == "embed semantic units"
    assert stage_words("llm:summarize_layer_1") == "llm:summarize layer 1"


def test_stats_name_kinds_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    stats = {
        "documents": 7,
        "nodes": {"T": 14, "N": 67, "L": 1},
        "edges_by_kind": {1: 52, 7: 1344},
        "size_bytes": 51_600,
        "embedder": {"name": "hashing-64", "dim": 64},
        "modes": ["bm25", "naive"],
    }
    print_stats(stats, as_json=False)
    out = capsys.readouterr().out
    assert "82: 14 chunks (T), 67 entities (N), 1 summary (L)" in out
    assert "52 chunk-unit, 1344 semantic" in out
    assert "size" in out and "50.4 KiB" in out and "name hashing-64, dim 64" in out
    assert "{" not in out and "[" not in out  # no Python or JSON reprs
    print_stats(stats, as_json=True)
    assert json.loads(capsys.readouterr().out)["edges_by_kind"] == {"1": 52, "7": 1344}


def test_stats_give_commit_times_as_dates_and_json_keeps_seconds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    at = 1_796_515_200.25  # 2026-12-06 00:00:00.25 UTC
    versions = [{"version": 2, "committed_at": at + 60}, {"version": 1, "committed_at": None}]
    stats = {"version": 2, "committed_at": at + 60, "versions": versions}
    print_stats(stats, as_json=False)
    assert capsys.readouterr().out.splitlines() == [
        "version       2",
        "committed at  2026-12-06 00:01:00 UTC",
        "versions      2 (2026-12-06 00:01:00 UTC), 1 (unknown)",
    ]
    print_stats(stats, as_json=True)
    assert json.loads(capsys.readouterr().out)["committed_at"] == at + 60
    print_stats({"committed_at": None, "versions": []}, as_json=False)
    assert capsys.readouterr().out.split() == ["committed", "at", "unknown", "versions", "none"]


def test_report_lines_are_aligned_words(capsys: pytest.CaptureFixture[str]) -> None:
    report = {
        "operation": "insert",
        "version": 2,
        "docs_added": 3,
        "bytes_written": 2048,
        "seconds": 1.234,
        "stages": {"embed_T": 0.5, "hierarchy": 0.7, "validate": 0.001},
        "notes": ["heterograph: " + describe({"attributes": {"selected": True, "k_core": 8}})],
    }
    print_report(report, as_json=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == [
        "operation      insert",
        "version        2",
        "docs added     3",
        "bytes written  2.0 KiB",
        "seconds        1.23 s",
    ]
    assert lines[5].endswith("0.70 s  hierarchy") and lines[6].endswith("0.50 s  embed chunks")
    assert lines[7].endswith("1 more under 0.01 s")
    assert lines[8] == "note           heterograph: attributes: selected yes, k core 8"


def test_progress_is_off_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.delenv("GRAPHSTRATA_PROGRESS", raising=False)
    stream = io.StringIO()
    progress = Progress(True, stream)
    assert not progress.enabled
    progress("embed", 0, 10)
    progress("embed", 10, 10)
    assert stream.getvalue() == ""
