"""Token-window chunking with cl100k_base (offline; docs/architecture.md, "Write path")."""

from __future__ import annotations

from dataclasses import dataclass

from graphstrata.engine.config import ChunkingConfig
from graphstrata.engine.tokens import get_encoding


@dataclass(frozen=True)
class Chunk:
    """One window of a document: its text, token count and first token's position."""

    text: str
    tokens: int
    start_token: int


def chunk_text(text: str, config: ChunkingConfig) -> list[Chunk]:
    """Cut ``text`` into windows of ``chunk_tokens`` tokens that overlap by ``overlap_tokens``.

    A window boundary that falls inside a multi-byte character drops the partial bytes
    (decoded with ``errors="ignore"``), so every chunk is valid text. The last window is
    kept even when short; an empty or whitespace-only text gives no chunk.
    """
    enc = get_encoding(config.encoding)
    ids = enc.encode(text, disallowed_special=())
    if not ids or not text.strip():
        return []
    step = config.chunk_tokens - config.overlap_tokens
    chunks: list[Chunk] = []
    start = 0
    while True:
        window = ids[start : start + config.chunk_tokens]
        piece = enc.decode_bytes(window).decode("utf-8", errors="ignore").strip()
        if piece:
            chunks.append(Chunk(text=piece, tokens=len(window), start_token=start))
        if start + config.chunk_tokens >= len(ids):
            break
        start += step
    return chunks
