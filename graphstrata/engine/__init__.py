"""The engine: store, ingest, hierarchy, heterograph, search; the Embedder and LLM interfaces.

Layout (docs/architecture.md, "Layers"): the contract every retrieval structure implements
is ``component``, with ``interfaces`` (model protocols), ``config``, ``params`` and ``types``
beside it; ``store/`` is the on-disk format, ``ingest/`` turns documents into chunk changes,
``hierarchy/``, ``heterograph/`` and ``search/`` serve the modes, and ``index`` runs every
operation. The engine imports ``graphstrata.core`` and never ``graphstrata.bindings`` or
``graphstrata.evaluation``.

**The public API.** The names below are what the bindings may use of the engine
(``from graphstrata.engine import Engine``); every other module is internal, and
``tests/unit/test_layering.py`` refuses a ``bindings`` import of one. They are loaded on
first use (PEP 562), so ``import graphstrata.engine`` imports nothing heavy: a config or an
error class costs its own module only.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from graphstrata.engine.answer import (
        Answer,
        answer_result,
        citations,
        sources_footer,
        stream_pieces,
    )
    from graphstrata.engine.config import (
        ChunkingConfig,
        IndexConfig,
        IngestConfig,
        SearchConfig,
    )
    from graphstrata.engine.conversation import conversation_query
    from graphstrata.engine.directory import (
        INDEX_ENTRIES,
        MANIFEST,
        LiveWriter,
        check_index_folder,
        check_no_live_writer,
        live_writer,
        live_writers,
        read_version,
        recover_replace,
        sibling_path,
        stored_manifest,
        swap_in,
        verify_files,
    )
    from graphstrata.engine.documents import (
        TEXT_SUFFIXES,
        Document,
        DocumentError,
        SourceMap,
        as_documents,
        coerce_document,
        folder_files,
        metadata_problem,
        read_documents,
        validate_batch,
    )
    from graphstrata.engine.embedder_check import check_embedder
    from graphstrata.engine.extraction import (
        ExtractionYieldError,
        YieldConfig,
        leading_json,
        strip_think,
    )
    from graphstrata.engine.fields import ConfigError
    from graphstrata.engine.filters import matches, parse_filter
    from graphstrata.engine.index import Engine
    from graphstrata.engine.ingest.chunking import chunk_text
    from graphstrata.engine.interfaces import (
        EXTRACTIVE_LLM,
        LLM,
        BackendError,
        Embedder,
        EmbedderError,
        LLMError,
        LLMRequest,
        LLMResponse,
        Reranker,
        RerankerError,
    )
    from graphstrata.engine.params import ModeParams, QueryError
    from graphstrata.engine.pinned import PinnedVersion
    from graphstrata.engine.prompts import PromptConfig
    from graphstrata.engine.report import OperationReport
    from graphstrata.engine.results import QueryResult
    from graphstrata.engine.store import IndexLockedError, StoreError, StoreWriteError
    from graphstrata.engine.tokens import count_tokens
    from graphstrata.engine.types import EdgeKind, NodeKind
    from graphstrata.engine.user_cache import user_cache_dir

#: Public name -> the module that defines it.
_PUBLIC: dict[str, str] = {
    **dict.fromkeys(
        ("Answer", "answer_result", "citations", "sources_footer", "stream_pieces"), "answer"
    ),
    "conversation_query": "conversation",
    **dict.fromkeys(("ChunkingConfig", "IndexConfig", "IngestConfig", "SearchConfig"), "config"),
    "ConfigError": "fields",
    **dict.fromkeys(
        (
            "INDEX_ENTRIES",
            "MANIFEST",
            "LiveWriter",
            "check_index_folder",
            "check_no_live_writer",
            "live_writer",
            "live_writers",
            "read_version",
            "recover_replace",
            "sibling_path",
            "stored_manifest",
            "swap_in",
            "verify_files",
        ),
        "directory",
    ),
    **dict.fromkeys(
        (
            "TEXT_SUFFIXES",
            "Document",
            "DocumentError",
            "SourceMap",
            "as_documents",
            "coerce_document",
            "folder_files",
            "metadata_problem",
            "read_documents",
            "validate_batch",
        ),
        "documents",
    ),
    **dict.fromkeys(
        ("ExtractionYieldError", "YieldConfig", "leading_json", "strip_think"), "extraction"
    ),
    **dict.fromkeys(("matches", "parse_filter"), "filters"),
    "Engine": "index",
    "QueryResult": "results",
    "check_embedder": "embedder_check",
    "chunk_text": "ingest.chunking",
    **dict.fromkeys(
        (
            "EXTRACTIVE_LLM",
            "LLM",
            "BackendError",
            "Embedder",
            "EmbedderError",
            "LLMError",
            "LLMRequest",
            "LLMResponse",
            "Reranker",
            "RerankerError",
        ),
        "interfaces",
    ),
    **dict.fromkeys(("ModeParams", "QueryError"), "params"),
    "PinnedVersion": "pinned",
    "PromptConfig": "prompts",
    "OperationReport": "report",
    **dict.fromkeys(("IndexLockedError", "StoreError", "StoreWriteError"), "store"),
    "count_tokens": "tokens",
    **dict.fromkeys(("EdgeKind", "NodeKind"), "types"),
    "user_cache_dir": "user_cache",
}

__all__ = [
    "EXTRACTIVE_LLM",
    "INDEX_ENTRIES",
    "LLM",
    "MANIFEST",
    "TEXT_SUFFIXES",
    "Answer",
    "BackendError",
    "ChunkingConfig",
    "ConfigError",
    "Document",
    "DocumentError",
    "EdgeKind",
    "Embedder",
    "EmbedderError",
    "Engine",
    "ExtractionYieldError",
    "IndexConfig",
    "IndexLockedError",
    "IngestConfig",
    "LLMError",
    "LLMRequest",
    "LLMResponse",
    "LiveWriter",
    "ModeParams",
    "NodeKind",
    "OperationReport",
    "PinnedVersion",
    "PromptConfig",
    "QueryError",
    "QueryResult",
    "Reranker",
    "RerankerError",
    "SearchConfig",
    "SourceMap",
    "StoreError",
    "StoreWriteError",
    "YieldConfig",
    "answer_result",
    "as_documents",
    "check_embedder",
    "check_index_folder",
    "check_no_live_writer",
    "chunk_text",
    "citations",
    "coerce_document",
    "conversation_query",
    "count_tokens",
    "folder_files",
    "leading_json",
    "live_writer",
    "live_writers",
    "matches",
    "metadata_problem",
    "parse_filter",
    "read_documents",
    "read_version",
    "recover_replace",
    "sibling_path",
    "sources_footer",
    "stored_manifest",
    "stream_pieces",
    "strip_think",
    "swap_in",
    "user_cache_dir",
    "validate_batch",
    "verify_files",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
