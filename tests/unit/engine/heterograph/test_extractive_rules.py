"""Rule-based decomposition of the extractive backend: sentences, entities, relationships."""

from __future__ import annotations

import json

import pytest

from graphstrata.bindings.llm.extractive import (
    ENTITY_RULES,
    ExtractiveLLM,
    decompose,
    extract_entities,
    rules_named,
    split_sentences,
)
from graphstrata.bindings.llm.statements import cut_pieces, is_statement
from graphstrata.engine.heterograph.parse import parse_decomposition
from graphstrata.engine.prompts import decompose_request


def test_abbreviations_and_initials_do_not_end_sentences():
    text = "Dr. Ingrid Halvorsen met J. K. Smith in the U.S. Army archive. They talked."
    assert split_sentences(text) == [
        "Dr. Ingrid Halvorsen met J. K. Smith in the U.S. Army archive.",
        "They talked.",
    ]


def test_one_paragraph_per_line_and_headings_split():
    text = "## Ravens win again\nThe Ravens beat the Chiefs.\nLamar Jackson threw twice."
    assert split_sentences(text) == [
        "Ravens win again",
        "The Ravens beat the Chiefs.",
        "Lamar Jackson threw twice.",
    ]


def test_hard_wrapped_prose_continues_across_lines():
    text = (
        "Logs cut in the forests to the north of the town were floated down the\n"
        "river and collected in the bay."
    )
    assert len(split_sentences(text)) == 1


def test_names_titles_and_connectors():
    ents = extract_entities(
        "Dr. Ingrid Halvorsen of the Sundra Institute for Climate Research visited Varde and "
        "the Lake Sundra ferry."
    )
    assert "Ingrid Halvorsen" in ents
    assert "Sundra Institute for Climate Research" in ents
    assert "Varde" in ents and "Lake Sundra" in ents
    assert not any(" and " in e for e in ents)


def test_quantities_dates_and_noise():
    ents = extract_entities(
        "In September 2023 Google's unit paid $5 billion, 14,200 people and 28 staff, at 19:00."
    )
    assert "September 2023" in ents and "Google" in ents
    assert "$5 billion" in ents and "14,200 people" in ents
    assert "28" not in ents and "19" not in ents and "00" not in ents
    assert "September" not in ents
    assert extract_entities("The telescope saw first light in 1963.") == ["1963"]


def test_sentence_initial_common_word_is_not_a_name_when_seen_in_lower_case():
    text = "Logs were floated down the river. Many logs sank near Ostmark."
    units = decompose(text)["semantic_units"]
    entities = [e for u in units for e in u["entities"]]
    assert "Logs" not in entities and "Ostmark" in entities


def test_relationships_link_consecutive_entities_by_the_words_between():
    (unit,) = decompose("Tomas Veld founded Meridian Optics in Brekkvik.")["semantic_units"]
    assert ["Tomas Veld", "founded", "Meridian Optics"] in unit["relationships"]
    assert ["Meridian Optics", "in", "Brekkvik"] in unit["relationships"]
    # No relationship across a clause mark or made of filler words only.
    (unit,) = decompose("Varde and Ostmark (Kjell) | Brekkvik.")["semantic_units"]
    assert unit["relationships"] == []


def test_backend_answer_is_valid_decomposition_json(sample_docs):
    llm = ExtractiveLLM()
    requests = [decompose_request(d["text"], 1024) for d in sample_docs[:5]]
    for answer in llm.complete(requests):
        units = parse_decomposition(answer.text)
        assert units and all(u.text for u in units)
        assert json.loads(answer.text)["semantic_units"]


# ------------------------------------------------------------------ rule sets
def test_refined_rules_keep_acronyms_and_capitalized_title_words():
    sentence = "IT workers in the US use AI tools."
    assert extract_entities(sentence, rules="refined") == ["IT", "US", "AI"]
    assert extract_entities(sentence) == ["AI"]  # standard: "IT", "US" read as stop words
    question = "Are the Woman's Viewpoint and Pick Me Up, both British, magazines?"
    assert "Pick Me Up" in extract_entities(question, rules="refined")
    assert "Pick" in extract_entities(question)


def test_refined_rules_drop_sentence_openers():
    sentence = "Considering the report, Recently Google and Following Apple's lead, FTX fell."
    ents = extract_entities(sentence, rules="refined")
    assert "Considering" not in ents and "Recently" not in ents
    assert "Google" in ents and "Apple" in ents and "FTX" in ents
    assert "Considering" in extract_entities(sentence)
    # Only listed openers go: a name that merely ends in -ly stays.
    assert extract_entities("Italy beat Sicily.", rules="refined") == ["Italy", "Sicily"]


def test_refined_rules_brands_acronym_numbers_iso_dates_and_possessives():
    sentence = "Apple's iPhone sold on eBay from 2023-11-24, per BWV 1033 notes."
    assert extract_entities(sentence, rules="refined") == [
        "Apple",
        "iPhone",
        "eBay",
        "2023-11-24",
        "BWV 1033",
    ]
    standard = extract_entities(sentence)
    assert "Phone" in standard and "Bay" in standard and "BWV" in standard
    # A year after an acronym stays a year of its own.
    assert extract_entities("The NFL 2023 season began.", rules="refined") == ["NFL", "2023"]


def test_the_old_examples_hold_under_both_rule_sets():
    for rules in ENTITY_RULES:
        ents = extract_entities(
            "In September 2023 Google's unit paid $5 billion, 14,200 people and 28 staff, "
            "at 19:00.",
            rules=rules,
        )
        assert "September 2023" in ents and "Google" in ents and "28" not in ents
        assert extract_entities("The telescope saw first light in 1963.", rules=rules) == ["1963"]
        units = decompose("Tomas Veld founded Meridian Optics in Brekkvik.", rules=rules)
        (unit,) = units["semantic_units"]
        assert ["Tomas Veld", "founded", "Meridian Optics"] in unit["relationships"]


def test_rule_sets_are_named_and_standard_is_the_default():
    assert rules_named() is ENTITY_RULES["standard"]
    assert rules_named("refined") is ENTITY_RULES["refined"]
    assert rules_named(ENTITY_RULES["refined"]) is ENTITY_RULES["refined"]
    assert ExtractiveLLM().rules is ENTITY_RULES["standard"]
    with pytest.raises(ValueError, match="unknown entity rules 'v9'"):
        rules_named("v9")


# A guideline page: a heading, a table, a list and prose, written as a file would hold it.
GUIDELINE = """# Performance status

## Treatment of Grade 3 tumours

| Marker | ICC | h | Grade |
|---|---|---|---|
| Ki-67 | 0.82 | 3 | II |

Key points:
- Staging
- Patients with Grade 3 tumours receive adjuvant chemotherapy within six weeks.
- ECOG 0-1

The Oncology Board of Varde reviewed the Brekkvik protocol in 2021.
"""


def test_units_hold_statements_not_headings_tables_or_labels():
    units = decompose(GUIDELINE)["semantic_units"]
    texts = " ".join(u["text"] for u in units)
    for fragment in ("Performance status", "ICC", "Ki-67", "Key points", "Staging", "ECOG"):
        assert fragment not in texts
    assert "Patients with Grade 3 tumours receive adjuvant chemotherapy" in texts
    assert "The Oncology Board of Varde reviewed the Brekkvik protocol in 2021." in texts
    # The summarizer still sees every block (split_sentences is unchanged).
    assert "Performance status" in split_sentences(GUIDELINE)


def test_is_statement_rules():
    assert is_statement("Tomas Veld founded Meridian Optics.")
    assert not is_statement("Performance status")  # heading: short, no final punctuation
    assert not is_statement("| Ki-67 | 0.82 | 3 |")  # table row
    assert not is_statement("ICC — 0.82 — 0.74 — 0.88 — 12.5.")  # mostly numbers and signs
    assert not is_statement("See above.")  # too short
    assert is_statement("Patients receive adjuvant chemotherapy within six weeks")  # list item


def test_no_function_word_relationships():
    (unit,) = decompose("The Founding of Meridian Optics shaped Brekkvik in 1971.")[
        "semantic_units"
    ]
    rels = unit["relationships"]
    assert not any(r[1] in ("of", "of the") for r in rels)
    assert ["Meridian Optics", "shaped", "Brekkvik"] in rels


def test_a_chunk_without_statements_keeps_its_fragments_as_units():
    # A short note, a title or a list of names holds no statement; it still gets a unit, so
    # the answer is usable (parse_decomposition) and the small write passes the yield floor.
    for text in ("x", "Quarterly report", "Ilse Marrow | Tomas Veld"):
        units = decompose(text)["semantic_units"]
        assert [u["text"] for u in units] == split_sentences(text)
        assert parse_decomposition(json.dumps({"semantic_units": units})) is not None
    # With a statement beside them, fragments are still left out.
    mixed = decompose("Performance status\n\nIlse Marrow founded Zephyr Lantern Works in 1932.")
    assert [u["text"] for u in mixed["semantic_units"]] == [
        "Ilse Marrow founded Zephyr Lantern Works in 1932."
    ]


def test_pieces_a_chunk_window_cut_are_not_units():
    """A chunk that opens inside a sentence and closes inside another: both pieces stay in the
    chunk's text, neither becomes a unit; a line break or final punctuation ends a sentence."""
    text = (
        "century the mirror was polished by hand in the workshop. "
        "The Halvorsen Observatory built the polarimeter in 1984. "
        "The instrument was used mainly to"
    )
    sentences = split_sentences(text)
    assert cut_pieces(text, sentences) == {0, 2}
    (unit,) = decompose(text, sentences_per_unit=2)["semantic_units"]
    assert unit["text"] == "The Halvorsen Observatory built the polarimeter in 1984."
    whole = "The Halvorsen Observatory built the polarimeter in 1984. It measured starlight."
    assert cut_pieces(whole, split_sentences(whole)) == set()
    listed = "Adjuvant treatment covers these patients\nPatients with Grade 3 tumours get it\n"
    assert cut_pieces(listed, split_sentences(listed)) == set()  # the last line is whole
    assert cut_pieces("", []) == set()
    # Only cut pieces: they stay the units (a chunk with no unit would be unreachable).
    only = "and then the mirror was polished by hand for six weeks in the workshop of"
    assert [u["text"] for u in decompose(only)["semantic_units"]] == [only]
