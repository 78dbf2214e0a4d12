"""Writes prepare without the writer lock and commit under it (decision 0032): the LLM work
of an insert runs while another writer may take ``LOCK``; a commit that another process made
meanwhile makes the write prepare again on it; nothing is lost."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from graphstrata.bindings.api import Index
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.engine import LLMRequest, LLMResponse
from graphstrata.engine.store import Store


class DuringLLM:
    """The extractive LLM, running ``hook`` in its first ``times`` calls (what another
    process does while an upstream LLM thinks)."""

    def __init__(self, hook: Callable[[], None], times: int = 1):
        self.inner, self.hook, self.times = ExtractiveLLM(), hook, times

    @property
    def name(self) -> str:
        return self.inner.name

    def complete(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        if self.times > 0:
            self.times -= 1
            self.hook()
        return self.inner.complete(requests)


def _doc(doc_id: str, text: str) -> dict[str, str]:
    return {"doc_id": doc_id, "text": text}


def _doc_ids(path) -> set[str]:
    return {d for d, _ in Index.open(path, embedder="hashing:64").pinned().documents()}


def test_the_lock_is_free_while_the_llm_works_and_a_lone_write_prepares_once(
    make_index, sample_docs
):
    index = make_index()
    index.insert(sample_docs[:6])
    root = index.engine.store.root
    taken: list[int] = []

    def take_the_lock() -> None:
        with Store.open(root).writer():  # fails at once if the insert held LOCK
            taken.append(1)

    writer = Index.open(root, embedder=index.engine.embedder, llm=DuringLLM(take_the_lock, 99))
    report = writer.insert(sample_docs[6:9])
    assert taken  # the LLM was called, and each time the lock was free
    assert not any("prepared again" in n for n in report.notes), report.notes
    assert report.docs_added == 3 and report.version == index.engine.store.version + 1


def test_a_commit_made_while_preparing_makes_the_write_prepare_again(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:6])
    root = index.engine.store.root
    other = Index.open(root, embedder=index.engine.embedder)

    def commit_another() -> None:
        other.insert([_doc("other", "Brekkvik's ferry sails at dawn across the fjord.")])

    writer = Index.open(root, embedder=index.engine.embedder, llm=DuringLLM(commit_another))
    report = writer.insert(sample_docs[6:9])
    assert any("prepared again" in n for n in report.notes), report.notes
    assert report.docs_added == 3 and report.version == other.version + 1
    assert {"other", *(d["doc_id"] for d in sample_docs[:9])} <= _doc_ids(root)


def test_a_write_under_constant_contention_ends_under_the_lock(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:4])
    root = index.engine.store.root
    other = Index.open(root, embedder=index.engine.embedder)
    counter = iter(range(100))

    def commit_another() -> None:  # on every prepare outside the lock; under it, blocked
        try:
            other.insert([_doc(f"o{next(counter)}", "The lighthouse keeper logs the ships.")])
        except Exception as exc:  # IndexLockedError: the last try holds the lock
            assert "locked" in str(exc)

    writer = Index.open(root, embedder=index.engine.embedder, llm=DuringLLM(commit_another, 99))
    report = writer.insert(sample_docs[4:7])
    assert sum("prepared again" in n for n in report.notes) == 2, report.notes
    assert report.docs_added == 3
    assert {"o0", "o1", *(d["doc_id"] for d in sample_docs[:7])} <= _doc_ids(root)


def test_a_delete_prepares_outside_the_lock_too(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:8])
    root = index.engine.store.root
    other = Index.open(root, embedder=index.engine.embedder)

    def commit_another() -> None:
        other.insert([_doc("other", "Brekkvik's ferry sails at dawn across the fjord.")])

    writer = Index.open(root, embedder=index.engine.embedder, llm=DuringLLM(commit_another))
    gone = [d["doc_id"] for d in sample_docs[:2]]
    report = writer.delete(gone)
    assert report.docs_deleted == 2
    assert any("prepared again" in n for n in report.notes), report.notes
    left = _doc_ids(root)
    assert "other" in left and not set(gone) & left
