"""Extraction yield and domain prompts through a real HTTP backend: the ``openai`` backend
against the loopback server (tests/helpers/fake_openai_server.py) answering like weak and
reasoning models do (empty, truncated, ``<think>``-wrapped, valid JSON holding nothing).

Each write's report says per task what the answers held; a stage below the index's floor
fails before anything is committed, naming the stage, the model and the first bad answer;
an index's own prompts are what the server receives, change the manifest's hash and the
LLM cache keys.
"""

from __future__ import annotations

import json
import time

import pytest

from graphstrata.bindings.api import Index, IndexConfig, PromptConfig
from graphstrata.bindings.registry import make_llm
from graphstrata.engine import ExtractionYieldError
from tests.helpers.fake_openai_server import FakeOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv
    assert not srv.overflowed


def spec(server: FakeOpenAIServer) -> str:
    return f"openai:fake-model@{server.url}?max_concurrency=4&max_retries=0"


def graph_only(**sections) -> IndexConfig:
    """The heterograph alone (every LLM stage but the summaries is there)."""
    cfg = IndexConfig.from_dict({"hierarchy": {"enabled": False}, **sections})
    cfg.validate()
    return cfg


def build(tmp_path, server, docs, embedder, name="idx", config=None):
    index = Index.create(
        tmp_path / name, config or graph_only(), embedder=embedder, llm=spec(server)
    )
    return index, index.insert(docs)


def test_a_normal_build_reports_every_stage_yield(tmp_path, server, sample_docs, hashing_embedder):
    _, report = build(tmp_path, server, sample_docs[:4], hashing_embedder)
    table = report.llm_yield
    assert {"decompose", "attribute", "community"} <= set(table)
    dec = table["decompose"]
    assert dec["inputs"] == report.chunks_added and dec["held"] == dec["inputs"]
    assert dec["valid_json"] == dec["answers"] and dec["empty"] == dec["failed"] == 0
    assert dec["items_per_input"] > 1 and dec["item"] == "entity"
    assert json.loads(json.dumps(report.to_dict()))["llm_yield"] == table


def test_empty_answers_fail_the_build_before_the_commit(
    tmp_path, server, sample_docs, hashing_embedder
):
    index, first = build(tmp_path, server, sample_docs[:2], hashing_embedder)
    server.task_outcomes["decompose"] = "empty"
    with pytest.raises(ExtractionYieldError) as caught:
        index.insert(sample_docs[2:5])
    message = str(caught.value)
    assert message.startswith("decompose: 100 % of ")
    assert "held no entity" in message and "openai:fake-model@" in message
    assert "first bad response: ''" in message and "nothing was committed" in message
    assert index.version == first.version  # nothing committed
    assert Index.open(tmp_path / "idx", embedder=hashing_embedder).version == first.version


def test_json_holding_nothing_fails_and_a_lowered_floor_lets_it_through(
    tmp_path, server, sample_docs, hashing_embedder
):
    server.task_outcomes["decompose"] = "nothing"
    with pytest.raises(ExtractionYieldError, match=r'first bad response: .\{"semantic_units"'):
        build(tmp_path, server, sample_docs[:2], hashing_embedder)
    lowered = graph_only(yield_floor={"min_yield": 0.0})
    index, report = build(tmp_path, server, sample_docs[:2], hashing_embedder, "low", lowered)
    dec = report.llm_yield["decompose"]
    assert report.version == 1 and dec["held"] == 0 and dec["valid_json"] == dec["answers"]
    assert dec["first_bad"].startswith('{"semantic_units"')
    assert index.stats()["last_write_yield"]["decompose"]["held"] == 0


def test_truncated_answers_are_repaired_and_counted(
    tmp_path, server, sample_docs, hashing_embedder
):
    server.task_outcomes["decompose"] = "truncated"
    _, report = build(tmp_path, server, sample_docs[:3], hashing_embedder)
    dec = report.llm_yield["decompose"]
    assert dec["repaired"] == dec["answers"] > 0 and dec["held"] > 0


def test_reasoning_blocks_are_stripped_before_parsing(
    tmp_path, server, sample_docs, hashing_embedder
):
    # The block holds a decoy {"semantic_units": []}: parsed, it would yield nothing.
    for task in ("decompose", "attribute", "community"):
        server.task_outcomes[task] = "think"
    index, report = build(tmp_path, server, sample_docs[:3], hashing_embedder)
    dec = report.llm_yield["decompose"]
    assert dec["think"] == dec["answers"] > 0 and dec["held"] == dec["inputs"]
    assert report.llm_yield["attribute"]["think"] > 0
    texts = [h.text for h in index.query("Meridian Optics", "graph", 2000).nodes]
    assert texts and not any("<think>" in t for t in texts)


DOMAIN = {
    "entity_types": "optical instruments, observatories, ferries",
    "examples": "Text: The Echelle Polarimeter sees. -> entities: Echelle Polarimeter",
    "templates": {
        "community": "Name the themes of these texts as JSON "
        '{{"high_level_elements": [{{"title": "...", "description": "..."}}]}}.\n'
        "Texts:\n{texts}"
    },
}


def test_domain_prompts_are_what_the_server_receives(
    tmp_path, server, sample_docs, hashing_embedder
):
    default, _ = build(tmp_path, server, sample_docs[:2], hashing_embedder, "default")
    sent_default = [b["messages"][-1]["content"] for b in server.seen.bodies]
    server.reset()
    custom = graph_only(prompts=DOMAIN)
    index, report = build(tmp_path, server, sample_docs[:2], hashing_embedder, "custom", custom)
    sent = [b["messages"][-1]["content"] for b in server.seen.bodies]
    decompose = [p for p in sent if p.startswith("Decompose the text")]
    assert decompose and all(
        "(optical instruments, observatories, ferries)" in p for p in decompose
    )
    assert all("Examples:\nText: The Echelle Polarimeter sees." in p for p in decompose)
    assert any(p.startswith("Name the themes of these texts") for p in sent)
    assert not any(p.startswith("Name the themes") for p in sent_default)
    assert report.llm_calls > 0
    # The manifest records the prompts and their hash; a reopened index sends the same.
    stats, stats_default = index.stats()["prompts"], default.stats()["prompts"]
    assert stats["custom"] and not stats_default["custom"]
    assert stats["sha256"] != stats_default["sha256"]
    assert stats["sha256"] == PromptConfig(**DOMAIN).sha256
    reopened = Index.open(tmp_path / "custom", embedder=hashing_embedder, llm=spec(server))
    assert reopened.config.prompts.templates == DOMAIN["templates"]


def test_changed_prompts_change_the_cache_keys(tmp_path, server, sample_docs, hashing_embedder):
    cache = tmp_path / "shared-cache.sqlite"

    def build_with(name: str, cfg: IndexConfig) -> int:
        server.reset()
        llm = make_llm(spec(server), cache_path=cache)
        Index.create(tmp_path / name, cfg, embedder=hashing_embedder, llm=llm).insert(
            sample_docs[:2]
        )
        llm.close()
        return server.seen.chat_requests

    assert build_with("first", graph_only()) > 0
    assert build_with("same", graph_only()) == 0  # same prompts: every answer from the cache
    assert build_with("domain", graph_only(prompts=DOMAIN)) > 0


def test_http_operations_carry_the_yield_and_the_floor_error(
    tmp_path, server, sample_docs, hashing_embedder
):
    import httpx

    from tests.helpers.servers import threaded_server

    index, _ = build(tmp_path, server, sample_docs[:2], hashing_embedder)
    index.close()

    def insert(c: httpx.Client, doc: dict) -> dict:
        op = c.post("/v1/documents", json=[doc]).json()
        for _ in range(1200):
            op = c.get(f"/v1/operations/{op['id']}").json()
            if op["status"] in ("succeeded", "failed"):
                return op
            time.sleep(0.05)
        raise AssertionError(f"operation {op['id']} did not finish")

    served = threaded_server(tmp_path / "idx")
    with served as (url, _, _), httpx.Client(base_url=url, timeout=60, trust_env=False) as c:
        done = insert(c, sample_docs[2])
        assert done["status"] == "succeeded", done
        assert done["report"]["llm_yield"]["decompose"]["held"] > 0
        server.task_outcomes["decompose"] = "empty"
        failed = insert(c, sample_docs[3])
        assert failed["status"] == "failed" and failed["report"] is None
        assert "decompose: 100 % of " in failed["error"]["message"], failed["error"]
        assert Index.open(tmp_path / "idx").version == done["report"]["version"]
