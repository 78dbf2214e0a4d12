"""The server routes the web page reads (issue 49), on a real uvicorn server over the sample
corpus with an all-rights token and a read-only one: node labels, the entity and community
lookup ``GET /v1/nodes?q=``, the edge-kind filter of a neighbourhood, a document's chunk ids,
the caller's rights per index, versions and kind words in the statistics, and the page's files
(the icon open without a token)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.servers import threaded_server

pytestmark = pytest.mark.integration

TOKEN = "all-rights"
READ = "read-only"


@pytest.fixture(scope="module")
def served(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[str]:
    from graphstrata.bindings.api import Index

    path: Path = tmp_path_factory.mktemp("routes") / "sample"
    Index.create(path, embedder=hashing_embedder).insert(sample_docs)
    scoped = {READ: {"rights": ["read"]}}
    with threaded_server(path, token=TOKEN, tokens=scoped) as (url, _app, _server):
        yield url


def get(url: str, path: str, token: str | None = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.get(url + path, headers=headers, timeout=60)


def found(url: str, q: str) -> list[dict[str, Any]]:
    resp = get(url, "/v1/nodes?q=" + q)
    assert resp.status_code == 200, resp.text
    return resp.json()["nodes"]


def test_lookup_finds_entities_then_communities_by_title(served) -> None:
    nodes = found(served, "meridian optics")
    assert nodes[0]["kind"] == "N" and nodes[0]["label"] == "Meridian Optics"  # exact match
    assert all("meridian optics" in n["label"].lower() for n in nodes if n["kind"] == "N")
    elements = [n for n in nodes if n["kind"] == "H"]  # a title stands for its element
    assert elements and "Meridian Optics" in elements[0]["label"]
    assert found(served, "no such name anywhere") == []


def test_lookup_refuses_bad_input(served) -> None:
    for query in ("", "?q=" + "x" * 201, "?q=a&limit=0", "?q=a&limit=101"):
        resp = get(served, "/v1/nodes" + (query if query.startswith("?") else "?q=" + query))
        assert resp.status_code == 422, (query[:20], resp.text)
    assert get(served, "/v1/nodes?q=Meridian", token=None).status_code == 401


def test_every_node_of_a_neighbourhood_has_a_label_in_words(served) -> None:
    entity = found(served, "Meridian Optics")[0]
    hood = get(served, f"/v1/nodes/{entity['id']}/neighbourhood?limit=24").json()
    assert hood["node"]["label"] == "Meridian Optics"
    labels = [m["label"] for m in hood["neighbours"]]
    assert len(labels) >= 5 and all(labels)
    assert not [x for x in labels if re.fullmatch(r"[A-Z]?\d+", x)]
    assert all(len(x) <= 48 for x in labels)
    relations = [m for m in hood["neighbours"] if m["kind"] == "R"]
    assert relations and all(" — " in m["label"] for m in relations)
    assert any(m["label"].count(" — ") == 2 for m in relations)  # source — relation — target


def test_a_community_shows_its_members_and_title_only(served) -> None:
    element = next(n for n in found(served, "Meridian Optics") if n["kind"] == "H")
    path = f"/v1/nodes/{element['id']}/neighbourhood?limit=100&kind=5&kind=6"
    hood = get(served, path).json()
    assert {e["kind"] for e in hood["edges"]} <= {5, 6} and hood["edges"]
    kinds = {m["kind"] for m in hood["neighbours"]}
    assert "O" in kinds and kinds & {"S", "A", "H"} and "R" not in kinds
    resp = get(served, f"/v1/nodes/{element['id']}/neighbourhood?kind=99")
    assert resp.status_code == 422 and "99" in resp.json()["error"]["message"]


def test_a_chunk_has_its_hierarchy_path_and_a_document_its_chunk_ids(served) -> None:
    text = get(served, "/v1/texts/optics%2Fmeridian_founding.md").json()
    assert text["chunk_ids"] and len(text["chunk_ids"]) == text["chunks"]
    hood = get(served, f"/v1/nodes/{text['chunk_ids'][0]}/neighbourhood").json()
    assert hood["node"]["kind"] == "T" and hood["node"]["label"].startswith("The Founding")
    assert [c["layer"] for c in hood["chain"]] == list(range(1, len(hood["chain"]) + 1))
    assert hood["chain"] and all(c["label"] for c in hood["chain"])


def test_rights_per_index_follow_the_token(served) -> None:
    (full,) = get(served, "/v1/indexes").json()["indexes"]
    (read,) = get(served, "/v1/indexes", token=READ).json()["indexes"]
    assert full["rights"] == ["read", "write"] and read["rights"] == ["read"]


def test_stats_carry_versions_with_times_and_kind_words(served) -> None:
    stats = get(served, "/v1/stats").json()
    index = stats["index"]
    versions = index["versions"]
    assert [v["version"] for v in versions] == sorted(
        (v["version"] for v in versions), reverse=True
    )
    assert versions[0]["version"] == index["version"]
    assert versions[0]["committed_at"] == index["committed_at"] > 1e9
    assert stats["kinds"]["nodes"]["N"] == "entity"
    assert stats["kinds"]["edges"]["5"] == "element-member"
    assert set(map(str, index["edges_by_kind"])) <= set(stats["kinds"]["edges"])


def test_the_page_and_its_icon_need_no_token(served) -> None:
    from graphstrata.bindings.server.routes.page import FILES

    for path, (_name, media) in FILES.items():
        resp = get(served, path, token=None)
        assert resp.status_code == 200, path
        assert resp.headers["content-type"] == media
        assert "default-src 'self'" in resp.headers["content-security-policy"]
    page = get(served, "/", token=None).text
    for script in re.findall(r'src="(/static/[^"]+)"', page):
        assert script in FILES
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing from another host
