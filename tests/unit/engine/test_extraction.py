"""Extraction yield (``engine/extraction.py``): reasoning blocks, answer counts, the floor."""

from __future__ import annotations

import pytest

from graphstrata.engine.config import ConfigError, IndexConfig
from graphstrata.engine.extraction import (
    ExtractionYieldError,
    YieldConfig,
    record_items,
    strip_think,
    tally_answers,
)
from graphstrata.engine.interfaces import LLMError, LLMResponse
from graphstrata.engine.prompts import decompose_request, summarize_request


@pytest.mark.parametrize(
    ("raw", "text", "blocks"),
    [
        ('{"a": 1}', '{"a": 1}', 0),
        ('<think>hmm {"a": 0}</think>\n{"a": 1}', '{"a": 1}', 1),
        ("<THINK>x</THINK><think>y</think> answer", "answer", 2),
        ("reasoning the template opened</think>\nanswer", "answer", 1),
        ("answer <think>cut off at max_tokens", "answer", 1),
        ("<think>only reasoning, never answered", "", 1),
    ],
)
def test_strip_think(raw, text, blocks):
    assert strip_think(raw) == (text, blocks)


def test_answers_are_counted_per_task_and_returned_without_reasoning():
    table: dict = {}
    requests = [decompose_request(f"chunk {i}", 64) for i in range(4)]
    requests.append(summarize_request(["a text"], 32))
    responses = [
        LLMResponse('{"semantic_units": []}', 1, 1),
        LLMResponse('{"semantic_units": []}', 1, 1, meta={"repaired": True, "think": 1}),
        LLMResponse("<think>no idea</think>", 1, 1),
        LLMResponse("prose", 1, 1, meta={"unusable": "expected a JSON object"}),
        LLMResponse("<think>x</think>A summary.", 1, 1),
    ]
    out = tally_answers(table, requests, responses)
    assert table["decompose"] == {
        "answers": 4, "valid_json": 2, "repaired": 1, "empty": 1, "failed": 1, "think": 2,
        "inputs": 0, "held": 0, "items": 0,
    }  # fmt: skip
    assert table["summarize"]["answers"] == 1 and table["summarize"]["think"] == 1
    assert out[4].text == "A summary." and out[2].text == "" and out[0] is responses[0]


def test_items_are_recorded_and_the_floor_names_the_stage():
    table: dict = {}
    floor = YieldConfig(min_yield=0.5, min_inputs=4)
    record_items(table, "decompose", [3, 0, 2, 1], ["a", "", "b", "c"], floor, "m")
    entry = table["decompose"]
    assert (entry["inputs"], entry["held"], entry["items"]) == (4, 3, 6)
    assert (
        entry["items_per_input"] == 1.5 and entry["first_bad"] == "" and entry["item"] == "entity"
    )
    with pytest.raises(ExtractionYieldError) as caught:
        record_items(table, "decompose", [0, 0, 0, 1], ["x" * 500, "y", "z", "w"], floor, "gguf:m")
    message = str(caught.value)
    assert message.startswith("decompose: 75 % of 4 responses held no entity")
    assert "model gguf:m" in message and f"'{'x' * 200}'" in message and "x" * 201 not in message
    assert "yield_floor.min_yield" in message
    assert isinstance(caught.value, LLMError)  # an upstream failure: HTTP 502, CLI exit 1


def test_the_floor_can_be_lowered_and_holds_small_stages_to_one_readable_answer():
    record_items({}, "community", [0, 0], ["", ""], YieldConfig(min_yield=0.0), "m")
    record_items({}, "community", [0, 0], ["", ""], None, "m")
    # Fewer inputs than min_inputs (8): a note that names nothing, answered in valid JSON,
    # passes; a model that gave no readable answer does not.
    nothing = ['{"semantic_units": [{"text": "a note", "entities": []}]}']
    record_items({}, "decompose", [0], nothing, YieldConfig(), "m", usable=[True])
    with pytest.raises(ExtractionYieldError, match="one readable answer must"):
        record_items({}, "decompose", [0], ["prose"], YieldConfig(), "m", usable=[False])
    with pytest.raises(ExtractionYieldError, match="community: 100 % of 2 responses held no"):
        record_items({}, "community", [0, 0], ["", ""], YieldConfig(), "m")
    with pytest.raises(ExtractionYieldError, match="at least 50 % must"):
        record_items({}, "community", [0] * 5 + [1] * 4, [""] * 9, YieldConfig(), "m")


def test_the_floor_is_a_validated_section_recorded_with_the_config():
    cfg = IndexConfig.from_dict({"yield_floor": {"min_yield": 0.8, "min_inputs": 5}})
    cfg.validate()
    assert cfg.to_dict()["yield_floor"] == {"min_yield": 0.8, "min_inputs": 5}
    assert IndexConfig.from_dict({}).yield_floor == YieldConfig()  # older manifests
    for bad in ({"min_yield": 1.5}, {"min_yield": "high"}, {"min_inputs": 0}):
        with pytest.raises(ConfigError, match="yield_floor"):
            IndexConfig.from_dict({"yield_floor": bad}).validate()
    with pytest.raises(ConfigError, match="unknown option"):
        IndexConfig.from_dict({"yield_floor": {"floor": 1}})


def test_the_leading_json_value_is_the_answer():
    from graphstrata.engine.extraction import leading_json

    assert leading_json('{"a": [1]}\n{"json": {"b"') == {"a": [1]}  # a model that went on
    assert leading_json("Sure: [1, 2] and more") == [1, 2]
    assert leading_json('{"a": [1') is None and leading_json("no JSON") is None
