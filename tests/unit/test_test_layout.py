"""Tests and benchmarks keep to their layout (issue 45).

* No module under ``tests/`` imports a test module (``test_*``) or a ``conftest``: what tests
  share lives in ``tests/helpers/``, fixtures in ``conftest.py``.
* Nothing under ``tests/`` or ``benchmarks/`` changes ``sys.path`` (``syspath_prepend``,
  ``sys.path.insert``...): benchmarks are a package, imported as ``benchmarks.<family>.<name>``
  and run with ``python -m`` from the repository root.
* Every benchmark folder is a package, and the benchmarks import one another without a cycle.
* The package never imports ``benchmarks`` or ``tests``.
"""

from __future__ import annotations

import ast
import graphlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def module_of(path: Path) -> str:
    """The dotted name of a file under the repository root."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


def imported(path: Path) -> set[str]:
    """Every dotted name ``path`` imports, at any depth (``from a import b``: ``a`` and
    ``a.b``; relative imports resolved against the file's package)."""
    package = module_of(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            prefix = ".".join([*base, *([node.module] if node.module else [])])
            out.add(prefix)
            out.update(f"{prefix}.{a.name}" for a in node.names)
    return out


def is_test_module(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return name.startswith("tests.") and (last.startswith("test_") or last == "conftest")


def imported_test_modules(path: Path) -> list[str]:
    """The test modules and conftests that ``path`` imports."""
    return sorted(name for name in imported(path) if is_test_module(name))


def sys_path_changes(path: Path) -> list[int]:
    """Lines of ``path`` that change the import path: pytest's ``syspath_prepend``, or
    ``sys.path`` changed in place or assigned."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Attribute) and node.attr == "syspath_prepend") or (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "path"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "sys"
            and node.attr in ("insert", "append", "extend", "remove", "clear")
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and t.attr == "path"
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "sys"
                ):
                    lines.append(node.lineno)
    return sorted(lines)


def test_no_module_of_the_tests_imports_a_test_module():
    found = {module_of(p): bad for p in python_files("tests") if (bad := imported_test_modules(p))}
    assert found == {}


def test_nothing_changes_sys_path_in_tests_or_benchmarks():
    found = {
        str(p.relative_to(ROOT)): lines
        for folder in ("tests", "benchmarks")
        for p in python_files(folder)
        if (lines := sys_path_changes(p))
    }
    assert found == {}


def test_the_checks_see_what_they_forbid(tmp_path, monkeypatch):
    """A module that does each forbidden thing is reported, on the right lines."""
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    module = tmp_path / "tests" / "integration" / "test_bad.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "import sys\n"
        "from tests.unit.core.test_fusion import coverage_oracle\n"
        "from .test_cli import run\n"
        "from ..conftest import SAMPLE\n"
        "from tests.helpers.vectors import clustered\n"
        "def test_x(monkeypatch):\n"
        "    monkeypatch.syspath_prepend('benchmarks')\n"
        "    sys.path.insert(0, 'benchmarks')\n"
        "    sys.path = ['x']\n"
    )
    assert imported_test_modules(module) == [
        "tests.conftest",
        "tests.integration.test_cli",
        "tests.unit.core.test_fusion",
    ]
    assert sys_path_changes(module) == [7, 8, 9]


def test_benchmarks_are_packages_that_import_each_other_without_a_cycle():
    files = [p for p in python_files("benchmarks") if "results" not in p.parts]
    folders = {p.parent for p in files}
    assert (
        sorted(str(f.relative_to(ROOT)) for f in folders if not (f / "__init__.py").exists()) == []
    )
    modules = {module_of(p): p for p in files}
    graph = {}
    for name, path in modules.items():
        graph[name] = {t for t in imported(path) if t in modules and t != name}
    assert graph["benchmarks.scale.scale"] >= {"benchmarks.scale.scale_interleaved"}
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the cycle


def test_the_package_imports_neither_benchmarks_nor_tests():
    found = {
        module_of(p): sorted(t for t in imported(p) if t.split(".")[0] in ("benchmarks", "tests"))
        for p in python_files("graphstrata")
    }
    assert {k: v for k, v in found.items() if v} == {}
