"""Token-window chunking with cl100k_base (offline; docs/architecture.md, "Write path")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphstrata.engine.config import ChunkingConfig
from graphstrata.engine.tokens import get_encoding


@dataclass(frozen=True)
class Chunk:
    """One window of a document: its text, token count and first token's position, and
    where the text lies in the document: ``text == document_text[start:end]``."""

    text: str
    tokens: int
    start_token: int
    start: int = 0
    end: int = 0


def chunk_text(text: str, config: ChunkingConfig) -> list[Chunk]:
    """Cut ``text`` into windows of ``chunk_tokens`` tokens that overlap by ``overlap_tokens``.

    A window boundary that falls inside a multi-byte character drops the partial bytes
    (decoded with ``errors="ignore"``), so every chunk is valid text. The last window is
    kept even when short; an empty or whitespace-only text gives no chunk. Each chunk
    records its character offsets in ``text`` (the source spans of citations).
    """
    enc = get_encoding(config.encoding)
    ids = enc.encode(text, disallowed_special=())
    if not ids or not text.strip():
        return []
    data = text.encode("utf-8", errors="surrogatepass")
    # Byte offset of each token's first byte (tiktoken round-trips the bytes exactly), and
    # for each byte the character it belongs to and whether it starts that character.
    token_bytes = np.fromiter(
        (len(b) for b in enc.decode_tokens_bytes(ids)), dtype=np.int64, count=len(ids)
    )
    byte_at = np.concatenate([[0], np.cumsum(token_bytes)])
    lead = (np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80
    char_of = np.cumsum(lead) - 1
    step = config.chunk_tokens - config.overlap_tokens
    chunks: list[Chunk] = []
    start = 0
    while True:
        stop = min(start + config.chunk_tokens, len(ids))
        window = ids[start:stop]
        piece = enc.decode_bytes(window).decode("utf-8", errors="ignore")
        stripped = piece.strip()
        if stripped:
            first = _first_whole_char(int(byte_at[start]), lead, char_of)
            begin = first + len(piece) - len(piece.lstrip())
            chunks.append(
                Chunk(
                    text=stripped,
                    tokens=len(window),
                    start_token=start,
                    start=begin,
                    end=begin + len(stripped),
                )
            )
        if start + config.chunk_tokens >= len(ids):
            break
        start += step
    return chunks


def _first_whole_char(byte: int, lead: np.ndarray, char_of: np.ndarray) -> int:
    """The character index of the first character that starts at or after ``byte`` (the
    bytes of a character cut by the window's start are dropped by the decode)."""
    if byte >= lead.size:
        return int(char_of[-1]) + 1 if lead.size else 0
    return int(char_of[byte]) + (0 if lead[byte] else 1)
