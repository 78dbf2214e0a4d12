"""Declared settings: one check, at the edges, for config values and query values alike."""

from __future__ import annotations

import dataclasses

import pytest

from graphstrata.engine.config import (
    ConfigError,
    FusionConfig,
    HeterographConfig,
    HierarchyConfig,
    IndexConfig,
)
from graphstrata.engine.fields import Declared, checked, declared, setting, value_schema
from graphstrata.engine.heterograph import GraphParams
from graphstrata.engine.hierarchy import HierarchyParams
from graphstrata.engine.modes.hybrid import HybridParams
from graphstrata.engine.params import QueryError


@dataclasses.dataclass
class Section:
    closed: float = setting(0.5, ge=0.0, le=1.0)
    count: int = setting(3, ge=1, le=10)
    half_open: float = setting(0.9, gt=0.0, le=1.0)
    above: float = setting(1.0, gt=0.0)
    at_least: int = setting(0, ge=0)
    at_most: float = setting(0.0, le=2.5)
    flag: bool = setting(False)
    pick: str = setting("a", choices=("a", "b"))
    name: str = setting("x")
    plain: int = 7  # not declared: not checked


def field(name: str) -> Declared:
    return {f.name: f for f in declared(Section)}[name]


def ok(name: str, value):
    return checked(name, value, field(name), QueryError)


def refused(name: str, value, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        ok(name, value)


def test_only_fields_made_with_setting_are_declared():
    assert [f.name for f in declared(Section)] == [
        f.name for f in dataclasses.fields(Section) if f.name != "plain"
    ]
    assert field("count").value_type is int and field("count").default == 3


def test_inclusive_bounds_accept_their_edges_and_refuse_beyond():
    assert ok("closed", 0.0) == 0.0 and ok("closed", 1.0) == 1.0
    refused("closed", -1e-12, r"closed must be in \[0.0, 1.0\], got -1e-12")
    refused("closed", 1.000001, r"closed must be in \[0.0, 1.0\]")
    assert ok("count", 1) == 1 and ok("count", 10) == 10
    refused("count", 0, r"count must be in \[1, 10\], got 0")
    refused("count", 11, r"count must be in \[1, 10\], got 11")
    assert ok("at_least", 0) == 0
    refused("at_least", -1, "at_least must be >= 0, got -1")
    assert ok("at_most", 2.5) == 2.5
    refused("at_most", 2.6, "at_most must be <= 2.5, got 2.6")


def test_exclusive_minimum_refuses_its_edge():
    refused("half_open", 0, r"half_open must be in \(0.0, 1.0\], got 0")
    assert ok("half_open", 1e-9) == 1e-9 and ok("half_open", 1) == 1.0
    refused("half_open", 1.5, r"half_open must be in \(0.0, 1.0\]")
    refused("above", 0.0, "above must be > 0.0, got 0.0")
    assert ok("above", 1e300) == 1e300


def test_types_are_strict_bool_is_not_a_number():
    refused("count", True, "count must be an integer, got True")
    refused("count", 2.0, "count must be an integer, got 2.0")
    refused("count", "2", "count must be an integer")
    refused("closed", False, "closed must be a number, got False")
    refused("closed", "0.5", "closed must be a number")
    refused("closed", None, "closed must be a number")
    assert type(ok("closed", 1)) is float  # an int is a float
    refused("flag", 1, "flag must be true or false, got 1")
    refused("flag", 0, "flag must be true or false")
    refused("flag", "true", "flag must be true or false")
    assert ok("flag", True) is True
    refused("name", 5, "name must be a string, got 5")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "must be a finite number"),
        (float("inf"), "must be a finite number"),
        (float("-inf"), "must be a finite number"),
        (10**400, "is out of range"),
    ],
)
def test_numbers_beyond_floats_are_refused(value, message):
    refused("at_most", value, f"at_most {message}")


def test_choices():
    assert ok("pick", "b") == "b"
    refused("pick", "c", r"pick must be one of \['a', 'b'\], got 'c'")
    refused("pick", 1, r"pick must be one of \['a', 'b'\], got 1")


def test_the_caller_chooses_the_error_type():
    with pytest.raises(ConfigError, match="count must be in"):
        checked("count", 0, field("count"), ConfigError)


def test_published_schema_carries_the_declared_range():
    assert value_schema(field("closed")) == {"type": "number", "minimum": 0.0, "maximum": 1.0}
    assert value_schema(field("half_open")) == {
        "type": "number",
        "exclusiveMinimum": 0.0,
        "maximum": 1.0,
    }
    assert value_schema(field("at_least")) == {"type": "integer", "minimum": 0}
    assert value_schema(field("flag")) == {"type": "boolean"}
    assert value_schema(field("pick")) == {"type": "string", "enum": ["a", "b"]}


def test_unsupported_setting_types_are_a_defect():
    @dataclasses.dataclass
    class Odd:
        pair: tuple = setting((1, 2))

    with pytest.raises(TypeError, match="unsupported setting type"):
        declared(Odd)


# ------------------------------------------------------------------ config and query alike
@pytest.mark.parametrize(
    ("section", "name", "value", "message"),
    [
        ("fusion", "term_decay", 0.0, r"term_decay must be in \(0.0, 1.0\], got 0.0"),
        ("fusion", "dense_weight", 1.5, r"dense_weight must be in \[0.0, 1.0\], got 1.5"),
        ("fusion", "rrf_k", -1, "rrf_k must be >= 0, got -1"),
        ("fusion", "max_overlap", 0.0, "max_overlap must be > 0.0, got 0.0"),
        ("fusion", "feedback_docs", True, "feedback_docs must be an integer, got True"),
        ("fusion", "feedback_weight", float("inf"), "feedback_weight must be a finite number"),
        ("fusion", "method", "mean", r"method must be one of \['rrf', 'score'"),
        ("fusion", "complete_scores", 1, "complete_scores must be true or false"),
        ("hierarchy", "bias_share", 1.5, r"bias_share must be in \[0.0, 1.0\], got 1.5"),
        ("heterograph", "ppr_alpha", -0.1, r"ppr_alpha must be in \[0.0, 1.0\]"),
        ("heterograph", "ppr_iters", 101, r"ppr_iters must be in \[0, 100\]"),  # issue 51
        ("heterograph", "bridge_weight", -1.0, "bridge_weight must be >= 0.0"),
        ("heterograph", "match_query_ngrams", 0, "match_query_ngrams must be true or false"),
    ],
)
def test_a_config_value_and_a_query_value_get_the_same_check(section, name, value, message):
    config = IndexConfig()
    setattr(getattr(config, section), name, value)
    with pytest.raises(ConfigError, match=rf"^{section}\.{message}"):
        config.validate()
    mode = {"fusion": "hybrid", "hierarchy": "detailed", "heterograph": "graph"}[section]
    cls = {"hybrid": HybridParams, "detailed": HierarchyParams, "graph": GraphParams}[mode]
    with pytest.raises(QueryError, match=rf"^mode '{mode}': {message}"):
        cls.parse({name: value}, mode)


def test_build_settings_are_checked_too():
    for section, name, value in (
        (HierarchyConfig, "n_bits", 65),
        (HierarchyConfig, "summary_docs_max", -1),
        (HeterographConfig, "importance_refresh_share", 1.5),  # was a plain ValueError
        (HeterographConfig, "decompose_tokens", 0),
        (FusionConfig, "shingle_words", 0),
    ):
        with pytest.raises(ConfigError, match=name):
            section(**{name: value}).validate()
    IndexConfig().validate()  # every default is valid
