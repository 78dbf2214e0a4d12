"""``benchmarks/scale/scale.py open``: a fresh process's open is timed without the package's
imports, which are reported apart, and the first query of every mode follows it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_open_reports_imports_apart_and_the_first_query_of_each_mode(tmp_path, sample_docs):
    from benchmarks.scale import scale
    from graphstrata.bindings.api import Index
    from graphstrata.bindings.embed.models import HashingEmbedder
    from graphstrata.bindings.llm.extractive import ExtractiveLLM

    path = tmp_path / "ix"
    index = Index.create(path, embedder=HashingEmbedder(scale.DIM), llm=ExtractiveLLM())
    index.insert(sample_docs[:6])
    modes = list(index.modes)
    del index
    out = scale.open_once(path, "Who founded Meridian Optics?")
    assert set(out) == {"imports_s", "fresh_open_s", "first_query_after_open_s"}
    assert out["imports_s"] >= 0 and out["fresh_open_s"] > 0
    assert list(out["first_query_after_open_s"]) == modes
    assert all(v > 0 for v in out["first_query_after_open_s"].values())
    # the table has a column for it; rows measured before it show "–"
    assert ("imports_s", "imports s, fresh process") in scale.COLUMNS
