"""Durable file primitives of the store: checksums, atomic writes, sealed manifests.

A manifest is sealed with the SHA-256 of its canonical JSON (every key but ``checksum``,
sorted, compact), so a truncated or hand-edited manifest is detected on read
(docs/architecture.md, "Store").

Every file a manifest names is a relative path inside the index directory
(:func:`manifest_files`, :func:`resolve_in_root`): an absolute path, a ``..`` component, or a
symlink that leads out of the directory makes the manifest corrupt, so a hand-crafted manifest
cannot make a reader open (or a writer delete) files elsewhere.

Replacing a whole index directory (``graphstrata index --force``) is
:func:`replace_directory`: the new index is built in a sibling ``.NAME.new-PID-XXXXXXXX`` and
swapped in by renames; :func:`recover_replace` finishes what a killed swap left (see there for
the rule).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from graphstrata.engine.store.caches import CACHE_FOLDERS, cache_entries
from graphstrata.engine.store.errors import CorruptIndexError, IndexNotFoundError
from graphstrata.engine.store.lock import LIVE_WRITERS

FORMAT_NAME = "graphstrata-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
#: The segment lists of a manifest, one per table.
TABLES = ("nodes", "edges", "docs", "vectors", "node_tombstones", "doc_tombstones")
#: The entries the store itself keeps in an index directory (besides ``.*.tmp`` files).
INDEX_ENTRIES = frozenset(
    {
        MANIFEST,
        "manifests",
        "segments",
        *CACHE_FOLDERS.values(),
        "hyperplanes.npy",
        "LOCK",
        LIVE_WRITERS,
    }
)


def crashpoint(name: str) -> None:
    """Fault injection for the crash-safety tests: SIGKILL this process at a named point.

    Parameters
    ----------
    name:
        The point reached; the process dies when it equals ``$GRAPHSTRATA_CRASH_AT``.
    """
    target = os.environ.get("GRAPHSTRATA_CRASH_AT")
    if target and target == name:
        os.kill(os.getpid(), signal.SIGKILL)


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks.

    Parameters
    ----------
    path:
        The file.

    Returns
    -------
    str
        64 lowercase hex digits.
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fsync_file(path: Path) -> None:
    """Flush a written file's data to disk."""
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def fsync_dir(path: Path) -> None:
    """Flush a directory entry, so a rename into it survives a power loss."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: a reader sees the old bytes or the new, never a mix.

    Parameters
    ----------
    path:
        The file to (re)write.
    data:
        Its new content.
    """
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk must not leave half a manifest behind
        raise
    fsync_dir(path.parent)


def _canonical(manifest: dict[str, Any]) -> bytes:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def seal(manifest: dict[str, Any]) -> bytes:
    """Set ``manifest["checksum"]`` and return the manifest's file content.

    Parameters
    ----------
    manifest:
        The manifest; modified in place (its ``checksum`` key).

    Returns
    -------
    bytes
        Key-sorted JSON without whitespace (``python -m json.tool`` indents it). Indented
        JSON goes through the json module's pure-Python encoder: 18 ms against 2.7 ms for
        the 314 kB manifest of a 100k-chunk index after 150 writes, on every commit, and
        18% more bytes (issue 17).
    """
    manifest["checksum"] = hashlib.sha256(_canonical(manifest)).hexdigest()
    return json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode() + b"\n"


def read_manifest(path: Path) -> dict[str, Any]:
    """Read and verify one manifest file.

    Parameters
    ----------
    path:
        ``manifest.json`` or one of ``manifests/v*.json``.

    Returns
    -------
    dict
        The manifest.

    Raises
    ------
    IndexNotFoundError
        The file does not exist.
    CorruptIndexError
        It is not JSON, not ours, of another format version, or fails its checksum.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise IndexNotFoundError(
            f"no graphstrata index at {path.parent} ({path.name} missing)"
        ) from exc
    try:
        manifest = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptIndexError(f"{path}: manifest is not valid JSON ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise CorruptIndexError(f"{path}: not a graphstrata manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise CorruptIndexError(
            f"{path}: format version {manifest.get('format_version')} is not supported "
            f"(this graphstrata reads {FORMAT_VERSION})"
        )
    expected = hashlib.sha256(_canonical(manifest)).hexdigest()
    if manifest.get("checksum") != expected:
        raise CorruptIndexError(
            f"{path}: manifest checksum mismatch (file was modified or truncated)"
        )
    return manifest


# ------------------------------------------------------------------------ write failures
#: pyarrow reports a short write (what a full disk causes) without an errno.
_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")


def write_failure_cause(exc: OSError) -> str:
    """A plain description of why a write failed: "no space left on device" for a full disk.

    Parameters
    ----------
    exc:
        The error a write raised (by Python, numpy or pyarrow).

    Returns
    -------
    str
        ``"no space left on device"``, ``"disk quota exceeded"``, ``"file too large"``, or the
        error's own text.
    """
    text = str(exc)
    if exc.errno == errno.ENOSPC or _SHORT_WRITE.search(text) or "No space left" in text:
        return "no space left on device"
    if exc.errno == errno.EDQUOT or "quota exceeded" in text.lower():
        return "disk quota exceeded"
    if exc.errno == errno.EFBIG:
        return "file too large"
    return exc.strerror or text or type(exc).__name__


# ------------------------------------------------------------------------ manifest paths
@dataclass(frozen=True)
class FileProblem:
    """A file of an index that failed ``Store.verify_files``.

    Attributes
    ----------
    file:
        Its path relative to the index directory.
    what:
        What it is (``"nodes segment"``, ``"state 'x'"``, ``"manifest"``, ...).
    problem:
        Why it is bad (missing, wrong size, failed its checksum, unreadable manifest).
    """

    file: str
    what: str
    problem: str


@dataclass(frozen=True)
class FileCheck:
    """The result of ``Store.verify_files``: files hashed, and the bad ones."""

    files: int
    problems: list[FileProblem]

    @property
    def ok(self) -> bool:
        """True when every file is intact."""
        return not self.problems


def manifest_entries(manifest: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every file a manifest names, as ``(what, entry)`` pairs.

    Parameters
    ----------
    manifest:
        A verified manifest.

    Returns
    -------
    list
        ``("hyperplanes", entry)``, ``("nodes segment", entry)``, ... ``("vector cache
        (kind 1)", entry)``; an entry holds ``file`` and ``sha256``, and ``bytes`` where recorded.

    Raises
    ------
    CorruptIndexError
        When the manifest lacks the structure that lists them.
    """
    try:
        out: list[tuple[str, dict[str, Any]]] = [("hyperplanes", manifest["hyperplanes"])]
        for table, entries in manifest["segments"].items():
            out += [(f"{table} segment", e) for e in entries]
        out += [(f"state {k!r}", e) for k, e in manifest.get("state", {}).items()]
        out += [
            (f"node state {k!r}", e)
            for k, chain in manifest.get("node_state", {}).items()
            for e in chain
        ]
        out += cache_entries(manifest)
    except (KeyError, TypeError, AttributeError) as exc:
        raise CorruptIndexError(f"manifest is malformed (no file list: {exc!r})") from exc
    for what, entry in out:
        if not isinstance(entry, dict) or "file" not in entry:
            raise CorruptIndexError(f"manifest is malformed ({what} names no file)")
    return out


def manifest_files(manifest: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every file a manifest names, as ``(what, path)`` pairs, paths as written.

    Parameters
    ----------
    manifest:
        A verified manifest.

    Returns
    -------
    list
        ``("hyperplanes", path)``, ``("nodes segment", path)``, ... ``("vector cache", path)``.

    Raises
    ------
    CorruptIndexError
        When the manifest lacks the structure that lists them.
    """
    return [(what, entry["file"]) for what, entry in manifest_entries(manifest)]


def file_problem(
    root: Path,
    entry: dict[str, Any],
    what: str,
    checksum: bool,
    checked: set[str] | None = None,
) -> str | None:
    """Why a file a manifest names cannot be used, or ``None`` when it can.

    Opening checks sizes only (one ``stat`` per file); the SHA-256 of every byte is for
    ``checksum=True`` (``graphstrata check``, ``Store.load(verify=True)``): hashing a
    large index on every open would cost more than the open itself.

    Parameters
    ----------
    root:
        The index directory.
    entry:
        The manifest's entry of the file (``file``, ``sha256``, ``bytes`` where recorded).
    what:
        What the entry is, for messages.
    checksum:
        Also compare the file's SHA-256 with the manifest's.
    checked:
        Entries already found inside ``root`` (:func:`path_in_root`).

    Returns
    -------
    str or None
        ``"listed in the manifest is missing"``, ``"has N bytes, the manifest records M
        (truncated or overwritten)"``, ``"failed its checksum (...)"``, or ``None``.

    Raises
    ------
    CorruptIndexError
        When the entry's path leaves the index directory (:func:`resolve_in_root`).
    """
    path = path_in_root(root, entry.get("file"), what, checked)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return "listed in the manifest is missing"
    expected = entry.get("bytes")
    if isinstance(expected, int) and size != expected:
        return f"has {size} bytes, the manifest records {expected} (truncated or overwritten)"
    if checksum:
        actual = sha256_file(path)
        want = str(entry.get("sha256"))
        if actual != want:
            return f"failed its checksum (expected {want[:12]}, got {actual[:12]})"
    return None


def resolve_in_root(
    root: Path, rel: Any, what: str = "file", real_root: Path | None = None
) -> Path:
    """The path of a manifest entry, which must stay inside the index directory.

    Parameters
    ----------
    root:
        The index directory.
    rel:
        The entry's path as the manifest writes it (relative, ``/``-separated).
    what:
        What the entry is, for the message.
    real_root:
        ``root.resolve()``, when the caller checks many entries (default: resolved here).

    Returns
    -------
    Path
        ``root / rel``.

    Raises
    ------
    CorruptIndexError
        When ``rel`` is not a non-empty relative path, is absolute, has a ``..`` component, or
        resolves (through a symlink) outside ``root``.
    """
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise CorruptIndexError(f"{root}: manifest lists {what} {rel!r}, which is not a file path")
    pure = PurePosixPath(rel)
    if (
        pure.is_absolute()
        or ".." in pure.parts
        or "\\" in rel
        or PureWindowsPath(rel).drive
        or pure == PurePosixPath(".")
    ):
        raise CorruptIndexError(
            f"{root}: manifest lists {what} {rel!r}, a path outside the index directory; "
            "refusing to open it"
        )
    path = root / pure
    if not path.resolve().is_relative_to(real_root or root.resolve()):
        raise CorruptIndexError(
            f"{root}: manifest lists {what} {rel!r}, which leads outside the index directory "
            "(a symlink?); refusing to open it"
        )
    return path


def path_in_root(
    root: Path, rel: Any, what: str, checked: set[str] | None, real_root: Path | None = None
) -> Path:
    """``root / rel`` if ``rel`` is in ``checked`` (found inside ``root`` before by this
    process: committed files are never rewritten in place), else :func:`resolve_in_root`
    (adding ``rel`` to ``checked``). Reading a segment resolved its path, with the index
    directory's, twice more after the manifest check had: 0.3 s of a 5.5 s open at 100k
    chunks under cProfile, a few syscalls per path component (issue 17)."""
    if checked is not None and isinstance(rel, str) and rel in checked:
        return root / rel
    path = resolve_in_root(root, rel, what, real_root)
    if checked is not None:
        checked.add(rel)
    return path


def verify_index_files(root: Path, manifest: dict[str, Any], all_versions: bool) -> FileCheck:
    """Hash every file ``manifest`` names (and, with ``all_versions``, every kept version's).

    Parameters
    ----------
    root:
        The index directory.
    manifest:
        Its current, verified manifest.
    all_versions:
        Also read every ``manifests/v*.json`` (each verified; a bad one is a problem of its
        own) and hash the files they name; a file shared by versions is read once.

    Returns
    -------
    FileCheck
        How many files were hashed, and one problem per bad file in manifest order.
    """
    manifests: list[tuple[str, dict[str, Any]]] = [(MANIFEST, manifest)]
    problems: list[FileProblem] = []
    if all_versions:
        for path in sorted((root / "manifests").glob("v*.json")):
            rel = str(path.relative_to(root))
            try:
                manifests.append((rel, read_manifest(path)))
            except IndexNotFoundError:  # removed since listed: a compaction committed
                continue
            except CorruptIndexError as exc:
                problems.append(FileProblem(rel, "manifest", str(exc)))
    seen: set[str] = set()
    for source, listed in manifests:
        try:
            entries = manifest_entries(listed)
        except CorruptIndexError as exc:
            problems.append(FileProblem(source, "manifest", str(exc)))
            continue
        for what, entry in entries:
            key = f"{entry.get('file')}\0{entry.get('sha256')}"
            if key in seen:
                continue
            seen.add(key)
            try:
                problem = file_problem(root, entry, what, checksum=True)
            except CorruptIndexError as exc:
                problem = str(exc)
            if problem is not None:
                problems.append(FileProblem(str(entry.get("file")), what, problem))
    return FileCheck(files=len(seen), problems=problems)


def check_manifest_paths(
    root: Path, manifest: dict[str, Any], checked: set[str] | None = None
) -> None:
    """Raise ``CorruptIndexError`` unless every file ``manifest`` names is inside ``root``.

    Parameters
    ----------
    root:
        The index directory.
    manifest:
        A verified manifest of that directory.
    checked:
        Entries already found inside ``root`` by this process (skipped; the ones checked
        now are added). A store re-reads its manifest on every write, and the manifest
        lists every segment since the build: resolving each path again (a few syscalls per
        path component) took 60 ms per write at 100k chunks (issue 17). Committed files are
        never rewritten in place, so an entry that was inside the directory stays there.
    """
    real_root = root.resolve()
    for what, rel in manifest_files(manifest):
        path_in_root(root, rel, what, checked, real_root)


# ------------------------------------------------------------------------ directory swaps
_SIBLING = re.compile(r"^\.(?P<name>.+)\.(?P<tag>new|old)-(?P<pid>\d+)-[0-9a-f]{8}$")


def sibling_path(target: Path, tag: str) -> Path:
    """A fresh hidden sibling of ``target``: ``.NAME.TAG-PID-XXXXXXXX``.

    Parameters
    ----------
    target:
        The index directory.
    tag:
        ``"new"`` (a build in progress) or ``"old"`` (the replaced index, set aside).

    Returns
    -------
    Path
        A path that does not exist yet, in the same folder (so renames are atomic).
    """
    return target.parent / f".{target.name}.{tag}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def leftover_siblings(target: Path, tag: str | None = None) -> list[Path]:
    """The ``.NAME.new-*`` / ``.NAME.old-*`` siblings of ``target``, newest first.

    Parameters
    ----------
    target:
        The index directory.
    tag:
        Only ``"new"`` or only ``"old"`` ones (default both).

    Returns
    -------
    list of Path
        Those whose owner process is no longer running (a live build's are not leftovers).
    """
    try:
        entries = list(target.parent.iterdir())
    except OSError:  # no parent folder, or not readable: nothing of ours can be there
        return []
    found = []
    for path in entries:
        m = _SIBLING.match(path.name)
        if not m or m["name"] != target.name or (tag and m["tag"] != tag):
            continue
        if not _pid_alive(int(m["pid"])):
            with contextlib.suppress(OSError):
                found.append((path.lstat().st_mtime, path))
    return [path for _, path in sorted(found, key=lambda item: item[0], reverse=True)]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_tree(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def replace_directory(new: Path, target: Path) -> None:
    """Swap the directory ``new`` in as ``target``; the old ``target`` (if any) is removed.

    Three renames in one folder: ``target`` → ``.NAME.old-PID-X``, ``new`` → ``target``, then
    the old one is deleted. A process killed between the first two leaves ``target`` missing
    and the old index beside it: :func:`recover_replace` puts it back.

    Parameters
    ----------
    new:
        A complete, committed index directory, a sibling of ``target``.
    target:
        The path it takes.
    """
    aside = None
    if target.exists() or target.is_symlink():
        aside = sibling_path(target, "old")
        os.rename(target, aside)
        fsync_dir(target.parent)
        crashpoint("swap_aside")
    try:
        os.rename(new, target)
    except BaseException:
        if aside is not None:
            os.rename(aside, target)
        raise
    fsync_dir(target.parent)
    crashpoint("swap_in")
    if aside is not None:
        with contextlib.suppress(OSError):  # a leftover is removed by the next recovery
            _remove_tree(aside)


def recover_replace(target: Path) -> list[str]:
    """Finish what an interrupted :func:`replace_directory` (or build) left beside ``target``.

    The rule: when ``target`` is missing, the newest ``.NAME.old-*`` sibling is renamed back to
    ``target`` (the rebuild is rolled back); every other ``.NAME.old-*`` sibling (the swap had
    completed) and every ``.NAME.new-*`` sibling (a build that never swapped in) is deleted.
    Siblings of a process that is still running are left alone.

    Parameters
    ----------
    target:
        The index directory.

    Returns
    -------
    list of str
        One sentence per action taken (empty when there was nothing to do).
    """
    done: list[str] = []
    for path in leftover_siblings(target, "old"):
        try:  # another recovering process may have taken it first
            if not target.exists() and not target.is_symlink():
                os.rename(path, target)
                fsync_dir(target.parent)
                done.append(f"restored {target} from {path.name}, left by an interrupted rebuild")
            else:
                _remove_tree(path)
                done.append(f"removed {path.name}, the old index of a completed rebuild")
        except FileNotFoundError:
            continue
    for path in leftover_siblings(target, "new"):
        with contextlib.suppress(FileNotFoundError):
            _remove_tree(path)
            done.append(f"removed {path.name}, left by an interrupted build")
    return done


@contextlib.contextmanager
def removing_on_failure(paths: list[Path]) -> Iterator[list[Path]]:
    """Delete every path appended to ``paths`` if the block raises (the partial files of a write).

    Parameters
    ----------
    paths:
        Files the block writes; append each one before writing it.

    Yields
    ------
    list of Path
        ``paths``.
    """
    try:
        yield paths
    except BaseException:
        for path in paths:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        raise
