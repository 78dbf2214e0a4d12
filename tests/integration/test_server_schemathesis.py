"""Property-based API testing: schemathesis drives every operation of the published OpenAPI
schema against the real server (loopback subprocess, bearer token on) with every check it
has, and no response may be a 5xx or break the schema other than in the documented ways.

Both schema-conforming (positive) and schema-violating (negative) requests are generated, a
bounded number per operation, with a fixed seed so a failure reproduces. Every check's
failures are collected (not only the first), so one run shows them all; the run fails on any
5xx and on any failure that is not in :data:`DOCUMENTED` (each there with its reason).
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis.checks import CHECKS, load_all_checks  # noqa: E402
from schemathesis.core.failures import Failure, FailureGroup  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402

from benchmarks.service.server_process import ServerHandle, server_process  # noqa: E402

pytestmark = pytest.mark.integration

#: Examples per operation and generation mode: 10 operations x 2 modes x 25 = 500 requests
#: (plus the probes some checks send).
EXAMPLES = 25
TOKEN = "fuzz-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

#: The failures schemathesis may report, each with its reason: (failure kind, operations,
#: pattern the response body matches). The README's "Server and API" section lists them too.
DOCUMENTED: list[tuple[str, frozenset[str], re.Pattern[str], str]] = [
    (
        "RejectedPositiveData",
        frozenset({"POST /v1/retrieve", "POST /v1/retrieve/batch", "POST /v1/answer"}),
        re.compile(r"must be in \[|must be >=|must be <=|must be > "),
        "the ranges of mode parameters are checked by the engine (engine.fields.checked); the "
        "schema of params gives their types, and their descriptions name the ranges",
    ),
    (
        "RejectedPositiveData",
        frozenset(
            {"POST /v1/retrieve", "POST /v1/retrieve/batch", "POST /v1/answer", "GET /v1/documents"}
        ),
        re.compile(r"\bfilter\b"),
        "a metadata filter's grammar is checked by the engine's one parser (engine.filters: "
        "operators, operand types, ISO dates); the schema gives its type, its description "
        "the operators",
    ),
    (
        "AcceptedNegativeData",
        frozenset({"GET /v1/documents"}),
        re.compile(r"request line and headers are over the limit"),
        "an over-long query string is refused with 431 by the server's header limit before any "
        "route validates it (bindings/server/middleware.py; 431 is documented on the route)",
    ),
    (
        "RejectedPositiveData",
        frozenset({"POST /v1/documents"}),
        re.compile(r"duplicate doc_id in one batch"),
        "a doc_id twice in one batch is refused; JSON Schema cannot say that one member of "
        "the items is unique",
    ),
    (
        "RejectedPositiveData",
        frozenset({"POST /v1/documents/upload"}),
        re.compile(r"no file gave a document|metadata is not valid JSON|metadata must be a JSON"),
        "an uploaded file is read by the parser of its format and the metadata part must hold "
        "a JSON object; JSON Schema describes neither the content of a file nor of a string",
    ),
]


def documented(kind: str, operation: str, body: str) -> bool:
    """Whether a failure is one of :data:`DOCUMENTED`."""
    return any(
        kind == k and operation in ops and pattern.search(body) for k, ops, pattern, _ in DOCUMENTED
    )


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[ServerHandle]:
    from graphstrata.bindings.api import Index

    path: Path = tmp_path_factory.mktemp("fuzz") / "ix"
    index = Index.create(path, embedder=hashing_embedder)
    index.insert(sample_docs[:12])
    del index
    args = ["--max-body-bytes", str(1 << 20), "--token", TOKEN]
    with server_process(path, args) as handle:
        yield handle
    print(handle.output[-5000:])  # the server's log and report, shown when the test fails
    assert "served " in handle.output, "the server did not stop cleanly"
    shutil.rmtree(path, ignore_errors=True)


def all_checks() -> list:
    load_all_checks()
    return list(CHECKS.get_all())


def fuzz_operation(
    operation,
    mode,
    url: str,
    statuses: Counter[tuple[str, int]],
    failures: list[tuple[str, str, int, str]],
) -> None:
    """Send EXAMPLES generated requests to one operation, with every check on each answer."""
    checks = all_checks()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def exercise(case) -> None:
        response = case.call(base_url=url, headers=AUTH, timeout=60)
        statuses[(operation.label, response.status_code)] += 1
        try:
            case.validate_response(response, checks=checks, headers=AUTH)
        except (FailureGroup, Failure) as exc:
            group = exc.exceptions if isinstance(exc, FailureGroup) else [exc]
            for failure in group:
                failures.append(
                    (type(failure).__name__, operation.label, response.status_code, response.text)
                )

    exercise()


def test_every_check_passes_except_the_documented_ones(fuzz_server):
    url = fuzz_server.url
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", headers=AUTH)
    statuses: Counter[tuple[str, int]] = Counter()
    failures: list[tuple[str, str, int, str]] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    negated = []
    for operation in operations:
        fuzz_operation(operation, GenerationMode.POSITIVE, url, statuses, failures)
        try:
            fuzz_operation(operation, GenerationMode.NEGATIVE, url, statuses, failures)
            negated.append(operation.label)
        except Unsatisfiable:
            pass  # nothing to violate: no body, and any string is a valid path parameter
    print(sorted(statuses.items()))
    print(Counter((kind, op) for kind, op, _, _ in failures))
    assert {"POST /v1/retrieve", "POST /v1/retrieve/batch", "POST /v1/answer"} <= set(negated)
    server_errors = {k: v for k, v in statuses.items() if k[1] >= 500}
    assert not server_errors, server_errors
    undocumented = [
        (kind, op, status, body[:300])
        for kind, op, status, body in failures
        if not documented(kind, op, body)
    ]
    assert not undocumented, undocumented[:10]
    # The run reached the engine, not only the validators.
    assert statuses[("POST /v1/retrieve", 200)] > 0
    assert statuses[("POST /v1/documents", 202)] > 0
