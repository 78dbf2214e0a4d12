"""A two-hop question that only ``graph`` answers: the second passage shares nothing with the
question, only an entity name with the first passage.

The corpus: the article about the Veltrano Bridge names its designer, Marit Kalvoy; her own
article says where she grew up (Tennoya) and shares no word with the question. Ten
distractor articles each name a work, its engineer and the engineer's home settlement, in
the question's own words. ``naive`` and ``bm25`` rank the distractors above the answer;
``graph`` reaches it from the first hop's entity (``bridge_weight``: a second walk from the
entities of the best chunks; title links join the entity to the article titled with it).
"""

from __future__ import annotations

from typing import Any

import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.engine.config import IndexConfig

QUESTION = "Which settlement was the home of the engineer who designed the Veltrano Bridge?"
ANSWER = "Tennoya"
BUDGET = 200

_PLACES = ["Lundby", "Sorvik", "Haldal", "Nesby", "Vikrum", "Brattli", "Ostvang", "Kleppe"]
_PLACES += ["Rimstad", "Tovik"]
_PEOPLE = ["Per Lund", "Anna Berg", "Ole Strand", "Kari Moen", "Jon Dahl", "Eva Lie"]
_PEOPLE += ["Lars Holm", "Siri Bakke", "Tor Vik", "Ida Rud"]
_WORKS = ["Orsa Dam", "Calvi Station", "Haldal Tunnel", "Nesby Lighthouse", "Vikrum Viaduct"]
_WORKS += ["Brattli Canal", "Ostvang Pier", "Kleppe Mill", "Rimstad Tower", "Tovik Lock"]


def corpus() -> list[dict[str, Any]]:
    """The two hops and ten distractors (see the module docstring)."""
    docs = [
        {
            "doc_id": "veltrano-bridge",
            "title": "Veltrano Bridge",
            "text": "The Veltrano Bridge crosses the Orsa river at Calvi. The engineer Marit "
            "Kalvoy designed the bridge, which opened in 1931.",
        },
        {
            "doc_id": "marit-kalvoy",
            "title": "Marit Kalvoy",
            "text": "Marit Kalvoy spent her childhood in Tennoya, a fishing harbour on the "
            "northern coast. Her family ran a boatyard there.",
        },
    ]
    for place, person, work in zip(_PLACES, _PEOPLE, _WORKS, strict=True):
        docs.append(
            {
                "doc_id": work.lower().replace(" ", "-"),
                "title": work,
                "text": f"The {work} was designed by the engineer {person}. The home "
                f"settlement of {person} was {place}, which grew around the construction "
                "camp of the bridge builders.",
            }
        )
    return docs


@pytest.fixture(scope="module", params=["hashing", "minilm"])
def index(request, tmp_path_factory) -> Index:
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    if request.param == "minilm":
        embedder = request.getfixturevalue("minilm_embedder")
    else:
        embedder = HashingEmbedder(64)
    idx = Index.create(tmp_path_factory.mktemp("twohop") / "idx", cfg, embedder=embedder)
    idx.insert(corpus())
    return idx


def _text(index: Index, mode: str, **params: Any) -> str:
    result = index.query(QUESTION, mode=mode, budget_tokens=BUDGET, **params)
    assert sum(h.tokens for h in result.nodes) <= BUDGET
    return " ".join(h.text for h in result.nodes)


def test_the_second_hop_shares_no_content_word_with_the_question():
    stop = {"the", "a", "of", "in", "on", "was", "who", "which", "her"}
    words = {w.strip("?,.").lower() for w in QUESTION.split()} - stop
    second = {w.strip("?,.").lower() for w in corpus()[1]["text"].split()} - stop
    assert words & second == set()


def test_graph_answers_the_two_hop_question_and_naive_does_not(index):
    assert ANSWER not in _text(index, "naive")
    assert ANSWER not in _text(index, "bm25")
    result = index.query(QUESTION, mode="graph", budget_tokens=BUDGET)
    answering = [h for h in result.nodes if ANSWER in h.text]
    assert answering and all(h.docs == ["marit-kalvoy"] for h in answering)
    assert any(h.docs == ["veltrano-bridge"] for h in result.nodes)  # the first hop too
    assert result.report["bridge_nodes"] >= 1


def test_without_the_second_walk_graph_stops_at_the_first_hop(index):
    assert ANSWER not in _text(index, "graph", bridge_weight=0.0)
