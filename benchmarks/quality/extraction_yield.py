"""The decomposition yield of the built-in extractive backend on every shared set (decision 0030).

    python -m benchmarks.quality.extraction_yield

The default ``yield_floor.min_yield`` must let the extractive backend (the default LLM) pass
every corpus graphstrata is run on. For each shared set (``../shared/data/*/corpus.jsonl``,
whole) and the sample corpus, every chunk (the default chunking) is decomposed by the
extractive backend and parsed as the heterograph parses it; the share of chunks whose answer
held at least one entity is the stage's yield. Writes ``benchmarks/results/extraction_yield.md``.
Sets that are absent are skipped.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DATA,
    REPO,
    command_line,
    commit,
    load1,
    log,
    machine,
    markdown_table,
    read_jsonl,
    write_report,
)


def corpora() -> dict[str, Path]:
    """Name -> corpus file of every shared set present, and the sample corpus."""
    found = {"sample": REPO / "examples" / "sample.jsonl"}
    for path in sorted(DATA.glob("*/corpus.jsonl")) if DATA.is_dir() else []:
        found[path.parent.name] = path
    return found


def set_yield(path: Path) -> dict[str, Any]:
    """Chunks, chunks whose decomposition held an entity, and the yield, for one corpus."""
    from graphstrata.bindings.llm.extractive import ExtractiveLLM
    from graphstrata.engine import ChunkingConfig, chunk_text
    from graphstrata.engine.heterograph.parse import parse_decomposition
    from graphstrata.engine.prompts import decompose_request

    cut = ChunkingConfig()
    chunks = [c.text for d in read_jsonl(path) for c in chunk_text(d["text"], cut)]
    answers = ExtractiveLLM().complete([decompose_request(t, 1024) for t in chunks])
    units = [parse_decomposition(a.text) for a in answers]
    held = sum(1 for us in units if us and any(u.entities for u in us))
    return {"chunks": len(chunks), "held": held, "yield": round(held / max(1, len(chunks)), 4)}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    load = load1()
    rows = {}
    for name, path in corpora().items():
        log(f"{name}: decomposing every chunk of {path}")
        rows[name] = set_yield(path)
    table = [[n, r["chunks"], r["held"], f"{r['yield']:.4f}"] for n, r in rows.items()]
    text = "\n".join(
        [
            "# Decomposition yield of the extractive backend",
            "",
            f"Command: `{command_line('benchmarks.quality.extraction_yield', argv)}`  ",
            f"Commit {commit()}; {machine()}; load average {load:.2f} at start.",
            "",
            *markdown_table(["corpus", "chunks", "chunks with an entity", "yield"], table),
            "",
            "Yield: the share of chunks whose decomposition held at least one entity "
            "(`yield_floor.min_yield` is 0.5 by default).",
        ]
    )
    write_report("extraction_yield", rows, text)
    print(text)
    return rows


if __name__ == "__main__":
    main()
