"""Property-based API testing: schemathesis drives every operation of the published OpenAPI
schema against the real server (loopback subprocess) and no response may be a 5xx.

Both schema-conforming (positive) and schema-violating (negative) requests are generated, a
bounded number per operation, with a fixed seed so a failure reproduces.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from graphstrata.bindings.cli_serve import ServerHandle, server_process  # noqa: E402

pytestmark = pytest.mark.integration

#: Examples per operation and generation mode: ~10 operations x 2 modes x 25 = 500 requests.
EXAMPLES = 25


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory, sample_docs, hashing_embedder) -> Iterator[ServerHandle]:
    from graphstrata.bindings.api import Index

    path: Path = tmp_path_factory.mktemp("fuzz") / "ix"
    index = Index.create(path, embedder=hashing_embedder)
    index.insert(sample_docs[:12])
    del index
    with server_process(path, ["--max-body-bytes", str(1 << 20)]) as handle:
        yield handle
    shutil.rmtree(path, ignore_errors=True)


def fuzz_operation(operation, mode, url: str, statuses: Counter[tuple[str, int]]) -> None:
    """Send EXAMPLES generated requests to one operation; each response must pass the checks."""
    checks = [not_a_server_error]
    if mode is GenerationMode.POSITIVE:
        checks += [status_code_conformance, content_type_conformance, response_schema_conformance]

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
        response = case.call(base_url=url, timeout=60)
        statuses[(operation.label, response.status_code)] += 1
        case.validate_response(response, checks=checks)

    exercise()


def test_no_operation_answers_5xx(fuzz_server):
    url = fuzz_server.url
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    statuses: Counter[tuple[str, int]] = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    negated = []
    for operation in operations:
        fuzz_operation(operation, GenerationMode.POSITIVE, url, statuses)
        try:
            fuzz_operation(operation, GenerationMode.NEGATIVE, url, statuses)
            negated.append(operation.label)
        except Unsatisfiable:
            pass  # nothing to violate: no body, and any string is a valid path parameter
    assert {"POST /v1/retrieve", "POST /v1/retrieve/batch", "POST /v1/answer"} <= set(negated)
    server_errors = {k: v for k, v in statuses.items() if k[1] >= 500}
    assert not server_errors, server_errors
    # The run reached the engine, not only the validators.
    assert statuses[("POST /v1/retrieve", 200)] > 0
    assert statuses[("POST /v1/documents", 202)] > 0
    print(sorted(statuses.items()))
