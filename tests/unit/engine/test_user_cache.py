"""engine.user_cache: the one user cache directory (exported models, token ranks)."""

from __future__ import annotations

from graphstrata.engine import user_cache_dir


def test_cache_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("GRAPHSTRATA_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("GRAPHSTRATA_CACHE")
    assert user_cache_dir() == tmp_path / "xdg" / "graphstrata"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir() == tmp_path / "home" / ".cache" / "graphstrata"
