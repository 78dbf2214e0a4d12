"""Creating an index on disk: version 0's directories, hyperplanes and sealed manifest.

A failure part-way (a full disk) removes what was written, so the path can be reused; the LLM
response cache and the writer lock may already be there and are not part of the index.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphstrata.engine.store.errors import StoreError, StoreWriteError
from graphstrata.engine.store.files import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MANIFEST,
    TABLES,
    seal,
    sha256_file,
    write_atomic,
    write_failure_cause,
)


def create_index_files(
    root: Path,
    config: dict[str, Any],
    embedder: dict[str, Any],
    hyperplanes: np.ndarray,
    hyperplane_seed: int,
    components: Sequence[str],
) -> dict[str, Any]:
    """Write an empty index (version 0) at ``root`` and return its manifest.

    Raises
    ------
    StoreError
        When ``root`` already holds an index or other files.
    StoreWriteError
        When a write fails (nothing is left there).
    """
    root = Path(root)
    if (root / MANIFEST).exists():
        raise StoreError(f"an index already exists at {root}; open it or choose another path")
    # The LLM response cache may already be there (kept across a rebuild, or opened by the
    # backend before the store): it is not part of the index.
    if root.exists() and any(
        p for p in root.iterdir() if not p.name.startswith(("LOCK", "llm-cache"))
    ):
        raise StoreError(f"{root} exists and is not empty; refusing to create an index there")
    created_root = not root.exists()
    try:
        return _write_version_zero(root, config, embedder, hyperplanes, hyperplane_seed, components)
    except BaseException as exc:
        if not (root / MANIFEST).exists():
            for name in ("segments", "manifests"):
                shutil.rmtree(root / name, ignore_errors=True)
            (root / "hyperplanes.npy").unlink(missing_ok=True)
            if created_root:
                with contextlib.suppress(OSError):
                    root.rmdir()
        if isinstance(exc, OSError):
            raise StoreWriteError(
                f"{write_failure_cause(exc)} while creating an index at {root}; "
                "nothing was left there",
                exc.errno,
            ) from exc
        raise


def _write_version_zero(
    root: Path,
    config: dict[str, Any],
    embedder: dict[str, Any],
    hyperplanes: np.ndarray,
    hyperplane_seed: int,
    components: Sequence[str],
) -> dict[str, Any]:
    (root / "segments").mkdir(parents=True, exist_ok=True)
    (root / "manifests").mkdir(exist_ok=True)
    hp = np.ascontiguousarray(hyperplanes, dtype=np.float32)
    hp_path = root / "hyperplanes.npy"
    with open(hp_path, "wb") as fh:
        np.save(fh, hp)
        fh.flush()
        os.fsync(fh.fileno())
    manifest: dict[str, Any] = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "version": 0,
        "created_at": time.time(),
        "committed_at": time.time(),
        "config": config,
        "embedder": embedder,
        "hyperplanes": {
            "file": "hyperplanes.npy",
            "sha256": sha256_file(hp_path),
            "n_bits": int(hp.shape[0]),
            "dim": int(hp.shape[1]),
            "seed": int(hyperplane_seed),
        },
        "next_node_id": 0,
        "next_doc_key": 0,
        "segments": {t: [] for t in TABLES},
        "state": {},
        "components": {},
        # Fixed at creation: a component that did not see every change cannot serve.
        "components_enabled": list(components),
        "vector_cache": None,
        "counts": {},
    }
    data = seal(manifest)
    write_atomic(root / "manifests" / "v00000000.json", data)
    write_atomic(root / MANIFEST, data)
    return manifest
