"""Rule-based decomposition of the extractive backend: sentences, entities, relationships."""

from __future__ import annotations

import json

from graphstrata.bindings.extractive import (
    ExtractiveLLM,
    decompose,
    extract_entities,
    split_sentences,
)
from graphstrata.engine.heterograph_parse import parse_decomposition
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
