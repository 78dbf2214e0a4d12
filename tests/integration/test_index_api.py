"""The Python API over the sample corpus: insert, update, no-op, delete, bad input, reopen."""

from __future__ import annotations

import numpy as np
import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.engine.config import ConfigError, IndexConfig
from graphstrata.engine.documents import DocumentError

pytestmark = pytest.mark.integration


def _doc_ids(index: Index) -> set[str]:
    return set(index.engine.state.snapshot.docs.column("doc_id").to_pylist())


def test_insert_query_and_reopen(make_index, sample_docs, tmp_path):
    index = make_index()
    report = index.insert(sample_docs)
    assert report.docs_added == 30 and report.chunks_added > 30
    assert report.chunks_embedded == report.chunks_added  # all distinct texts
    assert report.embedded >= report.chunks_embedded  # components embed their own nodes too
    assert report.version == 1 and report.bytes_written > 0
    result = index.query("Who founded Meridian Optics?", budget_tokens=450)
    assert result.nodes and sum(h.tokens for h in result.nodes) <= 450
    scores = [h.score for h in result.nodes]
    assert scores == sorted(scores, reverse=True)
    for h in result.nodes:
        assert h.kind == "T" and h.layer == 0 and h.docs and h.text
    assert result.report["mode"] == "naive" and result.report["version"] == 1
    again = Index.open(index.path, embedder=index.engine.embedder)
    assert (
        again.query("Who founded Meridian Optics?", budget_tokens=450).to_dict()["nodes"]
        == result.to_dict()["nodes"]
    )


def test_reinsert_same_content_is_a_noop_and_changed_content_an_update(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs)
    noop = index.insert(sample_docs[:5])
    assert noop.docs_unchanged == 5 and noop.version == 1 and index.version == 1
    changed = dict(
        sample_docs[0],
        text=sample_docs[0]["text"] + "\n\nA new closing paragraph about Lake Sundra.",
    )
    update = index.insert([changed])
    assert update.docs_updated == 1 and update.docs_added == 0 and update.version == 2
    assert update.chunks_removed >= 1 and update.chunks_added >= 1
    # Unchanged chunks of the updated document reuse their vectors instead of re-embedding.
    assert update.chunks_embedded < update.chunks_added or update.chunks_added == 1
    snap = index.engine.state.snapshot
    assert snap.docs.num_rows == 30
    texts = " ".join(snap.nodes.texts)
    assert "A new closing paragraph about Lake Sundra." in texts


def test_delete_removes_chunks_vectors_and_citations(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs)
    target = sample_docs[3]["doc_id"]
    report = index.delete([target])
    assert report.docs_deleted == 1 and report.chunks_removed >= 1
    assert target not in _doc_ids(index)
    for h in index.query(sample_docs[3]["text"][:200], budget_tokens=4000).nodes:
        assert target not in h.docs
    with pytest.raises(DocumentError, match="not in the index"):
        index.delete(["no-such-doc"])
    assert index.delete(["no-such-doc"], missing_ok=True).docs_deleted == 0
    with pytest.raises(DocumentError, match="not in the index"):
        index.delete([3])  # not a doc id: named, not a pyarrow error


@pytest.mark.parametrize(
    "bad",
    [
        [{"doc_id": "x", "text": ""}],
        [{"doc_id": "x", "text": b"\xff\xfe\xfa"}],
        [{"doc_id": "x", "text": "y" * (5 * 1024 * 1024)}],
        [{"doc_id": "dup", "text": "one"}, {"doc_id": "dup", "text": "two"}],
        [{"text": "no id"}],
    ],
)
def test_bad_input_leaves_the_index_unchanged(make_index, sample_docs, bad):
    index = make_index()
    index.insert(sample_docs[:10])
    before = (index.version, _doc_ids(index), index.engine.store.size_bytes())
    with pytest.raises(DocumentError):
        index.insert([*sample_docs[10:12], *bad])
    after = Index.open(index.path, embedder=index.engine.embedder)
    assert (after.version, _doc_ids(after), after.engine.store.size_bytes()) == before


def test_failing_backend_aborts_without_commit(make_index, sample_docs):
    class BrokenEmbedder(HashingEmbedder):
        broken = False

        def embed(self, texts):
            if BrokenEmbedder.broken:
                raise TimeoutError("embedding service timed out")
            return super().embed(texts)

    index = make_index(embedder=BrokenEmbedder(64))
    index.insert(sample_docs[:3])
    BrokenEmbedder.broken = True
    with pytest.raises(TimeoutError):
        index.insert(sample_docs[3:6])
    assert index.version == 1 and len(_doc_ids(index)) == 3
    reopened = Index.open(index.path, embedder=HashingEmbedder(64))
    assert reopened.version == 1 and len(_doc_ids(reopened)) == 3


def test_opening_with_another_embedder_is_a_clear_error(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:2])
    with pytest.raises(ConfigError, match="built with embedder 'hashing-64'"):
        Index.open(index.path, embedder=HashingEmbedder(32))


def test_backend_precedence_on_create_and_open(tmp_path, sample_docs, monkeypatch):
    """Argument > environment > index > default; an index keeps the embedder that built it."""
    for name in ("GRAPHSTRATA_EMBEDDER", "GRAPHSTRATA_LLM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GRAPHSTRATA_EMBEDDER", "hashing:32")
    index = Index.create(tmp_path / "env")  # the environment beats the config's default
    assert index.engine.store.manifest["embedder"] == {"name": "hashing-32", "dim": 32}
    index.insert(sample_docs[:2])
    explicit = Index.create(tmp_path / "arg", embedder="hashing:16")  # the argument beats both
    assert explicit.engine.store.manifest["embedder"]["name"] == "hashing-16"

    assert Index.open(index.path).engine.embedder.name == "hashing-32"  # compatible env spec
    monkeypatch.setenv("GRAPHSTRATA_EMBEDDER", "hashing:16")
    with pytest.raises(
        ConfigError, match=r"built with embedder 'hashing-32'.*GRAPHSTRATA_EMBEDDER"
    ):
        Index.open(index.path)
    monkeypatch.delenv("GRAPHSTRATA_EMBEDDER")
    reopened = Index.open(index.path)  # no spec anywhere: the one recorded in the index
    assert (
        reopened.engine.embedder.name == "hashing-32" and reopened.engine.llm.name == "extractive"
    )

    url = "http://127.0.0.1:9/v1"  # never contacted: nothing is generated here
    monkeypatch.setenv("GRAPHSTRATA_LLM", f"openai:m@{url}")
    assert Index.open(index.path).engine.llm.name == f"openai:m@{url}"  # env beats the manifest
    assert Index.open(index.path, llm="extractive").engine.llm.name == "extractive"


def test_hyperplanes_and_chunking_are_recorded(make_index):
    cfg = IndexConfig()
    cfg.chunking.chunk_tokens = 120
    cfg.chunking.overlap_tokens = 12
    index = make_index(config=cfg)
    manifest = index.engine.store.manifest
    assert manifest["config"]["chunking"] == {
        "chunk_tokens": 120,
        "overlap_tokens": 12,
        "encoding": "cl100k_base",
    }
    hp = np.load(index.path / manifest["hyperplanes"]["file"])
    assert hp.shape == (cfg.hierarchy.n_bits, 64)


def test_one_small_insert_writes_a_small_fraction_of_the_index(make_index, sample_docs):
    # 180 documents (the sample six times, each copy varied) so fixed per-commit overhead
    # (file footers, the manifest) does not dominate; benchmarks/scale/update.py measures MultiHop-RAG.
    corpus = [
        dict(d, doc_id=f"copy{r}/{d['doc_id']}", text=f"{d['text']}\n\nCopy {r} of this record.")
        for r in range(6)
        for d in sample_docs
    ]
    index = make_index()
    index.insert(corpus[1:])
    size = index.engine.store.size_bytes()
    report = index.insert(corpus[:1])
    assert report.bytes_written < size / 5, (report.bytes_written, size)


def test_unknown_mode_and_bad_queries(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:2])
    with pytest.raises(ValueError, match="not available"):
        index.query("x", mode="nope")
    with pytest.raises(ValueError, match="non-empty"):
        index.query("   ")
    with pytest.raises(ValueError, match="budget_tokens"):
        index.query("x", budget_tokens=-1)
    assert index.query("Halvorsen", budget_tokens=0).nodes == []


def test_query_batch_matches_single_queries(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs)
    questions = ["Meridian Optics", "Lake Sundra ice", "Brekkvik ferry"]
    batch = index.query_batch(questions, budget_tokens=300)
    for q, r in zip(questions, batch, strict=True):
        assert [h.id for h in r.nodes] == [h.id for h in index.query(q, budget_tokens=300).nodes]


def test_compact_keeps_results(make_index, sample_docs):
    index = make_index()
    index.insert(sample_docs[:10])
    index.insert(sample_docs[10:20])
    index.delete([sample_docs[0]["doc_id"]])
    before = [h.id for h in index.query("Meridian Optics gratings", budget_tokens=600).nodes]
    report = index.compact()
    assert report.version == index.version
    reopened = Index.open(index.path, embedder=index.engine.embedder)
    assert [
        h.id for h in reopened.query("Meridian Optics gratings", budget_tokens=600).nodes
    ] == before
    assert reopened.stats()["segments"]["nodes"] == 1


def test_rebuild_builds_beside_and_swaps_in(tmp_path, hashing_embedder):
    from graphstrata.bindings.api import RebuildError
    from tests.helpers import SAMPLE_DIR

    path = tmp_path / "ix"
    flat = {"hierarchy": {"enabled": False}, "heterograph": {"enabled": False}}
    report = Index.rebuild(path, SAMPLE_DIR, flat, embedder=hashing_embedder, force=False)
    assert report.docs_added == 30
    first = Index.open(path, embedder=hashing_embedder)
    assert first.version == 1 and len(first.pinned().documents()) == 30
    with pytest.raises(RebuildError, match="already holds an index"):
        Index.rebuild(path, SAMPLE_DIR, flat, embedder=hashing_embedder, force=False)
    Index.rebuild(path, SAMPLE_DIR / "optics", flat, embedder=hashing_embedder)
    rebuilt = Index.open(path, embedder=hashing_embedder)
    assert rebuilt.version == 1 and len(rebuilt.pinned().documents()) < 30
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ix"]  # no sibling left behind
