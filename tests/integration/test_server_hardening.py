"""The HTTP service under careless and hostile clients, and with failing upstreams.

Everything runs against real servers on 127.0.0.1: uvicorn with the service's own protocol
and settings (in a thread of this process, so a test can choose small timeouts, or in a
subprocess), raw sockets for slow or oversized requests, and the loopback OpenAI-compatible
fake (``tests/helpers/fake_openai_server.py``) as a failing LLM or embedding server. Every loop is
bounded; no assertion is about elapsed time: a slow client is detected by the server closing
the connection while the client still had bytes to send.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from benchmarks.service.server_process import server_process
from tests.helpers.fake_openai_server import FakeOpenAIServer
from tests.helpers.servers import threaded_server

pytestmark = pytest.mark.integration

TOKEN = "hardening-token"
#: Python-isms that must never reach a client in an error message.
PYTHONISMS = re.compile(
    r"\w\(\)|<class|<function|keyword argument|positional argument|Traceback|"
    r"\bself\b|RecursionError|DocumentIn|RetrieveRequest|File \""
)


# ---------------------------------------------------------------------------- servers
@pytest.fixture(scope="module")
def base_index(tmp_path_factory, sample_docs, hashing_embedder) -> Path:
    from graphstrata.bindings.api import Index

    path = tmp_path_factory.mktemp("hardening") / "base"
    index = Index.create(path, embedder=hashing_embedder)
    index.insert(sample_docs[:12])
    return path


@pytest.fixture(scope="module")
def strict_server(base_index) -> Iterator[tuple[str, Any, Any]]:
    """Auth on, 1 s header and body timeouts, at most 6 connections, 64 KiB bodies."""
    with threaded_server(
        base_index,
        token=TOKEN,
        header_timeout_s=1.0,
        body_timeout_s=1.0,
        max_connections=6,
        max_body_bytes=65_536,
    ) as srv:
        yield srv


def authed(url: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    return httpx.Client(base_url=url, headers=headers, timeout=60, trust_env=False)


# ---------------------------------------------------------------------------- raw HTTP
def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    assert parts.hostname == "127.0.0.1"
    sock = socket.create_connection((parts.hostname, parts.port or 80), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_until_closed(sock: socket.socket, wait_s: float = 30.0) -> bytes:
    """Everything the server sends until it closes the connection (bounded by ``wait_s``)."""
    data = b""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], 0.5)
        if not ready:
            continue
        try:
            chunk = sock.recv(65_536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def read_one_response(
    sock: socket.socket, wait_s: float = 30.0
) -> tuple[int, dict[str, str], bytes]:
    """One ``Content-Length`` response from a keep-alive connection."""
    data = b""
    deadline = time.monotonic() + wait_s
    while b"\r\n\r\n" not in data and time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], 0.5)
        if ready:
            chunk = sock.recv(65_536)
            if not chunk:
                break
            data += chunk
    status, headers, body = parse_response(data)
    while len(body) < int(headers.get("content-length", 0)) and time.monotonic() < deadline:
        ready, _, _ = select.select([sock], [], [], 0.5)
        if ready:
            chunk = sock.recv(65_536)
            if not chunk:
                break
            body += chunk
    return status, headers, body


def parse_response(data: bytes) -> tuple[int, dict[str, str], bytes]:
    head, sep, body = data.partition(b"\r\n\r\n")
    assert sep, f"no complete response: {data[:200]!r}"
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, headers, body


def trickle(sock: socket.socket, payload: bytes, pause_s: float) -> tuple[int, bytes]:
    """Send ``payload`` one byte at a time; stop when the server answers or hangs up.

    Returns how many bytes were sent and what the server sent back.
    """
    for i in range(len(payload)):
        ready, _, _ = select.select([sock], [], [], pause_s)
        if ready:
            return i, read_until_closed(sock)
        try:
            sock.sendall(payload[i : i + 1])
        except (BrokenPipeError, ConnectionResetError):
            return i, read_until_closed(sock)
    return len(payload), read_until_closed(sock, wait_s=5)


# ---------------------------------------------------------------------------- slow clients
def test_slow_headers_get_408_and_the_connection_is_closed(strict_server):
    """Slowloris: request headers sent byte by byte are cut off, long before they end."""
    url, _, _ = strict_server
    head = (
        b"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + b"".join(b"X-Padding-%d: %s\r\n" % (i, b"a" * 20) for i in range(40))
        + b"\r\n"
    )
    with connect(url) as sock:
        sent, answer = trickle(sock, head, pause_s=0.1)
    assert sent < len(head), "the server waited for every header byte"
    status, headers, body = parse_response(answer)
    assert status == 408 and headers["connection"] == "close"
    assert json.loads(body)["error"]["code"] == "request_timeout"


def test_a_connection_that_sends_nothing_is_closed(strict_server):
    url, _, _ = strict_server
    with connect(url) as sock:
        assert read_until_closed(sock) == b""  # closed (EOF), nothing answered


def test_slow_body_gets_408_and_the_connection_is_closed(strict_server):
    url, _, _ = strict_server
    body = json.dumps({"query": "lidar " * 200}).encode()
    head = (
        f"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with connect(url) as sock:
        sock.sendall(head + body[:10])
        sent, answer = trickle(sock, body[10:], pause_s=0.1)
    assert sent < len(body) - 10, "the server waited for the whole slow body"
    status, headers, payload = parse_response(answer)
    assert status == 408 and headers["connection"] == "close"
    assert json.loads(payload)["error"]["code"] == "request_timeout"


def test_unauthenticated_large_body_is_refused_before_it_is_read(strict_server):
    """401 comes back while the 8 MiB body is still unsent; the connection is then closed."""
    url, _, _ = strict_server
    for path in ("/v1/documents", "/v1/retrieve"):
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {8 * 1024 * 1024}\r\n\r\n"
        ).encode()
        with connect(url) as sock:
            sock.sendall(head)  # and not a byte of the body
            status, headers, payload = parse_response(read_until_closed(sock))
        assert status == 401 and headers["www-authenticate"] == "Bearer", payload
        assert headers["connection"] == "close"
        assert json.loads(payload)["error"]["code"] == "unauthorized"


def test_unauthenticated_small_body_keeps_the_connection(strict_server):
    """A small refused body is read and dropped; the next request on the connection works."""
    url, _, _ = strict_server
    body = json.dumps({"query": "lidar"}).encode()

    def request(token: str | None) -> bytes:
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        return (
            f"POST /v1/retrieve HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body

    with connect(url) as sock:
        sock.sendall(request(None))
        status, headers, _ = read_one_response(sock)
        assert status == 401 and headers.get("connection") != "close"
        sock.sendall(request(TOKEN))
        status, _, payload = read_one_response(sock)
        assert status == 200, payload
        assert json.loads(payload)["nodes"]


def wait_idle(server: Any) -> None:
    """Wait (bounded) until the server has seen every earlier connection close."""
    for _ in range(200):
        if not server.server_state.connections:
            return
        time.sleep(0.05)
    raise AssertionError(f"{len(server.server_state.connections)} connections stay open")


def test_connections_over_the_cap_get_503_and_are_closed(strict_server):
    url, _, server = strict_server
    wait_idle(server)
    held: list[socket.socket] = []
    try:
        for _ in range(6):  # max_connections = 6, each accepted and idle in keep-alive
            sock = connect(url)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert read_one_response(sock)[0] == 200
            held.append(sock)
        with connect(url) as extra:
            status, headers, payload = parse_response(read_until_closed(extra))
        assert status == 503 and headers["retry-after"] == "1"
        assert headers["connection"] == "close"
        assert json.loads(payload)["error"]["code"] == "overloaded"
    finally:
        for sock in held:
            sock.close()
    # Once they are closed, connections are served again (the server notices the closes
    # asynchronously: a few tries, bounded).
    for _ in range(100):
        try:
            with authed(url) as c:
                metrics = c.get("/metrics")
            if metrics.status_code == 200:
                break
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    assert metrics.status_code == 200
    assert re.search(
        r'graphstrata_rejected_total\{index="[^"]+",what="connection"\} [1-9]', metrics.text
    )


def test_oversized_headers_are_refused(strict_server):
    url, _, _ = strict_server
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n"
    with connect(url) as sock:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head)
        answer = read_until_closed(sock)
    assert parse_response(answer)[0] in (400, 431)


# ---------------------------------------------------------------------------- metrics
def test_metric_labels_come_from_a_closed_set(strict_server):
    """Random methods, paths and tokens never create new time series."""
    url, app, _ = strict_server
    templates = {r.path for r in app.state.routes}
    pattern = re.compile(
        r'^graphstrata_requests_total\{endpoint="([^"]*)",method="([^"]*)",status="([^"]*)"\}',
        re.MULTILINE,
    )
    with httpx.Client(base_url=url, timeout=30, trust_env=False) as anon, authed(url) as c:
        before = set(pattern.findall(c.get("/metrics").text))
        for i in range(40):
            anon.request(f"M{i}X", f"/v1/retrieve?x={i}")
            anon.request("GET", f"/random/{i}/path")
            anon.post(f"/v1/documents/{i}", json=[])
            c.request(f"BREW{i}", f"/v1/nothing/{i}")
            c.get(f"/v1/operations/op-{i}")
        samples = set(pattern.findall(c.get("/metrics").text))
    assert samples
    methods = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "other"}
    for endpoint, method, status in samples:
        assert endpoint in templates | {"unmatched"}, endpoint
        assert method in methods, method
        assert re.fullmatch(r"[1-5]\d\d|[1-5]xx|other", status), status
    # 200 requests with 80 distinct methods and 160 distinct paths: a handful of new series.
    assert len(samples - before) <= 6, sorted(samples - before)


# ---------------------------------------------------------------------------- methods
def test_options_and_405_list_exactly_the_methods_of_the_path(strict_server):
    url, _, _ = strict_server
    with authed(url) as c:
        paths = c.get("/openapi.json").json()["paths"]
        patterns = {t: re.compile(re.sub(r"\{[^}]+\}", ".+", t)) for t in paths}
        for template in paths:
            path = re.sub(r"\{[^}]+\}", "ferry.md", template)
            # A fixed path can also be a parameter of another template: /v1/documents/upload
            # is the upload route and the document "upload" (GET, DELETE).
            expected = {"OPTIONS"} | {
                m.upper() for t, ops in paths.items() if patterns[t].fullmatch(path) for m in ops
            }
            resp = c.options(path)
            assert resp.status_code == 204, (path, resp.text)
            assert set(resp.headers["allow"].split(", ")) == expected, path
            wrong = next(m for m in ("PUT", "PATCH", "POST", "DELETE") if m not in expected)
            resp = c.request(wrong, path)
            assert resp.status_code == 405, (wrong, path)
            assert resp.json()["error"]["code"] == "method_not_allowed"
            assert set(resp.headers["allow"].split(", ")) == expected, (wrong, path)


# ---------------------------------------------------------------------------- bad bodies
@pytest.fixture(scope="module")
def open_server(base_index) -> Iterator[str]:
    """Auth off, default limits."""
    with threaded_server(base_index) as (url, _, _):
        yield url


DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"query": "x", "params": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5001


@pytest.mark.parametrize(
    ("path", "content", "ctype"),
    [
        ("/v1/documents", DEEP, "application/json"),
        ("/v1/documents", DEEP + b"\n", "application/x-ndjson"),
        (
            "/v1/documents",
            b'[{"doc_id": "d", "text": "t", "metadata": ' + DEEP + b"}]",
            "application/json",
        ),
        ("/v1/retrieve", DEEP, "application/json"),
        ("/v1/retrieve", DEEP_OBJECT, "application/json"),
        ("/v1/retrieve/batch", DEEP, "application/json"),
        ("/v1/answer", DEEP, "application/json"),
        ("/v1/answer", DEEP_OBJECT, "application/json"),
        ("/v1/retrieve", b'{"query": "x", "top_k": ' + b"9" * 5000 + b"}", "application/json"),
        ("/v1/documents", b"[" + b"9" * 5000 + b"]", "application/json"),
        ("/v1/retrieve", b'{"query": "x", "top_k": NaN}', "application/json"),
        ("/v1/retrieve", b'{"query": "\xff\xfe"}', "application/json"),
        ("/v1/documents", b'[{"doc_id": "d", "text": "\xff"}]', "application/json"),
        ("/v1/retrieve", b'{"query": "x"} trailing', "application/json"),
    ],
    ids=[
        "docs-deep",
        "ndjson-deep",
        "metadata-deep",
        "retrieve-deep",
        "params-deep",
        "batch-deep",
        "answer-deep",
        "answer-params-deep",
        "huge-int",
        "docs-huge-int",
        "nan",
        "not-utf8",
        "docs-not-utf8",
        "trailing",
    ],
)
def test_unparseable_bodies_are_422_never_5xx(open_server, path, content, ctype):
    with httpx.Client(base_url=open_server, timeout=60, trust_env=False) as c:
        before = c.get("/v1/stats").json()["service"]["operations"]
        resp = c.post(path, content=content, headers={"content-type": ctype})
        assert resp.status_code == 422, resp.text
        error = resp.json()["error"]
        assert error["code"] == "bad_request" and error["message"]
        assert not PYTHONISMS.search(error["message"]), error["message"]
        assert c.get("/v1/stats").json()["service"]["operations"] == before  # nothing queued
        assert c.post("/v1/retrieve", json={"query": "lidar"}).status_code == 200


# ---------------------------------------------------------------------------- strict types


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/retrieve", {"query": "x", "budget_tokens": True}, "budget_tokens"),
        ("/v1/retrieve", {"query": "x", "budget_tokens": "5"}, "budget_tokens"),
        ("/v1/retrieve", {"query": "x", "budget_tokens": 5.5}, "budget_tokens"),
        ("/v1/retrieve", {"query": "x", "top_k": "5"}, "top_k"),
        ("/v1/retrieve", {"query": "x", "top_k": False}, "top_k"),
        ("/v1/retrieve", {"query": 5}, "query"),
        ("/v1/retrieve", {"query": "x", "mode": 1}, "mode"),
        ("/v1/retrieve", {"query": "x", "params": None}, "params"),
        ("/v1/retrieve", {"query": "x", "embed_seconds": 1}, "embed_seconds"),
        ("/v1/retrieve", ["x"], "body"),
        ("/v1/answer", {"query": "x", "budget_tokens": True}, "budget_tokens"),
        ("/v1/answer", {"query": "x", "vectors": [1]}, "vectors"),
        ("/v1/retrieve/batch", {"queries": "x"}, "queries"),
        ("/v1/retrieve/batch", {"queries": ["x", 5]}, "queries"),
        ("/v1/retrieve/batch", {"queries": ["x"], "top_k": "5"}, "top_k"),
        ("/v1/retrieve/batch", {"queries": ["x"], "embed_seconds": 0.1}, "embed_seconds"),
        ("/v1/documents", [{"doc_id": "d", "text": "t", "metadata": None}], "metadata"),
        ("/v1/documents", [{"doc_id": "d", "text": "t", "title": None}], "title"),
        ("/v1/documents", [{"doc_id": 5, "text": "t"}], "doc_id"),
        ("/v1/documents", [{"doc_id": "d", "text": ["t"]}], "text"),
        ("/v1/documents", [{"doc_id": "d", "text": "t", "source": "/etc/passwd"}], "source"),
        ("/v1/documents", [{"doc_id": "d", "text": "t", "metadata": []}], "metadata"),
        ("/v1/documents", ["just a string"], "document #0"),
    ],
)
def test_strict_types_and_unknown_members_are_422(open_server, path, body, field):
    with httpx.Client(base_url=open_server, timeout=60, trust_env=False) as c:
        before = c.get("/v1/stats").json()["service"]["operations"]
        resp = c.post(path, json=body)
        assert resp.status_code == 422, (body, resp.text)
        error = resp.json()["error"]
        assert error["code"] == "bad_request"
        assert field in error["message"], error["message"]
        assert not PYTHONISMS.search(error["message"]), error["message"]
        assert c.get("/v1/stats").json()["service"]["operations"] == before  # nothing queued


def test_integers_may_be_written_as_integral_floats(open_server):
    """JSON Schema's ``integer`` includes ``300.0``; ``true`` and ``"300"`` are refused above."""
    with httpx.Client(base_url=open_server, timeout=60, trust_env=False) as c:
        resp = c.post("/v1/retrieve", json={"query": "lidar", "budget_tokens": 300.0, "top_k": 5.0})
        assert resp.status_code == 200, resp.text
        assert resp.json()["report"]["budget_tokens"] == 300


@pytest.mark.parametrize(
    "name", ["text", "texts", "vectors", "embed_seconds", "mode", "top_k", "budget_tokens"]
)
def test_reserved_names_in_params_get_clean_422s(open_server, name):
    with httpx.Client(base_url=open_server, timeout=60, trust_env=False) as c:
        for path, body in (
            ("/v1/retrieve", {"query": "lidar", "params": {name: 1}}),
            ("/v1/answer", {"query": "lidar", "params": {name: 1}}),
            ("/v1/retrieve/batch", {"queries": ["lidar"], "params": {name: 1}}),
        ):
            resp = c.post(path, json=body)
            assert resp.status_code == 422, (path, resp.text)
            message = resp.json()["error"]["message"]
            assert name in message and "allowed parameters" in message, message
            assert not PYTHONISMS.search(message), message


def test_out_of_range_numbers_in_params_are_422(open_server):
    with httpx.Client(base_url=open_server, timeout=60, trust_env=False) as c:
        modes = c.get("/healthz").json()["modes"]
        if "detailed" not in modes:
            pytest.skip("no detailed mode")
        for value in (10**400, 1e308 * 10, -1):
            content = json.dumps(
                {"query": "lidar", "mode": "detailed", "params": {"bias_share": value}}
            )
            resp = c.post(
                "/v1/retrieve", content=content, headers={"content-type": "application/json"}
            )
            assert resp.status_code == 422, (value, resp.text)
            assert resp.json()["error"]["code"] == "bad_request"


def test_bad_settings_are_refused_with_one_clear_error(base_index):
    from graphstrata.bindings.server import ServerSettings, create_app
    from graphstrata.engine.config import ConfigError

    bad = ServerSettings(header_timeout_s=0, max_connections=0, body_timeout_s=-1.0)
    with pytest.raises(ConfigError) as info:
        create_app(base_index, settings=bad)
    message = str(info.value)
    assert "header_timeout_s" in message and "max_connections" in message
    assert "body_timeout_s" in message


# ---------------------------------------------------------------------------- defects: 500
def test_a_defect_is_a_500_whose_error_id_is_logged(base_index, caplog):
    with threaded_server(base_index) as (url, app, _):
        engine = app.state.service.index.engine

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise ValueError("vectors of the wrong shape")

        engine.query_vectors = broken
        with (
            caplog.at_level("ERROR", logger="graphstrata.server"),
            httpx.Client(base_url=url, timeout=60, trust_env=False) as c,
        ):
            resp = c.post("/v1/retrieve", json={"query": "lidar"})
        assert resp.status_code == 500
        error = resp.json()["error"]
        assert error["code"] == "internal" and error["error_id"] in error["message"]
        assert "wrong shape" not in error["message"]
        logged = [r for r in caplog.records if error["error_id"] in r.getMessage()]
        assert logged and logged[0].exc_info is not None


# ---------------------------------------------------------------------------- upstreams
def test_a_failing_llm_upstream_is_502_and_a_slow_one_504(base_index, tmp_path):
    """The index's LLM is the loopback fake over real HTTP: failing, then too slow, then fine."""
    path = tmp_path / "ix"
    shutil.copytree(base_index, path)
    with FakeOpenAIServer(fail_after=0, slow_seconds=3.0) as fake:
        spec = f"openai:fake-model@{fake.url}?max_retries=0&timeout=1"
        with (
            server_process(path, ["--llm", spec, "--no-cache"]) as srv,
            httpx.Client(base_url=srv.url, timeout=60, trust_env=False) as c,
        ):
            question = {"query": "What did the Sundra Aerosol Lidar track?"}
            resp = c.post("/v1/answer", json=question)
            assert resp.status_code == 502, resp.text
            error = resp.json()["error"]
            assert error["code"] == "backend_error" and error["error_id"]
            assert "LLM" in error["message"] and "500" in error["message"]
            # Retrieval does not need the LLM and still works.
            assert c.post("/v1/retrieve", json=question).status_code == 200

            fake.fail_after = None
            fake.push("slow")
            resp = c.post("/v1/answer", json=question)
            assert resp.status_code == 504, resp.text
            error = resp.json()["error"]
            assert error["code"] == "backend_timeout" and "timed out" in error["message"]

            resp = c.post("/v1/answer", json=question)
            assert resp.status_code == 200, resp.text
            assert resp.json()["answer"]
    assert fake.seen.chat_requests >= 3


class SwitchableEmbeddings(FakeOpenAIServer):
    """The fake, whose embeddings endpoint can be told to fail (503) or to be too slow."""

    mode = "ok"

    def embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        if self.mode == "fail":
            return 503, {"error": {"message": "fake: embeddings are down"}}, {}
        if self.mode == "slow":
            time.sleep(3.0)
        return super().embeddings(body)


def test_a_failing_embedding_upstream_is_502_and_a_slow_one_504(tmp_path, sample_docs):
    """Queries are embedded over real HTTP by the loopback fake: down, then too slow."""
    from graphstrata.bindings.api import Index

    path = tmp_path / "ix"
    fake = SwitchableEmbeddings()
    with fake:
        spec = f"openai-embed:fake-embed@{fake.url}?max_retries=0&timeout=1"
        index = Index.create(path, embedder=spec)
        index.insert(sample_docs[:4])
        del index
        with (
            server_process(path, ["--embedder", spec]) as srv,
            httpx.Client(base_url=srv.url, timeout=60, trust_env=False) as c,
        ):
            assert c.post("/v1/retrieve", json={"query": "lidar"}).status_code == 200
            fake.mode = "fail"
            for path_, body in (
                ("/v1/retrieve", {"query": "ferry"}),
                ("/v1/retrieve", {"query": "mayor", "mode": "collapsed"}),
                ("/v1/retrieve/batch", {"queries": ["a", "b"]}),
                ("/v1/answer", {"query": "harbour"}),
            ):
                resp = c.post(path_, json=body)
                assert resp.status_code == 502, (path_, resp.text)
                error = resp.json()["error"]
                assert error["code"] == "backend_error" and "embedder" in error["message"]
                assert "503" in error["message"] and error["error_id"]
            fake.mode = "slow"
            resp = c.post("/v1/retrieve", json={"query": "telescope"})
            assert resp.status_code == 504, resp.text
            assert resp.json()["error"]["code"] == "backend_timeout"
            fake.mode = "ok"
            assert c.post("/v1/retrieve", json={"query": "observatory"}).status_code == 200


# ---------------------------------------------------------------------------- other writers
def wait_operation(c: httpx.Client, op_id: str, tries: int = 1200) -> dict[str, Any]:
    for _ in range(tries):
        op = c.get(f"/v1/operations/{op_id}").json()
        if op["status"] in ("succeeded", "failed", "cancelled"):
            return op
        time.sleep(0.05)
    raise AssertionError(f"operation {op_id} did not finish")


def test_a_write_waits_while_another_process_holds_the_index_lock(base_index, tmp_path):
    """``graphstrata insert``/``compact`` beside the service hold the lock: writes wait."""
    import fcntl

    path = tmp_path / "ix"
    shutil.copytree(base_index, path)
    doc = {"doc_id": "locked/1.md", "text": "The quartzite zeppelin waited for the lock."}
    with (
        server_process(path) as srv,
        httpx.Client(base_url=srv.url, timeout=60, trust_env=False) as c,
        open(path / "LOCK", "a+") as lock,
    ):
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            resp = c.post("/v1/documents", json=[doc])
            assert resp.status_code == 202, resp.text
            op_id = resp.json()["id"]
            statuses = []
            for _ in range(20):
                statuses.append(c.get(f"/v1/operations/{op_id}").json()["status"])
                time.sleep(0.05)
            assert set(statuses) <= {"queued", "running"}, statuses  # waiting, not failed
            assert c.post("/v1/retrieve", json={"query": "lidar"}).status_code == 200
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        done = wait_operation(c, op_id)
        assert done["status"] == "succeeded", done
        assert c.get("/v1/documents/locked/1.md").json()["present"]


def test_compaction_beside_the_running_service_loses_nothing(base_index, tmp_path):
    """``graphstrata compact`` on the served index: reads go on, acknowledged writes stay."""
    import subprocess
    import sys

    path = tmp_path / "ix"
    shutil.copytree(base_index, path)
    with (
        server_process(path) as srv,
        httpx.Client(base_url=srv.url, timeout=60, trust_env=False) as c,
    ):
        modes = c.get("/healthz").json()["modes"]
        before = {"doc_id": "compact/before.md", "text": "Written before the compaction."}
        op = wait_operation(c, c.post("/v1/documents", json=[before]).json()["id"])
        assert op["status"] == "succeeded", op
        compact = subprocess.run(
            [sys.executable, "-m", "graphstrata.bindings.cli", "compact", str(path)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert compact.returncode == 0, compact.stderr
        for mode in modes:
            resp = c.post("/v1/retrieve", json={"query": "written before", "mode": mode})
            assert resp.status_code == 200, (mode, resp.text)
        after = {"doc_id": "compact/after.md", "text": "Written after the compaction."}
        op = wait_operation(c, c.post("/v1/documents", json=[after]).json()["id"])
        assert op["status"] == "succeeded", op
        for doc_id in ("compact/before.md", "compact/after.md"):
            assert c.get(f"/v1/documents/{doc_id}").json()["present"], doc_id
