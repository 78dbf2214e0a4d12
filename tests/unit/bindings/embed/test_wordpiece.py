"""The pure-Python BERT WordPiece tokenizer against ``tokenizers`` (the oracle).

Both read the packaged all-MiniLM-L6-v2 ``tokenizer.json``; the oracle is set up as the
``minilm-onnx`` embedder used it (no padding, truncation at 256).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from graphstrata.bindings.embed import bert_unicode
from graphstrata.bindings.embed.onnx import OnnxMiniLMEmbedder, packaged_model_dir
from graphstrata.bindings.embed.wordpiece import WordPieceTokenizer
from graphstrata.engine import EmbedderError
from tests.helpers.bert_unicode import tables

REPO = Path(__file__).resolve().parents[4]
MAX = 256
TOKENIZER_JSON = packaged_model_dir() / "tokenizer.json"


def _oracle(path: Path = TOKENIZER_JSON, max_length: int = MAX) -> Tokenizer:
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(max_length=max_length)
    return tok


@pytest.fixture(scope="module")
def oracle() -> Tokenizer:
    return _oracle()


@pytest.fixture(scope="module")
def ours() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_file(TOKENIZER_JSON, MAX)


def assert_same(ours: WordPieceTokenizer, oracle: Tokenizer, texts: list[str]) -> None:
    got = ours.encode_batch(texts)
    for text, mine, enc in zip(texts, got, oracle.encode_batch(texts), strict=True):
        assert mine == enc.ids, repr(text)
        assert [1] * len(mine) == enc.attention_mask
        assert len(mine) <= MAX


# ------------------------------------------------------------------ random text
#: Characters of every kind the pipeline treats specially.
_POOLS = {
    "ascii": [chr(c) for c in range(32, 127)],
    "controls": [chr(c) for c in [*range(0, 32), *range(127, 160)]],
    "spaces": list(" \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u3000"),
    "zero_width": list("\u200b\u200c\u200d\u2060\ufeff\u00ad\ufffd\u061c\ue000\U000f0000"),
    "accents": list("éèêëàáâäãåçñóòôöõúùûüíìîïýÿÉÀÇÑÖÜßæøœÆØŒłŁđĐħ"),
    "combining": [chr(c) for c in range(0x300, 0x370)] + list("\u20d7\u1ab0\u1dc0\ufe20"),
    "cjk": list("東京タワーは高い中文字漢字한국어ひらがなカタカナ\u3400\U00020000\uf900"),
    "emoji": list("🚀😀👍🏽❤️🥺🧑‍💻🇫🇷✨⚡"),
    "punct": [chr(c) for c in range(0x110000 >> 4) if unicodedata.category(chr(c))[0] == "P"],
    "symbols": list("$+<=>^`|~¢£¥©®°±×÷€™←→∑∞≠≤≥★☆♠♥"),
    "greek_cyrillic": list("ΑΣΟΔΟΣαβγσςΩωЖжЯяЁёİıſK"),
    "digits": list("0123456789٠١٢३४५௬"),
}
_SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[cls]", "[UNK", "[[SEP]]"]


def _random_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.04:
        return rng.choice(["", " ", "\t\n", "\u3000 \xa0"])
    if kind < 0.1:  # one very long word
        return "".join(rng.choice(_POOLS["ascii"][33:]) for _ in range(rng.randint(90, 300)))
    pools = rng.sample(sorted(_POOLS), rng.randint(1, 4))
    parts = []
    for _ in range(rng.randint(1, 40)):
        r = rng.random()
        if r < 0.05:
            parts.append(rng.choice(_SPECIALS))
        elif r < 0.35:
            parts.append(rng.choice(_POOLS["spaces"]))
        elif r < 0.5:
            word = "".join(rng.choice(_POOLS["ascii"][33:]) for _ in range(rng.randint(1, 12)))
            parts.append(word.upper() if rng.random() < 0.2 else word)
        else:
            pool = _POOLS[rng.choice(pools)]
            parts.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 8))))
    return "".join(parts)


def test_random_unicode_strings(ours, oracle):
    rng = random.Random(46)
    assert_same(ours, oracle, [_random_text(rng) for _ in range(500)])


def test_code_points_in_context(ours, oracle):
    """Every code point of planes 0-2 (all CJK included) and the tags and variation
    selectors of plane 14, then one in 61 of the rest (unassigned and private use)."""
    codes = [c for c in range(0x30000) if not 0xD800 <= c <= 0xDFFF]
    codes += [*range(0xE0000, 0xE0200), *range(0x30000, 0x110000, 61)]
    texts = [f"a{chr(c)}b {chr(c)}Xé{chr(c)}" for c in codes]
    for lo in range(0, len(texts), 1 << 15):
        batch = texts[lo : lo + (1 << 15)]
        got = [ours.encode(t) for t in batch]
        want = [e.ids for e in oracle.encode_batch(batch)]
        bad = [hex(codes[lo + i]) for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
        assert not bad, bad[:20]


# ------------------------------------------------------------------ real text, limits
def _sample_texts() -> list[str]:
    lines = (REPO / "examples" / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()]


def test_sample_corpus_texts_and_their_words(ours, oracle):
    texts = _sample_texts()
    assert len(texts) >= 30
    words = " ".join(texts).split(" ")
    chunks = [" ".join(words[i : i + 200]) for i in range(0, len(words), 200)]
    queries = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    assert_same(ours, oracle, texts + chunks + queries)
    assert max(len(ours.encode(t)) for t in texts) == MAX  # some were truncated


@pytest.mark.parametrize("limit", [2, 3, 7, 128, 256])
def test_truncation_keeps_cls_and_sep(limit):
    oracle, ours = _oracle(max_length=limit), WordPieceTokenizer.from_file(TOKENIZER_JSON, limit)
    texts = ["word " * n for n in (0, 1, limit - 3, limit - 2, limit - 1, limit + 5)]
    texts += ["Brekkvik, " * limit, "[CLS] " * limit, "x" * 5000, "a" * 99 + " " + "b" * 101]
    texts += _sample_texts()[:3]
    assert_same_limit(ours, oracle, texts, limit)


def assert_same_limit(ours, oracle, texts, limit):
    for text in texts:
        mine = ours.encode(text)
        assert mine == oracle.encode(text).ids, repr(text[:80])
        assert len(mine) <= limit and mine[0] == 101 and mine[-1] == 102


def test_a_small_cache_gives_the_same_ids(oracle):
    small = WordPieceTokenizer.from_file(TOKENIZER_JSON, MAX, cache_size=4)
    rng = random.Random(7)
    assert_same(small, oracle, [_random_text(rng) for _ in range(100)] + _sample_texts())


@pytest.mark.parametrize(
    "flags",
    [
        {"lowercase": False},
        {"lowercase": False, "strip_accents": True},
        {"strip_accents": False},
        {"clean_text": False},
        {"handle_chinese_chars": False},
    ],
)
def test_other_normalizer_settings(tmp_path, flags):
    spec = json.loads(TOKENIZER_JSON.read_text(encoding="utf-8"))
    spec["normalizer"].update(flags)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    rng = random.Random(11)
    texts = [_random_text(rng) for _ in range(300)] + _sample_texts()[:5]
    assert_same(WordPieceTokenizer.from_file(path, MAX), _oracle(path), texts)


def test_bert_processing_post_processor(tmp_path):
    spec = json.loads(TOKENIZER_JSON.read_text(encoding="utf-8"))
    spec["post_processor"] = {
        "type": "BertProcessing",
        "sep": ["[SEP]", 102],
        "cls": ["[CLS]", 101],
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    assert_same(WordPieceTokenizer.from_file(path, MAX), _oracle(path), _sample_texts()[:5])


# ------------------------------------------------------------------ refusals, tables
@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.update(normalizer={"type": "NFKC"}), "normalizer"),
        (lambda s: s.update(pre_tokenizer={"type": "Whitespace"}), "pre_tokenizer"),
        (lambda s: s["model"].update(type="BPE"), "model"),
        (lambda s: s.update(post_processor=None), "post_processor"),
        (lambda s: s["added_tokens"][0].update(normalized=True), "added token"),
        (lambda s: s["added_tokens"][1].update(single_word=True), "added token"),
        (lambda s: s["model"].pop("vocab"), "malformed"),
    ],
)
def test_refuses_what_it_does_not_reproduce(tmp_path, edit, message):
    spec = json.loads(TOKENIZER_JSON.read_text(encoding="utf-8"))
    edit(spec)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        WordPieceTokenizer.from_file(path, MAX)


def test_refuses_bad_files_and_limits(tmp_path):
    with pytest.raises(ValueError, match="cannot read"):
        WordPieceTokenizer.from_file(tmp_path / "missing.json", MAX)
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot read"):
        WordPieceTokenizer.from_file(tmp_path / "bad.json", MAX)
    with pytest.raises(ValueError, match="max_length"):
        WordPieceTokenizer.from_file(TOKENIZER_JSON, 1)


def test_the_embedder_names_a_tokenizer_it_cannot_reproduce(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    for src in packaged_model_dir().iterdir():
        if src.name != "tokenizer.json":
            (model / src.name).symlink_to(src)
    spec = json.loads(TOKENIZER_JSON.read_text(encoding="utf-8"))
    spec["pre_tokenizer"] = {"type": "Whitespace"}
    (model / "tokenizer.json").write_text(json.dumps(spec), encoding="utf-8")
    embedder = OnnxMiniLMEmbedder(model_dir=model, cache=tmp_path / "cache")
    with pytest.raises(EmbedderError, match=r"unsupported tokenizer\.json pre_tokenizer"):
        embedder.load()


def test_committed_tables_match_the_installed_tokenizers():
    for name, text in tables().items():
        assert getattr(bert_unicode, name).split() == text.split(), name


def test_token_to_id(ours, oracle):
    for token in ("[PAD]", "[UNK]", "[CLS]", "the", "##s", "no-such-piece"):
        assert ours.token_to_id(token) == oracle.token_to_id(token)


# ------------------------------------------------------------------ without tokenizers
def test_minilm_onnx_embeds_without_tokenizers(tmp_path, minilm_embedder):
    """The default embedder runs with ``tokenizers`` unimportable, and its vectors are the
    torch model's (sentence-transformers, which tokenizes with ``tokenizers``)."""
    script = textwrap.dedent(
        """
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "tokenizers" or name.startswith("tokenizers."):
                    raise ImportError(f"{name} is blocked")
                return None

        sys.meta_path.insert(0, Block())
        import numpy as np
        from graphstrata.bindings.registry import make_embedder

        vectors = make_embedder("minilm-onnx").embed(sys.argv[2:])
        assert "tokenizers" not in sys.modules
        np.save(sys.argv[1], vectors)
        """
    )
    texts = ["Brekkvik lies on Lake Sundra.", "", "東京 café [UNK] naïve ΟΔΟΣ", "word " * 300]
    out = tmp_path / "vectors.npy"
    done = subprocess.run(
        [sys.executable, "-c", script, str(out), *texts],
        cwd=REPO,
        env={**os.environ, "GRAPHSTRATA_CACHE": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    vectors = np.load(out)
    cosines = np.sum(vectors * minilm_embedder.embed(texts), axis=1)
    assert vectors.shape == (len(texts), 384)
    assert cosines.min() >= 1 - 1e-5, cosines
