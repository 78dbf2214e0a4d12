"""The one-writer lock of an index directory, and what the last holder left in it.

A writer holds ``LOCK`` (``flock``) with its pid in it and empties it when it lets go. A
writer that died leaves its pid; one whose failed write could not remove a file it wrote
leaves :data:`LEFTOVERS`. The next writer reads that first (:attr:`HeldLock.left`), so it
sweeps the files no manifest names only when there can be some (``Store.writer``): the sweep
reads every history manifest and lists the segments, O(versions) per write (issue 17).

A long-lived writer (``graphstrata serve``) takes ``LOCK`` only per transaction, so between
two of its writes nothing in ``LOCK`` says it is there. It registers in :data:`LIVE_WRITERS`
instead (:func:`live_writer`): one file per process, ``flock``-ed for as long as it serves,
holding its pid (in the name) and its command. A rebuild reads the registry
(:func:`live_writers`) and refuses to swap an index out from under a live writer, whose
acknowledged writes would vanish with the old directory (issue 51, #6). A registration whose
process died is unlocked and swept by the next reader.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from graphstrata.engine.store.errors import IndexLockedError

__all__ = [
    "LEFTOVERS",
    "LIVE_WRITERS",
    "HeldLock",
    "LiveWriter",
    "held_lock",
    "live_writer",
    "live_writers",
]

#: What ``LOCK`` holds after a writer's failed write left files it could not remove.
LEFTOVERS = "leftovers"

#: The folder of an index where long-lived writers register (:func:`live_writer`).
LIVE_WRITERS = "writers"


@dataclass
class HeldLock:
    """The lock while held.

    Attributes
    ----------
    left:
        What the previous holder left in ``LOCK``: empty after a clean hand-over, a pid
        after a writer that died, :data:`LEFTOVERS` after files a failed write left.
    leave:
        What this holder leaves when it lets go (empty: a clean hand-over).
    """

    left: str
    leave: str = ""


@contextlib.contextmanager
def held_lock(root: Path, wait: float = 0.0) -> Iterator[HeldLock]:
    """Hold ``root/LOCK``, waiting up to ``wait`` seconds for another writer.

    Raises
    ------
    IndexLockedError
        When another writer still holds it after ``wait`` seconds.
    """
    with open(root / "LOCK", "a+") as fh:
        _acquire(fh, root, wait)
        held = HeldLock("")
        try:
            fh.seek(0)
            held.left = fh.read().strip()
            _rewrite(fh, str(os.getpid()))
            yield held
        finally:
            _rewrite(fh, held.leave)
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _rewrite(fh: IO[str], text: str) -> None:
    fh.seek(0)
    fh.truncate()
    if text:
        fh.write(text)
    fh.flush()


def _acquire(fh: IO[str], root: Path, wait: float) -> None:
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError as exc:
            if time.monotonic() >= deadline:
                fh.seek(0)
                holder = fh.read().strip() or "unknown"
                raise IndexLockedError(
                    f"{root} is locked by another writer (pid {holder}); one writer at a time"
                ) from exc
            time.sleep(0.05)


# ------------------------------------------------------------------ long-lived writers
@dataclass(frozen=True)
class LiveWriter:
    """A process registered as a long-lived writer of an index (:func:`live_writer`)."""

    pid: int
    command: str

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.command})"


@contextlib.contextmanager
def live_writer(root: Path, command: str, wait: float = 30.0) -> Iterator[None]:
    """Register this process as a long-lived writer of the index at ``root`` meanwhile.

    The registration is made under ``LOCK``, so it and a rebuild's swap (which reads the
    registry under ``LOCK``) happen one after the other: either the rebuild sees this writer
    and refuses, or it swapped first and this writer registers in the new index.

    Parameters
    ----------
    root:
        The index directory.
    command:
        What the process is, as a rebuild names it (e.g. ``"graphstrata serve"``).
    wait:
        How long to wait for ``LOCK``.

    Raises
    ------
    OSError
        When the registry cannot be written (a read-only index folder).
    IndexLockedError
        When another writer holds ``LOCK`` for more than ``wait`` seconds.
    """
    folder = root / LIVE_WRITERS
    name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    path = folder / name
    with held_lock(root, wait) as lock:
        lock.leave = lock.left  # what the last writer left is for the next writer to sweep
        folder.mkdir(exist_ok=True)
        tmp = folder / f".{name}.tmp"
        fh = open(tmp, "w")  # noqa: SIM115 - held open (and locked) while the block runs
        try:
            # Locked before it gets its name, so no reader ever finds it unlocked and sweeps it.
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            fh.write(command)
            fh.flush()
            os.replace(tmp, path)
        except BaseException:
            fh.close()
            tmp.unlink(missing_ok=True)
            raise
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        fh.close()


def live_writers(root: Path) -> list[LiveWriter]:
    """The processes registered as live writers of the index at ``root``.

    A registration left by a process that died is not locked any more: it is removed.
    """
    try:
        paths = sorted(p for p in (root / LIVE_WRITERS).iterdir() if not p.name.startswith("."))
    except OSError:  # no registry: nobody ever registered
        return []
    found = []
    for path in paths:
        try:
            fh = open(path)  # noqa: SIM115 - closed below whatever happens
        except OSError:  # unregistered meanwhile
            continue
        with fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                pid = path.name.split("-", 1)[0]
                found.append(LiveWriter(int(pid) if pid.isdigit() else -1, fh.read().strip()))
                continue
            with contextlib.suppress(OSError):
                path.unlink()
    return found
