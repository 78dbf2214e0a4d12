"""``compact --wait``: compacting an index whose lock a running writer holds."""

from __future__ import annotations

import threading

import pytest

from graphstrata.bindings.api import Index
from graphstrata.engine.store import IndexLockedError, Store


def test_compact_waits_for_the_lock_or_fails_at_once(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:4])
    index.insert(sample_docs[4:6])
    root = index.engine.store.root
    held, release = threading.Event(), threading.Event()

    def other_writer() -> None:
        with Store.open(root).writer():
            held.set()
            release.wait(30)

    thread = threading.Thread(target=other_writer)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(IndexLockedError):
            Index.open(root, embedder=index.engine.embedder).compact()
        threading.Timer(1.0, release.set).start()
        report = Index.open(root, embedder=index.engine.embedder).compact(wait=30)
        assert release.is_set()  # it returned only after the other writer let go
    finally:
        release.set()
        thread.join()
    reopened = Index.open(root, embedder=index.engine.embedder)
    assert reopened.stats()["version"] == report.version
    assert all(n <= 1 for n in reopened.stats()["segments"].values()), reopened.stats()["segments"]
