"""BM25's text analysis: the tokenizer, stop words and stemmer (bm25s' English defaults).

``engine.sparse.index``'s docstring ("Tokenization") describes the choices; the
postings (``engine.sparse.postings``) and the per-kind tokenizers read text through
:func:`analyze`.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import Stemmer

__all__ = [
    "STEMMER_LANGUAGE",
    "STOPWORDS_EN",
    "TOKEN_PATTERN",
    "SparseQuery",
    "WeightedTerms",
    "analyze",
    "has_words",
    "query_weights",
    "query_words",
    "stem_words",
]

#: Words of at least two word characters (scikit-learn's and bm25s' default pattern).
TOKEN_PATTERN = r"(?u)\b\w\w+\b"
#: bm25s' English stop words (``bm25s.stopwords.STOPWORDS_EN``, Lucene's list; tested equal).
STOPWORDS_EN = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
STEMMER_LANGUAGE = "english"

_WORDS = re.compile(TOKEN_PATTERN)
_STEMS: dict[str, str] = {}
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    """This thread's stemmer (a PyStemmer object must not be shared between threads)."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer(STEMMER_LANGUAGE)
    return stemmer


def query_words(text: str) -> list[str]:
    """The words of ``text`` that BM25 reads: lower-cased ``TOKEN_PATTERN`` matches that are
    not stop words, in order, repeats kept (not stemmed)."""
    return [w for w in _WORDS.findall(text.lower()) if w not in STOPWORDS_EN]


def stem_words(words: Sequence[str]) -> list[str]:
    """The Snowball stems of ``words`` (memoized), in order."""
    stems = _STEMS
    missing = [w for w in dict.fromkeys(words) if w not in stems]
    if missing:
        stems.update(zip(missing, _stemmer().stemWords(missing), strict=True))
    return [stems[w] for w in words]


def analyze(text: str) -> list[str]:
    """The BM25 terms of ``text``, in order (see the module docstring, "Tokenization").

    Parameters
    ----------
    text:
        Any text.

    Returns
    -------
    list of str
        Stems of the words that are not stop words, repeats kept.
    """
    return stem_words(query_words(text))


@dataclass(frozen=True)
class WeightedTerms:
    """A BM25 query given as analyzed terms and their weights: a term adds its weight times
    its idf times its saturated tf. A query text is the case where each term weighs its
    number of occurrences (``query_weights``); ``hybrid``'s feedback round adds a few terms
    of the best candidate at a fraction of a question word (``FusionConfig.feedback_terms``).

    Parameters
    ----------
    weights:
        ``(term, weight)`` pairs: terms as :func:`analyze` gives them (stems), distinct,
        weights finite and positive.
    """

    weights: tuple[tuple[str, float], ...]

    def __post_init__(self) -> None:
        terms = [t for t, _ in self.weights]
        if len(set(terms)) != len(terms):
            raise ValueError("WeightedTerms: a term is given twice")
        bad = [(t, w) for t, w in self.weights if not (math.isfinite(w) and w > 0.0)]
        if bad:
            raise ValueError(f"WeightedTerms: weights must be finite and positive, got {bad[0]}")

    @classmethod
    def of(cls, text: str) -> WeightedTerms:
        """The terms of ``text``, each weighing its occurrences: what a text query scores as,
        analyzed once for a search that queries several kinds or scores several times."""
        return cls(tuple(query_weights(text).items()))

    @classmethod
    def expanded(
        cls, base: str | Mapping[str, float], extra: Sequence[str], weight: float
    ) -> WeightedTerms:
        """The terms of ``base`` (a text, each term weighing its occurrences, or its
        ``query_weights`` already read) and the terms ``extra`` not among them, each weighing
        ``weight``."""
        counts = query_weights(base) if isinstance(base, str) else dict(base)
        more = [(t, float(weight)) for t in dict.fromkeys(extra) if t not in counts]
        return cls(tuple(counts.items()) + tuple(more))


#: What BM25 searches take: a text, or terms with weights.
SparseQuery = str | WeightedTerms


def query_weights(query: SparseQuery) -> dict[str, float]:
    """Each distinct analyzed term of ``query`` and its weight, in order of first occurrence:
    a text's terms weigh their number of occurrences (as in ``bm25s``); ``WeightedTerms``
    give their own."""
    if isinstance(query, WeightedTerms):
        return dict(query.weights)
    return {t: float(n) for t, n in Counter(analyze(query)).items()}


def has_words(query: SparseQuery) -> bool:
    """Whether ``query`` holds a word BM25 reads (a text: one that is not a stop word)."""
    return bool(query.weights) if isinstance(query, WeightedTerms) else bool(query_words(query))
