"""A full disk while ``compact`` writes caches or segments (issue 51, defect 11).

The probe saw ``OSError: N requested and M written`` and ``RuntimeError: Failed to serialize
into stream``, and the partial files stayed until the next write. Now: one error naming the
file and the version the index stays at, the partial files removed at once. On a real small
tmpfs (needs root to mount; skipped otherwise), and with a write that fails with ENOSPC.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.engine.sparse import cache as sparse_cache
from graphstrata.engine.store import StoreWriteError
from tests.helpers.cli import run as run_cli

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    """``graphstrata ARGS...``; the caller checks the exit code."""
    return run_cli(*args, check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("diskfull") / "ix"
    proc = run("index", str(REPO / "examples" / "sample"), "--out", str(out), "--no-heterograph")
    assert proc.returncode == 0, proc.stderr
    return out


def files(index: Path) -> set[str]:
    return {str(p.relative_to(index)) for p in index.rglob("*") if p.is_file()} - {"LOCK"}


@contextlib.contextmanager
def tmpfs(where: Path, size: str):
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)])
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount(where: Path, kib: int) -> None:
    subprocess.run(["mount", "-o", f"remount,size={kib}k", str(where)], check=True)


# free KiB left after the copy: the usearch cache fails (usearch's "Failed to serialize"),
# the BM25 cache fails (numpy's write), the compacted segments fail (pyarrow's short write).
@pytest.mark.parametrize("free_kib", [4, 36, 170])
def test_compact_on_a_full_disk_fails_cleanly(built, tmp_path, free_kib):
    with tmpfs(tmp_path / "fs", "64m") as fs:
        index = fs / "ix"
        shutil.copytree(built, index)
        st = os.statvfs(fs)
        used_kib = (st.f_blocks - st.f_bfree) * st.f_frsize // 1024
        remount(fs, used_kib + free_kib)
        before = files(index)
        proc = run("compact", str(index))
        assert proc.returncode == 1, proc.stdout + proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1, proc.stderr
        assert lines[0].startswith(
            "graphstrata compact: error: StoreWriteError: no space left on device while writing "
            f"{index}/"
        )
        assert "version 1" in lines[0] and "removed" in lines[0]
        assert files(index) == before  # nothing partial left behind
        assert run("check", str(index)).returncode == 0
        remount(fs, 64 * 1024)
        assert run("compact", str(index)).returncode == 0


def test_a_cache_write_failing_with_enospc_removes_its_file(built, tmp_path, monkeypatch):
    index = tmp_path / "ix"
    shutil.copytree(built, index)
    before = files(index)

    def full_disk(path: Path, arrays, meta) -> None:
        path.write_bytes(b"GSARRAY1" + b"\0" * 100)  # the part that fitted
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sparse_cache, "save_arrays", full_disk)
    ix = Index.open(index, embedder=HashingEmbedder(64))
    with pytest.raises(StoreWriteError) as caught:
        ix.compact()
    message = str(caught.value)
    assert message.startswith(
        f"no space left on device while writing {index}/scache/sparse-v00000002-k"
    )
    assert message.endswith("the index is still at version 1")
    assert caught.value.errno == errno.ENOSPC
    assert files(index) == before
    assert ix.version == 1
