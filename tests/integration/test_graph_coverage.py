"""A question with two aspects, where the corpus repeats one: ``graph``'s query-term coverage
(``HeterographConfig.term_decay``, ``core.fusion.coverage_rerank``) packs the passage on the
other aspect instead of more passages on the first.

The corpus: six short articles say, each in the question's own words, what the ferry on the
Orsa river carried; one long article about the Calvi harbour says, near its end, who built
the lighthouse. By walk score per token the six ferry chunks rank above the lighthouse
chunk, so without coverage a 240-token budget holds five ferry chunks and no answer; with
it, the ferry chunks after the first few count less (their words are used up) and the
lighthouse chunk fits beside four of them. Hashing embeddings keep the index the same on every machine.
"""

from __future__ import annotations

from typing import Any

import pytest

from graphstrata.bindings.api import Index
from graphstrata.bindings.embed.models import HashingEmbedder
from graphstrata.engine.config import IndexConfig
from graphstrata.engine.heterograph.query.ranking import ENTRY_BUDGET, sparse_entries

QUESTION = (
    "Which cargo did the Orsa river ferry carry across the Orsa river, and who built the "
    "lighthouse?"
)
ANSWER = "Lindqvist"
BUDGET = 240


def corpus() -> list[dict[str, Any]]:
    """Six ferry articles and the harbour article (see the module docstring)."""
    docs = [
        {
            "doc_id": f"ferry-{i}",
            "title": f"Orsa ferry {i}",
            "text": f"The ferry on the Orsa river carried {cargo} in the year {1900 + i}. The "
            f"Orsa river ferry carried {cargo} to the river mouth, and the ferry on the Orsa "
            f"carried more {cargo} each spring.",
        }
        for i, cargo in enumerate(["timber", "salt", "grain", "wool", "copper", "fish"])
    ]
    history = "The harbour of Calvi has a long history of trade with towns along the coast "
    history += "and across the sea. "
    docs.append(
        {
            "doc_id": "calvi-harbour",
            "title": "Calvi harbour",
            "text": history * 10 + "Its lighthouse was built by Petra Lindqvist in 1887, from "
            "granite cut in the hills above the harbour, and its lamp burned whale oil until "
            "the first electric lamps came to the coast.",
        }
    )
    return docs


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Index:
    cfg = IndexConfig()
    cfg.hierarchy.enabled = False
    path = tmp_path_factory.mktemp("coverage") / "idx"
    idx = Index.create(path, cfg, embedder=HashingEmbedder(64))
    idx.insert(corpus())
    return idx


def _packed(index: Index, **params: Any) -> list[Any]:
    # 20 BM25 entry points per kind, as the scenario was built with (at 240 tokens the
    # default scales them down to 5, ranking.sparse_entries; then the walk alone finds the
    # lighthouse)
    entries = {"sparse_top_k": 20 * ENTRY_BUDGET // BUDGET}
    result = index.query(QUESTION, mode="graph", budget_tokens=BUDGET, **entries, **params)
    assert sum(h.tokens for h in result.nodes) <= BUDGET
    scores = [h.score for h in result.nodes]
    assert scores == sorted(scores, reverse=True)
    return result.nodes


def test_the_scenario_has_20_entry_points():
    assert sparse_entries(20 * ENTRY_BUDGET // BUDGET, BUDGET) == 20


def test_coverage_packs_the_second_aspect(index):
    hits = _packed(index)
    assert any(ANSWER in h.text and h.docs == ["calvi-harbour"] for h in hits)
    assert sum(h.docs[0].startswith("ferry-") for h in hits) == 4  # the first aspect too


def test_without_coverage_the_first_aspect_takes_the_budget(index):
    hits = _packed(index, term_decay=1.0)
    assert not any(ANSWER in h.text for h in hits)
    assert sum(h.docs[0].startswith("ferry-") for h in hits) == 5  # one more than with it
