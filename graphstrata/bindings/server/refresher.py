"""The served index follows versions that other processes commit (issue 51, #7).

``graphstrata insert``, ``compact`` or ``maintain`` run beside the service commit new versions
of the index it serves. A background thread stats the index's ``manifest.json`` every
``ServerSettings.refresh_interval_s`` seconds (one ``stat`` call: no read while nothing
changed) and, when its identity (inode, size, mtime) changed, moves the index to the newest
version (``Index.refresh``, which never goes back to an older version than it serves). A commit
made elsewhere is thus served within one interval plus the time to load it. A refresh that
fails (the files of a version compacted away meanwhile) is retried at the next look.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING

from graphstrata.bindings.api import MANIFEST, StoreError
from graphstrata.bindings.server.metrics import ServiceMetrics

if TYPE_CHECKING:
    from graphstrata.bindings.api import Index

log = logging.getLogger(__name__)

Signature = tuple[int, int, int] | None


class VersionWatcher:
    """Polls the manifest of ``index`` and refreshes it when another process committed.

    Parameters
    ----------
    index:
        The served index.
    interval_s:
        Seconds between looks (0: never look; :meth:`start` does nothing).
    metrics:
        Where the served version goes after a move.
    """

    def __init__(self, index: Index, interval_s: float, metrics: ServiceMetrics):
        self.index = index
        self.interval_s = interval_s
        self.metrics = metrics
        self.refreshes = 0
        self._seen = self._signature()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start polling (unless the interval is 0)."""
        if self.interval_s > 0:
            self._thread = threading.Thread(target=self._loop, name="gs-refresh", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop polling (a refresh under way finishes first)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def poll(self) -> bool:
        """Look once: refresh the index if its manifest changed since the last look.

        Returns
        -------
        bool
            True when the index moved to a newer version.
        """
        seen = self._signature()
        if seen == self._seen:
            return False
        try:
            moved = self.index.refresh()
        except (StoreError, OSError) as exc:  # retried at the next look
            log.warning("could not load the newest version of %s: %s", self.index.path, exc)
            return False
        self._seen = seen
        if moved:
            self.refreshes += 1
            self.metrics.observe_index(self.index)
        return moved

    def _signature(self) -> Signature:
        try:
            st = os.stat(self.index.path / MANIFEST)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll()
            except Exception:  # never let the watcher die: the next look tries again
                log.exception("refreshing %s failed", self.index.path)
