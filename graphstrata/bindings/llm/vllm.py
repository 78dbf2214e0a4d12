"""The ``vllm`` backend: vLLM's in-process offline engine on the GPUs of this machine.

Each stage hands its whole batch to one ``LLM.generate`` call, so vLLM schedules all of a
layer's summaries, all new chunks' decompositions, all attributes or all community elements
together (continuous batching, prefix caching of the shared prompt head). Prompts go through
the model's chat template; JSON stages use vLLM's structured outputs, detected at run time:

* vLLM >= 0.11 (0.33 included): ``SamplingParams(structured_outputs=StructuredOutputsParams(
  json=schema))`` from ``vllm.sampling_params`` (the ``guided_*`` fields were removed in 0.12);
* older vLLM: ``SamplingParams(guided_decoding=GuidedDecodingParams(json=schema))``.

Answers of JSON stages are still repaired and validated (structured decoding stops at
``max_tokens`` like any other), and the few unusable ones are asked once more in a second
batched call; one still unusable is handed to the engine marked ``unusable`` (counted, and
held to the index's yield floor). Token counts are read from vLLM's outputs.

vLLM is imported only when the engine is first needed: this module, and the package, import
and test without it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from graphstrata.bindings.extras import available, hint, require
from graphstrata.bindings.llm.cache import AnswerCallback
from graphstrata.bindings.llm.repair import (
    JSONAnswerError,
    ParsedAnswer,
    parse_json_answer,
    reask_prompt,
    unusable_meta,
)
from graphstrata.bindings.specs import OptionTable, convert_options, optional_int, to_bool
from graphstrata.engine import ConfigError, LLMError, LLMRequest, LLMResponse

DTYPES = ("auto", "float16", "bfloat16", "float32", "half", "float")

#: The form of this backend's spec (registered as ``vllm`` in ``registry.LLM_BACKENDS``).
SPEC = "vllm:MODEL_PATH[?opts]"
#: ``?key=value`` options of a ``vllm:`` spec -> (keyword, converter).
OPTIONS: OptionTable = {
    "dtype": ("dtype", str),
    "tp": ("tensor_parallel_size", int),
    "tensor_parallel_size": ("tensor_parallel_size", int),
    "max_model_len": ("max_model_len", optional_int),
    "gpu_memory_utilization": ("gpu_memory_utilization", float),
    "gpu_mem": ("gpu_memory_utilization", float),
    "seed": ("seed", int),
    "chat_template": ("chat_template", to_bool),
    "thinking": ("thinking", to_bool),
    "enforce_eager": ("enforce_eager", to_bool),
    "quantization": ("quantization", str),
    "engine_options": ("engine_options", dict),
}
#: Options that go to ``vllm.LLM`` as they are.
ENGINE_OPTIONS = ("enforce_eager", "quantization")


def from_spec(body: str, options: Mapping[str, Any]) -> VLLMBackend:
    """The backend of spec ``vllm:BODY`` with its ``options`` (see ``registry``).

    Raises
    ------
    ConfigError
        For a missing model or an unknown or bad option.
    """
    if not body:
        raise ConfigError("the vllm backend needs a model: vllm:MODEL_PATH")
    opts = convert_options("vllm", options, OPTIONS)
    engine_options = dict(opts.pop("engine_options", {}))
    for name in ENGINE_OPTIONS:
        if name in opts:
            engine_options[name] = opts.pop(name)
    return VLLMBackend(body, engine_options=engine_options, **opts)


class VLLMBackend:
    """Batch generation with ``vllm.LLM``.

    Parameters
    ----------
    model:
        Local path (or Hugging Face name in the local cache) of the model.
    dtype:
        Weights/activations dtype (``auto`` takes the model config's).
    tensor_parallel_size:
        GPUs to shard the model over.
    max_model_len:
        Context length (prompt + completion); ``None`` keeps the model's.
    gpu_memory_utilization:
        Share of GPU memory vLLM may take for weights and KV cache (default 0.9; lower it
        when the embedder shares the GPU).
    seed:
        Seed of vLLM's sampler (greedy stages do not depend on it).
    chat_template:
        Wrap each prompt in the tokenizer's chat template (default) or send it raw.
    thinking:
        Passed to the chat template as ``enable_thinking``; off by default so reasoning
        models spend ``max_tokens`` on the answer (templates without the flag ignore it).
    engine_options:
        Any further ``vllm.LLM`` / ``EngineArgs`` keyword (e.g. ``enforce_eager``).
    engine:
        An already constructed ``vllm.LLM`` to use instead of building one.
    """

    #: ``complete`` takes ``on_answer`` and calls it for each answer (for the cache).
    streams_answers = True
    backend = "vllm"

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        seed: int = 0,
        chat_template: bool = True,
        thinking: bool = False,
        engine_options: Mapping[str, Any] | None = None,
        engine: Any = None,
    ):
        if not model:
            raise ConfigError("the vllm backend needs a model: vllm:MODEL_PATH")
        if dtype not in DTYPES:
            raise ConfigError(f"vllm dtype must be one of {DTYPES}, got {dtype!r}")
        if tensor_parallel_size < 1:
            raise ConfigError(f"tensor_parallel_size must be >= 1, got {tensor_parallel_size}")
        if max_model_len is not None and max_model_len < 16:
            raise ConfigError(f"max_model_len must be >= 16, got {max_model_len}")
        if not 0.0 < gpu_memory_utilization <= 1.0:
            raise ConfigError(
                f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}"
            )
        if engine is None and not available("vllm"):
            raise ConfigError(
                f"{hint('the vllm: LLM backend', 'gpu')} (on a GPU machine). To open an index "
                "built with vLLM elsewhere, pass another LLM (e.g. --llm extractive or "
                "--llm openai:MODEL@URL)"
            )
        self.model = model
        self.dtype = dtype
        self.tensor_parallel_size = int(tensor_parallel_size)
        self.max_model_len = max_model_len
        self.gpu_memory_utilization = float(gpu_memory_utilization)
        self.seed = int(seed)
        self.chat_template = chat_template
        self.thinking = thinking
        self.engine_options = dict(engine_options or {})
        self._engine = engine
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        #: Which structured-output API the installed vLLM offers (set on first JSON batch).
        self.structured_api: str | None = None
        #: generate calls made, prompts sent, answers re-asked, answers repaired.
        self.generate_calls = 0
        self.prompts_sent = 0
        self.reasks = 0
        self.repaired = 0

    @property
    def name(self) -> str:
        return f"vllm:{self.model}"

    # ------------------------------------------------------------------ engine
    def engine_kwargs(self) -> dict[str, Any]:
        """The keyword arguments ``vllm.LLM`` is built with."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "seed": self.seed,
        }
        if self.max_model_len is not None:
            kwargs["max_model_len"] = int(self.max_model_len)
        kwargs.update(self.engine_options)
        return kwargs

    def load(self) -> Any:
        """Build the vLLM engine on first use (loads the weights onto the GPUs)."""
        with self._lock:
            if self._engine is None:
                vllm = require("vllm", "gpu", "the vllm: LLM backend", error=LLMError)
                try:
                    self._engine = vllm.LLM(**self.engine_kwargs())
                except Exception as exc:
                    raise LLMError(f"vLLM could not load {self.model!r}: {exc}") from exc
            return self._engine

    # ------------------------------------------------------------------ prompts
    def format_prompt(self, prompt: str) -> str:
        """The prompt as the model expects it: inside its chat template when it has one."""
        if not self.chat_template:
            return prompt
        if self._tokenizer is None:
            self._tokenizer = self.load().get_tokenizer()
        tokenizer = self._tokenizer
        if not getattr(tokenizer, "chat_template", None):
            return prompt
        return tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt}],
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=self.thinking,
        )

    def sampling_params(self, request: LLMRequest) -> Any:
        """One ``SamplingParams`` per request: its own max_tokens, temperature and schema."""
        vllm = importlib.import_module("vllm")
        kwargs: dict[str, Any] = {
            "max_tokens": int(request.max_tokens),
            "temperature": float(request.temperature),
        }
        if request.schema is not None:
            kwargs.update(self._structured_output(request.schema))
        return vllm.SamplingParams(**kwargs)

    def _structured_output(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        try:
            module = importlib.import_module("vllm.sampling_params")
        except ImportError:
            module = None
        if module is not None and hasattr(module, "StructuredOutputsParams"):
            self.structured_api = "structured_outputs"
            return {"structured_outputs": module.StructuredOutputsParams(json=dict(schema))}
        if module is not None and hasattr(module, "GuidedDecodingParams"):
            self.structured_api = "guided_decoding"
            return {"guided_decoding": module.GuidedDecodingParams(json=dict(schema))}
        # No constrained decoding in this vLLM: the prompt asks for JSON, repair does the rest.
        self.structured_api = "none"
        return {}

    # ------------------------------------------------------------------ batch
    def complete(
        self, requests: Sequence[LLMRequest], on_answer: AnswerCallback | None = None
    ) -> list[LLMResponse]:
        """Answer a stage's batch with one ``generate`` call (plus one for re-asks, if any).

        Raises
        ------
        LLMError
            When vLLM fails, or a JSON answer is unusable after one re-ask.
        """
        requests = list(requests)
        if not requests:
            return []
        texts, prompt_tokens, completion_tokens = self._generate(
            [r.prompt for r in requests], requests
        )
        responses: list[LLMResponse | None] = [None] * len(requests)
        bad: dict[int, str] = {}
        for i, request in enumerate(requests):
            if request.schema is None:
                responses[i] = LLMResponse(texts[i], prompt_tokens[i], completion_tokens[i])
                continue
            try:
                parsed = parse_json_answer(texts[i], request.schema)
            except JSONAnswerError as exc:
                bad[i] = str(exc)
                continue
            responses[i] = self._json_response(parsed, prompt_tokens[i], completion_tokens[i])
        for i, response in enumerate(responses):
            if response is not None and on_answer is not None:
                on_answer(i, response)
        if bad:
            self._reask(
                requests, texts, prompt_tokens, completion_tokens, bad, responses, on_answer
            )
        return [r for r in responses if r is not None]

    def _reask(
        self,
        requests: list[LLMRequest],
        texts: list[str],
        prompt_tokens: list[int],
        completion_tokens: list[int],
        bad: dict[int, str],
        responses: list[LLMResponse | None],
        on_answer: AnswerCallback | None,
    ) -> None:
        """Ask the unusable JSON answers once more, in one batched call."""
        order = sorted(bad)
        self.reasks += len(order)
        retry_prompts = [
            reask_prompt(requests[i].prompt, texts[i], bad[i], requests[i].schema or {})
            for i in order
        ]
        texts2, ptok2, ctok2 = self._generate(retry_prompts, [requests[i] for i in order])
        for j, i in enumerate(order):
            schema = requests[i].schema or {}
            try:
                parsed = parse_json_answer(texts2[j], schema)
            except JSONAnswerError as exc:
                # Counted by the engine and held to the index's yield floor, not fatal alone.
                meta = {"structured": self.structured_api, "reasked": True}
                response = LLMResponse(
                    texts2[j],
                    prompt_tokens[i] + ptok2[j],
                    completion_tokens[i] + ctok2[j],
                    meta={**meta, **unusable_meta(str(exc), texts2[j])},
                )
            else:
                response = self._json_response(
                    parsed,
                    prompt_tokens[i] + ptok2[j],
                    completion_tokens[i] + ctok2[j],
                    reasked=True,
                )
            responses[i] = response
            if on_answer is not None:
                on_answer(i, response)

    def _json_response(
        self, parsed: ParsedAnswer, prompt_tokens: int, completion_tokens: int, reasked=False
    ) -> LLMResponse:
        meta: dict[str, Any] = {"structured": self.structured_api, "think": parsed.think}
        if parsed.repaired:
            self.repaired += 1
            meta["repaired"] = True
        if reasked:
            meta["reasked"] = True
        return LLMResponse(parsed.text, prompt_tokens, completion_tokens, meta=meta)

    def _generate(
        self, prompts: list[str], requests: list[LLMRequest]
    ) -> tuple[list[str], list[int], list[int]]:
        """One ``generate`` call for all prompts; texts and token counts in input order."""
        engine = self.load()
        formatted = [self.format_prompt(p) for p in prompts]
        params = [self.sampling_params(r) for r in requests]
        try:
            with self._lock:  # vllm.LLM is not meant to be driven from two threads at once
                outputs = engine.generate(formatted, params, use_tqdm=False)
        except Exception as exc:
            raise LLMError(
                f"{self.name}: generate failed for {len(prompts)} prompts: {exc}"
            ) from exc
        self.generate_calls += 1
        self.prompts_sent += len(prompts)
        if len(outputs) != len(prompts):
            raise LLMError(f"{self.name}: {len(prompts)} prompts but {len(outputs)} outputs")
        texts: list[str] = []
        prompt_tokens: list[int] = []
        completion_tokens: list[int] = []
        for out in outputs:
            if not out.outputs:
                raise LLMError(f"{self.name}: vLLM returned no completion for a prompt")
            best = out.outputs[0]
            texts.append(best.text)
            prompt_tokens.append(len(out.prompt_token_ids or ()))
            completion_tokens.append(len(best.token_ids or ()))
        return texts, prompt_tokens, completion_tokens
