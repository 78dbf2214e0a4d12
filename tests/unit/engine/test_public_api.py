"""The engine's public API (``graphstrata/engine/__init__.py``): every name resolves, and
importing the package loads none of the engine's modules until a name is used."""

from __future__ import annotations

import importlib
import subprocess
import sys

import graphstrata.engine as engine


def test_every_public_name_resolves_to_its_module():
    assert sorted(engine.__all__) == sorted(engine._PUBLIC)
    for name in engine.__all__:
        module = importlib.import_module(f"graphstrata.engine.{engine._PUBLIC[name]}")
        assert getattr(engine, name) is getattr(module, name)


def test_importing_the_engine_is_cheap():
    code = (
        "import sys, graphstrata.engine as e\n"
        "before = sorted(m for m in sys.modules if m.startswith(('graphstrata.', 'numpy')))\n"
        "e.ConfigError\n"
        "after = sorted(m for m in sys.modules if m.startswith(('graphstrata.', 'numpy')))\n"
        "print(before, after)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert (
        out.strip() == "['graphstrata.engine'] ['graphstrata.engine', 'graphstrata.engine.fields']"
    )
