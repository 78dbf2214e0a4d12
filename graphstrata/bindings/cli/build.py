"""``graphstrata index``: build a new index beside ``--out`` and swap it in once committed.

Nothing is lost by a careless command:

* The source is read and every document validated before anything on disk changes: a missing
  or mistyped source, an invalid document or a source without documents changes nothing.
* ``--out`` must be absent, empty, hold only an LLM cache kept from a failed build, or, with
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
* Recovery, at the start of the next ``graphstrata index --out NAME``: if ``NAME`` is missing
  (a process killed between the two renames), the newest ``.NAME.old-*`` is renamed back: the
  rebuild is rolled back. Every other ``.NAME.old-*`` (the swap had completed) and every
  ``.NAME.new-*`` (a build that never swapped in) is deleted. Leftovers of a process that is
  still running are left alone (``recover_replace``).
* ``--ray [ADDRESS]`` changes only where the model work runs: the source is read, validated
  and chunked by Ray tasks and the embedding and LLM batches go to the cluster
  (:mod:`graphstrata.bindings.distributed`); the checks above, the build beside ``NAME``, the
  swap and the LLM cache are the same. ``insert`` takes the flag too (:func:`insert_with_ray`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphstrata.bindings.cli.common import CLIError, Progress

if TYPE_CHECKING:
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.distributed import RaySession
    from graphstrata.bindings.distributed.cluster import RayOptions
    from graphstrata.bindings.distributed.documents import PreparedDocs
    from graphstrata.engine.config import IndexConfig


def build_index(args: argparse.Namespace, cfg: IndexConfig) -> dict[str, Any]:
    """Build the index of ``args.source`` at ``args.out`` safely (see the module docstring).

    Parameters
    ----------
    args:
        ``index`` arguments: ``source``, ``out``, ``force``, ``json``, ``embedder``, ``llm``,
        ``no_cache``, and ``ray`` / ``ray_actors`` (:func:`add_ray_args`; absent: one machine).
    cfg:
        The validated config of the new index.

    Returns
    -------
    dict
        The insert's report (``OperationReport.to_dict()``).

    Raises
    ------
    CLIError
        When ``--out`` may not be (re)built, or the source holds no documents.
    DocumentError
        When a document is invalid (nothing changed).
    """
    from graphstrata.engine.store.files import recover_replace

    out = _target_path(Path(args.out))
    for line in recover_replace(out):
        print(f"graphstrata index: {line}", file=sys.stderr)
    check_target(out, args.force)
    with contextlib.ExitStack() as stack:
        session = _ray_session(args, stack)
        return _build(args, cfg, out, session)


def _build(
    args: argparse.Namespace, cfg: IndexConfig, out: Path, session: RaySession | None
) -> dict[str, Any]:
    """:func:`build_index` once ``out`` was checked (``session``: the ``--ray`` cluster)."""
    from graphstrata.bindings.api import LLM_CACHE_FILE, Index
    from graphstrata.engine.documents import as_documents, read_documents, validate_batch
    from graphstrata.engine.store import MANIFEST, Store
    from graphstrata.engine.store.files import replace_directory, sibling_path

    prepared: PreparedDocs | None = None
    try:
        if session is not None:
            prepared = session.prepare(args.source, cfg)  # validated as one batch there
            docs = prepared.docs
        else:
            docs = as_documents(read_documents(args.source))
    except OSError as exc:  # a missing or unreadable source
        exc.add_note("nothing was changed")
        raise
    validate_batch(docs, cfg.ingest)
    if not docs:
        raise CLIError(
            f"{args.source} holds no documents (.txt/.md files of a folder, or lines of a "
            f".jsonl file); nothing was changed"
        )
    created = [p for p in out.parents if not p.exists()]
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = sibling_path(out, "new")
    index: Index | None = None
    carried = 0
    try:
        stage.mkdir()
        carried = carry_cache(out / LLM_CACHE_FILE, stage / LLM_CACHE_FILE)
        progress = Progress(not args.json)
        try:
            if session is not None and prepared is not None:
                session.meter.progress = progress
                index = session.create(
                    stage, cfg, embedder=args.embedder, llm=args.llm, use_cache=not args.no_cache
                )
                report = session.insert(index, prepared, progress).report
            else:
                index = Index.create(
                    stage, cfg, embedder=args.embedder, llm=args.llm, use_cache=not args.no_cache
                )
                report = index.insert(docs, progress=progress)
        finally:
            progress.close()
        close_backends(index)
        if (out / MANIFEST).exists():
            # No writer of the old index (a server's insert, say) may be mid-commit meanwhile.
            with Store.open(out).writer(wait=30.0):
                replace_directory(stage, out)
        else:
            replace_directory(stage, out)
    except BaseException as exc:
        if index is not None:
            close_backends(index)
        if stage.exists():  # else it was swapped in and only a last fsync failed
            existed = out.exists()
            kept, problem = _discard(stage, out, carried)
            if not out.exists():
                for parent in created:  # deepest first: the folders this run created
                    with contextlib.suppress(OSError):
                        parent.rmdir()
            exc.add_note(_discard_note(out, existed, kept, problem, LLM_CACHE_FILE))
        raise
    return report.to_dict()


def _target_path(out: Path) -> Path:
    """``--out`` as an absolute path (``.`` has a name then), a symlink to a folder followed.

    The build happens beside the folder the link points to, so the link keeps naming the
    index.

    Raises
    ------
    CLIError
        For the root folder, which has no sibling to build in.
    """
    if out.is_symlink() and out.exists():
        out = out.resolve()
    out = Path(os.path.abspath(out))
    if out.parent == out:
        raise CLIError(f"{out} cannot hold an index; choose a folder for --out")
    return out


def check_target(out: Path, force: bool) -> None:
    """Refuse an ``--out`` that may not be built or rebuilt (module docstring).

    Parameters
    ----------
    out:
        The index directory.
    force:
        ``--force``: replace a graphstrata index there.

    Raises
    ------
    CLIError
        Naming why, before anything is read or written.
    """
    from graphstrata.bindings.api import LLM_CACHE_FILE
    from graphstrata.engine.store import MANIFEST, StoreError, read_manifest
    from graphstrata.engine.store.files import INDEX_ENTRIES, check_manifest_paths

    if not out.exists():
        if out.is_symlink():
            raise CLIError(f"{out} is a dangling symbolic link; refusing to build there")
        return
    if not out.is_dir():
        raise CLIError(f"{out} exists and is not a folder; refusing to build there")
    entries = sorted(p.name for p in out.iterdir())
    manifest = out / MANIFEST
    if manifest.exists() or manifest.is_symlink():
        try:
            check_manifest_paths(out, read_manifest(manifest))
        except StoreError as exc:
            raise CLIError(
                f"{out} holds a {MANIFEST} but is not a valid graphstrata index ({exc}); "
                "refusing to replace it, with or without --force (move it away yourself if it "
                "is disposable)"
            ) from exc
        if not force:
            version = manifest_version(out)
            empty = (
                " (an empty one, version 0: nothing was ever committed to it)"
                if version == 0
                else ""
            )
            raise CLIError(
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
            raise CLIError(
                f"{out} holds an index but also {_names(foreign)}, which --force would delete; "
                "move them out of the index folder first"
            )
        return
    foreign = [n for n in entries if n != "LOCK" and not n.startswith(LLM_CACHE_FILE)]
    if foreign:
        raise CLIError(
            f"{out} exists, is not empty ({_names(foreign)}) and holds no graphstrata index; "
            "refusing to build there, with or without --force (choose another --out)"
        )


def manifest_version(out: Path) -> int | None:
    """The committed version of the index at ``out`` (None when it cannot be read)."""
    from graphstrata.engine.store import MANIFEST, StoreError, read_manifest

    try:
        return int(read_manifest(out / MANIFEST)["version"])
    except (StoreError, KeyError, TypeError, ValueError):
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
    CLIError
        When the cache cannot be read (the old index is unchanged).
    """
    if not src.is_file():
        return 0
    try:
        _backup(src, dst)
        return _rows(dst)
    except sqlite3.Error as exc:
        raise CLIError(
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
    from graphstrata.bindings.api import LLM_CACHE_FILE

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


def close_backends(index: Index) -> None:
    """Close the index's LLM and embedder (the LLM cache's SQLite file first of all).

    Parameters
    ----------
    index:
        The index just built; it is not used afterwards.
    """
    for backend in (index.engine.llm, index.engine.embedder):
        close = getattr(backend, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()


# ------------------------------------------------------------------------ --ray
def add_ray_args(sub: Any) -> None:
    """Add ``--ray [ADDRESS]`` and ``--ray-actors`` to ``index`` and ``insert``.

    With ``--ray`` the command runs its model work on a Ray cluster
    (:mod:`graphstrata.bindings.distributed`); everything else (the checks of ``--out``, the
    build beside it and the swap, the LLM cache) is the command's own. ``insert`` is routed
    to :func:`insert_with_ray` when the flag is given.

    Parameters
    ----------
    sub:
        The ``add_subparsers()`` action, after the index commands were registered.
    """
    for name in ("index", "insert"):
        p = sub.choices[name]
        p.add_argument(
            "--ray",
            nargs="?",
            const="",
            default=None,
            metavar="ADDRESS",
            help="run embedding and LLM batches on a Ray cluster (extra `ray`): ADDRESS of "
            "the head (auto, HOST:6379, ray://HOST:10001); alone, RAY_ADDRESS or a local "
            "cluster. Put it after the positional arguments",
        )
        p.add_argument(
            "--ray-actors",
            type=int,
            dest="ray_actors",
            help="actors per model pool (default: the cluster's GPUs, else its CPUs)",
        )
    insert = sub.choices["insert"]
    insert.set_defaults(func=functools.partial(_insert_command, insert.get_default("func")))


def _ray_options(args: argparse.Namespace) -> RayOptions:
    from graphstrata.bindings.distributed import RayOptions

    try:
        return RayOptions(address=args.ray or None, actors=getattr(args, "ray_actors", None))
    except ValueError as exc:
        raise CLIError(f"--ray-actors: {exc}") from exc


def _ray_session(args: argparse.Namespace, stack: contextlib.ExitStack) -> RaySession | None:
    """The ``--ray`` cluster for this command (entered on ``stack``), or None without it."""
    if getattr(args, "ray", None) is None:
        return None
    from graphstrata.bindings.distributed import RaySession

    return stack.enter_context(RaySession(_ray_options(args)))


def _insert_command(plain: Any, args: argparse.Namespace) -> int:
    if getattr(args, "ray", None) is None:
        return int(plain(args))
    return insert_with_ray(args)


def insert_with_ray(args: argparse.Namespace) -> int:
    """``graphstrata insert INDEX SOURCE --ray [ADDRESS]``: the insert on a Ray cluster.

    Parameters
    ----------
    args:
        ``insert`` arguments with ``ray`` set.

    Returns
    -------
    int
        0 (failures raise; the index stays at its last committed version).
    """
    from graphstrata.bindings.cli.common import print_report
    from graphstrata.bindings.distributed.build import index_config

    progress = Progress(not args.json)
    try:
        with contextlib.ExitStack() as stack:
            session = _ray_session(args, stack)
            assert session is not None
            session.meter.progress = progress
            prepared = session.prepare(args.source, index_config(args.index))
            index = session.open(
                args.index, embedder=args.embedder, llm=args.llm, use_cache=not args.no_cache
            )
            result = session.insert(index, prepared, progress)
    finally:
        progress.close()
    print_report(result.report.to_dict(), args.json)
    return 0
