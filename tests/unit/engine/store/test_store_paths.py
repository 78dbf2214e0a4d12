"""Manifest paths stay inside the index directory; directory swaps recover from a kill.

The manifests here are hand-crafted and re-sealed with the store's own ``seal``, so their
checksum passes and only the path rule can refuse them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphstrata.engine.store import CorruptIndexError, Store
from graphstrata.engine.store.files import (
    MANIFEST,
    check_manifest_paths,
    leftover_siblings,
    manifest_files,
    recover_replace,
    replace_directory,
    resolve_in_root,
    seal,
    sibling_path,
    write_atomic,
)
from graphstrata.engine.types import NodeKind

DIM = 8


def _index(tmp_path: Path) -> Path:
    hp = np.random.default_rng(0).standard_normal((4, DIM)).astype(np.float32)
    root = tmp_path / "ix"
    store = Store.create(root, {"vector_dtype": "f32"}, {"name": "e", "dim": DIM}, hp, 0)
    with store.writer():
        delta = store.new_delta()
        ids = delta.new_node_ids(3)
        delta.add_nodes(ids, int(NodeKind.T), ["a", "b", "c"], np.ones(3), [[0]] * 3)
        delta.add_vectors(ids, int(NodeKind.T), np.ones((3, DIM), dtype=np.float32))
        store.commit(delta)
    return root


def _rewrite(root: Path, edit) -> None:
    """Edit the current manifest (and its history copy) and seal it again."""
    manifest = json.loads((root / MANIFEST).read_text())
    edit(manifest)
    data = seal(manifest)
    write_atomic(root / MANIFEST, data)
    write_atomic(root / "manifests" / f"v{manifest['version']:08d}.json", data)


@pytest.mark.parametrize(
    "where",
    ["absolute", "dotdot", "dotdot-inside", "backslash", "empty", "not-a-string"],
)
def test_a_segment_path_leaving_the_index_is_refused(tmp_path, where):
    root = _index(tmp_path)
    seg = json.loads((root / MANIFEST).read_text())["segments"]["nodes"][0]["file"]
    outside = tmp_path / "outside.parquet"
    shutil.copy(root / seg, outside)  # same bytes, same checksum: only the path is wrong
    path = {
        "absolute": str(outside),
        "dotdot": "../outside.parquet",
        "dotdot-inside": "segments/../../outside.parquet",
        "backslash": "segments\\..\\..\\outside.parquet",
        "empty": "",
        "not-a-string": 7,
    }[where]

    def edit(m):
        m["segments"]["nodes"][0]["file"] = path

    _rewrite(root, edit)
    with pytest.raises(CorruptIndexError, match=r"nodes segment") as err:
        Store.open(root)
    assert "outside the index directory" in str(err.value) or "not a file path" in str(err.value)
    with pytest.raises(CorruptIndexError):
        Store.open(root, version=1)  # a pinned version is checked the same way


def test_every_kind_of_manifest_path_is_checked(tmp_path):
    root = _index(tmp_path)
    for edit, what in (
        (lambda m: m["hyperplanes"].update(file="/etc/hostname"), "hyperplanes"),
        (lambda m: m["segments"]["vectors"][0].update(file="../v.arrow"), "vectors segment"),
        (lambda m: m.update(state={"k": {"file": "../../k.npy", "sha256": "0"}}), "state 'k'"),
        (lambda m: m.update(vector_cache={"version": 1, "file": "/tmp/u.npz"}), "vector cache"),
    ):
        original = (root / MANIFEST).read_bytes()
        _rewrite(root, edit)
        with pytest.raises(CorruptIndexError, match=what):
            Store.open(root)
        write_atomic(root / MANIFEST, original)
        write_atomic(root / "manifests" / "v00000001.json", original)
    assert len(Store.open(root).load().nodes) == 3


def test_a_symlink_inside_the_index_leading_out_is_refused(tmp_path):
    root = _index(tmp_path)
    seg = json.loads((root / MANIFEST).read_text())["segments"]["nodes"][0]["file"]
    outside = tmp_path / "elsewhere.parquet"
    (root / seg).rename(outside)
    (root / seg).symlink_to(outside)
    with pytest.raises(CorruptIndexError, match="leads outside the index directory"):
        Store.open(root)


def test_a_writer_refreshing_a_crafted_manifest_refuses_it(tmp_path):
    root = _index(tmp_path)
    store = Store.open(root)

    def edit(m):
        m["segments"]["docs"].append({"file": "../../x.parquet", "sha256": "0", "version": 1})

    _rewrite(root, edit)
    with pytest.raises(CorruptIndexError, match="outside"), store.writer():
        pass


def test_resolve_in_root_accepts_ordinary_paths(tmp_path):
    assert resolve_in_root(tmp_path, "segments/a.parquet") == tmp_path / "segments" / "a.parquet"
    assert resolve_in_root(tmp_path, "hyperplanes.npy") == tmp_path / "hyperplanes.npy"
    for bad in ("/abs", "..", "a/../../b", ".", "a\x00b", None):
        with pytest.raises(CorruptIndexError):
            resolve_in_root(tmp_path, bad)


# ------------------------------------------------------------------ directory swaps


def _dir(path: Path, text: str) -> Path:
    path.mkdir()
    (path / "content").write_text(text)
    return path


def test_replace_directory_swaps_and_removes_the_old_one(tmp_path):
    target = _dir(tmp_path / "ix", "old")
    new = _dir(sibling_path(target, "new"), "new")
    replace_directory(new, target)
    assert (target / "content").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]
    fresh = _dir(sibling_path(tmp_path / "other", "new"), "first")
    replace_directory(fresh, tmp_path / "other")  # no old one: a plain rename
    assert (tmp_path / "other" / "content").read_text() == "first"


def _dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(proc.stdout)


def _leftover(target: Path, tag: str, pid: int, text: str) -> Path:
    return _dir(target.parent / f".{target.name}.{tag}-{pid}-0123abcd", text)


def test_recovery_restores_the_old_index_when_the_target_is_missing(tmp_path):
    target = tmp_path / "ix"
    pid = _dead_pid()
    _leftover(target, "old", pid, "old")
    _leftover(target, "new", pid, "new")
    with pytest.raises(Exception, match="interrupted rebuild left the previous index"):
        Store.open(target)
    done = recover_replace(target)
    assert len(done) == 2 and "restored" in done[0]
    assert (target / "content").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]


def test_recovery_removes_the_old_index_once_the_new_one_is_in_place(tmp_path):
    target = _dir(tmp_path / "ix", "new")
    _leftover(target, "old", _dead_pid(), "old")
    assert "removed" in recover_replace(target)[0]
    assert (target / "content").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]
    assert recover_replace(target) == []


def test_recovery_leaves_the_siblings_of_a_running_build_alone(tmp_path):
    target = tmp_path / "ix"
    live = _leftover(target, "new", os.getpid(), "building")
    unrelated = _dir(tmp_path / ".ixx.new-1-0123abcd", "another index's")
    assert leftover_siblings(target) == []
    assert recover_replace(target) == []
    assert live.exists() and unrelated.exists()


def test_paths_checked_once_are_remembered_and_new_ones_still_checked(tmp_path):
    root = _index(tmp_path)
    manifest = json.loads((root / MANIFEST).read_text())
    checked: set[str] = set()
    check_manifest_paths(root, manifest, checked)
    assert checked == {rel for _, rel in manifest_files(manifest)}
    manifest["segments"]["docs"].append({"file": "../x.parquet", "sha256": "0", "version": 1})
    with pytest.raises(CorruptIndexError, match="outside"):
        check_manifest_paths(root, manifest, checked)
    assert "../x.parquet" not in checked


def test_opening_and_loading_resolve_each_path_once(tmp_path, monkeypatch):
    """The opening check's paths are not resolved again by the reads of ``load``."""
    from graphstrata.engine.store import files

    root = _index(tmp_path)
    resolved: list[str] = []
    real = files.resolve_in_root

    def counting(root_: Path, rel, what="file", real_root=None):
        resolved.append(rel)
        return real(root_, rel, what, real_root)

    monkeypatch.setattr(files, "resolve_in_root", counting)
    store = Store.open(root)
    store.load()
    manifest = json.loads((root / MANIFEST).read_text())
    assert sorted(resolved) == sorted(rel for _, rel in manifest_files(manifest))
