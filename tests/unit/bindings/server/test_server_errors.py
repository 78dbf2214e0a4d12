"""The service's one mapping of exceptions to HTTP errors (graphstrata.bindings.server.errors)."""

from __future__ import annotations

import errno

import pytest

pytest.importorskip("fastapi")

from graphstrata.bindings.server.errors import (
    ApiError,
    api_error,
    is_timeout,
    known_error,
)
from graphstrata.engine.config import ConfigError
from graphstrata.engine.documents import DocumentError
from graphstrata.engine.interfaces import EmbedderError, LLMError
from graphstrata.engine.params import QueryError
from graphstrata.engine.store import IndexLockedError, StoreWriteError


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (QueryError("unknown parameter(s) ['x'] for mode 'naive'"), 422, "bad_request"),
        (ConfigError("bad config"), 422, "bad_request"),
        (DocumentError(["doc 'a': empty text"]), 422, "bad_request"),
        (LLMError("openai:m: HTTP 400"), 502, "backend_error"),
        (EmbedderError("no embeddings; last error: ConnectError: refused"), 502, "backend_error"),
        (LLMError("no answer after 6 attempts; last error: ReadTimeout: "), 504, "backend_timeout"),
        (ApiError(429, "overloaded", "busy"), 429, "overloaded"),
        (IndexLockedError("/srv/ix is locked by another writer (pid 7)"), 503, "overloaded"),
    ],
)
def test_known_errors(exc, status, code):
    err = known_error(exc)
    assert err is not None and (err.status, err.code) == (status, code)
    assert err.message


def test_a_full_disk_is_507_naming_the_file():
    """Issue 51: a write that fails for want of space was a 500 ``internal``."""
    message = "no space left on device while writing /srv/ix/segments/vectors-7.arrow"
    err = known_error(StoreWriteError(message, errno.ENOSPC))
    assert err is not None and (err.status, err.code) == (507, "insufficient_storage")
    assert "vectors-7.arrow" in err.message
    raw = OSError(errno.ENOSPC, "No space left on device", "/srv/ix/LOCK")
    err = known_error(raw)
    assert err is not None and (err.status, err.code) == (507, "insufficient_storage")
    assert "LOCK" in err.message and "/srv" not in err.message
    assert known_error(OSError(errno.EACCES, "Permission denied", "/srv/ix/LOCK")) is None


def test_document_errors_carry_their_problems():
    err = known_error(DocumentError(["doc 'a': empty text", "doc 'b': duplicate"]))
    assert err is not None and err.details["problems"] == [
        "doc 'a': empty text",
        "doc 'b': duplicate",
    ]


@pytest.mark.parametrize("exc", [ValueError("shape"), TypeError("argument"), KeyError("k")])
def test_anything_else_is_an_internal_error_with_an_id(exc, caplog):
    assert known_error(exc) is None
    with caplog.at_level("ERROR", logger="graphstrata.server"):
        err = api_error(exc, "POST /v1/retrieve")
    assert (err.status, err.code) == (500, "internal")
    error_id = err.details["error_id"]
    assert error_id in err.message and error_id in caplog.text
    assert caplog.records[-1].exc_info is not None


def test_timeouts_are_found_in_causes_and_messages():
    try:
        raise LLMError("the backend failed") from TimeoutError()
    except LLMError as exc:
        assert is_timeout(exc)
    assert is_timeout(EmbedderError("x: request timed out"))
    assert not is_timeout(LLMError("HTTP 500: internal server error"))


def test_a_lock_error_does_not_name_the_servers_paths():
    err = known_error(IndexLockedError("/srv/data/ix is locked by another writer (pid 7)"))
    assert err is not None and "/srv" not in err.message


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 10_000 + b"]" * 10_000,
        b'{"a": ' * 300 + b"1" + b"}" * 300,
        b"[" + b"7" * 5000 + b"]",
        b"[NaN]",
        b'{"x": Infinity}',
        b"\xff",
        b"",
        b"[1] [2]",
    ],
    ids=["deep-list", "deep-object", "huge-int", "nan", "infinity", "not-utf8", "empty", "two"],
)
def test_every_unparseable_body_is_a_422(data):
    from graphstrata.bindings.server.jsonbody import parse_json

    with pytest.raises(ApiError) as info:
        parse_json(data)
    assert (info.value.status, info.value.code) == (422, "bad_request")
    assert info.value.message.startswith("body is not valid JSON")


def test_json_within_the_limits_parses():
    from graphstrata.bindings.server.jsonbody import MAX_DEPTH, parse_json

    depth = MAX_DEPTH - 1
    assert parse_json(b"[" * depth + b"]" * depth) is not None
    assert parse_json('{"q": "\u2028 line separator"}') == {"q": "\u2028 line separator"}


def test_metric_labels_are_a_closed_set():
    from graphstrata.bindings.server.routing import method_label, status_label

    assert [method_label(m) for m in ("get", "POST", "BREW", "M" * 1000)] == [
        "GET",
        "POST",
        "other",
        "other",
    ]
    assert [status_label(s) for s in (200, 429, 418, 307, 599, 999)] == [
        "200",
        "429",
        "4xx",
        "3xx",
        "5xx",
        "other",
    ]
