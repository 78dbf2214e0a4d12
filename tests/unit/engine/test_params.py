"""Typed mode parameters: strict parsing, clear errors, generated schema."""

from __future__ import annotations

import dataclasses

import pytest

from graphstrata.engine.config import FusionConfig, HeterographConfig, HierarchyConfig
from graphstrata.engine.fields import setting
from graphstrata.engine.heterograph import GraphParams
from graphstrata.engine.hierarchy import HierarchyParams
from graphstrata.engine.params import NoParams, QueryError, params_from


def test_parse_known_values_and_defaults():
    p = GraphParams.parse({"ppr_alpha": 0.3, "entry_top_k": 5, "rank": "entries_first"}, "graph")
    assert p.ppr_alpha == 0.3 and p.entry_top_k == 5 and p.rank == "entries_first"
    resolved = p.over(HeterographConfig())
    assert resolved.ppr_iters == 2  # unset -> the config's value
    assert resolved.ppr_alpha == 0.3 and resolved.entry_top_k == 5
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
    entry_top_k = {"type": "integer", "minimum": 0, "maximum": 1_000}  # published ranges (issue 51)
    assert schema["properties"]["entry_top_k"]["anyOf"][0] == entry_top_k
    assert "Restart probability" in schema["properties"]["ppr_alpha"]["description"]
    h = HierarchyParams.json_schema()
    bias_share = {"type": "number", "minimum": 0.0, "maximum": 1.0}
    assert h["properties"]["bias_share"]["anyOf"][0] == bias_share
    assert NoParams.json_schema()["properties"] == {}


@dataclasses.dataclass
class BoundedSection:
    share: float = setting(0.5, ge=0.0, le=1.0, query=True)
    k: int = setting(10, ge=1, le=100, query=True)
    hidden: int = setting(3, ge=0)  # not a query field: no parameter


Bounded = params_from("Bounded", BoundedSection)


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


#: Every mode's parameters as documented (docs/architecture.md, "Search modes and
#: parameters"): the query fields of the config sections the mode reads.
FUSION = [
    "method",
    "rrf_k",
    "dense_weight",
    "adaptive",
    "adaptive_strength",
    "adaptive_depth",
    "complete_scores",
    "max_overlap",
    "term_decay",
    "feedback_docs",
    "feedback_weight",
    "feedback_terms",
    "feedback_term_weight",
]
GRAPH = [
    "entry_top_k",
    "cross_top_k",
    "relation_top_k",
    "ppr_alpha",
    "ppr_iters",
    "ppr_epsilon",
    "exact_match_weight",
    "vector_match_weight",
    "sparse_match_weight",
    "sparse_top_k",
    "text_share",
    "token_exponent",
    "structured_share",
    "term_decay",
    "bridge_weight",
    "bridge_sources",
    "bridge_max_units",
    "match_query_ngrams",
    "rank",
    "trace",
]
DOCUMENTED = {
    "naive": [],
    "bm25": [],
    "hybrid": FUSION,
    "collapsed": FUSION,
    "detailed": ["bias_share", "compete", *FUSION],
    "summarized": ["bias_share", "compete", *FUSION],
    "graph": GRAPH,
}


def test_every_mode_takes_exactly_its_documented_parameters():
    from graphstrata.engine.config import IndexConfig
    from graphstrata.engine.modes.registry import default_components, served_params

    served = served_params(default_components(IndexConfig()))
    assert {mode: cls.field_names() for mode, cls in served.items()} == DOCUMENTED
    for mode, cls in served.items():
        with pytest.raises(QueryError, match="unknown parameter"):
            cls.parse({"nonsense": 1}, mode)
        # every parameter is accepted at its configured default (the declaration's)
        defaults = {name: field.default for name, field in cls.declared.items()}
        assert cls.parse(defaults, mode).given() == defaults


def test_query_fields_of_the_config_are_the_parameters():
    """A config field declared ``query=True`` is a parameter of every mode reading its
    section, and no other config field is."""
    from graphstrata.engine.fields import declared

    def query_fields(section: type) -> list[str]:
        return [f.name for f in declared(section) if f.spec.query]

    assert query_fields(FusionConfig) == FUSION
    assert query_fields(HierarchyConfig) == ["bias_share", "compete"]
    assert query_fields(HeterographConfig) == GRAPH[:-2]  # then rank, trace: GraphOptions
    for name in ("sparse_kinds", "semantic_edge_weight", "title_edge_weight", "max_candidates"):
        assert name not in GraphParams.field_names()  # the view builds its walk from these


def test_an_override_replaces_fields_without_changing_the_config():
    config = HeterographConfig()
    before = dataclasses.asdict(config)
    p = GraphParams.parse({"ppr_alpha": 0.2, "rank": "entries_first", "trace": True}, "graph")
    resolved = p.over(config)
    assert resolved is not config and resolved.ppr_alpha == 0.2
    assert dataclasses.asdict(config) == before  # the index's config is not touched
    assert {k: v for k, v in dataclasses.asdict(resolved).items() if before[k] != v} == {
        "ppr_alpha": 0.2
    }  # the query-only options are not config fields
    assert GraphParams().over(config) is config  # nothing set: the config itself
    fusion = FusionConfig()
    assert HierarchyParams.parse({"bias_share": 0.5}).over(fusion) is fusion  # not its field
    h = HierarchyParams.parse({"bias_share": 0.5, "feedback_docs": 2})
    assert h.over(HierarchyConfig()).bias_share == 0.5 and h.over(fusion).feedback_docs == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.ppr_alpha = 0.9  # type: ignore[misc]


def test_a_section_may_not_declare_a_parameter_twice():
    with pytest.raises(TypeError, match="'share' is declared by two sections"):
        params_from("Twice", BoundedSection, BoundedSection)


def test_parameter_classes_pickle():
    import pickle

    p = GraphParams.parse({"ppr_alpha": 0.25}, "graph")
    assert pickle.loads(pickle.dumps(p)) == p
