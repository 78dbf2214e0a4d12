"""Opening checks sizes, ``Store.verify_files`` hashes every byte (docs/architecture.md, "Store").

A flipped byte inside a segment is not looked for on open (hashing a large index on every
open costs more than the open) but is found by ``verify_files``; a truncated or extended
file is refused at open by its recorded size.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphstrata.engine.store import CorruptIndexError, Store, files
from graphstrata.engine.store.files import seal
from graphstrata.engine.types import NodeKind

DIM = 8


def _store(tmp_path: Path, commits: int = 2) -> Store:
    hp = np.random.default_rng(0).standard_normal((4, DIM)).astype(np.float32)
    store = Store.create(tmp_path / "ix", {"vector_dtype": "f32"}, {"name": "e", "dim": DIM}, hp, 0)
    for c in range(commits):
        with store.writer():
            delta = store.new_delta()
            ids = delta.new_node_ids(4)
            delta.add_nodes(ids, int(NodeKind.T), [f"t {i}" for i in ids], np.ones(4), [[c]] * 4)
            vecs = np.random.default_rng(c).standard_normal((4, DIM)).astype(np.float32)
            delta.add_vectors(ids, int(NodeKind.T), vecs)
            delta.put_state("c", f"s{c}", np.arange(100, dtype=np.int64))
            store.commit(delta)
    return store


def _forget_in_current(tmp_path: Path, key: str) -> str:
    """Drop state ``key`` from the current manifest only: the history still names its file."""
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    rel = manifest["state"].pop(key)["file"]
    (tmp_path / "ix" / "manifest.json").write_bytes(seal(manifest))
    return str(rel)


def _flip_last_byte_of_data(path: Path, back: int = 9) -> None:
    data = bytearray(path.read_bytes())
    data[-back] ^= 0x01
    path.write_bytes(bytes(data))


def test_an_intact_index_checks_clean(tmp_path):
    store = _store(tmp_path)
    result = store.verify_files()
    assert result.ok and result.problems == []
    # hyperplanes + 2 node + 2 vector segments + 2 state files
    assert result.files == 7
    assert Store.open(tmp_path / "ix").verify_files(all_versions=True).ok


def test_a_flipped_byte_opens_but_is_found_by_the_check(tmp_path):
    store = _store(tmp_path)
    entry = store.manifest["state"]["c/s1"]
    path = tmp_path / "ix" / entry["file"]
    _flip_last_byte_of_data(path)  # inside the array's data: still a loadable .npy
    snap = Store.open(tmp_path / "ix").load()  # sizes match: opened without hashing
    loaded = snap.state("c", "s1")
    assert loaded is not None and not np.array_equal(loaded, np.arange(100))
    result = Store.open(tmp_path / "ix").verify_files()
    assert not result.ok
    (bad,) = result.problems
    assert bad.file == entry["file"] and bad.what == "state 'c/s1'"
    assert "failed its checksum" in bad.problem
    with pytest.raises(CorruptIndexError, match="failed its checksum"):
        Store.open(tmp_path / "ix").load(verify=True)


@pytest.mark.parametrize("change", ["truncate", "extend"])
def test_a_file_of_another_size_is_refused_at_open(tmp_path, change):
    store = _store(tmp_path)
    entry = store.manifest["segments"]["vectors"][0]
    path = tmp_path / "ix" / entry["file"]
    data = path.read_bytes()
    path.write_bytes(data[:-16] if change == "truncate" else data + b"\0" * 16)
    with pytest.raises(CorruptIndexError, match=r"bytes, the manifest records") as err:
        Store.open(tmp_path / "ix").load()
    assert entry["file"] in str(err.value)
    (bad,) = Store.open(tmp_path / "ix").verify_files().problems
    assert bad.file == entry["file"] and "truncated or overwritten" in bad.problem


def test_a_missing_file_is_reported_by_both(tmp_path):
    store = _store(tmp_path)
    rel = store.manifest["segments"]["nodes"][1]["file"]
    (tmp_path / "ix" / rel).unlink()
    with pytest.raises(CorruptIndexError, match="missing"):
        Store.open(tmp_path / "ix").load()
    (bad,) = Store.open(tmp_path / "ix").verify_files().problems
    assert bad.file == rel and "missing" in bad.problem


def test_all_versions_checks_the_history_and_its_manifests(tmp_path):
    _store(tmp_path, commits=3)
    # A file that only older versions name: the current manifest forgets it (as a later
    # state array replacing it would), the history manifests still list it.
    old_rel = _forget_in_current(tmp_path, "c/s0")
    _flip_last_byte_of_data(tmp_path / "ix" / old_rel)
    current = Store.open(tmp_path / "ix")
    assert current.verify_files().ok  # the current version no longer names it
    result = current.verify_files(all_versions=True)
    assert [p.file for p in result.problems] == [old_rel]
    # A damaged history manifest is a bad file of its own.
    (tmp_path / "ix" / "manifests" / "v00000001.json").write_text("{")
    result = current.verify_files(all_versions=True)
    assert [p.file for p in result.problems] == ["manifests/v00000001.json", old_rel]
    assert result.problems[0].what == "manifest"


def test_a_path_leaving_the_index_is_a_problem_not_a_crash(tmp_path):
    store = _store(tmp_path, commits=1)
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    manifest["segments"]["nodes"][0]["file"] = "../outside.parquet"
    (tmp_path / "ix" / "manifests" / "v00000002.json").write_bytes(seal(manifest))
    result = store.verify_files(all_versions=True)
    assert any("outside the index directory" in p.problem for p in result.problems)


def _sweep_while_hashing(monkeypatch, root: Path, rel: str, history: bool) -> None:
    """Make hashing ``rel`` find it removed, as a compaction's sweep does between the check's
    size test and its read (the race test met it once in 1,100 checks)."""
    real = files.sha256_file

    def racing(path: Path) -> str:
        if path == root / rel:
            if history:
                for kept in (root / "manifests").glob("v*.json"):
                    kept.unlink()
            path.unlink()
        return real(path)

    monkeypatch.setattr(files, "sha256_file", racing)


def test_a_kept_version_swept_while_it_is_hashed_is_not_a_problem(tmp_path, monkeypatch):
    _store(tmp_path, commits=3)
    rel = _forget_in_current(tmp_path, "c/s0")
    current = Store.open(tmp_path / "ix")
    _sweep_while_hashing(monkeypatch, tmp_path / "ix", rel, history=True)
    # The current version did not move: only the kept manifests that named the file went.
    result = current.verify_files(all_versions=True)
    assert result.ok, result.problems
    assert current.version == 3


def test_a_file_of_the_current_version_vanishing_while_hashed_is_reported_missing(
    tmp_path, monkeypatch
):
    store = _store(tmp_path, commits=2)
    rel = store.manifest["state"]["c/s1"]["file"]
    _sweep_while_hashing(monkeypatch, tmp_path / "ix", rel, history=False)
    (bad,) = Store.open(tmp_path / "ix").verify_files(all_versions=True).problems
    assert bad.file == rel and "missing" in bad.problem
