"""Reading LLM answers of the heterograph stages: repaired, validated, never a crash."""

from __future__ import annotations

import json

import pytest

from graphstrata.engine.hashing import stable_hash
from graphstrata.engine.heterograph.parse import (
    normalize_name,
    parse_decomposition,
    parse_elements,
    parse_query_entities,
)

GOOD = {
    "semantic_units": [
        {
            "text": "Tomas Veld founded Meridian Optics in 1971.",
            "entities": ["Tomas Veld", "Meridian Optics", "1971"],
            "relationships": [["Tomas Veld", "founded", "Meridian Optics"]],
        },
        {"text": "The company grinds lenses.", "entities": [], "relationships": []},
    ]
}


def test_normalized_names_merge_case_whitespace_punctuation_and_possessives():
    assert normalize_name("Meridian  Optics") == normalize_name("meridian optics.")
    assert normalize_name("Google's") == normalize_name("GOOGLE") == "google"
    assert normalize_name("U.S.") == normalize_name("U S")
    assert normalize_name("Søren Lindqvist") == "søren lindqvist"
    assert normalize_name(" -- ") == ""


def test_stable_hash_is_deterministic_and_signed_64_bit():
    assert stable_hash("a — b — c") == stable_hash("a — b — c")
    assert stable_hash("x") != stable_hash("y")
    assert -(2**63) <= stable_hash("x") < 2**63


def test_good_answer_parses_completely():
    units = parse_decomposition(json.dumps(GOOD))
    assert units is not None and len(units) == 2
    assert units[0].entities == ["Tomas Veld", "Meridian Optics", "1971"]
    assert units[0].relationships == [("Tomas Veld", "founded", "Meridian Optics")]


@pytest.mark.parametrize(
    "answer",
    [
        json.dumps(GOOD)[:-40],  # truncated at max_tokens
        "Sure! Here is the JSON:\n```json\n" + json.dumps(GOOD) + "\n```\nHope it helps.",
        json.dumps(GOOD).replace("}]}", "},]}"),  # trailing comma
        json.dumps(GOOD["semantic_units"]),  # bare list
    ],
)
def test_repairable_answers_keep_their_units(answer):
    units = parse_decomposition(answer)
    assert units is not None and units[0].text == "Tomas Veld founded Meridian Optics in 1971."


@pytest.mark.parametrize(
    "answer",
    ["", "   ", "null", "I cannot do that.", '{"semantic_units": "none"}', "[1, 2, 3]", None, 42],
)
def test_unusable_answers_are_none(answer):
    assert parse_decomposition(answer) is None


def test_wrong_types_inside_units_are_dropped_not_fatal():
    answer = json.dumps(
        {
            "semantic_units": [
                {"text": 7, "entities": ["X"]},  # no text: unit dropped
                {
                    "text": "Veld met Okafor.",
                    "entities": "Veld",  # a string instead of a list
                    "relationships": [
                        ["Veld", "met"],  # two items
                        ["Veld", "met", "Okafor"],
                        {"source": "Okafor", "relation": "thanked", "target": "Veld"},
                        ["Veld", "is", "veld"],  # self-relation
                        [None, "x", "Okafor"],
                    ],
                },
            ]
        }
    )
    (unit,) = parse_decomposition(answer)
    assert unit.relationships == [("Veld", "met", "Okafor"), ("Okafor", "thanked", "Veld")]
    # Endpoints of relationships are entities of the unit even when not listed.
    assert unit.entities == ["Veld", "Okafor"]


def test_overlong_names_are_not_entities():
    answer = json.dumps({"semantic_units": [{"text": "t", "entities": ["x" * 500, "Ok"]}]})
    (unit,) = parse_decomposition(answer)
    assert unit.entities == ["Ok"]


def test_elements_and_query_entities():
    text = (
        'Result: {"high_level_elements": [{"title": "Optics", "description": "Lenses."}, {"x": 1}'
    )
    (element,) = parse_elements(text, max_elements=5)
    assert element.title == "Optics" and element.description == "Lenses."
    assert parse_elements("no json here", 5) is None
    assert parse_elements('{"high_level_elements": [{"title": "T"}]}', 5) is None
    many = json.dumps({"high_level_elements": [{"title": "t", "description": "d"}] * 9})
    assert len(parse_elements(many, 3)) == 3
    assert parse_query_entities('{"entities": ["Google", "Apple", "Google"]}') == [
        "Google",
        "Apple",
    ]
    assert parse_query_entities('{"entities": "Google"}') == ["Google"]
    assert parse_query_entities("") == [] and parse_query_entities("null") == []
    assert parse_query_entities('{"entities": 5}') == []


def test_one_unit_or_element_without_its_wrapper_is_read():
    # Small models (SmolLM2-135M, tests/integration/test_local_llm.py) drop the wrapper.
    (unit,) = parse_decomposition(
        '{"entities": ["Kjell Telescope", "Mount Kjell"], "text": "The Kjell Telescope is on'
    )
    assert unit.entities == ["Kjell Telescope", "Mount Kjell"]
    assert unit.text == "The Kjell Telescope is on"
    assert parse_decomposition('{"answer": "none"}') is None
    (element,) = parse_elements('{"title": "Optics", "description": "Lenses and mirrors."}', 3)
    assert element.title == "Optics"
    assert parse_elements('{"title": "Optics"}', 3) is None


def test_a_unit_cut_off_before_its_text_is_read_from_its_relations():
    cut = '{"semantic_units": [{"entities": ["HEP", "Kjell Telescope"], "relationships": '
    cut += '[["HEP", "was mounted on", "Kjell Telescope"]], "text": "The HE'
    (unit,) = parse_decomposition(cut.rsplit(', "text"', 1)[0])
    assert unit.text == "HEP was mounted on Kjell Telescope."
    assert unit.entities == ["HEP", "Kjell Telescope"]
    assert parse_decomposition('{"semantic_units": [{"entities": ["HEP"]}]}') is None
