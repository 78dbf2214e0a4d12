"""``/mcp`` is served only when the ``mcp`` package is installed; without it the route is
absent and one log line names the extra."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("fastapi")


def mcp_paths(app) -> list[str]:
    return [r.path for r in app.router.routes if getattr(r, "path", "").startswith("/mcp")]


def test_without_the_mcp_package_the_route_is_absent_and_logged(make_index, monkeypatch, caplog):
    from graphstrata.bindings.server import ServerSettings, create_app

    index = make_index()
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if it were not installed
    with caplog.at_level("INFO", logger="graphstrata.server"):
        app = create_app(index.path, settings=ServerSettings(token=""), index=index)
    assert mcp_paths(app) == [] and app.state.mcp is False
    assert "pip install 'graphstrata[mcp]'" in caplog.text


def test_with_the_mcp_package_the_route_is_served(make_index):
    pytest.importorskip("mcp")
    from graphstrata.bindings.server import ServerSettings, create_app

    index = make_index()
    app = create_app(index.path, settings=ServerSettings(token=""), index=index)
    assert mcp_paths(app) == ["/mcp"] and app.state.mcp is True


def test_mcp_needs_a_known_token_with_the_read_right_on_any_index():
    from graphstrata.bindings.server.app import route_access

    assert route_access("a", "POST", "/mcp") == (None, "read")
    assert route_access("a", "POST", "/v1/documents") == ("a", "write")
