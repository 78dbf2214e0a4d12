"""The layers import inward only (bindings -> evaluation -> engine -> core) and no module
imports itself back through a cycle (docs/architecture.md, "Layers"). The bindings reach the
engine only through its public API (``graphstrata/engine/__init__.py``), and the server and
the CLI only through the bindings (the ``Index`` facade re-exports what they use).

Every import statement counts, including those inside functions: a function-level import
hides a cycle from the interpreter at start-up but not from a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "graphstrata"
#: Lower rank = further inside. A module may import only its own layer or layers inside it.
RANK = {"core": 0, "engine": 1, "evaluation": 2, "bindings": 3}


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """graphstrata modules that ``name`` imports (a package import means its ``__init__``)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # ``from pkg import mod`` imports the submodule when there is one.
            targets = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
        for target in targets:
            if not target.startswith("graphstrata"):
                continue
            # The longest known module that the target names (``a.b.C`` -> ``a.b``).
            parts = target.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts:
                found = ".".join(parts)
                if found != name:
                    out.add(found)
    return out


def layer(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def test_the_walker_sees_the_layers(graph):
    assert {layer(m) for m in graph} >= set(RANK)
    assert any(layer(t) == "core" for t in graph["graphstrata.engine.index"])


def test_imports_point_inward(graph):
    outward = [
        f"{src} -> {dst}"
        for src, targets in graph.items()
        for dst in targets
        if layer(src) and layer(dst) and RANK[layer(dst)] > RANK[layer(src)]  # type: ignore[index]
    ]
    assert outward == []


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components with more than one module are cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycles(graph):
    assert strongly_connected(graph) == []


#: The engine's public API: the only engine module the bindings may import.
ENGINE_API = "graphstrata.engine"
#: Packages that may import only bindings modules (the facade re-exports what they need).
BEHIND_THE_FACADE = ("graphstrata.bindings.server", "graphstrata.bindings.cli")


def door_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports that go past the doors: a bindings module importing an engine module other
    than the public API, a server or CLI module importing anything outside the bindings."""
    out = []
    for src, targets in sorted(graph.items()):
        if layer(src) != "bindings":
            continue
        behind = src.startswith(BEHIND_THE_FACADE)
        for dst in sorted(targets):
            if (layer(dst) == "engine" and dst != ENGINE_API) or (
                behind and layer(dst) not in (None, "bindings")
            ):
                out.append(f"{src} -> {dst}")
    return out


def test_bindings_use_the_engine_only_through_its_public_api(graph):
    assert door_violations(graph) == []


def test_the_door_check_finds_a_violation(tmp_path):
    files = {
        "__init__.py": "",
        "engine/__init__.py": "",
        "engine/store/__init__.py": "class Store: ...\n",
        "bindings/__init__.py": "",
        "bindings/api.py": "from graphstrata.engine import Engine\n",
        "bindings/bad.py": "from graphstrata.engine.store import Store\n",
        "bindings/server/__init__.py": "",
        "bindings/server/ok.py": "from graphstrata.bindings.api import Index\n",
        "bindings/server/route.py": "def f():\n    from graphstrata.engine import Engine\n",
    }
    root = tmp_path / "graphstrata"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    modules = all_modules(root)
    graph = {name: imports_of(name, path, modules) for name, path in modules.items()}
    assert door_violations(graph) == [
        "graphstrata.bindings.bad -> graphstrata.engine.store",
        "graphstrata.bindings.server.route -> graphstrata.engine",
    ]


def test_cycle_finder_finds_a_cycle():
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(g) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_module_is_over_700_lines():
    long = {
        module_name(p): n
        for p in ROOT.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 700
    }
    assert long == {}


#: NumPy's hash-based set functions (``core/sets.py`` says why and replaces them).
HASH_SET_CALLS = {"union1d", "setdiff1d", "intersect1d", "setxor1d"}


def hash_set_calls(source: str) -> list[int]:
    """Lines that call ``np.unique`` without ``return_*``/``axis``, or a hash set function."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        owner = node.func.value
        if not (isinstance(owner, ast.Name) and owner.id in {"np", "numpy"}):
            continue
        keywords = {k.arg or "" for k in node.keywords}
        plain_unique = node.func.attr == "unique" and not (
            {k for k in keywords if k.startswith("return_")} or "axis" in keywords
        )
        if plain_unique or node.func.attr in HASH_SET_CALLS:
            lines.append(node.lineno)
    return lines


def test_set_operations_sort_rather_than_hash():
    found = {
        module_name(p): lines
        for p in ROOT.rglob("*.py")
        if (lines := hash_set_calls(p.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_set_call_finder_finds_them():
    source = "import numpy as np\nnp.unique(a)\nnp.unique(a, return_index=True)\nnp.union1d(a, b)\n"
    assert hash_set_calls(source) == [2, 4]
