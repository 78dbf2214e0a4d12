"""An index's own prompts (``engine/prompts.py``: ``PromptConfig``, ``PromptedLLM``)."""

from __future__ import annotations

import pytest

from graphstrata.engine import prompts
from graphstrata.engine.config import ConfigError, IndexConfig
from graphstrata.engine.interfaces import LLMRequest, LLMResponse
from graphstrata.engine.prompts import PromptConfig, PromptedLLM, with_prompts


def test_the_defaults_are_the_module_prompts():
    request = prompts.decompose_request("Meridian Optics is in Brekkvik.", 64)
    assert request.prompt == prompts.DECOMPOSE_PROMPT.format(
        text="Meridian Optics is in Brekkvik.",
        entity_types=prompts.DEFAULT_ENTITY_TYPES,
        examples="",
    )
    assert "(people, organizations, places, products,\ndates, numbers with units)" in (
        request.prompt
    )
    assert PromptConfig().render(request) is request
    assert not PromptConfig().overridden
    effective = PromptConfig().effective()
    assert effective["templates"] == prompts.DEFAULT_TEMPLATES


def test_overrides_render_every_task_and_change_the_hash():
    cfg = PromptConfig(
        entity_types="genes, proteins",
        examples="BRCA1 -> gene",
        templates={"answer": "Answer from:\n{context}", "summarize": "Sum up: {context}"},
    )
    assert cfg.sha256 != PromptConfig().sha256 and len(cfg.sha256) == 64
    dec = cfg.render(prompts.decompose_request("TP53 binds MDM2.", 64))
    assert (
        "(genes, proteins)" in dec.prompt and "\n\nExamples:\nBRCA1 -> gene\n\nText:" in dec.prompt
    )
    summary = cfg.render(prompts.summarize_request(["a", "b"], 32))
    assert summary.prompt == "Sum up: a\n\nb"
    answer = cfg.render(prompts.answer_request("why?", "[1] x", 10, [("user", "hi")]))
    assert answer.prompt == "Answer from:\n[1] x\n\nuser: hi\nuser: why?\nassistant:"
    attr = prompts.attribute_request("E", ["f"], ["r"], 10)
    assert cfg.render(attr).prompt == attr.prompt  # not overridden


class Recorder:
    name = "recorder"

    def __init__(self):
        self.seen: list[str] = []
        self.counters = {"calls": 0}

    def complete(self, requests):
        self.seen += [r.prompt for r in requests]
        return [LLMResponse("ok", 1, 1) for _ in requests]


def test_a_prompted_llm_sends_the_index_prompts_and_forwards_the_rest():
    inner = Recorder()
    assert with_prompts(inner, PromptConfig()) is inner
    llm = with_prompts(inner, PromptConfig(templates={"summarize": "S: {context}"}))
    assert (
        isinstance(llm, PromptedLLM) and llm.name == "recorder" and llm.counters is inner.counters
    )
    llm.complete([prompts.summarize_request(["x"], 5), LLMRequest("custom", "raw", 5)])
    assert inner.seen == ["S: x", "raw"]


@pytest.mark.parametrize(
    ("templates", "error"),
    [
        ({"translate": "x {text}"}, "unknown task"),
        ({"decompose": "no placeholder"}, r"must contain \{text\}"),
        ({"decompose": "{text} {chunk}"}, r"unknown placeholder\(s\) \['chunk'\]"),
        ({"decompose": '{text} {"a": 1}'}, "unknown placeholder|double|braces"),
        ({"attribute": "{entity} {facts}"}, r"must contain \{relationships\}"),
        ({"summarize": ""}, "non-empty string"),
    ],
)
def test_bad_templates_are_config_errors(templates, error):
    with pytest.raises(ConfigError, match=error):
        IndexConfig.from_dict({"prompts": {"templates": templates}}).validate()


def test_the_prompts_round_trip_through_the_manifest_dict():
    cfg = IndexConfig.from_dict({"prompts": {"entity_types": "ships", "sha256": "stale"}})
    cfg.validate()
    data = cfg.to_dict()["prompts"]
    assert data["sha256"] == PromptConfig(entity_types="ships").sha256  # recomputed, not trusted
    assert IndexConfig.from_dict(cfg.to_dict()) == cfg
