"""The ``graphstrata`` command line in a subprocess (the hashing embedder, this checkout)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers import REPO


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """``graphstrata ARGS...`` (the hashing embedder); raise on a non-zero exit if ``check``."""
    env = dict(os.environ, PYTHONPATH=str(REPO), GRAPHSTRATA_EMBEDDER="hashing:64")
    env.pop("GRAPHSTRATA_DEBUG", None)  # errors as the user sees them: one line, no traceback
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
