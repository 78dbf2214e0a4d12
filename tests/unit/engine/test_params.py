"""Typed mode parameters: strict parsing, clear errors, generated schema."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

from graphstrata.engine.heterograph import GraphParams
from graphstrata.engine.hierarchy import HierarchyParams
from graphstrata.engine.params import ModeParams, NoParams, QueryError


def test_parse_known_values_and_defaults():
    p = GraphParams.parse({"ppr_alpha": 0.3, "entry_top_k": 5, "rank": "entries_first"}, "graph")
    assert p.ppr_alpha == 0.3 and p.entry_top_k == 5 and p.rank == "entries_first"
    assert p.resolve("ppr_iters", 2) == 2  # unset -> the config's value
    assert p.given() == {"ppr_alpha": 0.3, "entry_top_k": 5, "rank": "entries_first"}
    assert GraphParams.parse(None) == GraphParams()
    assert HierarchyParams.parse({"bias_share": 1}).bias_share == 1.0  # int for a float is fine


def test_unknown_parameter_names_the_allowed_ones():
    with pytest.raises(QueryError, match=r"unknown parameter\(s\) \['nonsense'\] for mode 'graph'"):
        GraphParams.parse({"nonsense": 1}, "graph")
    with pytest.raises(QueryError, match="allowed parameters: entry_top_k, cross_top_k"):
        GraphParams.parse({"alpha": 0.5}, "graph")
    with pytest.raises(QueryError, match="allowed parameters: none"):
        NoParams.parse({"top": 1}, "naive")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"entry_top_k": True}, "entry_top_k must be an integer"),
        ({"entry_top_k": "5"}, "entry_top_k must be an integer"),
        ({"entry_top_k": 2.5}, "entry_top_k must be an integer"),
        ({"ppr_alpha": "0.5"}, "ppr_alpha must be a number"),
        ({"ppr_alpha": False}, "ppr_alpha must be a number"),
        ({"ppr_alpha": 1.5}, r"ppr_alpha must be in \[0.0, 1.0\]"),
        ({"entry_top_k": -1}, "entry_top_k must be in"),
        ({"rank": "best"}, "rank must be one of"),
        ({"rank": 1}, "rank must be one of"),
        ({"exact_match_weight": -1.0}, "exact_match_weight must be >= 0"),
    ],
)
def test_ill_typed_or_out_of_range_values_are_refused(values, message):
    with pytest.raises(QueryError, match=message):
        GraphParams.parse(values, "graph")


def test_query_error_is_a_value_error():
    assert issubclass(QueryError, ValueError)


def test_schema_is_generated_from_the_fields():
    schema = GraphParams.json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(GraphParams.field_names())
    assert schema["properties"]["rank"]["anyOf"][0]["enum"] == ["score", "entries_first"]
    assert schema["properties"]["entry_top_k"]["anyOf"][0] == {"type": "integer"}
    assert "Restart probability" in schema["properties"]["ppr_alpha"]["description"]
    h = HierarchyParams.json_schema()
    assert h["properties"]["bias_share"]["anyOf"][0] == {"type": "number"}
    assert NoParams.json_schema()["properties"] == {}


@dataclasses.dataclass(frozen=True)
class Bounded(ModeParams):
    bounds: ClassVar[dict[str, tuple[float, float]]] = {"share": (0.0, 1.0), "k": (1, 100)}
    share: float | None = None
    k: int | None = None


def test_bounds_are_checked_and_published():
    assert Bounded.parse({"share": 1, "k": 100}) == Bounded(1.0, 100)
    with pytest.raises(QueryError, match=r"share must be in \[0.0, 1.0\], got 1.5"):
        Bounded.parse({"share": 1.5})
    with pytest.raises(QueryError, match=r"k must be in \[1, 100\], got 0"):
        Bounded.parse({"k": 0})
    schema = Bounded.json_schema()["properties"]
    assert schema["share"]["anyOf"][0] == {"type": "number", "minimum": 0.0, "maximum": 1.0}
    assert schema["k"]["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": 100}


@pytest.mark.parametrize("value", [10**400, float("nan"), float("inf")])
def test_numbers_beyond_floats_are_query_errors(value):
    with pytest.raises(QueryError, match="ppr_alpha"):
        GraphParams.parse({"ppr_alpha": value}, "graph")
