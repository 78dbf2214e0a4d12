"""Retrieval measures on hand-made cases, and the runner on the sample corpus."""

from __future__ import annotations

import json

import pytest

from graphstrata.engine.component import Hit
from graphstrata.engine.config import ChunkingConfig, IndexConfig
from graphstrata.engine.ingest.chunking import chunk_text
from graphstrata.evaluation import (
    QUESTION_KEYS,
    RANK_KEYS,
    ChunkMap,
    QAError,
    QAItem,
    aggregate,
    answer_containment,
    document_recall,
    evaluate,
    fact_recall_chunk,
    fact_recall_text,
    load_qa,
    locate_fact,
    normalize,
    score_hits,
    scored_answers,
    text_containment,
)
from tests.helpers import SAMPLE_QA


def hit(id: int, text: str, docs: list[str], kind: str = "T", tokens: int = 10) -> Hit:
    return Hit(id=id, kind=kind, layer=0, text=text, score=1.0, tokens=tokens, docs=docs)


# A two-document corpus. Chunks 1-2 of "a" overlap by " beta gamma"; the fact
# "alpha beta gamma delta" is cut by the boundary between them.
CHUNKS = {
    "a": [(1, "Intro text. alpha beta gamma"), (2, "beta gamma delta. More text here.")],
    "b": [(3, "The capital of Norway is Oslo."), (4, "Oslo has many museums.")],
}


@pytest.fixture
def chunk_map() -> ChunkMap:
    return ChunkMap(CHUNKS)


def item(**kw) -> QAItem:
    base = {
        "id": "q",
        "question": "?",
        "answers": (),
        "type": "t",
        "gold_doc_ids": (),
        "gold_facts": (),
    }
    base.update(kw)
    return QAItem(**base)


# ---------------------------------------------------------------------------- normalization
def test_normalize_collapses_all_whitespace():
    assert normalize("  a\n\tb   c \r\n") == "a b c"


def test_yes_no_and_insufficient_answers_are_skipped():
    assert scored_answers(["Yes", "no.", "Insufficient information.", " Oslo "]) == ["oslo"]
    assert scored_answers(["Consistent", "TRUE", "Similar.", "Agree"]) == []
    assert scored_answers(["Insufficient  information"]) == []


# ---------------------------------------------------------------------------- document recall
def test_document_recall_counts_distinct_gold_docs():
    hits = [hit(1, "x", ["a"]), hit(9, "y", ["z"])]
    # duplicate gold docs count once: 1 of {a, b}
    assert document_recall(hits, ["a", "a", "b"], {"T", "S"}) == 0.5
    assert document_recall(hits, ["a", "a"], {"T", "S"}) == 1.0


def test_summaries_count_only_in_summary_inclusive_recall():
    hits = [hit(7, "a summary", ["a", "b"], kind="L"), hit(8, "unit", ["b"], kind="S")]
    assert document_recall(hits, ["a", "b"], {"T", "S"}) == 0.5  # only the S node's doc
    assert document_recall(hits, ["a", "b"], None) == 1.0


def test_document_recall_empty_retrieval_and_no_gold():
    assert document_recall([], ["a"], {"T", "S"}) == 0.0
    assert document_recall([hit(1, "x", ["a"])], [], {"T", "S"}) is None


# ---------------------------------------------------------------------------- fact recall (text)
def test_fact_text_recall_is_whitespace_normalized_and_case_sensitive():
    hits = [hit(3, "The capital of\n  Norway is Oslo.", ["b"])]
    assert fact_recall_text(hits, ["The capital of Norway is Oslo."]) == 1.0
    assert fact_recall_text(hits, ["the capital of norway is oslo."]) == 0.0


def test_fact_text_recall_dedupes_facts_and_never_joins_nodes():
    hits = [hit(1, "alpha beta", ["a"]), hit(2, "gamma delta", ["a"])]
    # a fact spread over two separate nodes is not "in the retrieved text"
    assert fact_recall_text(hits, ["alpha beta gamma delta"]) == 0.0
    assert fact_recall_text(hits, ["alpha beta", " alpha  beta", "zeta"]) == 0.5
    assert fact_recall_text([], ["alpha"]) == 0.0
    assert fact_recall_text(hits, []) is None


# ---------------------------------------------------------------------------- source chunks
def test_fact_inside_one_chunk_has_that_chunk_as_source():
    assert locate_fact("capital of Norway", CHUNKS["b"]) == [3]
    # a fact in the overlap of two chunks is held whole by both: both are sources
    assert locate_fact("beta gamma", CHUNKS["a"]) == [1, 2]


def test_fact_split_across_two_chunks_has_both_as_sources():
    assert locate_fact("alpha beta gamma delta.", CHUNKS["a"]) == [1, 2]
    assert locate_fact("not in this document", CHUNKS["a"]) == []


def test_fact_split_inside_a_word_without_overlap():
    chunks = [(10, "He was born in Wash"), (11, "ington in 1901.")]
    assert locate_fact("born in Washington in 1901", chunks) == [10, 11]


def test_split_fact_ignores_a_chunk_holding_only_part_of_another_chunks_part():
    # chunk 21 starts inside the fact; chunk 20 holds only "one two", also held by 21
    chunks = [(20, "zero one two"), (21, "one two three four"), (22, "four five six")]
    assert locate_fact("one two three four five", chunks) == [21, 22]


def test_split_fact_with_real_chunker_windows():
    config = ChunkingConfig(chunk_tokens=16, overlap_tokens=4)
    words = " ".join(f"word{i}" for i in range(60))
    text = f"{words} The Halvorsen Observatory built the Kjell Wide-Field Camera in 1998. {words}"
    chunks = [(i, c.text) for i, c in enumerate(chunk_text(text, config))]
    fact = "The Halvorsen Observatory built the Kjell Wide-Field Camera in 1998."
    assert not any(fact in t for _, t in chunks), "the fact must be cut by a window boundary"
    sources = locate_fact(fact, chunks)
    assert len(sources) >= 2 and sources == list(range(sources[0], sources[0] + len(sources)))
    joined = " ".join(chunks[i][1] for i in sources)
    assert "Halvorsen" in joined and "1998" in joined


def test_chunk_recall_of_split_fact_counts_either_source(chunk_map):
    fact = ["alpha beta gamma delta"]
    for retrieved in ([1], [2], [1, 2]):
        hits = [hit(i, "...", ["a"]) for i in retrieved]
        assert fact_recall_chunk(hits, fact, ["a"], chunk_map) == (1.0, 0)
    other = [hit(3, "The capital of Norway is Oslo.", ["b"])]
    assert fact_recall_chunk(other, fact, ["a"], chunk_map) == (0.0, 0)


def test_chunk_recall_only_counts_chunks_of_gold_documents(chunk_map):
    hits = [hit(3, "x", ["b"])]
    # the fact is in doc b, but only doc a is gold: no source chunk, reported as unlocated
    assert fact_recall_chunk(hits, ["capital of Norway"], ["a"], chunk_map) == (0.0, 1)
    assert fact_recall_chunk(hits, ["capital of Norway"], ["a", "b"], chunk_map) == (1.0, 0)


def test_chunk_recall_ignores_non_chunk_hits(chunk_map):
    # a semantic unit whose id collides with nothing still is not a retrieved chunk
    hits = [hit(3, "The capital of Norway is Oslo.", ["b"], kind="S")]
    assert fact_recall_chunk(hits, ["capital of Norway"], ["b"], chunk_map) == (0.0, 0)


# ---------------------------------------------------------------------------- answers
def test_answer_containment_case_insensitive_any_answer():
    hits = [hit(3, "the CAPITAL of norway is   OSLO.", ["b"])]
    assert answer_containment(hits, ["Bergen", "Oslo"]) == 1.0
    assert answer_containment(hits, ["Bergen"]) == 0.0
    assert answer_containment(hits, ["Yes"]) is None
    assert answer_containment(hits, ["Insufficient information."]) is None
    assert answer_containment([], ["Oslo"]) == 0.0


# ---------------------------------------------------------------------------- one question
def test_score_hits_all_measures(chunk_map):
    q = item(
        answers=("Oslo",),
        gold_doc_ids=("a", "b", "b"),
        gold_facts=("The capital of Norway is Oslo.", "alpha beta gamma delta"),
    )
    hits = [
        hit(3, "The capital of Norway is Oslo.", ["b"], tokens=8),
        hit(5, "sum", ["a"], kind="H"),
    ]
    s = score_hits(hits, q, chunk_map)
    assert set(s) == set(QUESTION_KEYS)
    assert s["doc_recall"] == 0.5 and s["doc_recall_with_summaries"] == 1.0
    assert s["fact_recall_text"] == 0.5 and s["fact_recall_chunk"] == 0.5
    assert s["answer_contained"] == 1.0
    assert s["tokens"] == 18 and s["nodes"] == 2 and s["facts_unlocated"] == 0


def test_score_hits_empty_retrieval(chunk_map):
    q = item(answers=("Oslo",), gold_doc_ids=("b",), gold_facts=("capital of Norway",))
    s = score_hits([], q, chunk_map)
    assert s["doc_recall"] == 0.0 and s["fact_recall_text"] == 0.0
    assert s["fact_recall_chunk"] == 0.0 and s["answer_contained"] == 0.0
    assert s["tokens"] == 0 and s["nodes"] == 0


def test_score_hits_null_question_has_no_recall(chunk_map):
    q = item(answers=("Insufficient information.",))
    s = score_hits([hit(3, "x", ["b"])], q, chunk_map)
    assert all(
        s[k] is None
        for k in ("doc_recall", "fact_recall_text", "fact_recall_chunk", "answer_contained")
    )


def test_aggregate_skips_questions_where_a_measure_does_not_apply():
    scores = [
        {"doc_recall": 1.0, "answer_contained": None, "tokens": 10, "search_ms": 1.0},
        {"doc_recall": 0.0, "answer_contained": 1.0, "tokens": 30, "search_ms": 3.0},
        {"doc_recall": None, "answer_contained": None, "tokens": 20, "search_ms": 2.0},
    ]
    agg = aggregate(scores)
    assert agg["questions"] == 3
    assert agg["doc_recall"] == 0.5 and agg["doc_recall_n"] == 2
    assert agg["answer_contained"] == 1.0 and agg["answer_contained_n"] == 1
    assert agg["fact_recall_text"] is None and agg["fact_recall_text_n"] == 0
    assert agg["tokens"] == 20.0


# ---------------------------------------------------------------------------- QA files
def test_load_qa_reads_items_and_skips_blank_lines(tmp_path):
    path = tmp_path / "qa.jsonl"
    row = {
        "id": 7,
        "question": "Who?",
        "answers": ["X"],
        "type": "bridge",
        "gold_doc_ids": [3],
        "gold_facts": ["f"],
    }
    path.write_text(json.dumps(row) + "\n\n")
    (q,) = load_qa(path)
    assert q == QAItem("7", "Who?", ("X",), "bridge", ("3",), ("f",))


def test_load_qa_errors_name_the_line(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text('{"question": "ok"}\n{"id": 2}\n')
    with pytest.raises(QAError, match=r"qa.jsonl:2: 'question'"):
        load_qa(path)
    path.write_text("not json\n")
    with pytest.raises(QAError, match=r"qa.jsonl:1: not valid JSON"):
        load_qa(path)
    with pytest.raises(QAError, match="not found"):
        load_qa(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------------------- the runner
def _small_config() -> IndexConfig:
    config = IndexConfig()
    config.hierarchy.enabled = False
    config.heterograph.enabled = False
    return config


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory, sample_docs, hashing_embedder):
    from graphstrata.bindings.api import Index

    index = Index.create(
        tmp_path_factory.mktemp("ev") / "idx", _small_config(), embedder=hashing_embedder
    )
    index.insert(sample_docs)
    return index


def test_evaluate_reports_unavailable_modes_and_types(sample_index):
    result = evaluate(sample_index, SAMPLE_QA, ["naive", "bm25", "no-such-mode"], budget=500)
    assert result.questions == 12 and result.budget == 500
    missing = result.modes["no-such-mode"]
    assert not missing.available and "overall" not in missing.to_dict()
    for mode in ("naive", "bm25"):
        res = result.modes[mode]
        assert res.available and len(res.questions) == 12
        assert 0.0 <= res.overall["doc_recall"] <= 1.0
        assert res.overall["tokens"] <= 500
        assert res.by_type["null_query"]["doc_recall"] is None
        assert res.overall["facts_unlocated"] == 0  # every sample fact is in its gold docs
    table = result.table()
    assert "unavailable" in table and "null_query" in table
    json.dumps(result.to_dict(include_questions=True))


def test_evaluate_with_everything_retrieved_has_full_chunk_recall(sample_index):
    """When every chunk fits the budget, document and chunk recall must be exactly 1."""
    result = evaluate(sample_index, SAMPLE_QA, ["naive"], budget=10**6, top_k=1000, limit=10)
    overall = result.modes["naive"].overall
    assert result.questions == 10
    assert overall["doc_recall"] == 1.0 and overall["fact_recall_chunk"] == 1.0
    # answers that occur somewhere in the corpus must all be found
    chunks = [normalize(t).lower() for _, t in result_chunks(sample_index)]
    findable = [
        s["answer_contained"]
        for s, q in zip(result.modes["naive"].questions, load_qa(SAMPLE_QA), strict=False)
        if any(a in c for a in scored_answers(q.answers) for c in chunks)
    ]
    assert findable and all(v == 1.0 for v in findable)


def result_chunks(index) -> list[tuple[int, str]]:
    snapshot = index.engine.state.snapshot
    chunk_map = ChunkMap.from_snapshot(snapshot)
    return [
        c for doc in snapshot.docs.column("doc_id").to_pylist() for c in chunk_map.chunks_of(doc)
    ]


def test_evaluate_accepts_dicts_and_rejects_bad_input(sample_index):
    rows = [
        {
            "question": "Who founded Meridian Optics?",
            "gold_doc_ids": ["optics/meridian_founding.md"],
        }
    ]
    result = evaluate(sample_index, rows, "naive", budget=300)
    assert result.modes["naive"].overall["doc_recall_n"] == 1
    with pytest.raises(ValueError, match="budget"):
        evaluate(sample_index, rows, "naive", budget=0)
    with pytest.raises(TypeError, match="Index or Engine"):
        evaluate(object(), rows, "naive")


def test_evaluate_notes_gold_documents_missing_from_the_index(sample_index):
    rows = [{"question": "Who?", "gold_doc_ids": ["not/indexed.md"]}]
    result = evaluate(sample_index, rows, "naive", budget=300)
    assert result.modes["naive"].overall["doc_recall"] == 0.0
    assert any("not in the index" in n for n in result.notes)


def test_text_containment_is_the_rule_of_answer_containment():
    answers = ["Tomas Veld", "yes"]
    assert text_containment(["founded by  TOMAS\nveld in 1971"], answers) == 1.0
    assert text_containment(["founded by Tomas", "Veld"], answers) == 0.0  # never joined
    assert text_containment(["yes"], ["Yes.", "Insufficient information."]) is None
    hits = [hit(1, "It was Tomas Veld.", [])]
    assert answer_containment(hits, answers) == text_containment([h.text for h in hits], answers)


def test_evaluate_with_answers_scores_the_generated_answer(sample_index):
    rows = [
        {"id": "a", "question": "Who founded Meridian Optics?", "answers": ["Tomas Veld"]},
        {"id": "b", "question": "Who founded Meridian Optics?", "answers": ["Zebulon Quark"]},
        {"id": "c", "question": "Is Brekkvik a town?", "answers": ["yes"], "type": "yn"},
    ]
    result = evaluate(sample_index, rows, "hybrid", budget=2000, answers=True)
    res = result.modes["hybrid"]
    by_id = {q["id"]: q for q in res.questions}
    assert by_id["a"]["answer_generated"] == 1.0 and by_id["b"]["answer_generated"] == 0.0
    assert by_id["a"]["answer_tokens"] > 0 and by_id["a"]["answer_ms"] >= 0.0
    assert by_id["c"]["answer_generated"] is None and by_id["c"]["answer_tokens"] is None
    assert res.overall["answer_generated"] == 0.5 and res.overall["answer_generated_n"] == 2
    assert res.by_type["yn"]["answer_generated"] is None
    assert res.by_type["yn"]["answer_generated_n"] == 0
    assert result.answer_llm == "extractive" and result.to_dict()["answer_llm"] == "extractive"
    table = result.table()
    assert "gen. answer (n)" in table and "0.500 (2)" in table and "answers by extractive" in table
    # The same answers as the index's answer path, and retrieval scores as without answers.
    for row in rows[:2]:
        answer = sample_index.answer(row["question"], "hybrid", 2000).answer
        assert by_id[row["id"]]["answer_generated"] == text_containment([answer], row["answers"])
    plain = evaluate(sample_index, rows, "hybrid", budget=2000)
    assert "answer_generated" not in plain.modes["hybrid"].overall
    assert "gen. answer" not in plain.table() and plain.answer_llm is None
    for key in ("doc_recall", "answer_contained", "tokens"):
        assert plain.modes["hybrid"].overall[key] == res.overall[key]


def test_index_evaluate_passes_answers_on(sample_index):
    rows = [{"id": "a", "question": "Who founded Meridian Optics?", "answers": ["Tomas Veld"]}]
    with_answers = sample_index.evaluate(rows, "hybrid", 2000, answers=True)
    assert with_answers.modes["hybrid"].overall["answer_generated_n"] == 1
    assert "answer_generated" not in sample_index.evaluate(rows, "hybrid").modes["hybrid"].overall


def test_evaluate_with_baseline_reports_rank_measures_and_intervals(sample_index):
    result = evaluate(sample_index, SAMPLE_QA, ["naive", "hybrid"], budget=500, baseline="naive")
    assert result.baseline == "naive" and list(result.comparisons) == ["hybrid"]
    overall = result.modes["hybrid"].overall
    assert all(key in overall for key in RANK_KEYS)
    assert overall["evidence_recall"] is not None
    ci = result.comparisons["hybrid"]["doc_recall"]
    assert ci["lo"] <= ci["diff"] <= ci["hi"]
    assert "Difference to naive" in result.table()
    assert result.to_dict()["comparisons"]["hybrid"]["doc_recall"]["n"] == ci["n"]
    with pytest.raises(ValueError, match="baseline"):
        evaluate(sample_index, SAMPLE_QA, ["hybrid"], budget=500, baseline="naive")
