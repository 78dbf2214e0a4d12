"""The reports of the command line in words: write reports and ``graphstrata stats``.

By default a report is aligned ``name  value`` lines, node and edge kinds named in words
(``chunk``, ``semantic unit``, ``chunk-unit``: ``NodeKind.words``, ``EdgeKind.words``),
sizes in KiB/MiB, mappings as ``name value, ...``; with ``--json`` it is the report's JSON,
unchanged. The engine's kinds come through the facade when a report is printed (importing
this module stays cheap for ``graphstrata --help``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from typing import Any

#: The write report's counters, in the order printed.
REPORT_KEYS = (
    "operation", "version", "docs_added", "docs_updated", "docs_unchanged", "docs_deleted",
    "chunks_added", "chunks_removed", "chunks_embedded", "nodes_added", "nodes_removed",
    "edges_added", "llm_calls", "llm_cached", "prompt_tokens", "completion_tokens", "embedded",
    "bytes_written", "seconds",
)  # fmt: skip
#: Stages shorter than this are counted, not listed.
SHORT_STAGE_S = 0.01
_KIND_SUFFIX = re.compile(r"_([A-Z])$")


def plural(words: str) -> str:
    """``"entity"`` -> ``"entities"``, ``"chunk"`` -> ``"chunks"``."""
    return words[:-1] + "ies" if words.endswith("y") else words + "s"


def stage_words(stage: str) -> str:
    """A stage name in words: ``embed_S`` -> ``embed semantic units``, ``_`` -> space."""
    from graphstrata.bindings.api import NodeKind

    match = _KIND_SUFFIX.search(stage)
    if match and match.group(1) in NodeKind.__members__:
        stage = stage[: match.start()] + " " + plural(NodeKind[match.group(1)].words)
    return stage.replace("_", " ")


def time_words(epoch: Any) -> str:
    """Seconds since the epoch as ``2026-12-06 10:31:12 UTC``; ``unknown`` for ``None`` or a
    value that is not a time (an unreadable manifest's)."""
    if isinstance(epoch, bool) or not isinstance(epoch, int | float):
        return "unknown"
    try:
        return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return "unknown"


def versions_words(versions: Any) -> str:
    """``Index.stats()["versions"]`` as ``1 (2026-12-06 10:31:12 UTC), 0 (...)``."""
    rows = versions if isinstance(versions, list) else []
    words = [
        f"{v.get('version')} ({time_words(v.get('committed_at'))})"
        for v in rows
        if isinstance(v, Mapping)
    ]
    return ", ".join(words) or "none"


def size_words(n: int) -> str:
    """Bytes as ``812 B``, ``145.1 KiB``, ``12.3 MiB``, ``1.20 GiB``."""
    if n < 1024:
        return f"{n} B"
    if n < 1024**2:
        return f"{n / 1024:.1f} KiB"
    if n < 1024**3:
        return f"{n / 1024**2:.1f} MiB"
    return f"{n / 1024**3:.2f} GiB"


def value_words(value: Any) -> str:
    """A value on one line: mappings as ``name value, ...`` (nested in parentheses), lists
    joined by commas, booleans yes/no."""
    if isinstance(value, Mapping):
        parts = []
        for k, v in value.items():
            text = value_words(v)
            parts.append(f"{k} ({text})" if isinstance(v, Mapping) and v else f"{k} {text}")
        return ", ".join(parts) if parts else "none"
    if isinstance(value, list | tuple):
        return ", ".join(value_words(v) for v in value) if value else "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def node_counts(nodes: Mapping[str, int]) -> str:
    """``{"T": 60, "S": 217}`` -> ``60 chunks (T), 217 semantic units (S)``."""
    from graphstrata.bindings.api import NodeKind

    parts = []
    for letter, count in nodes.items():
        words = NodeKind[letter].words if letter in NodeKind.__members__ else letter
        parts.append(f"{count} {plural(words) if count != 1 else words} ({letter})")
    return ", ".join(parts) or "none"


def edge_counts(edges: Mapping[Any, int]) -> str:
    """``{1: 217, 7: 900}`` (codes, or their JSON strings) -> ``217 chunk-unit, 900 semantic``."""
    from graphstrata.bindings.api import EdgeKind

    parts = []
    for code, count in edges.items():
        try:
            name = EdgeKind(int(code)).words
        except ValueError:
            name = f"kind {code}"
        parts.append(f"{count} {name}")
    return ", ".join(parts) or "none"


def print_lines(rows: list[tuple[str, str]]) -> None:
    """Aligned ``name  value`` lines (names with ``_`` read as words)."""
    names = [name.replace("_", " ") for name, _ in rows]
    width = max((len(n) for n in names), default=0)
    for name, (_, value) in zip(names, rows, strict=True):
        print(f"{name:<{width}}  {value}")


def print_report(report: dict[str, Any], as_json: bool) -> None:
    """Print an operation report: aligned lines in words, or JSON.

    Parameters
    ----------
    report:
        ``OperationReport.to_dict()`` (or any report dict).
    as_json:
        Print the whole report as JSON instead.
    """
    if as_json:
        print(json.dumps(report, indent=1, ensure_ascii=False))
        return
    rows: list[tuple[str, str]] = []
    for key in REPORT_KEYS:
        if key not in report:
            continue
        value = report[key]
        if key == "bytes_written":
            rows.append((key, size_words(int(value))))
        elif key == "seconds":
            rows.append((key, f"{float(value):.2f} s"))
        else:
            rows.append((key, value_words(value)))
    stages = sorted((report.get("stages") or {}).items(), key=lambda kv: -kv[1])
    listed = [(name, s) for name, s in stages if s >= SHORT_STAGE_S]
    for i, (name, seconds) in enumerate(listed):
        rows.append(("stages" if i == 0 else "", f"{seconds:7.2f} s  {stage_words(name)}"))
    if len(listed) < len(stages):
        short = len(stages) - len(listed)
        rows.append(("stages" if not listed else "", f"{short} more under {SHORT_STAGE_S} s"))
    for i, line in enumerate(yield_lines(report.get("llm_yield") or {})):
        rows.append(("llm_yield" if i == 0 else "", line))
    rows.extend(("note", str(note)) for note in report.get("notes", []))
    rows.extend(
        ("files" if i == 0 else "", file_words(outcome))
        for i, outcome in enumerate(report.get("files") or [])
    )
    print_lines(rows)


def file_words(outcome: dict[str, Any]) -> str:
    """One file's outcome in words: ``report.pdf: indexed (12 pages)``, ``scan.pdf: failed:
    no text layer: scanned PDF? run OCR first``."""
    name = str(outcome["name"])
    # A name with a newline or other control character is shown escaped: one line per file.
    line = f"{name if name.isprintable() else repr(name)}: {outcome['status']}"
    if outcome.get("pages"):
        line += f" ({outcome['pages']} pages)"
    if outcome.get("status") == "skipped":
        line += " (unchanged)"
    if outcome.get("error"):
        line += f": {outcome['error']}"
    return line


def failed_files(report: dict[str, Any]) -> int:
    """How many files of a report failed (0 for a report without files)."""
    return sum(1 for o in report.get("files") or [] if o.get("status") == "failed")


def yield_lines(table: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per LLM task of a report's ``llm_yield``: ``decompose: 12 answers, 11 valid
    JSON (2 repaired), 0 failed, 1 empty; 11 of 12 inputs held an entity, 3.4 per input``."""
    lines = []
    for task, e in table.items():
        line = f"{task}: {e.get('answers', 0)} answers"
        if e.get("valid_json") or e.get("failed"):
            line += f", {e.get('valid_json', 0)} valid JSON ({e.get('repaired', 0)} repaired)"
            line += f", {e.get('failed', 0)} failed"
        line += f", {e.get('empty', 0)} empty"
        if e.get("think"):
            line += f", {e['think']} reasoning blocks stripped"
        if e.get("inputs"):
            line += (
                f"; {e.get('held', 0)} of {e['inputs']} inputs held {e.get('item', 'an item')}"
                f", {e.get('items_per_input', 0)} per input"
            )
        lines.append(line)
    return lines


def print_stats(stats: dict[str, Any], as_json: bool) -> None:
    """Print ``Index.stats()``: aligned lines in words, or JSON.

    Parameters
    ----------
    stats:
        ``Index.stats()``.
    as_json:
        Print it as JSON instead.
    """
    if as_json:
        print(json.dumps(stats, indent=1))
        return
    rows: list[tuple[str, str]] = []
    for key, value in stats.items():
        if key == "nodes":
            rows.append((key, f"{sum(value.values())}: {node_counts(value)}"))
        elif key == "edges_by_kind":
            rows.append(("edge_kinds", edge_counts(value)))
        elif key == "size_bytes":
            rows.append(("size", size_words(int(value))))
        elif key == "committed_at":  # seconds since the epoch in the JSON; a date here
            rows.append((key, time_words(value)))
        elif key == "versions":
            rows.append((key, versions_words(value)))
        elif key == "last_write_yield":
            lines = yield_lines(value) or ["none"]
            rows.extend((key if i == 0 else "", line) for i, line in enumerate(lines))
        else:
            rows.append((key, value_words(value)))
    print_lines(rows)
