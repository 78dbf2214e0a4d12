"""BM25's text analysis: the tokenizer, stop words and stemmer (bm25s' English defaults).

``engine.sparse.index``'s docstring ("Tokenization") describes the choices; the
postings (``engine.sparse.postings``) and the per-kind tokenizers read text through
:func:`analyze`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

import Stemmer

__all__ = [
    "STEMMER_LANGUAGE",
    "STOPWORDS_EN",
    "TOKEN_PATTERN",
    "analyze",
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
