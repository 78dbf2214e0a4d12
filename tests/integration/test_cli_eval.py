"""``graphstrata eval`` end to end in subprocesses: table, --json, --out, --limit, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
SAMPLE_QA = REPO / "examples" / "sample_qa.jsonl"


@pytest.fixture(scope="module")
def index_path(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli-eval") / "ix"
    sample = str(REPO / "examples" / "sample")
    run("index", sample, "--out", str(out), "--no-hierarchy", "--no-heterograph", "--json")
    return out


def test_eval_json_with_an_unavailable_mode(index_path, tmp_path):
    out = tmp_path / "res" / "eval.json"
    proc = run(
        "eval", str(index_path), str(SAMPLE_QA), "--modes", "naive,bm25,graph",
        "--budget", "400", "--json", "--out", str(out),
    )  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["budget"] == 400 and result["questions"] == 12
    assert result["modes"]["graph"] == {"mode": "graph", "available": False}
    for mode in ("naive", "bm25"):
        overall = result["modes"][mode]["overall"]
        assert overall["questions"] == 12 and 0 < overall["tokens"] <= 400
        assert 0.0 <= overall["doc_recall"] <= 1.0
        assert overall["answer_contained_n"] == 10  # the two null queries are skipped
        assert set(result["modes"][mode]["by_type"]) == {
            "inference_query", "temporal_query", "comparison_query", "null_query",
        }  # fmt: skip
    saved = json.loads(out.read_text())
    assert len(saved["modes"]["bm25"]["questions"]) == 12
    assert {"id", "type", "doc_recall", "search_ms"} <= set(saved["modes"]["bm25"]["questions"][0])


def test_eval_table_limit_and_markdown_out(index_path, tmp_path):
    out = tmp_path / "eval.md"
    proc = run("eval", str(index_path), str(SAMPLE_QA), "--limit", "3", "--out", str(out))
    assert proc.stdout.startswith("3 questions, budget 2000 tokens")
    assert "| naive " in proc.stdout and "| bm25 " in proc.stdout  # default: every served mode
    assert out.read_text().strip() == proc.stdout.strip()


def test_eval_errors_are_one_line(index_path, tmp_path):
    proc = run("eval", str(index_path), str(tmp_path / "missing.jsonl"), check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "not found" in proc.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    proc = run("eval", str(index_path), str(bad), check=False)
    assert proc.returncode == 1 and "bad.jsonl:1" in proc.stderr
    proc = run("eval", str(index_path), str(SAMPLE_QA), "--budget", "0", check=False)
    assert proc.returncode == 1 and "--budget" in proc.stderr


def test_eval_answers_reports_containment_in_the_generated_answer(index_path, tmp_path):
    out = tmp_path / "answers.md"
    args = ["eval", str(index_path), str(SAMPLE_QA), "--modes", "naive,bm25"]
    proc = run(*args, "--answers", "--json")
    result = json.loads(proc.stdout)
    assert result["answer_llm"] == "extractive"
    for mode in ("naive", "bm25"):
        overall = result["modes"][mode]["overall"]
        assert overall["answer_generated_n"] == 10  # the two null queries are not answered
        assert 0.0 <= overall["answer_generated"] <= 1.0
        assert overall["answer_tokens"] > 0
        nulls = result["modes"][mode]["by_type"]["null_query"]
        assert nulls["answer_generated"] is None and nulls["answer_generated_n"] == 0
    # The generated answer holds less text than the context it was written from.
    assert overall["answer_generated"] <= overall["answer_contained"]
    table = run(*args, "--answers", "--no-by-type", "--out", str(out)).stdout
    assert "gen. answer (n)" in table and "answers by extractive" in table
    assert out.read_text().strip() == table.strip()
    plain = json.loads(run(*args, "--json").stdout)
    assert plain["answer_llm"] is None
    assert "answer_generated" not in plain["modes"]["naive"]["overall"]


def test_eval_baseline_adds_paired_intervals(index_path):
    proc = run(
        "eval", str(index_path), str(SAMPLE_QA), "--modes", "naive,bm25,hybrid",
        "--baseline", "naive", "--budget", "400", "--json",
    )  # fmt: skip
    result = json.loads(proc.stdout)
    assert result["baseline"] == "naive" and set(result["comparisons"]) == {"bm25", "hybrid"}
    ci = result["comparisons"]["hybrid"]["doc_recall"]
    assert ci["lo"] <= ci["diff"] <= ci["hi"] and ci["n"] == 10
    assert "mrr@10" in result["modes"]["hybrid"]["overall"]
    table = run("eval", str(index_path), str(SAMPLE_QA), "--baseline", "bm25", "--limit", "4")
    assert "Difference to bm25" in table.stdout
    bad = run("eval", str(index_path), str(SAMPLE_QA), "--modes", "naive", "--baseline", "bm25",
              check=False)  # fmt: skip
    assert bad.returncode == 1 and "--baseline" in bad.stderr
