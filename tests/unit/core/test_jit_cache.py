"""A kernel whose compiled code cannot be saved to numba's cache still returns its result."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a kill, as a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
import numpy as np
from graphstrata.core.ids import contains
print(contains(np.array([2, 5, 9], dtype=np.int64), np.array([1, 5, 9, 10], dtype=np.int64)).tolist())
"""


def _run_with_fresh_cache(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    repo = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PYTHONPATH=str(repo), NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )


def test_a_failed_cache_save_warns_and_the_kernel_still_answers(tmp_path: Path) -> None:
    proc = _run_with_fresh_cache(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[False, True, True, False]"
    assert "numba could not save a compiled kernel to its cache" in proc.stderr
    assert "File too large" in proc.stderr
    # numba writes through a temporary name: the failed save leaves no partial cache file
    leftovers = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.stat().st_size]
    assert leftovers == []


def test_the_guard_is_installed_once() -> None:
    from numba.core import caching

    from graphstrata.core._jit_cache import tolerate_cache_save_errors

    installed = caching.Cache.save_overload
    tolerate_cache_save_errors()
    assert caching.Cache.save_overload is installed
