"""OpenAI's vector-store filters as the engine's filter syntax
(``graphstrata/bindings/server/openai_filters.py``)."""

from __future__ import annotations

import pytest

from graphstrata.bindings.server.errors import ApiError
from graphstrata.bindings.server.openai_filters import translate


@pytest.mark.parametrize(
    ("openai", "engine"),
    [
        ({"type": "eq", "key": "author", "value": "Veld"}, {"author": "Veld"}),
        ({"type": "eq", "key": "public", "value": True}, {"public": True}),
        ({"type": "ne", "key": "author", "value": "Veld"}, {"author": {"$ne": "Veld"}}),
        ({"type": "gt", "key": "year", "value": 1990}, {"year": {"$gt": 1990}}),
        ({"type": "gte", "key": "year", "value": 1990.5}, {"year": {"$gte": 1990.5}}),
        ({"type": "lt", "key": "date", "value": "2020-01-01"}, {"date": {"$lt": "2020-01-01"}}),
        ({"type": "lte", "key": "year", "value": 2000}, {"year": {"$lte": 2000}}),
        ({"type": "in", "key": "doc_id", "value": ["a", "b"]}, {"doc_id": {"$in": ["a", "b"]}}),
        ({"type": "nin", "key": "year", "value": [1, 2.5]}, {"year": {"$nin": [1, 2.5]}}),
    ],
)
def test_each_comparison_maps_to_its_operator(openai, engine):
    assert translate(openai) == engine


def test_compound_filters_nest():
    openai = {
        "type": "and",
        "filters": [
            {"type": "eq", "key": "topic", "value": "optics"},
            {
                "type": "or",
                "filters": [
                    {"type": "gte", "key": "year", "value": 2000},
                    {"type": "in", "key": "title", "value": ["Gratings"]},
                ],
            },
        ],
    }
    assert translate(openai) == {
        "$and": [
            {"topic": "optics"},
            {"$or": [{"year": {"$gte": 2000}}, {"title": {"$in": ["Gratings"]}}]},
        ]
    }


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("eq", "an object"),
        ({"type": "like", "key": "a", "value": "b"}, "unknown filter type 'like'"),
        ({"type": "eq", "value": "b"}, "needs a key"),
        ({"type": "eq", "key": "$or", "value": "b"}, "needs a key"),
        ({"type": "eq", "key": "a"}, "needs a value"),
        ({"type": "eq", "key": "a", "value": ["b"]}, "is a string, a number or a boolean"),
        ({"type": "in", "key": "a", "value": "b"}, "is a list"),
        ({"type": "in", "key": "a", "value": [{"x": 1}]}, "is a list"),
        ({"type": "gt", "key": "a", "value": True}, "not booleans"),
        ({"type": "eq", "key": "a", "value": 1, "extra": 2}, "unknown member(s) ['extra']"),
        ({"type": "and", "filters": []}, "non-empty list"),
        ({"type": "or"}, "non-empty list"),
    ],
)
def test_what_is_not_a_filter_is_a_400_naming_filters(bad, says):
    with pytest.raises(ApiError) as err:
        translate(bad)
    assert err.value.status == 400 and err.value.details["param"] == "filters"
    assert says in err.value.message


def test_nesting_is_bounded():
    deep: dict = {"type": "eq", "key": "a", "value": 1}
    for _ in range(20):
        deep = {"type": "and", "filters": [deep]}
    with pytest.raises(ApiError, match="nested deeper"):
        translate(deep)
