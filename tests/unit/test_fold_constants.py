"""No module of the package decides when an overlay folds into its base by a constant of its
own: every such threshold is a named policy of ``IndexConfig.maintenance``
(``engine.config.MaintenanceConfig``), recorded in the manifest and shown by ``stats``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "graphstrata"

#: Module-level names shaped like fold thresholds: the constants the policies replaced
#: (``FOLD_MIN``, ``FRESH_*``, ``REMOVED_*``, ``MAX_SEGMENTS``, ``MAX_DEAD_SHARE``,
#: ``COMPACT_*``, ``MIN_EXTRA_ENTRIES``, ``MERGE_FANIN``, ``MAX_PATCHES``, ``MAX_LAZY_*``,
#: ``CACHE_MIN_ROWS``, ``CACHE_STALE_SHARE``, ``CHUNK_MERGE_FACTOR``, ...) and any name
#: ending in ``_SHARE``, ``_CAP``, ``_MIN`` or ``_FANIN``.
FOLD_NAME = re.compile(
    r"^_?(FOLD|COMPACT|FRESH|REMOVED)_|^_?MAX_(SEGMENTS|DEAD|PATCHES|LAZY)|^_?MIN_EXTRA"
    r"|^_?(CACHE_(MIN|STALE)|MERGE_(FANIN|MAX|FACTOR)|CHUNK_MERGE|KIND_SET_VERSIONS"
    r"|EXACT_BELOW|OVERSAMPLE|WIDEN|GRAPH_BUILD)"
    r"|_(SHARE|CAP|MIN|FANIN)$"
)

#: Names of that shape that are not fold rules: where a computation switches algorithm or
#: goes parallel. (module path, name) -> why.
NOT_FOLD_RULES = {
    (
        "bindings/embed/bert_graph.py",
        "_FLOAT32_MIN",
    ): "the float32 mask value of the attention, no threshold",
    ("bindings/llm/statements.py", "MIN_LETTER_SHARE"): (
        "a text rule: letters below this share make a table row, not a statement"
    ),
    ("core/bm25.py", "REDUCE_MIN"): "a search cuts its slots to the contenders from here on",
    ("core/centrality.py", "BETWEENNESS_PARALLEL_MIN"): "work below which one thread does it all",
    ("core/graph.py", "_PARALLEL_MIN"): "entries below which the serial path wins",
    ("core/graph.py", "_FEW_EDGES_SHARE"): "merge edges entry by entry below this share",
    ("core/ids.py", "MERGE_SHARE"): "merge sorted ids instead of binary searches",
    ("core/sets.py", "_TABLE_UNIQUE_MIN"): "sort instead of a table below this many values",
    ("engine/heterograph/build/communities.py", "LOCAL_LEIDEN_MAX_SHARE"): (
        "Leiden runs over the whole graph, not the touched region, past this share"
    ),
    ("engine/modes/hybrid.py", "PARALLEL_LISTS_MIN"): "the two lists searched side by side",
    ("engine/vectors.py", "PARALLEL_KINDS_MIN"): "kinds updated side by side",
}


def _module_constants(path: Path) -> list[str]:
    names = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def test_no_module_defines_a_fold_threshold_as_a_constant():
    found = {
        (path.relative_to(PACKAGE).as_posix(), name)
        for path in sorted(PACKAGE.rglob("*.py"))
        for name in _module_constants(path)
        if FOLD_NAME.search(name)
    }
    unexpected = sorted(found - set(NOT_FOLD_RULES))
    assert not unexpected, (
        f"fold thresholds as module constants: {unexpected}; make them a named policy of "
        "IndexConfig.maintenance (engine/policies.py, MaintenanceConfig) and pass it down"
    )
    assert not set(NOT_FOLD_RULES) - found, "an exception that no longer exists: drop it"


def test_the_scan_finds_the_constants_it_forbids(tmp_path):
    """The pattern catches each name the policies replaced (a module defining one fails)."""
    replaced = [
        "FOLD_MIN",
        "FRESH_SHARE",
        "FRESH_MIN",
        "FRESH_CAP",
        "REMOVED_MAX",
        "REMOVED_SHARE",
        "EXACT_BELOW",
        "OVERSAMPLE",
        "WIDEN",
        "GRAPH_BUILD_MIN",
        "MAX_SEGMENTS",
        "MAX_DEAD_SHARE",
        "COMPACT_EXTRA_SHARE",
        "COMPACT_DEAD_SHARE",
        "MIN_EXTRA_ENTRIES",
        "MERGE_FANIN",
        "MERGE_MAX_ROWS",
        "MAX_PATCHES",
        "MAX_LAZY_PARTS",
        "MAX_LAZY_DEAD",
        "CACHE_MIN_ROWS",
        "CACHE_STALE_SHARE",
        "CHUNK_MERGE_FACTOR",
        "KIND_SET_VERSIONS",
    ]
    module = tmp_path / "m.py"
    module.write_text("".join(f"{name} = 1\n" for name in replaced))
    assert [n for n in _module_constants(module) if FOLD_NAME.search(n)] == replaced
