"""Text hashes that are the same in every process (Python's ``hash`` is salted per process)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

__all__ = ["stable_hash", "stable_hashes"]


def stable_hash(text: str) -> int:
    """A signed 64-bit hash of ``text`` that is the same in every process (unlike ``hash``)."""
    return int.from_bytes(
        hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big", signed=True
    )


def stable_hashes(texts: Sequence[str]) -> np.ndarray:
    """int64 :func:`stable_hash` of each text."""
    return np.fromiter((stable_hash(t) for t in texts), np.int64, len(texts))
