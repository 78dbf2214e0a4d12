"""Error bodies in the dialect of the emulated client (``graphstrata/bindings/server/dialects.py``)."""

from __future__ import annotations

import json

from graphstrata.bindings.server.dialects import (
    dialect_of,
    ollama_error,
    openai_error,
    rewritten,
)


def test_the_emulated_paths_have_their_dialect():
    assert dialect_of("/v1/chat/completions") is openai_error
    assert dialect_of("/v1/models") is openai_error
    assert dialect_of("/v1/vector_stores/a/search") is openai_error
    assert dialect_of("/api/chat") is ollama_error
    assert dialect_of("/v1/retrieve") is None and dialect_of("/v1/indexes/a/answer") is None


def test_openai_shape_status_type_and_code():
    status, body = openai_error(422, {"code": "bad_request", "message": "m", "param": "seed"})
    assert status == 400
    assert body == {
        "error": {
            "message": "m",
            "type": "invalid_request_error",
            "param": "seed",
            "code": "bad_request",
        }
    }
    status, body = openai_error(401, {"code": "unauthorized", "message": "no"})
    assert (status, body["error"]["code"], body["error"]["param"]) == (401, "invalid_api_key", None)
    status, body = openai_error(429, {"code": "overloaded", "message": "busy"})
    assert body["error"]["type"] == "rate_limit_error"
    assert body["error"]["code"] == "rate_limit_exceeded"
    status, body = openai_error(500, {"code": "internal", "message": "x", "error_id": "e1"})
    assert body["error"]["type"] == "server_error" and body["error"]["error_id"] == "e1"


def test_ollama_shape_is_one_message():
    assert ollama_error(422, {"code": "bad_request", "message": "bad"}) == (400, {"error": "bad"})
    assert ollama_error(404, {"code": "not_found", "message": "x"}) == (404, {"error": "x"})


def test_a_body_of_another_shape_passes_unchanged():
    raw = b'{"detail": "x"}'
    assert rewritten(openai_error, 418, raw) == (418, raw)
    assert rewritten(openai_error, 400, b"not json") == (400, b"not json")
    status, body = rewritten(
        ollama_error, 403, json.dumps({"error": {"code": "forbidden", "message": "no"}}).encode()
    )
    assert (status, json.loads(body)) == (403, {"error": "no"})
