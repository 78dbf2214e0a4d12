from __future__ import annotations

import pytest

from graphstrata.engine.config import ChunkingConfig, ConfigError
from graphstrata.engine.ingest.chunking import chunk_text
from graphstrata.engine.tokens import count_tokens, get_encoding


def test_windows_have_the_configured_size_and_overlap():
    text = " ".join(f"word{i}" for i in range(1000))
    cfg = ChunkingConfig(chunk_tokens=50, overlap_tokens=10)
    chunks = chunk_text(text, cfg)
    enc = get_encoding()
    ids = enc.encode(text)
    assert all(c.tokens <= 50 for c in chunks)
    assert [c.start_token for c in chunks] == list(range(0, len(ids) - 10, 40))[: len(chunks)]
    # Consecutive windows share exactly the overlap in token space.
    assert chunks[1].start_token - chunks[0].start_token == 40
    assert chunks[-1].start_token + chunks[-1].tokens == len(ids)


def test_short_and_empty_texts():
    cfg = ChunkingConfig()
    assert chunk_text("", cfg) == []
    assert chunk_text("   \n\t ", cfg) == []
    (only,) = chunk_text("A short note.", cfg)
    assert only.text == "A short note."
    assert only.tokens == count_tokens("A short note.")


def test_multibyte_characters_split_by_a_window_stay_valid_text():
    text = "Søren Lindqvist ærøskøbing 東京 " * 200
    for chunk in chunk_text(text, ChunkingConfig(chunk_tokens=17, overlap_tokens=3)):
        chunk.text.encode("utf-8")  # no lone surrogates or replacement garbage
        assert "\ufffd" not in chunk.text


def test_invalid_chunking_config_is_rejected():
    with pytest.raises(ConfigError):
        ChunkingConfig(chunk_tokens=100, overlap_tokens=100).validate()
    with pytest.raises(ConfigError):
        ChunkingConfig(chunk_tokens=4).validate()


@pytest.mark.parametrize(
    "text",
    [
        "Søren Lindqvist ærøskøbing 東京 🙂 " * 120,
        "  leading blanks\n\n" + " ".join(f"w{i}" for i in range(700)) + "\n\n  ",
        "plain ascii text " * 300,
    ],
)
def test_chunk_offsets_point_at_the_chunk_text_in_the_document(text):
    chunks = chunk_text(text, ChunkingConfig(chunk_tokens=17, overlap_tokens=3))
    assert len(chunks) > 3
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
