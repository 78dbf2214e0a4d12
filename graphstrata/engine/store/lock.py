"""The one-writer lock of an index directory, and what the last holder left in it.

A writer holds ``LOCK`` (``flock``) with its pid in it and empties it when it lets go. A
writer that died leaves its pid; one whose failed write could not remove a file it wrote
leaves :data:`LEFTOVERS`. The next writer reads that first (:attr:`HeldLock.left`), so it
sweeps the files no manifest names only when there can be some (``Store.writer``): the sweep
reads every history manifest and lists the segments, O(versions) per write (issue 17).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from graphstrata.engine.store.errors import IndexLockedError

__all__ = ["LEFTOVERS", "HeldLock", "held_lock"]

#: What ``LOCK`` holds after a writer's failed write left files it could not remove.
LEFTOVERS = "leftovers"


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
