"""``Index.rebuild`` (``graphstrata index``): build a new index beside ``NAME`` and swap it in
once committed.

Nothing is lost by a careless command:

* The source is read and every document validated before anything on disk changes: a missing
  or mistyped source, an invalid document or a source without documents changes nothing.
* ``NAME`` must be absent, empty, hold only an LLM cache kept from a failed build, or, with
  ``--force``, hold a graphstrata index: a folder whose ``manifest.json`` carries the format
  marker and a valid checksum (``engine/store/files.py``, ``read_manifest``) and that holds
  nothing but the store's own entries and its LLM cache. Anything else is refused, ``--force``
  or not; a folder is never taken for an index because of a file name.
* The new index is built in a hidden sibling ``.NAME.new-PID-XXXXXXXX`` (same folder, so the
  swap is a rename); the LLM response cache of the index it replaces is copied in first, so a
  rebuild pays only for prompts it has not seen. Once the new index has committed, it is
  swapped in, holding the old index's writer lock: ``NAME`` → ``.NAME.old-PID-XXXXXXXX``, the
  new one → ``NAME``, the old one deleted (``replace_directory``).
* A failed build deletes its sibling; the LLM answers it paid for are merged into
  ``NAME/llm-cache.sqlite`` (a first build then leaves ``NAME`` holding only that file), so a
  plain rerun resumes paying only for what was not answered.
* Recovery, at the start of the next rebuild of ``NAME``: if ``NAME`` is missing
  (a process killed between the two renames), the newest ``.NAME.old-*`` is renamed back: the
  rebuild is rolled back. Every other ``.NAME.old-*`` (the swap had completed) and every
  ``.NAME.new-*`` (a build that never swapped in) is deleted. Leftovers of a process that is
  still running are left alone (``recover_replace``).
* A Ray session (``graphstrata index --ray``) changes only where the model work runs: the
  source is read, validated and chunked by Ray tasks and the embedding and LLM batches go to
  the cluster (:mod:`graphstrata.bindings.distributed`); the checks above, the build beside
  ``NAME``, the swap and the LLM cache are the same.

The index directory's primitives (manifest checks, sibling names, the swap under the old
index's writer lock, the recovery) are the engine's (``engine/directory.py``); the LLM cache
and the order of the steps are this module's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Protocol, TypeVar

from graphstrata.bindings.registry import LLM_CACHE_FILE
from graphstrata.engine import (
    INDEX_ENTRIES,
    MANIFEST,
    Document,
    IndexConfig,
    OperationReport,
    StoreError,
    check_index_folder,
    check_no_live_writer,
    recover_replace,
    sibling_path,
    swap_in,
    validate_batch,
)


class RebuildError(ValueError):
    """A rebuild refused before anything changed (a target that may not be replaced, a
    source without documents)."""


class Closable(Protocol):
    """A built index: its backends are closed before the swap."""

    def close(self) -> None: ...


B = TypeVar("B", bound=Closable)


def rebuild(
    out: Path,
    source: object,
    cfg: IndexConfig,
    *,
    force: bool,
    prepare: Callable[[], list[Document]],
    create: Callable[[Path], B],
    insert: Callable[[B, list[Document]], OperationReport],
    on_recover: Callable[[str], None] | None = None,
) -> OperationReport:
    """Build the index of ``source`` at ``out`` safely (see the module docstring).

    Parameters
    ----------
    out:
        The index directory.
    source:
        The documents' source (named in errors).
    cfg:
        The validated config of the new index.
    force:
        Replace an index at ``out``.
    prepare:
        Reads the source (``OSError`` when it is missing or unreadable).
    create:
        Creates the new, empty index in a folder.
    insert:
        Inserts the documents into it.
    on_recover:
        Told one line per leftover of an interrupted rebuild that was cleaned up.

    Returns
    -------
    OperationReport
        The insert's report.

    Raises
    ------
    RebuildError
        When ``out`` may not be (re)built, or the source holds no documents.
    DocumentError
        When a document is invalid (nothing changed).
    """
    out = target_path(out)
    for line in recover_replace(out):
        if on_recover is not None:
            on_recover(line)
    version = check_target(out, force)
    try:
        docs = prepare()
    except OSError as exc:  # a missing or unreadable source
        exc.add_note("nothing was changed")
        raise
    validate_batch(docs, cfg.ingest)
    if not docs:
        raise RebuildError(
            f"{source} holds no documents (.txt/.md files of a folder, or lines of a "
            f".jsonl file); nothing was changed"
        )
    created = [p for p in out.parents if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = sibling_path(out, "new")
    index: B | None = None
    carried = 0
    try:
        stage.mkdir()
        carried = carry_cache(out / LLM_CACHE_FILE, stage / LLM_CACHE_FILE)
        index = create(stage)
        report = insert(index, docs)
        index.close()
        swap_in(stage, out, expect_version=version)
    except BaseException as exc:
        if index is not None:
            index.close()
        if stage.exists():  # else it was swapped in and only a last fsync failed
            existed = out.exists()
            kept, problem = _discard(stage, out, carried)
            if not out.exists():
                for parent in created:  # deepest first: the folders this run created
                    with contextlib.suppress(OSError):
                        parent.rmdir()
            exc.add_note(_discard_note(out, existed, kept, problem, LLM_CACHE_FILE))
        raise
    return report


def target_path(out: Path) -> Path:
    """``path`` as an absolute path (``.`` has a name then), a symlink to a folder followed.

    The build happens beside the folder the link points to, so the link keeps naming the
    index.

    Raises
    ------
    RebuildError
        For the root folder, which has no sibling to build in.
    """
    if out.is_symlink() and out.exists():
        out = out.resolve()
    out = Path(os.path.abspath(out))
    if out.parent == out:
        raise RebuildError(f"{out} cannot hold an index; choose another folder")
    return out


def check_target(out: Path, force: bool) -> int | None:
    """Refuse a ``path`` that may not be built or rebuilt (module docstring).

    Parameters
    ----------
    out:
        The index directory.
    force:
        Replace a graphstrata index there.

    Returns
    -------
    int or None
        The version of the index to replace (None when there is none).

    Raises
    ------
    RebuildError
        Naming why, before anything is read or written.
    IndexLockedError
        When a long-lived writer (a server) is registered at ``out``.
    """
    if not out.exists():
        if out.is_symlink():
            raise RebuildError(f"{out} is a dangling symbolic link; refusing to build there")
        return None
    if not out.is_dir():
        raise RebuildError(f"{out} exists and is not a folder; refusing to build there")
    entries = sorted(p.name for p in out.iterdir())
    manifest = out / MANIFEST
    if manifest.exists() or manifest.is_symlink():
        try:
            version = check_index_folder(out)
        except StoreError as exc:
            raise RebuildError(
                f"{out} holds a {MANIFEST} but is not a valid graphstrata index ({exc}); "
                "refusing to replace it, with or without --force (move it away yourself if it "
                "is disposable)"
            ) from exc
        if not force:
            empty = (
                " (an empty one, version 0: nothing was ever committed to it)"
                if version == 0
                else ""
            )
            raise RebuildError(
                f"{out} already holds an index{empty}; use `graphstrata insert` to add "
                "documents, or --force to rebuild it"
            )
        foreign = [
            name
            for name in entries
            if name not in INDEX_ENTRIES
            and not name.startswith(LLM_CACHE_FILE)
            and not (name.startswith(".") and name.endswith(".tmp"))
        ]
        if foreign:
            raise RebuildError(
                f"{out} holds an index but also {_names(foreign)}, which --force would delete; "
                "move them out of the index folder first"
            )
        check_no_live_writer(out, "rebuilding it")
        return version
    foreign = [n for n in entries if n != "LOCK" and not n.startswith(LLM_CACHE_FILE)]
    if foreign:
        raise RebuildError(
            f"{out} exists, is not empty ({_names(foreign)}) and holds no graphstrata index; "
            "refusing to build there, with or without --force (choose another --out)"
        )
    return None


def _names(names: list[str]) -> str:
    more = f" and {len(names) - 5} more" if len(names) > 5 else ""
    return ", ".join(names[:5]) + more


# ------------------------------------------------------------------------ the LLM cache
def carry_cache(src: Path, dst: Path) -> int:
    """Copy the LLM response cache of the index being replaced into the new one.

    The copy goes through SQLite's backup API, so it is consistent even while another process
    writes the cache (WAL mode).

    Parameters
    ----------
    src:
        ``OLD/llm-cache.sqlite`` (nothing happens when it does not exist).
    dst:
        ``NEW/llm-cache.sqlite``.

    Returns
    -------
    int
        The rows copied.

    Raises
    ------
    RebuildError
        When the cache cannot be read (the old index is unchanged).
    """
    if not src.is_file():
        return 0
    try:
        _backup(src, dst)
        return _rows(dst)
    except sqlite3.Error as exc:
        raise RebuildError(
            f"cannot copy the LLM cache {src} into the new index ({exc}); nothing was changed "
            "(move the cache away or delete it, then rerun)"
        ) from exc


def _discard(stage: Path, out: Path, carried: int) -> tuple[int, str]:
    """Delete a failed build's folder, merging the LLM answers it paid for into ``out``'s cache.

    Returns
    -------
    tuple
        ``(answers kept, problem)``: how many new answers were kept, and why none could be
        (``""`` when nothing went wrong).
    """
    kept, problem = 0, ""
    cache = stage / LLM_CACHE_FILE
    try:
        fresh = (_rows(cache) - carried) if cache.is_file() else 0
        if fresh > 0:
            target = out / LLM_CACHE_FILE
            if target.is_file():
                _merge(cache, target)
            else:
                out.mkdir(exist_ok=True)
                _backup(cache, target)
            kept = fresh
    except (OSError, sqlite3.Error) as exc:
        problem = f"its LLM answers could not be kept ({exc})"
    shutil.rmtree(stage, ignore_errors=True)
    return kept, problem


def _discard_note(out: Path, existed: bool, kept: int, problem: str, cache: str) -> str:
    """The sentence added to a failed build's error: what is (not) left at ``out``."""
    if kept and not existed:
        note = (
            f"the build was discarded; {out} holds only {cache} with the {kept} LLM answer(s) "
            "it paid for, which a rerun reuses"
        )
    elif kept:
        note = (
            f"the build was discarded; {out} is unchanged but for the {kept} LLM answer(s) it "
            f"paid for, added to its {cache} for a rerun"
        )
    else:
        note = f"the build was discarded; {out} {'is unchanged' if existed else 'was not created'}"
    return f"{note}; {problem}" if problem else note


def _backup(src: Path, dst: Path) -> None:
    source = sqlite3.connect(src, timeout=30.0)
    try:
        target = sqlite3.connect(dst, timeout=30.0)
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()


def _rows(path: Path) -> int:
    conn = sqlite3.connect(path, timeout=30.0)
    try:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
            )
        ]
        return sum(
            int(conn.execute(f"SELECT COUNT(*) FROM {_quote(t)}").fetchone()[0]) for t in tables
        )
    finally:
        conn.close()


def _merge(src: Path, dst: Path) -> None:
    """Add the rows of ``src`` that ``dst`` lacks (same tables; ``dst`` may be in use)."""
    conn = sqlite3.connect(dst, timeout=30.0, isolation_level=None)
    try:
        conn.execute("ATTACH DATABASE ? AS kept", (str(src),))
        query = "SELECT name FROM {}.sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        mine = {r[0] for r in conn.execute(query.format("main"))}
        theirs = [r[0] for r in conn.execute(query.format("kept"))]
        conn.execute("BEGIN IMMEDIATE")
        for table in theirs:
            if table in mine:
                name = _quote(table)
                conn.execute(f"INSERT OR IGNORE INTO main.{name} SELECT * FROM kept.{name}")
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE kept")
    finally:
        conn.close()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
