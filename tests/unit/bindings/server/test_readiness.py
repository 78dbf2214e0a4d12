"""``/readyz``: not ready while the server warms up, ready after; ``/healthz`` at once."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient

from graphstrata.bindings.server.app import create_app
from graphstrata.bindings.server.readiness import WARMUP_ENV, Readiness


def _wait_ready(client: TestClient, timeout: float = 300.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        resp = client.get("/readyz")
        if resp.status_code == 200:
            return resp.json()
        assert resp.status_code == 503 and resp.json()["status"] == "warming_up"
        time.sleep(0.05)
    raise AssertionError("the server did not become ready")


@pytest.mark.parametrize("level", ["full", "index"])
def test_not_ready_until_warm_up_ends(make_index, sample_docs, monkeypatch, level):
    monkeypatch.setenv(WARMUP_ENV, level)
    index = make_index()
    index.insert(sample_docs[:4])
    app = create_app(index.path, index=index)
    readiness: Readiness = app.state.readiness
    readiness.hold.clear()  # the warm-up waits: the server is up but not warm
    with TestClient(app) as client:
        assert client.get("/healthz").status_code == 200
        resp = client.get("/readyz")
        assert resp.status_code == 503 and resp.json()["status"] == "warming_up"
        assert not readiness.ready.is_set()
        readiness.hold.set()
        body = _wait_ready(client)
    assert body["status"] == "ready" and body["warmup"]["level"] == level
    assert "error" not in body["warmup"]
    assert ("kernels" in body["warmup"]) == (level == "full")
    if level == "full":
        assert body["warmup"]["kernels"]["kernels"] > 0


def test_off_is_ready_at_once_and_bad_levels_are_refused(make_index, monkeypatch):
    monkeypatch.setenv(WARMUP_ENV, "off")
    index = make_index()
    app = create_app(index.path, index=index)
    with TestClient(app) as client:
        assert _wait_ready(client, timeout=30)["warmup"]["level"] == "off"
    with pytest.raises(ValueError, match=WARMUP_ENV):
        Readiness([], level="sometimes")
