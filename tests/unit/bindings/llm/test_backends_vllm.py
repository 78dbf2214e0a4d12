"""The vllm backend's batching logic, against a STAND-IN ``vllm`` module that records calls.

The stand-in is not vLLM: it has the few names the backend uses (``LLM``, ``SamplingParams``,
``vllm.sampling_params.StructuredOutputsParams`` or the older ``GuidedDecodingParams``) and
answers the engine's prompts with the loopback fake's rules. It shows what the backend asks
of vLLM: one ``generate`` call per stage with all prompts, per-request sampling parameters,
structured output for JSON stages, the chat template, token counts read from the outputs.
The real engine is exercised by ``benchmarks/gpu/vllm_smoke.py`` on a GPU machine.
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass, field
from typing import Any

import pytest

from graphstrata.bindings.llm.cache import CachedLLM
from graphstrata.bindings.llm.vllm import VLLMBackend
from graphstrata.bindings.registry import make_llm
from graphstrata.engine import prompts
from graphstrata.engine.config import ConfigError
from tests.helpers.fake_openai_server import plausible_answer

CHAT_OPEN, CHAT_CLOSE = "<|user|>\n", "\n<|assistant|>\n"
TEXT = (
    "The Halvorsen Observatory was founded in 1921 on Mount Kjell. "
    "Meridian Optics built its first spectrograph in Brekkvik."
)


@dataclass
class StandInState:
    """What the stand-in saw, shared by all its objects."""

    engines: list[dict[str, Any]] = field(default_factory=list)
    generate_calls: list[tuple[list[str], list[Any]]] = field(default_factory=list)
    template_calls: list[dict[str, Any]] = field(default_factory=list)
    #: Scripted bad answers, consumed one per prompt in order (None = a good answer).
    bad_answers: list[str | None] = field(default_factory=list)


def stand_in_vllm(structured: str = "structured_outputs") -> tuple[types.ModuleType, StandInState]:
    """A module object named ``vllm`` with the API surface the backend uses."""
    state = StandInState()
    vllm = types.ModuleType("vllm")
    sampling_module = types.ModuleType("vllm.sampling_params")

    class SamplingParams:
        def __init__(self, **kwargs: Any):
            self.kwargs = kwargs

    if structured == "structured_outputs":

        class StructuredOutputsParams:
            def __init__(self, json: Any = None):
                self.json = json

        sampling_module.StructuredOutputsParams = StructuredOutputsParams
    elif structured == "guided_decoding":

        class GuidedDecodingParams:
            def __init__(self, json: Any = None):
                self.json = json

        sampling_module.GuidedDecodingParams = GuidedDecodingParams

    class Tokenizer:
        chat_template = "{{ stand-in template }}"

        def apply_chat_template(self, messages, tokenize, add_generation_prompt, **kwargs):
            state.template_calls.append(
                {"tokenize": tokenize, "add_generation_prompt": add_generation_prompt, **kwargs}
            )
            return CHAT_OPEN + messages[0]["content"] + CHAT_CLOSE

    class LLM:
        def __init__(self, **kwargs: Any):
            state.engines.append(kwargs)

        def get_tokenizer(self) -> Tokenizer:
            return Tokenizer()

        def generate(self, prompts_in, sampling_params, use_tqdm=True):
            state.generate_calls.append((list(prompts_in), list(sampling_params)))
            outputs = []
            for prompt in prompts_in:
                raw = prompt.removeprefix(CHAT_OPEN).removesuffix(CHAT_CLOSE)
                _, answer = plausible_answer(raw)
                text = answer if isinstance(answer, str) else json.dumps(answer)
                if state.bad_answers:
                    bad = state.bad_answers.pop(0)
                    text = text if bad is None else bad
                outputs.append(
                    types.SimpleNamespace(
                        prompt_token_ids=list(range(len(prompt.split()))),
                        outputs=[
                            types.SimpleNamespace(
                                text=text, token_ids=list(range(len(text.split()) + 1))
                            )
                        ],
                    )
                )
            return outputs

    vllm.LLM = LLM
    vllm.SamplingParams = SamplingParams
    vllm.sampling_params = sampling_module
    return vllm, state


@pytest.fixture
def stand_in(monkeypatch):
    vllm, state = stand_in_vllm()
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", vllm.sampling_params)
    return state


def stage_batch() -> list:
    return [
        prompts.summarize_request([TEXT], 100),
        prompts.decompose_request(TEXT, 1024),
        prompts.summarize_request(["Lake Sundra froze early in 2014."], 60),
        prompts.query_entities_request("Who founded the Halvorsen Observatory?"),
    ]


def test_one_generate_call_per_stage_with_all_prompts(stand_in):
    llm = make_llm("vllm:/models/qwen?dtype=bfloat16&tp=2&max_model_len=4096&gpu_mem=0.5&seed=7")
    assert stand_in.engines == []  # nothing loads before the first batch
    batch = stage_batch()
    out = llm.complete(batch)
    assert len(stand_in.generate_calls) == 1
    sent, params = stand_in.generate_calls[0]
    assert sent == [CHAT_OPEN + r.prompt + CHAT_CLOSE for r in batch]
    assert [p.kwargs["max_tokens"] for p in params] == [100, 1024, 60, 128]
    assert all(p.kwargs["temperature"] == 0.0 for p in params)
    # JSON stages carry the schema as structured output; free-text stages carry none.
    assert params[1].kwargs["structured_outputs"].json == prompts.DECOMPOSE_SCHEMA
    assert params[3].kwargs["structured_outputs"].json == prompts.QUERY_ENTITIES_SCHEMA
    assert (
        "structured_outputs" not in params[0].kwargs and "guided_decoding" not in params[2].kwargs
    )
    assert stand_in.engines == [
        {
            "model": "/models/qwen",
            "dtype": "bfloat16",
            "tensor_parallel_size": 2,
            "gpu_memory_utilization": 0.5,
            "seed": 7,
            "max_model_len": 4096,
        }
    ]
    assert stand_in.template_calls[0] == {
        "tokenize": False,
        "add_generation_prompt": True,
        "enable_thinking": False,
    }
    # Token counts come from the outputs.
    for prompt, response in zip(sent, out, strict=True):
        assert response.prompt_tokens == len(prompt.split())
        assert response.completion_tokens == len(response.text.split()) + 1
    assert json.loads(out[1].text)["semantic_units"][0]["entities"]
    assert "Halvorsen Observatory" in json.loads(out[3].text)["entities"]
    # A second stage reuses the loaded engine: one more generate call, no second engine.
    llm.complete(stage_batch()[:2])
    assert len(stand_in.engines) == 1 and len(stand_in.generate_calls) == 2


def test_older_vllm_gets_guided_decoding(monkeypatch):
    vllm, state = stand_in_vllm("guided_decoding")
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", vllm.sampling_params)
    llm = VLLMBackend("/models/x")
    llm.complete(stage_batch())
    params = state.generate_calls[0][1]
    assert params[1].kwargs["guided_decoding"].json == prompts.DECOMPOSE_SCHEMA
    assert llm.structured_api == "guided_decoding"


def test_bad_json_is_asked_again_in_one_batched_call(stand_in):
    # Answers 2 and 4 (the JSON stages) are unusable; everything else is fine.
    stand_in.bad_answers = [None, "no JSON here", None, '{"wrong": 1}']
    llm = VLLMBackend("/models/x")
    out = llm.complete(stage_batch())
    assert len(stand_in.generate_calls) == 2
    retry_prompts = stand_in.generate_calls[1][0]
    assert len(retry_prompts) == 2 and "could not be used" in retry_prompts[0]
    assert out[1].meta["reasked"] and json.loads(out[1].text)["semantic_units"]
    assert llm.reasks == 2
    first_prompt_tokens = len(stand_in.generate_calls[0][0][1].split())
    assert out[1].prompt_tokens == first_prompt_tokens + len(retry_prompts[0].split())


def test_json_still_bad_after_the_reask_is_handed_on_marked_unusable(stand_in):
    # Issue 50: counted by the engine and held to the yield floor, not fatal on its own.
    stand_in.bad_answers = [None, "no JSON here", None, None, "still none"]
    out = VLLMBackend("/models/x").complete(stage_batch())
    assert out[1].text == "still none" and out[1].meta["reasked"]
    assert "expected a JSON object" in out[1].meta["unusable"]


def test_malformed_json_is_repaired_without_a_reask(stand_in):
    good = json.dumps({"entities": ["Halvorsen Observatory"]})
    stand_in.bad_answers = [None, None, None, "Sure:\n```json\n" + good[:-1] + ",\n```"]
    out = VLLMBackend("/models/x").complete(stage_batch())
    assert len(stand_in.generate_calls) == 1
    assert json.loads(out[3].text) == {"entities": ["Halvorsen Observatory"]}
    assert out[3].meta["repaired"]


def test_chat_template_can_be_skipped(stand_in):
    llm = make_llm("vllm:/models/base?chat_template=false&enforce_eager=true")
    batch = stage_batch()[:1]
    llm.complete(batch)
    assert stand_in.generate_calls[0][0] == [batch[0].prompt]
    assert stand_in.engines[0]["enforce_eager"] is True


def test_cached_vllm_rerun_generates_nothing(stand_in, tmp_path):
    llm = make_llm("vllm:/models/x", cache_path=tmp_path / "llm-cache.sqlite")
    assert isinstance(llm, CachedLLM)
    first = llm.complete(stage_batch())
    second = make_llm("vllm:/models/x", cache_path=tmp_path / "llm-cache.sqlite").complete(
        stage_batch()
    )
    assert len(stand_in.generate_calls) == 1
    assert all(r.cached for r in second)
    assert [r.text for r in second] == [r.text for r in first]


def test_bad_vllm_options_are_config_errors(stand_in):
    for spec in (
        "vllm:",
        "vllm:/m?dtype=int3",
        "vllm:/m?tp=0",
        "vllm:/m?gpu_mem=1.5",
        "vllm:/m?nonsense=1",
        "vllm:/m?tp=two",
    ):
        with pytest.raises(ConfigError):
            make_llm(spec)


def test_without_vllm_the_spec_is_a_clear_config_error(monkeypatch):
    import importlib.util

    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    with pytest.raises(ConfigError, match=r"graphstrata\[gpu\]"):
        make_llm("vllm:/models/x")


def load_smoke_script():
    """``benchmarks.gpu.vllm_smoke`` imported afresh (its imports happen again)."""
    import importlib

    sys.modules.pop("benchmarks.gpu.vllm_smoke", None)
    return importlib.import_module("benchmarks.gpu.vllm_smoke")


def test_gpu_smoke_script_imports_without_vllm(monkeypatch):
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    smoke = load_smoke_script()
    assert "vllm" not in sys.modules
    args = smoke.parse_args(["--model", "/models/x"])
    assert (args.time_limit, args.docs) == (300.0, 30)


def test_gpu_smoke_script_logic_on_the_stand_in(stand_in, tmp_path, capsys):
    """The script's checks and arithmetic, run on the stand-in (the GPU run uses real vLLM)."""
    smoke = load_smoke_script()
    args = smoke.parse_args(
        ["--model", "/models/x", "--embedder", "hashing:64", "--docs", "12", "--out", str(tmp_path)]
    )
    summary = smoke.run(args)
    assert stand_in.engines[0]["max_model_len"] == 8192
    assert summary["stages"]["decompose"]["prompts"] == 8
    assert summary["stages"]["structured_api"] == "structured_outputs"
    assert summary["index"]["llm_calls"] > 0
    assert "tok/s" in capsys.readouterr().out
