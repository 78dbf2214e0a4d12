"""Whether an embedder computes the function an index was built with (``Engine.open``, the
backend registry)."""

from __future__ import annotations

from typing import Any

from graphstrata.engine.config import ConfigError
from graphstrata.engine.interfaces import Embedder

__all__ = ["check_embedder"]


def check_embedder(manifest: dict[str, Any], embedder: Embedder, given_by: str = "") -> None:
    """Opening an index with another embedder than the one that built it is an error.

    An embedder that computes the same function under another name says so in
    ``compatible_names`` (the packaged all-MiniLM-L6-v2 on torch and its fp32 ONNX export
    ``minilm-onnx`` list each other; the int8 export lists only itself, since its vectors
    differ). ``getattr`` keeps user embedders without the attribute working.

    Parameters
    ----------
    manifest:
        The index manifest (its ``embedder`` entry: ``name``, ``dim``).
    embedder:
        The embedder offered.
    given_by:
        Where the embedder came from, for the message (e.g. ``"GRAPHSTRATA_EMBEDDER"``).

    Raises
    ------
    ConfigError
        When the embedder is neither the recorded one nor compatible with it.
    """
    want = manifest["embedder"]
    compatible = getattr(embedder, "compatible_names", None) or frozenset({embedder.name})
    same = want["name"] == embedder.name or want["name"] in compatible
    if not same or int(want["dim"]) != int(embedder.dim):
        allowed = ", ".join(sorted(compatible | {embedder.name}))
        raise ConfigError(
            f"this index was built with embedder {want['name']!r} (dim {want['dim']}), "
            f"but {given_by or 'the caller'} gives {embedder.name!r} (dim {embedder.dim}), "
            "which is compatible only "
            f"with {allowed}; open it with the embedder that built it"
        )
