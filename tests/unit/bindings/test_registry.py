"""Backend specs (CLI, API, environment) and the shared HTTP/JSON helpers."""

from __future__ import annotations

import random

import pytest

from graphstrata.bindings.embed.models import HashingEmbedder, OpenAIEmbedder
from graphstrata.bindings.http import RetryPolicy, normalize_base_url, parse_retry_after
from graphstrata.bindings.llm.extractive import ExtractiveLLM
from graphstrata.bindings.llm.openai import OpenAICompatibleLLM
from graphstrata.bindings.llm.repair import JSONAnswerError, parse_json_answer
from graphstrata.bindings.registry import (
    choose_spec,
    make_embedder,
    make_llm,
    resolve_backends,
)
from graphstrata.bindings.specs import split_options
from graphstrata.engine import prompts
from graphstrata.engine.config import ConfigError

URL = "http://127.0.0.1:8000/v1"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in (
        "GRAPHSTRATA_LLM",
        "GRAPHSTRATA_EMBEDDER",
        "GRAPHSTRATA_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GRAPHSTRATA_EMBED_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def test_openai_spec_round_trips_through_its_name():
    llm = make_llm(f"openai:qwen2.5-7b@{URL}?max_concurrency=3&timeout=5&max_retries=2")
    assert isinstance(llm, OpenAICompatibleLLM)
    assert (llm.model, llm.base_url, llm.max_concurrency, llm.timeout) == (
        "qwen2.5-7b",
        URL,
        3,
        5.0,
    )
    assert llm.retry.max_retries == 2
    assert llm.name == f"openai:qwen2.5-7b@{URL}"
    again = make_llm(llm.name)  # the name is recorded in the index and reopens the backend
    assert (again.model, again.base_url) == (llm.model, llm.base_url)


def test_openai_spec_defaults_and_keyword_options(monkeypatch):
    assert make_llm("openai:gpt-4o-mini").base_url == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.2:11434")
    llm = make_llm("openai:llama3", max_concurrency=2, json_mode="json_object")
    assert llm.base_url == "http://10.0.0.2:11434/v1"  # a bare host gets /v1
    assert llm.max_concurrency == 2 and llm.json_mode == "json_object"
    # A model name may itself contain "@" when no URL follows.
    assert make_llm("openai:org@model").model == "org@model"


def test_env_vars_choose_the_backends(monkeypatch):
    monkeypatch.setenv("GRAPHSTRATA_LLM", f"openai:m@{URL}")
    monkeypatch.setenv("GRAPHSTRATA_EMBEDDER", "hashing:24")
    assert isinstance(make_llm(), OpenAICompatibleLLM)
    assert make_embedder().dim == 24
    assert isinstance(make_llm("extractive"), ExtractiveLLM)  # an explicit spec wins


def test_precedence_is_argument_then_environment_then_index_then_default():
    assert choose_spec("a", "e", "i", "d") == ("a", "argument")
    assert choose_spec(None, "e", "i", "d") == ("e", "environment")
    assert choose_spec(None, "", "i", "d") == ("i", "index")  # empty variable = unset
    assert choose_spec(None, None, None, "d") == ("d", "default")
    emb = HashingEmbedder(8)
    assert choose_spec(emb, "e", "i", "d") == (emb, "argument")  # objects count as arguments


def test_resolve_backends_for_a_new_index():
    env = {"GRAPHSTRATA_EMBEDDER": "hashing:24", "GRAPHSTRATA_LLM": f"openai:m@{URL}"}
    chosen = resolve_backends(
        None, None, recorded_embedder="hashing:8", recorded_llm=None, environ=env
    )
    assert (chosen.embedder.dim, chosen.embedder_source) == (24, "environment")
    assert isinstance(chosen.llm, OpenAICompatibleLLM) and chosen.llm_source == "environment"
    chosen = resolve_backends(
        "hashing:16", "extractive", recorded_embedder="hashing:8", recorded_llm=None, environ=env
    )
    assert (chosen.embedder.dim, chosen.embedder_source) == (16, "argument")
    assert isinstance(chosen.llm, ExtractiveLLM) and chosen.llm_source == "argument"
    chosen = resolve_backends(
        None, None, recorded_embedder="hashing:8", recorded_llm=None, environ={}
    )
    assert (chosen.embedder.dim, chosen.embedder_source) == (8, "index")
    assert isinstance(chosen.llm, ExtractiveLLM) and chosen.llm_source == "default"


def test_resolve_backends_keeps_the_embedder_that_built_an_index():
    built = {"name": "hashing-64", "dim": 64}

    def resolve(embedder=None, env=None):
        return resolve_backends(
            embedder,
            None,
            recorded_embedder="hashing-64",
            recorded_llm=f"openai:m@{URL}",
            built_with=built,
            environ=env or {},
        )

    chosen = resolve()
    assert (chosen.embedder.name, chosen.embedder_source) == ("hashing-64", "index")
    assert chosen.llm_source == "index" and isinstance(chosen.llm, OpenAICompatibleLLM)
    # A compatible spec from the environment or the argument is accepted ...
    assert resolve(env={"GRAPHSTRATA_EMBEDDER": "hashing:64"}).embedder_source == "environment"
    assert resolve(HashingEmbedder(64)).embedder_source == "argument"
    # ... another embedder is an error that says where it came from.
    with pytest.raises(ConfigError, match="GRAPHSTRATA_EMBEDDER gives 'hashing-32'"):
        resolve(env={"GRAPHSTRATA_EMBEDDER": "hashing:32"})
    with pytest.raises(ConfigError, match=r"built with embedder 'hashing-64'.*argument"):
        resolve("hashing:32", env={"GRAPHSTRATA_EMBEDDER": "hashing:64"})
    # The LLM of an index is not fixed: the environment beats the manifest.
    env_llm = resolve(env={"GRAPHSTRATA_LLM": "extractive"})
    assert isinstance(env_llm.llm, ExtractiveLLM) and env_llm.llm_source == "environment"


def test_api_key_comes_from_the_environment_never_the_spec(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert make_llm(f"openai:m@{URL}")._api_key == "sk-openai"
    monkeypatch.setenv("GRAPHSTRATA_API_KEY", "sk-graphstrata")
    llm = make_llm(f"openai:m@{URL}")
    assert llm._api_key == "sk-graphstrata" and "sk-" not in llm.name
    assert make_llm(f"openai:m@{URL}", api_key="sk-explicit")._api_key == "sk-explicit"
    with pytest.raises(ConfigError, match="API key does not belong in a spec"):
        make_llm(f"openai:m@{URL}?api_key=sk-leak")


@pytest.mark.parametrize(
    "spec",
    [
        "gpt",
        "openai:",
        f"openai:@{URL}",
        "openai:m@ftp://host/v1",
        f"openai:m@{URL}?nonsense=1",
        f"openai:m@{URL}?max_concurrency=0",
        f"openai:m@{URL}?max_concurrency=many",
        f"openai:m@{URL}?json_mode=yaml",
        f"openai:m@{URL}?timeout=0",
        f"openai:m@{URL}?max_retries=-1",
        f"openai:m@{URL}?a&&b",
        "extractive?x=1",
    ],
)
def test_bad_llm_specs_are_config_errors(spec):
    with pytest.raises(ConfigError):
        make_llm(spec)


def test_embedder_specs_and_options():
    assert isinstance(make_embedder("hashing"), HashingEmbedder)
    assert make_embedder("hashing:16").dim == 16 and make_embedder("hashing-32").dim == 32
    st = make_embedder("st:/models/bge?batch_size=8&device=cpu")
    assert (st.model_spec, st.batch_size, st.device) == ("/models/bge", 8, "cpu")
    assert make_embedder("all-MiniLM-L6-v2", batch_size=16).batch_size == 16
    emb = make_embedder(f"openai-embed:bge-m3@{URL}?dim=1024&batch_size=16&max_input_tokens=8192")
    assert isinstance(emb, OpenAIEmbedder)
    assert (emb.name, emb.dim, emb.batch_size, emb.max_input_tokens) == (
        "openai-embed:bge-m3",
        1024,
        16,
        8192,
    )
    assert emb.url == f"{URL}/embeddings"


@pytest.mark.parametrize(
    "spec",
    [
        "definitely-not-a-model",
        "hashing:4",
        "hashing:x",
        "hashingfoo",
        "hashing:16?dim=3",
        "st:/m?colour=red",
        "openai-embed:",
        f"openai-embed:m@{URL}?dim=0",
    ],
)
def test_bad_embedder_specs_are_config_errors(spec):
    with pytest.raises(ConfigError):
        make_embedder(spec)


def test_split_options():
    assert split_options("vllm:/m") == ("vllm:/m", {})
    assert split_options("vllm:/m?dtype=half&tp=2") == ("vllm:/m", {"dtype": "half", "tp": "2"})


def test_base_url_normalization():
    assert normalize_base_url("http://h:1") == "http://h:1/v1"
    assert normalize_base_url("http://h:1/v1/") == "http://h:1/v1"
    assert normalize_base_url("https://h/api/openai/v1") == "https://h/api/openai/v1"
    for bad in ("h:1/v1", "file:///tmp", "http://"):
        with pytest.raises(ConfigError):
            normalize_base_url(bad)


def test_backoff_is_full_jitter_under_a_cap_and_honours_retry_after():
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0, max_retry_after=60.0)
    rng = random.Random(1)
    for retry in range(8):
        cap = min(4.0, 0.5 * 2**retry)
        delays = [policy.delay(retry, None, rng) for _ in range(200)]
        assert all(0.0 <= d <= cap for d in delays)
        assert max(delays) > 0.5 * cap  # spread over the whole window, not a fixed wait
    assert policy.delay(0, 7.0, rng) == 7.0
    assert policy.delay(0, 600.0, rng) == 60.0


def test_retry_after_header_forms():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past
    future = parse_retry_after("Wed, 21 Oct 2099 07:28:00 GMT")
    assert future is not None and future > 1e6


def test_json_answers_are_parsed_repaired_or_rejected():
    schema = prompts.QUERY_ENTITIES_SCHEMA
    ok = parse_json_answer('{"entities": ["Brekkvik"]}', schema)
    assert ok.value == {"entities": ["Brekkvik"]} and not ok.repaired
    fixed = parse_json_answer('Sure!\n```json\n{"entities": ["Brekkvik",]\n```', schema)
    assert fixed.value == {"entities": ["Brekkvik"]} and fixed.repaired
    assert fixed.text == '{"entities": ["Brekkvik"]}'
    for bad in ("I cannot help.", '{"names": []}', '{"entities": "Brekkvik"}', "[1, 2]", ""):
        with pytest.raises(JSONAnswerError):
            parse_json_answer(bad, schema)


def test_every_registered_llm_backend_is_one_module_with_a_spec_and_a_factory():
    import importlib

    from graphstrata.bindings.registry import LLM_BACKENDS, llm_specs

    for prefix, name in LLM_BACKENDS.items():
        module = importlib.import_module(name)
        assert module.SPEC.startswith(f"{prefix}:") and callable(module.from_spec)
        assert module.SPEC in llm_specs()
    with pytest.raises(ConfigError, match="unknown LLM backend 'nope:x'; use extractive, vllm:"):
        make_llm("nope:x")
