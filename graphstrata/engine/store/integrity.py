"""Verifying an index before an operation rewrites its data, and retrying a raced read.

Opening an index checks file sizes, not every byte (``files.file_problem``); a compaction or
a maintenance that read a segment with a flipped byte would write its rows into a new
segment with a checksum of its own, and ``graphstrata check`` would then pass on wrong data
(issue 51). So those operations hash every file of the version first
(:func:`verify_for_rewrite`): a bad segment or state file stops them with nothing written;
a bad cache file (rebuildable from the segments) is reported so that the caller rebuilds
that cache instead of carrying it over.

A reader that read ``manifest.json`` just before a compaction committed may find a segment
of that manifest already removed by the compaction's sweep: such a reader (its file
missing, :func:`missing_file`, and a newer manifest committed) reads the newer manifest,
:data:`READ_RETRIES` times at most (``Store.load``, ``Store.verify_files``). A check of every
kept version may also read a history manifest that the compaction then removes with its
files: a missing file that no manifest names any more is not reported (:func:`verify_newest`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from graphstrata.engine.store.caches import CACHE_NAMES
from graphstrata.engine.store.errors import CorruptIndexError, StoreError
from graphstrata.engine.store.files import (
    MANIFEST,
    FileCheck,
    manifest_files,
    read_manifest,
    verify_index_files,
)

__all__ = [
    "HELP",
    "MISSING",
    "READ_RETRIES",
    "BadCaches",
    "missing_file",
    "newest_read",
    "verify_for_rewrite",
    "verify_newest",
]

T = TypeVar("T")

#: How to recover from a bad segment, for the messages that name one.
HELP = (
    "restore the file from a backup, or rebuild the index (`graphstrata index SOURCE --out "
    "INDEX --force`); `graphstrata check INDEX` lists every bad file"
)
#: How a missing file is reported (``files.file_problem``).
MISSING = "listed in the manifest is missing"
#: Newer manifests a reader tries after a file of its manifest was compacted away. Each
#: retry follows a commit that happened during the previous read, so more retries mean a
#: reader slower than several whole compactions; it then reports the missing file. 8 was
#: too few on 2 loaded cores: a reader racing a loop of back-to-back compactions (the race
#: test) fell behind 8 of them in 6 of 1,246 opens at load ~9.
READ_RETRIES = 32

#: ``{cache name: [file, ...]}`` of the cache files that failed their checksum.
BadCaches = dict[str, list[str]]


def _cache_of(manifest: dict[str, Any]) -> dict[str, str]:
    """``{file: cache name}`` of every per-kind cache file ``manifest`` names."""
    out: dict[str, str] = {}
    for name in CACHE_NAMES:
        cache = manifest.get(name) or {}
        entries = cache.get("kinds", {}).values() if "kinds" in cache else [cache]
        out.update({str(e.get("file")): name for e in entries if isinstance(e, dict)})
    return out


def verify_for_rewrite(root: Path, manifest: dict[str, Any], operation: str) -> BadCaches:
    """Hash every file of ``manifest`` before ``operation`` rewrites the index's data.

    Parameters
    ----------
    root:
        The index directory.
    manifest:
        The version the operation reads (the writer's current one).
    operation:
        What is about to run (``"compact"``, ``"maintain"``), for the message.

    Returns
    -------
    dict
        The caches with a bad file, and those files: the caller rebuilds those caches from
        the segments rather than carrying them into the new version.

    Raises
    ------
    CorruptIndexError
        When a segment, state file or the hyperplanes fail their checksum (or are missing or
        of the wrong size): the message names every such file and how to recover.
    """
    result = verify_index_files(root, manifest, all_versions=False)
    caches = _cache_of(manifest)
    bad_caches: BadCaches = {}
    data = []
    for bad in result.problems:
        if bad.file in caches:
            bad_caches.setdefault(caches[bad.file], []).append(bad.file)
        else:
            data.append(f"{bad.file} ({bad.what}) {bad.problem}")
    if data:
        raise CorruptIndexError(
            f"{root}: refusing to {operation} version {manifest['version']}: "
            f"{'; '.join(data)}. Nothing was written: the index stays at version "
            f"{manifest['version']}, and {operation} would carry the bad data into a new "
            f"version. To recover: {HELP}"
        )
    return bad_caches


def missing_file(error: BaseException) -> bool:
    """Whether ``error`` reports a file of the manifest missing (or vanished as it was opened):
    what a reader meets when a compaction removed the file after the reader read its manifest.

    Parameters
    ----------
    error:
        What reading a version failed with.
    """
    if isinstance(error, FileNotFoundError):
        return True
    if isinstance(error, CorruptIndexError) and MISSING in str(error):
        return True
    return isinstance(error, StoreError) and isinstance(error.__cause__, FileNotFoundError)


def newest_read(read: Callable[[], T], reload: Callable[[], bool]) -> T:
    """``read()``, again after ``reload()`` while it fails on a missing file and a newer
    manifest was committed (:data:`READ_RETRIES` times at most).

    Parameters
    ----------
    read:
        Reads the version the store holds.
    reload:
        Moves the store to the current manifest; True when it names another version.

    Raises
    ------
    StoreError, FileNotFoundError
        What the last ``read`` raised, when it is not a file compacted away or no newer
        manifest was committed.
    """
    for _ in range(READ_RETRIES):
        try:
            return read()
        except (StoreError, FileNotFoundError) as exc:
            if not missing_file(exc) or not reload():
                raise
    return read()


def verify_newest(
    root: Path,
    manifest: Callable[[], dict[str, Any]],
    all_versions: bool,
    reload: Callable[[], bool],
) -> FileCheck:
    """``files.verify_index_files``, not reporting what a compaction removed meanwhile.

    Parameters
    ----------
    root:
        The index directory.
    manifest:
        The store's current manifest (it changes when ``reload`` moves the store on).
    all_versions:
        Also every kept version.
    reload:
        Moves the store to the current manifest; True when it names another version.

    Returns
    -------
    FileCheck
        The check of the newest version read; a file missing only because every manifest
        that named it was removed since is left out.
    """
    for _ in range(READ_RETRIES):
        try:
            result = verify_index_files(root, manifest(), all_versions)
        except FileNotFoundError:
            # A file listed when the check started vanished as it was hashed: a compaction
            # committed and swept it. Check again from the current manifest, which may not
            # have moved (the sweep removed a kept version that alone named the file): a
            # file still named is then reported missing, like any lost file.
            reload()
            continue
        if not any(p.problem == MISSING for p in result.problems) or not reload():
            return _without_swept(root, result)
    return _without_swept(root, verify_index_files(root, manifest(), all_versions))


def _without_swept(root: Path, result: FileCheck) -> FileCheck:
    """``result`` without its missing files that no manifest on disk names any more."""
    if not any(p.problem == MISSING for p in result.problems):
        return result
    named: set[str] = set()
    for path in [root / MANIFEST, *sorted((root / "manifests").glob("v*.json"))]:
        try:
            named.update(str(rel) for _, rel in manifest_files(read_manifest(path)))
        except StoreError:  # removed or unreadable: it names nothing (a bad one is reported)
            continue
    kept = [p for p in result.problems if p.problem != MISSING or p.file in named]
    return FileCheck(files=result.files, problems=kept)
