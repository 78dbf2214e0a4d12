"""Typed configuration. Defaults come from the papers (EraRAG, NodeRAG) and DESIGN.md.

Every config is a dataclass that round-trips through a plain dict, so the index manifest can
record exactly what built it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value is invalid or incompatible with the index."""


@dataclass
class ChunkingConfig:
    """Token-window chunking.

    The papers use 1,200-token chunks (EraRAG, overlap 100) and 1,048 (NodeRAG); those suit
    8k-context embedders. all-MiniLM-L6-v2 reads at most 256 word pieces and silently drops
    the rest, so the default is 200 cl100k tokens with 20 overlap (~230 word pieces).
    """

    chunk_tokens: int = 200
    overlap_tokens: int = 20
    encoding: str = "cl100k_base"

    def validate(self) -> None:
        if self.chunk_tokens < 8:
            raise ConfigError(f"chunk_tokens must be >= 8, got {self.chunk_tokens}")
        if not 0 <= self.overlap_tokens < self.chunk_tokens:
            raise ConfigError(
                f"overlap_tokens must be in [0, chunk_tokens), got {self.overlap_tokens}"
            )


@dataclass
class IngestConfig:
    """Limits on what a document may be. A violating batch is rejected whole."""

    #: Larger documents are refused with a clear error (split them first). 4 MiB of UTF-8 is
    #: ~1M tokens, i.e. ~5,000 chunks: ~3 minutes of CPU embedding for a single document.
    max_doc_bytes: int = 4 * 1024 * 1024
    max_doc_id_chars: int = 1024


@dataclass
class HierarchyConfig:
    """EraRAG hierarchy (paper §III-C, defaults from DESIGN §6)."""

    enabled: bool = True
    #: Hyperplanes for the LSH codes; 16 suits 384-d embeddings (paper: 16-20).
    n_bits: int = 16
    seed: int = 20250625
    s_min: int = 8
    s_max: int = 12
    max_layers: int = 5
    summary_tokens: int = 100
    #: Share p of the budget taken first from chunks (detailed) or summaries (summarized).
    bias_share: float = 0.7
    #: Insert policy: new items that fill whole segments among themselves form new segments
    #: and only the rest join their Hamming-nearest segment (True), or every new item joins its
    #: nearest segment as in the paper's Algorithm 3 (False). Measured on MultiHop-RAG
    #: (benchmarks/results/update.md): a 5% step costs 0.05-0.09 of a rebuild's tokens with
    #: True, 0.49-0.69 with False.
    group_new_first: bool = True

    def validate(self) -> None:
        if not 1 <= self.n_bits <= 64:
            raise ConfigError(f"n_bits must be in [1, 64], got {self.n_bits}")
        if not 1 <= self.s_min <= self.s_max:
            raise ConfigError(f"need 1 <= s_min <= s_max, got [{self.s_min}, {self.s_max}]")
        if not 0.0 <= self.bias_share <= 1.0:
            raise ConfigError(f"bias_share must be in [0, 1], got {self.bias_share}")


@dataclass
class HeterographConfig:
    """NodeRAG heterograph (paper §2, Appendix C; search defaults from its public code)."""

    enabled: bool = True
    seed: int = 20250402
    #: Betweenness is sampled from this many sources (NodeRAG: networkx k=10).
    betweenness_sources: int = 10
    #: Semantic-neighbour edges per embedded node.
    semantic_neighbours: int = 16
    #: Regenerate a community's H/O only when its membership changed by more than this share.
    community_change_share: float = 0.2
    attribute_tokens: int = 200
    element_tokens: int = 400
    decompose_tokens: int = 1024
    ppr_alpha: float = 0.5
    ppr_iters: int = 2
    entry_top_k: int = 10
    cross_top_k: int = 10
    relation_top_k: int = 30
    exact_match_weight: float = 1.0
    vector_match_weight: float = 1.0


@dataclass
class SearchConfig:
    """Defaults for queries."""

    budget_tokens: int = 2000
    #: Candidates fetched from the vector index before packing under the budget.
    top_k: int = 50
    #: usearch's query-time expansion (ef); higher = closer to exact.
    expansion_search: int = 128


@dataclass
class IndexConfig:
    """Everything that defines an index. Recorded in its manifest."""

    embedder: str = "all-MiniLM-L6-v2"
    llm: str = "extractive"
    vector_dtype: str = "f32"
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    ingest: IngestConfig = field(default_factory=IngestConfig)
    hierarchy: HierarchyConfig = field(default_factory=HierarchyConfig)
    heterograph: HeterographConfig = field(default_factory=HeterographConfig)
    search: SearchConfig = field(default_factory=SearchConfig)

    def validate(self) -> None:
        self.chunking.validate()
        self.hierarchy.validate()
        if self.vector_dtype not in ("f32", "f16"):
            raise ConfigError(f"vector_dtype must be 'f32' or 'f16', got {self.vector_dtype!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexConfig:
        return _from_dict(cls, data)


def _from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Build a (nested) dataclass from a dict, rejecting unknown keys with a clear error."""
    if not isinstance(data, dict):
        raise ConfigError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = set(data) - set(fields)
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown option(s) {sorted(unknown)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        ftype = fields[name].type
        sub = _DATACLASSES.get(ftype if isinstance(ftype, str) else getattr(ftype, "__name__", ""))
        kwargs[name] = _from_dict(sub, value) if sub is not None else value
    return cls(**kwargs)


_DATACLASSES: dict[str, type] = {
    "ChunkingConfig": ChunkingConfig,
    "IngestConfig": IngestConfig,
    "HierarchyConfig": HierarchyConfig,
    "HeterographConfig": HeterographConfig,
    "SearchConfig": SearchConfig,
}
