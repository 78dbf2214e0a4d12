"""Progress lines of the long commands on a real pseudo-terminal, and none elsewhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import SAMPLE_DIR, SAMPLE_QA
from tests.helpers.cli import run
from tests.helpers.terminal import run_on_terminal

pytestmark = pytest.mark.integration

#: A finished row stage's line: ``embed: 100%|███| 60/60 [00:00<00:00, 4573.77texts/s]``.
EMBED_LINE = re.compile(r"embed: 100%\|[^|]*\| (\d+)/(\d+) \[[\d:]+<[\d:]+, +([\d.]+)texts/s\]")
#: What any progress line holds (a percentage bar, a rate, a running step).
PROGRESS_MARKS = ("%|", "texts/s", "rows/s", "hierarchy ...", "heterograph ...")


def test_a_terminal_build_shows_each_stage_with_a_plausible_rate(tmp_path: Path) -> None:
    status, terminal, _ = run_on_terminal("index", str(SAMPLE_DIR), "--out", str(tmp_path / "ix"))
    assert status == 0, terminal
    lines = EMBED_LINE.findall(terminal)
    assert lines, terminal[:2000]
    done, total, rate = lines[-1]
    assert done == total and int(total) > 0
    # The rate counts the rows since the stage began (a count set at the end read 76 million/s).
    assert 0 < float(rate) < 1e6
    for step in ("hierarchy ...", "heterograph ...", "sparse ..."):
        assert step in terminal
    assert "docs added         30" in terminal  # the report follows, in words


def test_insert_and_delete_show_progress_and_quiet_hides_it(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    run("index", str(SAMPLE_DIR / "city"), "--out", str(out))
    extra = tmp_path / "extra.jsonl"
    extra.write_text(json.dumps({"doc_id": "new/a.md", "text": "The ferry got a captain."}) + "\n")
    status, terminal, _ = run_on_terminal("insert", str(out), str(extra))
    assert status == 0 and "embed" in terminal and "hierarchy ..." in terminal, terminal
    status, terminal, _ = run_on_terminal("delete", str(out), "new/a.md", "--quiet")
    assert status == 0 and not any(m in terminal for m in PROGRESS_MARKS), terminal
    status, terminal, _ = run_on_terminal("insert", str(out), str(extra))
    assert status == 0
    status, terminal, _ = run_on_terminal("delete", str(out), "new/a.md")
    assert status == 0 and "hierarchy ..." in terminal, terminal


def test_eval_shows_each_mode(tmp_path: Path) -> None:
    out = tmp_path / "ix"
    run("index", str(SAMPLE_DIR), "--out", str(out))
    status, terminal, _ = run_on_terminal(
        "eval", str(out), str(SAMPLE_QA), "--modes", "naive,bm25", "--limit", "8"
    )
    assert status == 0, terminal
    for mode in ("naive", "bm25"):
        match = re.search(
            rf"eval {mode}: 100%\|[^|]*\| 8/8 \[[\d:]+<[\d:]+, +([\d.]+)questions/s\]", terminal
        )
        assert match and 0 < float(match.group(1)) < 1e6, terminal[:2000]


def test_json_and_non_terminal_output_hold_no_progress(tmp_path: Path) -> None:
    status, terminal, stdout = run_on_terminal(
        "index", str(SAMPLE_DIR / "city"), "--out", str(tmp_path / "a"), "--json",
        stdout_pipe=True,
    )  # fmt: skip
    assert status == 0
    assert not any(m in terminal for m in PROGRESS_MARKS), terminal
    assert json.loads(stdout)["version"] == 1  # stdout is the JSON alone
    piped = run("index", str(SAMPLE_DIR / "city"), "--out", str(tmp_path / "b"))
    assert not any(m in piped.stderr + piped.stdout for m in PROGRESS_MARKS)
