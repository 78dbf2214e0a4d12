"""BERT WordPiece tokenization in pure Python, driven by a ``tokenizer.json``.

The default embedder (``minilm-onnx``) needs only the ids of the packaged all-MiniLM-L6-v2
tokenizer; this module computes them exactly as the ``tokenizers`` library does for the
same file (``Tokenizer.from_file``, no padding, truncation at the embedder's limit), so
the default install does without ``tokenizers`` and the ~50 MB it pulls in
(huggingface_hub, hf-xet, fsspec, PyYAML, ...). ``tests/unit/bindings/embed/
test_wordpiece.py`` checks the equality against ``tokenizers`` (the oracle).

The pipeline of ``tokenizers`` for a BERT ``tokenizer.json``:

1. added tokens (``[CLS]``, ``[UNK]``, ... with ``normalized: false``) are cut out of the
   raw text, leftmost-longest, and map to their ids;
2. ``BertNormalizer`` on the rest: drop NUL, U+FFFD and the Unicode "other" characters
   (categories Cc, Cf, Cs, Co, Cn) but tab, newline and carriage return; map white space to
   a space; put spaces around CJK ideographs; NFD then drop nonspacing marks (Mn) when
   accents are stripped (``strip_accents: null`` follows ``lowercase``); lowercase one
   character at a time (no final-sigma rule);
3. ``BertPreTokenizer``: split on white space, every punctuation character (ASCII
   punctuation or a Unicode P category) is a word of its own;
4. ``WordPiece``: greedy longest-match-first pieces, later pieces with the ``##`` prefix; a
   word longer than ``max_input_chars_per_word`` characters, or one that cannot be
   covered, is the unknown token;
5. truncation to ``max_length - 2`` pieces, then ``[CLS] ... [SEP]``.

Speed: every step of 2-4 works within a run of non-white-space characters, so the ids of
such a run (``"(Brekkvik,"``) are computed once and kept in a bounded cache; the text of a
chunk is then one regular-expression split and one dictionary look-up per run.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphstrata.bindings.embed import bert_unicode

#: White space for ``char::is_whitespace`` of Rust (the Unicode White_Space property).
_WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
#: The CJK ideograph blocks that ``BertNormalizer`` (``handle_chinese_chars``) isolates.
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
#: Runs of non-space text whose ids are cached, per tokenizer.
DEFAULT_CACHE_SIZE = 1 << 16


class _CodeSet:
    """Membership in a sorted list of inclusive code point ranges (``"21-2f 3a ..."``)."""

    def __init__(self, spec: str):
        self.starts: list[int] = []
        self.ends: list[int] = []
        for item in spec.split():
            lo, _, hi = item.partition("-")
            self.starts.append(int(lo, 16))
            self.ends.append(int(hi or lo, 16))

    def __contains__(self, ch: str) -> bool:
        code = ord(ch)
        i = bisect.bisect_right(self.starts, code) - 1
        return i >= 0 and code <= self.ends[i]


# The tables of tokenizers, not unicodedata's: their Unicode versions differ (bert_unicode).
_OTHER = _CodeSet(bert_unicode.OTHER)
_PUNCT = _CodeSet(bert_unicode.PUNCT)
_MN = _CodeSet(bert_unicode.MN)
_DECOMPOSE = _CodeSet(bert_unicode.DECOMPOSE)
_LOWER = _CodeSet(bert_unicode.LOWER)
_LOWER_EXCEPTIONS = {
    chr(int(code, 16)): "".join(chr(int(c, 16)) for c in low.split("+"))
    for code, _, low in (item.partition(":") for item in bert_unicode.LOWER_EXCEPTIONS.split())
}


def _is_cjk(code: int) -> bool:
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def _lower(ch: str) -> str:
    if ch not in _LOWER:
        return ch
    return _LOWER_EXCEPTIONS.get(ch) or ch.lower()


def _nfd(text: str) -> str:
    """NFD as tokenizers computes it: only the characters its table decomposes."""
    if unicodedata.is_normalized("NFD", text):
        return text
    if all(c in _DECOMPOSE or unicodedata.is_normalized("NFD", c) for c in text):
        return unicodedata.normalize("NFD", text)
    # A character that unicodedata (a newer Unicode) decomposes and tokenizers does not:
    # decompose the others one by one (the canonical reordering of marks across them is
    # skipped; the marks are dropped next anyway).
    return "".join(unicodedata.normalize("NFD", c) if c in _DECOMPOSE else c for c in text)


class WordPieceTokenizer:
    """Exact BERT WordPiece ids for the ``tokenizer.json`` of a BERT model.

    Build it with :meth:`from_file`. :meth:`encode` returns the ids ``tokenizers`` returns
    for the same file with ``no_padding()`` and ``enable_truncation(max_length)``; the
    attention mask of such an encoding is all ones (padding is the caller's).

    Parameters
    ----------
    vocab:
        Word piece -> id.
    added:
        Added tokens (matched in the raw text before normalization) -> id.
    unk_token, prefix, max_word_chars:
        The ``WordPiece`` model's unknown token, continuing-subword prefix and longest word
        (in characters) it splits.
    clean_text, chinese_chars, strip_accents, lowercase:
        The ``BertNormalizer`` settings (``strip_accents`` already resolved: ``None`` in
        the file means ``lowercase``).
    cls_id, sep_id:
        Ids put around every sequence.
    max_length:
        Most ids per text, ``[CLS]`` and ``[SEP]`` included (>= 2).
    cache_size:
        Most runs of non-space text whose ids are cached.
    """

    def __init__(
        self,
        vocab: dict[str, int],
        added: dict[str, int],
        *,
        unk_token: str,
        prefix: str,
        max_word_chars: int,
        clean_text: bool,
        chinese_chars: bool,
        strip_accents: bool,
        lowercase: bool,
        cls_id: int,
        sep_id: int,
        max_length: int,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ):
        if max_length < 2:
            raise ValueError(
                f"max_length must be >= 2 (room for [CLS] and [SEP]), got {max_length}"
            )
        if unk_token not in vocab:
            raise ValueError(f"the unknown token {unk_token!r} is not in the vocabulary")
        self.vocab = vocab
        self.added = dict(added)
        self.unk_id = vocab[unk_token]
        self.prefix = prefix
        self.max_word_chars = int(max_word_chars)
        self.clean_text = clean_text
        self.chinese_chars = chinese_chars
        self.strip_accents = strip_accents
        self.lowercase = lowercase
        self.cls_id = int(cls_id)
        self.sep_id = int(sep_id)
        self.max_length = int(max_length)
        # Greedy matching never needs a candidate longer than the longest piece.
        self._longest = max(len(p[len(prefix) :] if p.startswith(prefix) else p) for p in vocab)
        # Split points: the added tokens (captured, longest first, so the leftmost match is
        # the longest one as with aho-corasick's leftmost-longest) and white space. With
        # clean_text the C0/C1 white space that is also a control character is dropped,
        # not a separator ("a\x0bb" is one word).
        spaces = "".join(c for c in _WHITE_SPACE if not (clean_text and c in _OTHER))
        spaces += "\t\n\r" if clean_text else ""
        alternatives = "|".join(re.escape(t) for t in sorted(self.added, key=len, reverse=True))
        space_class = "[" + re.escape("".join(sorted(set(spaces)))) + "]+"
        self._split = re.compile(f"({alternatives})|{space_class}" if alternatives else space_class)
        self._ascii_clean = {c: None for c in range(32) if chr(c) not in "\t\n\r"} | {127: None}
        self._ascii_words = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")
        self._run_ids = functools.lru_cache(maxsize=cache_size)(self._compute_run)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_file(
        cls, path: str | Path, max_length: int, cache_size: int = DEFAULT_CACHE_SIZE
    ) -> WordPieceTokenizer:
        """Read a ``tokenizer.json`` (``tokenizers`` format) of a BERT WordPiece tokenizer.

        The file's own ``truncation`` and ``padding`` are ignored: ids are truncated to
        ``max_length`` and never padded.

        Raises
        ------
        ValueError
            If the file is unreadable or describes a pipeline this module does not
            reproduce exactly (another normalizer, pre-tokenizer, model or post-processor,
            added tokens that are normalized or match on word boundaries only, ...).
        """
        try:
            spec = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read tokenizer file {path}: {exc}") from exc
        try:
            return cls._from_spec(spec, max_length, cache_size)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(
                f"{path}: malformed tokenizer.json ({type(exc).__name__}: {exc})"
            ) from exc

    @classmethod
    def _from_spec(
        cls, spec: dict[str, Any], max_length: int, cache_size: int
    ) -> WordPieceTokenizer:
        def refuse(what: str, value: Any) -> ValueError:
            return ValueError(f"unsupported tokenizer.json {what}: {value!r} (BERT WordPiece only)")

        norm, pre, model, post = (
            spec.get("normalizer"),
            spec.get("pre_tokenizer"),
            spec.get("model"),
            spec.get("post_processor"),
        )
        if not isinstance(norm, dict) or norm.get("type") != "BertNormalizer":
            raise refuse("normalizer", norm)
        if not isinstance(pre, dict) or pre != {"type": "BertPreTokenizer"}:
            raise refuse("pre_tokenizer", pre)
        if not isinstance(model, dict) or model.get("type") != "WordPiece":
            raise refuse("model", None if model is None else model.get("type"))
        vocab = model["vocab"]
        added: dict[str, int] = {}
        for tok in spec.get("added_tokens") or []:
            if tok["normalized"] or tok["single_word"] or tok["lstrip"] or tok["rstrip"]:
                raise refuse("added token", tok)
            added[tok["content"]] = int(tok["id"])
        cls_id, sep_id = _cls_sep(post, refuse)
        lowercase = bool(norm["lowercase"])
        strip = norm.get("strip_accents")
        return cls(
            vocab,
            added,
            unk_token=model["unk_token"],
            prefix=model["continuing_subword_prefix"],
            max_word_chars=int(model["max_input_chars_per_word"]),
            clean_text=bool(norm["clean_text"]),
            chinese_chars=bool(norm["handle_chinese_chars"]),
            strip_accents=lowercase if strip is None else bool(strip),
            lowercase=lowercase,
            cls_id=cls_id,
            sep_id=sep_id,
            max_length=max_length,
            cache_size=cache_size,
        )

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token`` (an added token or a vocabulary entry), else None."""
        found = self.added.get(token)
        return found if found is not None else self.vocab.get(token)

    # ------------------------------------------------------------------ encoding
    def encode(self, text: str) -> list[int]:
        """Ids of ``text``: ``[CLS]``, at most ``max_length - 2`` pieces, ``[SEP]``."""
        limit = self.max_length - 2
        ids: list[int] = []
        run_ids = self._run_ids
        added = self.added
        # re.split alternates text runs and the captured added token (None at white space).
        for i, part in enumerate(self._split.split(text)):
            if not part:
                continue
            if i & 1:
                ids.append(added[part])
            else:
                ids.extend(run_ids(part))
            if len(ids) >= limit:
                del ids[limit:]
                break
        ids.insert(0, self.cls_id)
        ids.append(self.sep_id)
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` of every text, in order."""
        return [self.encode(t) for t in texts]

    # ------------------------------------------------------------------ one run of text
    def _compute_run(self, run: str) -> tuple[int, ...]:
        """Ids of one run of raw text without white space or added tokens."""
        ids: list[int] = []
        for word in self._words(run):
            ids.extend(self._word_pieces(word))
        return tuple(ids)

    def _words(self, run: str) -> list[str]:
        """The normalized, pre-tokenized words of a run."""
        if self.clean_text and run.isascii():
            # Fast path: no CJK, no accents to strip, ASCII lowercase; once the control
            # characters are gone every printable non-alphanumeric is ASCII punctuation.
            run = run.translate(self._ascii_clean)
            return self._ascii_words.findall(run.lower() if self.lowercase else run)
        return self._split_words(self._normalize(run))

    def _normalize(self, run: str) -> str:
        out = []
        for ch in run:
            code = ord(ch)
            if self.clean_text:
                if ch in _OTHER and ch not in "\t\n\r":
                    continue
                if ch in _WHITE_SPACE:
                    ch = " "
            if self.chinese_chars and _is_cjk(code):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        text = "".join(out)
        if self.strip_accents:
            text = "".join(c for c in _nfd(text) if c not in _MN)
        if self.lowercase:
            # One character at a time, as Rust's char::to_lowercase: str.lower would apply
            # the final-sigma rule ("ΟΔΟΣ" -> "οδος"), tokenizers does not ("οδοσ").
            text = "".join(_lower(c) for c in text)
        return text

    @staticmethod
    def _split_words(text: str) -> list[str]:
        words: list[str] = []
        current: list[str] = []
        for ch in text:
            if ch in _WHITE_SPACE:
                if current:
                    words.append("".join(current))
                    current = []
            elif ch in _PUNCT:
                if current:
                    words.append("".join(current))
                    current = []
                words.append(ch)
            else:
                current.append(ch)
        if current:
            words.append("".join(current))
        return words

    def _word_pieces(self, word: str) -> list[int]:
        """Greedy longest-match-first pieces of one word; the unknown id if it has none."""
        n = len(word)
        if n > self.max_word_chars:
            return [self.unk_id]
        vocab, prefix, longest = self.vocab, self.prefix, self._longest
        pieces: list[int] = []
        start = 0
        while start < n:
            end = min(n, start + longest)
            while end > start:
                piece = word[start:end] if start == 0 else prefix + word[start:end]
                found = vocab.get(piece)
                if found is not None:
                    pieces.append(found)
                    break
                end -= 1
            else:
                return [self.unk_id]
            start = end
        return pieces


def _cls_sep(post: Any, refuse: Any) -> tuple[int, int]:
    """The ids of (cls, sep) of a ``[CLS] $A [SEP]`` post-processor."""
    if isinstance(post, dict) and post.get("type") == "BertProcessing":
        return int(post["cls"][1]), int(post["sep"][1])
    if isinstance(post, dict) and post.get("type") == "TemplateProcessing":
        single = post["single"]
        shape = [next(iter(item)) for item in single]
        if (
            shape == ["SpecialToken", "Sequence", "SpecialToken"]
            and single[1]["Sequence"]["id"] == "A"
        ):
            specials = post["special_tokens"]
            first, last = single[0]["SpecialToken"]["id"], single[2]["SpecialToken"]["id"]
            if all(len(specials[t]["ids"]) == 1 for t in (first, last)):
                return int(specials[first]["ids"][0]), int(specials[last]["ids"][0])
    raise refuse("post_processor", post)
