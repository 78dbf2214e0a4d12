"""Nothing is lost by a careless command: the real CLI in subprocesses, on real directories.

``graphstrata index --force`` with a missing, invalid or empty source keeps the old index
byte for byte; folders that are not graphstrata indexes are never replaced; a rebuild is built
beside the old index and swapped in only once committed, keeping the LLM cache; a failed build
leaves nothing that blocks a plain rerun (only the LLM answers it paid for); a build killed in
the middle of the swap is recovered by the next run; a closed stdout pipe ends the CLI quietly.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
CITY = REPO / "examples" / "sample" / "city"
OPTICS = REPO / "examples" / "sample" / "optics"
CACHE = "llm-cache.sqlite"
FAST = ("--no-heterograph",)


def run(*args: str, check: bool = True, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), GRAPHSTRATA_EMBEDDER="hashing:64")
    env.pop("GRAPHSTRATA_CRASH_AT", None)
    env.pop("GRAPHSTRATA_LLM", None)
    if crash_at:
        env["GRAPHSTRATA_CRASH_AT"] = crash_at
    proc = subprocess.run(
        [sys.executable, "-m", "graphstrata.bindings.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


def tree(root: Path, skip_cache: bool = False) -> dict[str, str]:
    """Every file under ``root`` (relative path -> SHA-256).

    ``LOCK`` is left out: it only holds the pid of the last writer (a killed one leaves it).
    """
    out = {}
    for path in sorted(root.rglob("*")):
        if path.name == "LOCK":
            continue
        if path.is_file() and not (skip_cache and path.name.startswith(CACHE)):
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def siblings(path: Path) -> list[str]:
    """Hidden build / set-aside siblings of an index directory."""
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f".{path.name}."))


def doc_ids(index: Path) -> set[str]:
    stats = json.loads(run("stats", str(index), "--json").stdout)
    assert stats["documents"] > 0
    hits = json.loads(
        run("query", str(index), "ferry telescope lenses", "--top-k", "200", "--json").stdout
    )
    return {d for node in hits["nodes"] for d in node["docs"]}


def cache_rows(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture
def built(tmp_path) -> tuple[Path, dict[str, str]]:
    out = tmp_path / "ix"
    run("index", str(CITY), "--out", str(out), *FAST)
    return out, tree(out)


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


def llm(server: FakeOpenAIServer) -> str:
    return f"openai:fake-model@{server.url}?max_concurrency=4&max_retries=1&base_delay=0.01&max_delay=0.02"


# ------------------------------------------------------------------ defect 1: --force


def test_force_with_a_missing_source_keeps_the_old_index(tmp_path, built):
    out, before = built
    proc = run("index", str(tmp_path / "no-such-folder"), "--out", str(out), "--force", check=False)
    assert proc.returncode == 1
    assert "no such file or folder" in proc.stderr and "nothing was changed" in proc.stderr
    assert tree(out) == before
    assert siblings(out) == []
    assert json.loads(run("stats", str(out), "--json").stdout)["documents"] == 7


def test_force_with_invalid_documents_keeps_the_old_index(tmp_path, built):
    out, before = built
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"doc_id": "a", "text": "fine"}) + "\n" + json.dumps({"doc_id": "b"}) + "\n"
    )
    proc = run("index", str(bad), "--out", str(out), "--force", check=False)
    assert proc.returncode == 1 and "missing field" in proc.stderr
    empty = tmp_path / "empty-folder"
    empty.mkdir()
    proc = run("index", str(empty), "--out", str(out), "--force", check=False)
    assert proc.returncode == 1 and "holds no documents" in proc.stderr
    assert tree(out) == before
    assert siblings(out) == []


def test_a_folder_with_a_foreign_manifest_json_is_never_replaced(tmp_path):
    app = tmp_path / "my-app"
    app.mkdir()
    (app / "manifest.json").write_text('{"name": "my-app", "version": "1.0.0"}')
    (app / "main.py").write_text("print('precious')\n")
    before = tree(app)
    for force in ((), ("--force",)):
        proc = run("index", str(CITY), "--out", str(app), *force, check=False)
        assert proc.returncode == 1, proc.stderr
        assert "not a valid graphstrata index" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    # A copied graphstrata manifest that fails its checksum is not taken for an index either.
    fake = tmp_path / "fake"
    fake.mkdir()
    real = tmp_path / "real"
    run("index", str(CITY), "--out", str(real), *FAST)
    manifest = json.loads((real / "manifest.json").read_text())
    manifest["version"] = 99
    (fake / "manifest.json").write_text(json.dumps(manifest))
    (fake / "thesis.md").write_text("years of work")
    proc = run("index", str(CITY), "--out", str(fake), "--force", check=False)
    assert proc.returncode == 1 and "checksum mismatch" in proc.stderr
    assert tree(app) == before and (fake / "thesis.md").read_text() == "years of work"


def test_a_folder_that_is_not_an_index_or_an_index_holding_other_files_is_refused(tmp_path, built):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("keep me")
    proc = run("index", str(CITY), "--out", str(docs), "--force", check=False)
    assert proc.returncode == 1 and "holds no graphstrata index" in proc.stderr
    assert (docs / "notes.md").read_text() == "keep me" and len(list(docs.iterdir())) == 1

    out, _ = built
    (out / "my-notes.txt").write_text("not part of the index")
    proc = run("index", str(CITY), "--out", str(out), "--force", check=False)
    assert proc.returncode == 1 and "my-notes.txt" in proc.stderr
    assert (out / "my-notes.txt").read_text() == "not part of the index"

    plain = tmp_path / "file.txt"
    plain.write_text("a file")
    proc = run("index", str(CITY), "--out", str(plain), "--force", check=False)
    assert proc.returncode == 1 and "not a folder" in proc.stderr
    assert plain.read_text() == "a file"


def test_force_rebuild_replaces_the_index_and_keeps_the_llm_cache(tmp_path, server):
    out = tmp_path / "ix"
    first = json.loads(
        run("index", str(CITY), "--out", str(out), "--llm", llm(server), "--json", *FAST).stdout
    )
    assert first["llm_calls"] > 0
    rows = cache_rows(out / CACHE)
    assert rows >= first["llm_calls"]

    # The same corpus again: every LLM answer comes from the carried-over cache.
    again = json.loads(
        run(
            "index", str(CITY), "--out", str(out), "--force", "--llm", llm(server), "--json", *FAST
        ).stdout
    )
    assert again["version"] == 1 and again["llm_calls"] == 0
    assert again["llm_cached"] == first["llm_calls"]
    assert cache_rows(out / CACHE) == rows
    assert siblings(out) == []

    # Another corpus: the old documents are gone, the cache keeps growing.
    other = json.loads(
        run(
            "index",
            str(OPTICS),
            "--out",
            str(out),
            "--force",
            "--llm",
            llm(server),
            "--json",
            *FAST,
        ).stdout
    )
    assert other["docs_added"] == len(list(OPTICS.iterdir()))
    names = doc_ids(out)
    assert names and all(name.endswith(".md") and "/" not in name for name in names)
    assert "ferry.md" not in names and cache_rows(out / CACHE) > rows
    assert siblings(out) == []


# ------------------------------------------------------------------ defect 2: failed builds


def test_a_failed_first_build_leaves_nothing_and_a_plain_rerun_works(tmp_path, server):
    out = tmp_path / "new" / "ix"
    server.fail_after = 0  # every LLM call fails
    proc = run("index", str(CITY), "--out", str(out), "--llm", llm(server), *FAST, check=False)
    assert proc.returncode == 1 and "LLMError" in proc.stderr
    assert "was not created" in proc.stderr
    assert not out.exists() and not out.parent.exists()  # the folders it made are gone too

    server.fail_after = None
    report = json.loads(
        run("index", str(CITY), "--out", str(out), "--llm", llm(server), "--json", *FAST).stdout
    )
    assert report["version"] == 1 and report["docs_added"] == 7


def test_a_first_build_with_invalid_documents_leaves_nothing(tmp_path):
    out = tmp_path / "ix"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"doc_id": "a", "text": ""}) + "\n")
    proc = run("index", str(bad), "--out", str(out), check=False)
    assert proc.returncode == 1 and "empty text" in proc.stderr
    assert not out.exists() and siblings(out) == []
    run("index", str(CITY), "--out", str(out), *FAST)  # a plain rerun, no --force needed


def test_an_empty_version_0_index_is_named_as_such(tmp_path):
    from graphstrata.bindings.api import Index

    out = tmp_path / "ix"
    Index.create(out, embedder="hashing:64")  # what a failed build used to leave behind
    proc = run("index", str(CITY), "--out", str(out), check=False)
    assert proc.returncode == 1
    assert "an empty one, version 0: nothing was ever committed to it" in proc.stderr
    report = json.loads(run("index", str(CITY), "--out", str(out), "--force", "--json").stdout)
    assert report["version"] == 1


def test_an_interrupted_first_build_resumes_from_the_answers_it_paid_for(tmp_path, server):
    out = tmp_path / "ix"
    first = json.loads(
        run(
            "index", str(CITY), "--out", str(tmp_path / "probe"), "--llm", llm(server), "--json"
        ).stdout
    )
    assert first["llm_calls"] > 3
    server.reset()
    server.fail_after = 3  # the server dies after three answers, in the middle of the build
    proc = run("index", str(CITY), "--out", str(out), "--llm", llm(server), check=False)
    assert proc.returncode == 1
    assert f"holds only {CACHE} with the 3 LLM answer(s)" in proc.stderr, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [CACHE]
    assert siblings(out) == []

    server.fail_after = None
    server.reset()
    report = json.loads(
        run("index", str(CITY), "--out", str(out), "--llm", llm(server), "--json").stdout
    )
    assert report["version"] == 1 and report["llm_cached"] == first["llm_cached"] + 3
    assert report["llm_calls"] == first["llm_calls"] - 3 == server.seen.answered


def test_a_failed_rebuild_keeps_the_old_index_and_its_paid_answers(tmp_path, server):
    out = tmp_path / "ix"
    run("index", str(CITY), "--out", str(out), "--llm", llm(server), *FAST)
    before = tree(out, skip_cache=True)
    rows = cache_rows(out / CACHE)
    answered = server.seen.answered
    server.fail_after = answered + 1  # one new answer, then failures
    proc = run(
        "index", str(OPTICS), "--out", str(out), "--force", "--llm", llm(server), *FAST,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 1 and "is unchanged but for the 1 LLM answer(s)" in proc.stderr
    assert tree(out, skip_cache=True) == before
    assert cache_rows(out / CACHE) == rows + 1
    assert siblings(out) == []
    assert json.loads(run("stats", str(out), "--json").stdout)["documents"] == 7


# ------------------------------------------------------------------ killed in the swap


def test_killed_between_the_renames_the_next_run_restores_the_old_index(tmp_path, built):
    out, before = built
    proc = run(
        "index", str(OPTICS), "--out", str(out), "--force", *FAST, check=False,
        crash_at="swap_aside",
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    left = siblings(out)  # the old index set aside, and the new one not yet renamed in
    assert [s[:8] for s in left] == [".ix.new-", ".ix.old-"]
    aside = left[1]
    proc = run("stats", str(out), check=False)
    assert proc.returncode == 1 and aside in proc.stderr and "interrupted rebuild" in proc.stderr

    proc = run("index", str(OPTICS), "--out", str(out), check=False)  # no --force
    assert proc.returncode == 1 and "already holds an index" in proc.stderr
    assert "restored" in proc.stderr
    assert tree(out) == before and siblings(out) == []
    rebuilt = json.loads(run("index", str(OPTICS), "--out", str(out), "--force", "--json").stdout)
    assert rebuilt["docs_added"] == len(list(OPTICS.iterdir()))


def test_killed_after_the_swap_the_next_run_removes_the_old_index(tmp_path, built):
    out, before = built
    proc = run(
        "index", str(OPTICS), "--out", str(out), "--force", *FAST, check=False,
        crash_at="swap_in",
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL
    assert tree(out) != before  # the new index is in place
    assert [s[:8] for s in siblings(out)] == [".ix.old-"]
    assert json.loads(run("stats", str(out), "--json").stdout)["documents"] == len(
        list(OPTICS.iterdir())
    )
    proc = run("index", str(CITY), "--out", str(out), check=False)
    assert "removed" in proc.stderr and "already holds an index" in proc.stderr
    assert siblings(out) == []


def test_a_killed_build_leaves_a_sibling_the_next_run_removes(tmp_path, built):
    out, before = built
    proc = run(
        "index", str(OPTICS), "--out", str(out), "--force", *FAST, check=False,
        crash_at="after_tables",
    )  # fmt: skip
    assert proc.returncode == -signal.SIGKILL
    assert tree(out) == before
    assert [s[:8] for s in siblings(out)] == [".ix.new-"]
    run("index", str(OPTICS), "--out", str(out), "--force", *FAST)
    assert siblings(out) == []


# ------------------------------------------------------------------ defect 8: folder input


def test_folder_symlinks_out_of_the_tree_are_not_followed(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("The launch code is 0000. This file is outside the corpus.")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("# Ferry\n\nThe Brekkvik ferry sails at dawn.")
    (corpus / "leak.txt").symlink_to(secret)
    (corpus / "alias.md").symlink_to(corpus / "a.md")  # inside the folder: read
    out = tmp_path / "ix"
    proc = run("index", str(corpus), "--out", str(out), "--json", *FAST)
    assert json.loads(proc.stdout)["docs_added"] == 2
    assert "leak.txt" in proc.stderr and "outside the folder" in proc.stderr
    hits = json.loads(run("query", str(out), "launch code", "--json").stdout)["nodes"]
    assert all("launch code" not in node["text"] for node in hits)
    assert {d for node in hits for d in node["docs"]} <= {"a.md", "alias.md"}


def test_control_characters_in_file_names_are_refused_with_the_files_listed(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.md").write_text("Fine.")
    (corpus / "bell\x07.md").write_text("Ding.")
    (corpus / "two\nlines.txt").write_text("Split.")
    out = tmp_path / "ix"
    # Files are read one by one (issue 47): each bad name fails alone, the good file is
    # indexed, and the command exits 1.
    proc = run("index", str(corpus), "--out", str(out), check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "graphstrata: 2 of 3 files failed (listed above)"
    bell = next(line for line in proc.stdout.splitlines() if "bell" in line)
    assert "'bell\\x07.md': failed" in bell and "U+0007" in bell
    split = next(line for line in proc.stdout.splitlines() if "lines.txt" in line)
    assert "'two\\nlines.txt': failed" in split and "U+000A" in split  # escaped, one line
    assert "good.md: indexed" in proc.stdout
    # When no file is good, nothing is built and the error names every file on one line.
    (corpus / "good.md").unlink()
    proc = run("index", str(corpus), "--out", str(tmp_path / "ix2"), check=False)
    assert proc.returncode == 1
    assert "2 invalid document(s)" in proc.stderr
    assert "U+0007" in proc.stderr and "U+000A" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1  # the newline is escaped, not printed
    assert not (tmp_path / "ix2").exists()


# ------------------------------------------------------------------ defect 12b: pipes


def test_a_closed_stdout_pipe_ends_the_cli_quietly(built):
    out, _ = built
    env = dict(os.environ, PYTHONPATH=str(REPO), GRAPHSTRATA_EMBEDDER="hashing:64")
    for args in (("stats", str(out), "--json"), ("query", str(out), "ferry", "--json")):
        proc = subprocess.Popen(
            [sys.executable, "-m", "graphstrata.bindings.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # the reader goes away before the first line, like `| head -0`
        err = proc.stderr.read().decode()
        proc.wait(timeout=120)
        assert err == "", err
        assert proc.returncode == 128 + signal.SIGPIPE
    # And through a real shell pipe into head.
    cmd = f"{sys.executable} -m graphstrata.bindings.cli stats {out} --json | head -n 1"
    shell = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env=env, timeout=120)
    assert shell.stdout.strip() == "{" and "Error" not in shell.stderr
