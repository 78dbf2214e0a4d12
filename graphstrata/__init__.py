"""graphstrata: incremental graph-based retrieval for growing corpora.

The public entry point is :class:`graphstrata.Index` (see ``graphstrata.bindings.api``).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Index", "IndexConfig", "SearchConfig", "__version__"]


def __getattr__(name: str):  # lazy: importing the package must not load torch
    if name == "Index":
        from graphstrata.bindings.api import Index

        return Index
    if name == "IndexConfig":
        from graphstrata.engine.config import IndexConfig

        return IndexConfig
    if name == "SearchConfig":
        from graphstrata.engine.config import SearchConfig

        return SearchConfig
    raise AttributeError(name)
