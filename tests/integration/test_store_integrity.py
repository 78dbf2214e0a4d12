"""Integrity of rewrites, caches and manifests through the real CLI (issue 51, defects 2, 12, 18).

Each test copies one small index built by ``graphstrata index`` and damages it the way the
probe did: bytes flipped in a segment before ``compact`` or ``maintain``, a usearch cache
header overwritten, a manifest hand-edited with its checksum recomputed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from graphstrata.engine.store.files import seal

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), GRAPHSTRATA_EMBEDDER="hashing:64")
    env.pop("GRAPHSTRATA_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "graphstrata.bindings.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("integrity") / "ix"
    proc = run("index", str(REPO / "examples" / "sample"), "--out", str(out), "--no-heterograph")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def compacted(built, tmp_path_factory) -> Path:
    """The index compacted once: its vector and BM25 caches are written."""
    out = tmp_path_factory.mktemp("integrity") / "ix"
    shutil.copytree(built, out)
    proc = run("compact", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "manifest.json").read_text())["vector_cache"]
    return out


def manifest(index: Path) -> dict:
    return json.loads((index / "manifest.json").read_text())


def flip(path: Path, count: int = 64) -> None:
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    for i in range(middle, min(middle + count, len(data))):
        data[i] ^= 0x40
    path.write_bytes(bytes(data))


def rewrite_manifest(index: Path, edit) -> None:
    """A hand edit with the checksum recomputed, as a careful operator would make it."""
    m = manifest(index)
    edit(m)
    data = seal(m)
    (index / "manifest.json").write_bytes(data)
    (index / "manifests" / f"v{m['version']:08d}.json").write_bytes(data)


# ------------------------------------------------------------------ defect 2
@pytest.mark.parametrize("table", ["vectors", "edges", "nodes"])
@pytest.mark.parametrize("command", ["compact", "maintain"])
def test_a_rewrite_refuses_a_corrupt_segment(built, tmp_path, table, command):
    index = tmp_path / "ix"
    shutil.copytree(built, index)
    rel = manifest(index)["segments"][table][0]["file"]
    flip(index / rel)
    assert run("check", str(index)).returncode == 1
    before = manifest(index)["version"]
    files_before = sorted(p.name for p in (index / "segments").iterdir())
    proc = run(command, str(index))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "CorruptIndexError" in proc.stderr and rel in proc.stderr
    assert "graphstrata index SOURCE --out INDEX --force" in proc.stderr
    if table == "vectors":  # mapped Arrow: reads fine, only its checksum tells
        assert f"refusing to {command}" in proc.stderr and "failed its checksum" in proc.stderr
    else:  # compressed Parquet: the flipped bytes already fail the open
        assert "is unreadable" in proc.stderr
    # Nothing committed, nothing written: the damage is still reported, not laundered.
    assert manifest(index)["version"] == before
    assert sorted(p.name for p in (index / "segments").iterdir()) == files_before
    check = run("check", str(index))
    assert check.returncode == 1 and check.stdout.startswith(f"{rel}: {table} segment failed")


# ------------------------------------------------------------------ defect 12
def test_a_corrupt_usearch_header_is_rebuilt_with_a_warning(compacted, tmp_path):
    index = tmp_path / "ix"
    shutil.copytree(compacted, index)
    kinds = manifest(index)["vector_cache"]["kinds"]
    rel = next(iter(kinds.values()))["file"]
    path = index / rel
    data = bytearray(path.read_bytes())
    data[:64] = bytes(64)
    path.write_bytes(bytes(data))
    query = run("query", str(index), "Meridian Optics", "--budget", "200")
    assert query.returncode == 0, query.stderr
    assert rel in query.stderr and "unreadable" in query.stderr and "rebuilding" in query.stderr
    assert query.stdout.startswith("mode=naive")
    source = tmp_path / "more"
    source.mkdir()
    (source / "new.md").write_text("Harbor Lenses was founded in Tromso in 1950.\n")
    insert = run("insert", str(index), str(source))
    assert insert.returncode == 0, insert.stderr
    compact = run("compact", str(index))
    assert compact.returncode == 0, compact.stderr
    assert rel in compact.stderr  # named once more: the compaction rebuilt it
    check = run("check", str(index))
    assert check.returncode == 0, check.stdout
    again = run("query", str(index), "Harbor Lenses", "--budget", "200")
    assert again.returncode == 0 and "unreadable" not in again.stderr
    assert "Harbor Lenses" in again.stdout


def test_a_flipped_cache_byte_is_rebuilt_by_compact(compacted, tmp_path):
    index = tmp_path / "ix"
    shutil.copytree(compacted, index)
    rel = next(iter(manifest(index)["sparse_cache"]["kinds"].values()))["file"]
    flip(index / rel, 8)
    assert run("check", str(index)).returncode == 1
    proc = run("compact", str(index))
    assert proc.returncode == 0, proc.stderr
    assert rel in proc.stderr and "rebuilding the sparse cache" in proc.stderr
    assert run("check", str(index)).returncode == 0


# ------------------------------------------------------------------ defect 18
def test_chunk_tokens_0_is_refused_at_open(built, tmp_path):
    index = tmp_path / "ix"
    shutil.copytree(built, index)
    rewrite_manifest(index, lambda m: m["config"]["chunking"].update(chunk_tokens=0))
    source = tmp_path / "more"
    source.mkdir()
    (source / "new.md").write_text("Harbor Lenses was founded in Tromso in 1950.\n")
    proc = run("insert", str(index), str(source), timeout=60)  # it used to loop forever
    assert proc.returncode == 1
    assert "CorruptIndexError" in proc.stderr and "invalid configuration" in proc.stderr
    assert "chunk_tokens must be >= 8, got 0" in proc.stderr


def test_an_ill_typed_setting_is_refused_at_open(built, tmp_path):
    index = tmp_path / "ix"
    shutil.copytree(built, index)
    rewrite_manifest(index, lambda m: m["config"]["search"].update(top_k="50"))
    proc = run("query", str(index), "Meridian Optics")
    assert proc.returncode == 1
    assert "search.top_k is '50', not of type int" in proc.stderr


def test_a_rewound_next_node_id_is_refused(built, tmp_path):
    index = tmp_path / "ix"
    shutil.copytree(built, index)
    rewrite_manifest(index, lambda m: m.update(next_node_id=3))
    proc = run("query", str(index), "Meridian Optics")
    assert proc.returncode == 1
    assert "CorruptIndexError" in proc.stderr
    assert "next_node_id 3 is not past the live node id" in proc.stderr


def test_an_ill_typed_counter_is_refused(built, tmp_path):
    index = tmp_path / "ix"
    shutil.copytree(built, index)
    rewrite_manifest(index, lambda m: m.update(next_doc_key=-1))
    proc = run("stats", str(index))
    assert proc.returncode == 1
    assert "invalid manifest: next_doc_key is -1, not an integer >= 0" in proc.stderr
