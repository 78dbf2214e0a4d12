"""An index directory as a whole, for the bindings: its manifest, its files, its replacement.

The store (``store/``) owns the format; this module is the part of it that a caller outside
the engine needs without opening an index: read the recorded manifest (the embedder and
config an index was built with), verify every file's checksum (``graphstrata check``), tell
what a folder holds before replacing it, and the build-beside-and-swap primitives
(``store/files.py``: ``sibling_path``, ``replace_directory``, ``recover_replace``) with the
old index's writer lock held during the swap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graphstrata.engine.component import DocNames
from graphstrata.engine.pinned import PinnedVersion
from graphstrata.engine.store import MANIFEST, Store, read_manifest
from graphstrata.engine.store.files import (
    INDEX_ENTRIES,
    FileCheck,
    check_manifest_paths,
    recover_replace,
    replace_directory,
    sibling_path,
)

__all__ = [
    "INDEX_ENTRIES",
    "MANIFEST",
    "check_index_folder",
    "read_version",
    "recover_replace",
    "replace_directory",
    "sibling_path",
    "stored_manifest",
    "swap_in",
    "verify_files",
]


def stored_manifest(path: str | Path, version: int | None = None) -> dict[str, Any]:
    """The manifest of the index at ``path`` (the newest version, or a pinned ``version``).

    Raises
    ------
    StoreError
        When ``path`` holds no readable index.
    """
    return Store.open(path, version=version).manifest


def read_version(path: str | Path) -> PinnedVersion:
    """The newest version of the index at ``path`` as a read view, without opening its
    backends (its files' sizes are checked, not their checksums)."""
    snapshot = Store.open(path).load(verify=False)
    return PinnedVersion(snapshot, DocNames(snapshot))


def verify_files(path: str | Path, all_versions: bool = False) -> tuple[int, FileCheck]:
    """Hash every file of the current version (``all_versions``: of every kept version).

    Returns
    -------
    tuple
        ``(version, check)``: the current version and the problems found.
    """
    store = Store.open(path)
    return store.version, store.verify_files(all_versions=all_versions)


def check_index_folder(path: Path) -> int | None:
    """Check that ``path`` (which holds a ``manifest.json``) is a valid index.

    Returns
    -------
    int or None
        Its committed version (None when the version cannot be read).

    Raises
    ------
    StoreError
        When the manifest is not a sealed graphstrata manifest or names a file outside.
    """
    manifest = read_manifest(path / MANIFEST)
    check_manifest_paths(path, manifest)
    try:
        return int(manifest["version"])
    except (KeyError, TypeError, ValueError):
        return None


@contextlib.contextmanager
def _old_writer(target: Path, wait: float) -> Iterator[None]:
    if (target / MANIFEST).exists():
        with Store.open(target).writer(wait=wait):
            yield
    else:
        yield


def swap_in(new: Path, target: Path, wait: float = 30.0) -> None:
    """Replace ``target`` by the committed index ``new`` (``replace_directory``), holding the
    writer lock of the index at ``target`` if there is one, so that no writer of the old
    index (a server's insert, say) is mid-commit meanwhile.

    Raises
    ------
    IndexLockedError
        When the old index's writer does not let go within ``wait`` seconds.
    """
    with _old_writer(target, wait):
        replace_directory(new, target)
