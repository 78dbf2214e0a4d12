"""A writer killed (SIGKILL) at any point leaves the index at its last committed version."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder

pytestmark = pytest.mark.integration

CRASH_POINTS = [
    "before_segments",
    "after_nodes",
    "after_tables",
    "after_vectors",
    "before_manifest",
    "after_history_manifest",
    "after_manifest",
]
WRITER = Path(__file__).with_name("crash_writer.py")


def _base_index(tmp_path: Path, sample_docs) -> tuple[Path, set[str], Path]:
    path = tmp_path / "ix"
    index = Index.create(path, embedder=HashingEmbedder(64))
    index.insert(sample_docs[:15])
    batch = tmp_path / "batch.jsonl"
    with open(batch, "w", encoding="utf-8") as fh:
        for d in sample_docs[15:]:
            fh.write(json.dumps(d) + "\n")
    return path, {d["doc_id"] for d in sample_docs[:15]}, batch


def _writer(path: Path, batch: Path, crash_at: str | None) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("GRAPHSTRATA_CRASH_AT", None)
    if crash_at:
        env["GRAPHSTRATA_CRASH_AT"] = crash_at
    repo = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = repo + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(path), str(batch)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _assert_consistent(path: Path, before: set[str], after: set[str]) -> int:
    """The index opens, and holds exactly the old or exactly the new document set."""
    index = Index.open(path, embedder=HashingEmbedder(64))
    docs = set(index.engine.state.snapshot.docs.column("doc_id").to_pylist())
    assert docs in (before, after), f"half-visible batch: {len(docs)} docs"
    snap = index.engine.state.snapshot
    chunk_docs = {k for d in snap.nodes.docs for k in d}
    assert chunk_docs == set(snap.docs.column("key").to_pylist())  # no orphan or missing chunks
    assert len(snap.vectors) >= len(snap.nodes.ids_of_kind(1))
    hits = index.query("Halvorsen Observatory", budget_tokens=500).nodes
    assert all(set(h.docs) <= docs for h in hits)
    return index.version


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_sigkill_at_each_commit_point(tmp_path, sample_docs, point):
    path, before, batch = _base_index(tmp_path, sample_docs)
    after = before | {d["doc_id"] for d in sample_docs[15:]}
    proc = _writer(path, batch, point)
    proc.wait(timeout=120)
    assert proc.stderr is not None
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    version = _assert_consistent(path, before, after)
    assert version == (2 if point == "after_manifest" else 1)
    # The next writer cleans up and commits normally.
    Index.open(path, embedder=HashingEmbedder(64)).insert(sample_docs[15:])
    assert _assert_consistent(path, before, after) == 2


def test_sigkill_after_merging_segments_keeps_the_last_version(tmp_path, sample_docs):
    """A commit that merges the last ``store_merge_fanin`` segments of its tables (``merging``),
    killed after writing the merged segments and before its manifest: the index stays at its
    last version, and the next writer commits and merges."""
    from graphstrata.engine.store.merging import tier

    path, before, batch = _base_index(tmp_path, sample_docs)
    index = Index.open(path, embedder=HashingEmbedder(64))

    def trailing_commits() -> int:
        entries = index.engine.store.manifest["segments"]["nodes"]
        return len(entries) - max((i + 1 for i, e in enumerate(entries) if tier(e) != 0), default=0)

    while trailing_commits() < index.engine.store.maintenance.store_merge_fanin - 1:
        n = len(before)
        doc = {"doc_id": f"extra-{n}", "text": f"Extra note {n} on the Halvorsen Observatory."}
        index.insert([doc])
        before.add(doc["doc_id"])
    version = index.version
    after = before | {d["doc_id"] for d in sample_docs[15:]}
    proc = _writer(path, batch, "after_merges")
    proc.wait(timeout=120)
    assert proc.stderr is not None
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    assert _assert_consistent(path, before, after) == version
    index = Index.open(path, embedder=HashingEmbedder(64))
    index.insert(sample_docs[15:])
    assert _assert_consistent(path, before, after) == version + 1
    assert [tier(e) for e in index.engine.store.manifest["segments"]["nodes"]][-1] == 1


def test_sigkill_at_random_moments(tmp_path, sample_docs):
    path, before, batch = _base_index(tmp_path, sample_docs)
    after = before | {d["doc_id"] for d in sample_docs[15:]}
    rng = random.Random(7)
    for _ in range(6):
        proc = _writer(path, batch, None)
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        _assert_consistent(path, before, after)
        if Index.open(path, embedder=HashingEmbedder(64)).version > 1:
            break  # the insert had committed before the kill; still consistent


def test_a_full_disk_during_an_insert_leaves_the_last_version_and_no_partial_files(
    tmp_path, sample_docs, monkeypatch
):
    import pyarrow.parquet as pq

    from graphstrata.engine.store import StoreWriteError

    path, before, _ = _base_index(tmp_path, sample_docs)
    files_before = sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file())
    real_write = pq.write_table
    calls = []

    def full_disk(table, where, **kwargs):
        calls.append(where)
        if len(calls) < 3:
            return real_write(table, where, **kwargs)
        Path(where).write_bytes(b"PAR1 truncated")
        raise OSError("6528 requested and 5088 written")

    monkeypatch.setattr(pq, "write_table", full_disk)
    index = Index.open(path, embedder=HashingEmbedder(64))
    with pytest.raises(StoreWriteError, match="no space left on device while writing") as err:
        index.insert(sample_docs[15:])
    assert str(calls[-1]) in str(err.value) and "stays at version 1" in str(err.value)
    files_after = sorted(p.relative_to(path) for p in path.rglob("*") if p.is_file())
    assert files_after == files_before
    assert index.version == 1
    assert _assert_consistent(path, before, before) == 1

    monkeypatch.setattr(pq, "write_table", real_write)
    index.insert(sample_docs[15:])
    after = before | {d["doc_id"] for d in sample_docs[15:]}
    assert _assert_consistent(path, before, after) == 2


def test_a_real_short_write_in_the_cli_leaves_the_last_version(tmp_path):
    """A per-process file-size limit makes the kernel refuse the write, as a full disk does."""
    import resource

    repo = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(repo), GRAPHSTRATA_EMBEDDER="hashing:64")
    env.pop("GRAPHSTRATA_CRASH_AT", None)
    cli = [sys.executable, "-m", "graphstrata.bindings.cli"]
    out = tmp_path / "ix"
    city = repo / "examples" / "sample" / "city"
    subprocess.run([*cli, "index", str(city), "--out", str(out), "--no-heterograph"],
                   env=env, check=True, capture_output=True)  # fmt: skip
    files_before = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())

    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))

    proc = subprocess.run(
        [*cli, "insert", str(out), str(repo / "examples" / "sample")],
        env=env,
        capture_output=True,
        text=True,
        preexec_fn=limit_file_size,
        timeout=300,
    )
    assert proc.returncode == 1
    assert "StoreWriteError: file too large while writing" in proc.stderr
    assert "partial files removed; the index stays at version 1" in proc.stderr
    assert sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()) == files_before
    index = Index.open(out, embedder=HashingEmbedder(64))
    assert index.version == 1 and index.stats()["documents"] == 7
