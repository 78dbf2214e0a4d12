"""Operation reports: every build, insert, delete and query says what it cost."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class OperationReport:
    """Costs of one operation (docs/architecture.md, "Write path")."""

    operation: str
    version: int = 0
    docs_added: int = 0
    docs_updated: int = 0
    docs_unchanged: int = 0
    docs_deleted: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    #: Chunk texts actually embedded: duplicates and unchanged chunks reuse stored vectors.
    chunks_embedded: int = 0
    nodes_added: int = 0
    nodes_removed: int = 0
    edges_added: int = 0
    llm_calls: int = 0
    llm_batches: int = 0
    llm_cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embedded: int = 0
    bytes_written: int = 0
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    llm_by_stage: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Per LLM task, what its answers held (``engine.extraction``: answers, valid_json,
    #: repaired, empty, failed, think, inputs, held, items, items_per_input, first_bad).
    llm_yield: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Per file of a file insert: ``{"name", "status", "doc_id", ...}`` (``Index.insert_files``).
    files: list[dict[str, Any]] = field(default_factory=list)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time a stage; nested or repeated stages add up."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stages[name] = self.stages.get(name, 0.0) + time.perf_counter() - start

    def add_llm(
        self, stage: str, calls: int, prompt_tokens: int, completion_tokens: int, cached: int
    ) -> None:
        """Count one LLM batch of ``stage`` (cached answers are not calls)."""
        self.llm_calls += calls
        self.llm_batches += 1
        self.llm_cached += cached
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        entry = self.llm_by_stage.setdefault(
            stage, {"calls": 0, "batches": 0, "prompt_tokens": 0, "completion_tokens": 0}
        )
        entry["calls"] += calls
        entry["batches"] += 1
        entry["prompt_tokens"] += prompt_tokens
        entry["completion_tokens"] += completion_tokens

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (seconds rounded to 0.1 ms)."""
        data = asdict(self)
        data["stages"] = {k: round(v, 4) for k, v in self.stages.items()}
        data["seconds"] = round(self.seconds, 4)
        return data


def describe(stats: Mapping[str, Any]) -> str:
    """Counts for a report note, in words: ``"attributes: important 22, selected yes;
    clusters: k 16"`` (nested mappings become ``name: ...`` groups, booleans yes/no).

    Parameters
    ----------
    stats:
        Names to numbers, booleans, strings or nested mappings of them.

    Returns
    -------
    str
        One line.
    """
    groups, flat = [], []
    for key, value in stats.items():
        name = str(key).replace("_", " ")
        if isinstance(value, Mapping):
            if value:
                groups.append(f"{name}: {describe(value)}")
        elif isinstance(value, bool):
            flat.append(f"{name} {'yes' if value else 'no'}")
        else:
            flat.append(f"{name} {value}")
    return "; ".join([", ".join(flat)] * bool(flat) + groups)
