"""``graphstrata check`` end to end in subprocesses: clean index, flipped byte, truncation."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import run as run_cli

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    """``graphstrata ARGS...``; the caller checks the exit code."""
    return run_cli(*args, check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("check") / "ix"
    proc = run("index", str(REPO / "examples" / "sample"), "--out", str(out), "--no-heterograph")
    assert proc.returncode == 0, proc.stderr
    return out


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _segment(index: Path, table: str) -> str:
    manifest = json.loads((index / "manifest.json").read_text())
    return str(manifest["segments"][table][0]["file"])


def test_an_intact_index_exits_0(built):
    proc = run("check", str(built))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok: ") and "match their checksums" in proc.stdout
    assert run("check", str(built), "--all-versions").returncode == 0


def test_a_corrupted_segment_byte_exits_1_and_names_the_file(built, tmp_path):
    index = _copy(built, tmp_path / "ix")
    rel = _segment(index, "vectors")
    path = index / rel
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40  # a float of the vector matrix: the file still reads
    path.write_bytes(bytes(data))
    # Opening does not hash every byte: queries still run.
    assert run("query", str(index), "Meridian Optics", "--budget", "200").returncode == 0
    proc = run("check", str(index))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{rel}: vectors segment failed its checksum")
    assert "1 bad file(s)" in proc.stderr


def test_a_truncated_file_is_refused_at_open(built, tmp_path):
    index = _copy(built, tmp_path / "ix")
    rel = _segment(index, "nodes")
    path = index / rel
    path.write_bytes(path.read_bytes()[:-10])
    proc = run("query", str(index), "Meridian Optics", "--budget", "200")
    assert proc.returncode == 1
    assert "CorruptIndexError" in proc.stderr and rel in proc.stderr
    assert "the manifest records" in proc.stderr
    check = run("check", str(index))
    assert check.returncode == 1 and check.stdout.startswith(f"{rel}: nodes segment has ")


def test_not_an_index_is_an_error(tmp_path):
    proc = run("check", str(tmp_path / "nothing"))
    assert proc.returncode == 1 and "no graphstrata index" in proc.stderr
