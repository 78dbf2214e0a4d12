"""An index directory as a whole, for the bindings: its manifest, its files, its replacement.

The store (``store/``) owns the format; this module is the part of it that a caller outside
the engine needs without opening an index: read the recorded manifest (the embedder and
config an index was built with), verify every file's checksum (``graphstrata check``), tell
what a folder holds before replacing it, and the build-beside-and-swap primitives
(``store/files.py``: ``sibling_path``, ``replace_directory``, ``recover_replace``) with the
old index's writer lock held during the swap, which is refused while a long-lived writer (a
server) is registered or when the index moved on since the rebuild read it (issue 51, #6).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from graphstrata.engine.component import DocNames
from graphstrata.engine.pinned import PinnedVersion
from graphstrata.engine.store import MANIFEST, IndexLockedError, Store, read_manifest
from graphstrata.engine.store.files import (
    INDEX_ENTRIES,
    FileCheck,
    check_manifest_paths,
    recover_replace,
    replace_directory,
    sibling_path,
)
from graphstrata.engine.store.lock import LiveWriter, live_writer, live_writers

__all__ = [
    "INDEX_ENTRIES",
    "MANIFEST",
    "LiveWriter",
    "check_index_folder",
    "check_no_live_writer",
    "live_writer",
    "live_writers",
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


def check_no_live_writer(target: Path, what: str) -> None:
    """Refuse ``what`` while a long-lived writer (``graphstrata serve``) is registered at
    ``target`` (``store/lock.py``, ``live_writer``).

    Raises
    ------
    IndexLockedError
        Naming each live writer (pid, command).
    """
    live = live_writers(target)
    if live:
        names = ", ".join(str(w) for w in live)
        raise IndexLockedError(
            f"{target} is in use by a live writer: {names}; {what} would replace the index "
            "under it and lose the writes it acknowledges; stop it first (or insert through it)"
        )


@contextlib.contextmanager
def _old_writer(target: Path, wait: float, expect_version: int | None) -> Iterator[None]:
    if not (target / MANIFEST).exists():
        yield
        return
    store = Store.open(target)
    with store.writer(wait=wait):
        check_no_live_writer(target, "the rebuild")
        if expect_version is not None and store.version != expect_version:
            raise IndexLockedError(
                f"{target} moved from version {expect_version} to {store.version} while the "
                f"rebuild ran (another writer committed); swapping in the rebuild would lose "
                "those writes: rerun the rebuild"
            )
        yield


def swap_in(new: Path, target: Path, wait: float = 30.0, expect_version: int | None = None) -> None:
    """Replace ``target`` by the committed index ``new`` (``replace_directory``), holding the
    writer lock of the index at ``target`` if there is one, so that no writer of the old
    index (a server's insert, say) is mid-commit meanwhile.

    Parameters
    ----------
    new:
        The committed new index.
    target:
        The index directory.
    wait:
        How long to wait for the old index's writer lock.
    expect_version:
        The version of the old index when the rebuild read it: if another writer committed
        since, the swap is refused (its writes would be lost). None: not checked.

    Raises
    ------
    IndexLockedError
        When the old index's writer does not let go within ``wait`` seconds, a long-lived
        writer is registered at ``target``, or ``target`` moved past ``expect_version``.
    """
    with _old_writer(target, wait, expect_version):
        replace_directory(new, target)
