"""Which sentences a semantic unit of the extractive backend may hold (decision 0034).

A document's headings, list labels and table rows are sentences to the splitter
(``extractive.split_sentences``, which the summarizer reads whole), but a unit made of
"Performance status" or "| ICC | 0.82 |" states nothing a question can ask about and takes a
place in the graph's budget: ``extractive.decompose`` keeps the sentences that pass
:func:`is_statement`.
"""

from __future__ import annotations

import re

__all__ = [
    "MIN_LETTER_SHARE",
    "MIN_OPEN_WORDS",
    "MIN_STATEMENT_WORDS",
    "WORD",
    "cut_pieces",
    "is_statement",
]

#: A word of the extractive backend (letters, digits, inner apostrophes and hyphens).
WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ0-9][A-Za-zÀ-ÖØ-öø-ÿ0-9'\-]*")

#: A unit sentence has at least this many words; a sentence without final punctuation
#: (a heading, a list label, a table caption: "Performance status") at least
#: ``MIN_OPEN_WORDS``.
MIN_STATEMENT_WORDS = 4
MIN_OPEN_WORDS = 6
#: Share of a sentence's visible characters that are letters, below which it is a table row
#: or a formula, not a statement ("ICC | 0.82 | 0.74-0.88").
MIN_LETTER_SHARE = 0.6
_TABLE_CELL = re.compile(r"\|")
_FINAL_PUNCT = re.compile(r"[.!?:;\"”')\]]$")


def is_statement(sentence: str) -> bool:
    """Whether a sentence of ``extractive.split_sentences`` states something a semantic unit may
    hold: not a table row (two or more ``|`` cells, or mostly digits and signs), and at
    least ``MIN_STATEMENT_WORDS`` words, ``MIN_OPEN_WORDS`` when it lacks final punctuation
    (a heading or label)."""
    if len(_TABLE_CELL.findall(sentence)) >= 2:
        return False
    visible = [c for c in sentence if not c.isspace()]
    if not visible or sum(c.isalpha() for c in visible) < MIN_LETTER_SHARE * len(visible):
        return False
    words = len(WORD.findall(sentence))
    if words < MIN_STATEMENT_WORDS:
        return False
    return bool(_FINAL_PUNCT.search(sentence)) or words >= MIN_OPEN_WORDS


def cut_pieces(text: str, sentences: list[str]) -> set[int]:
    """Positions in ``sentences`` (``split_sentences(text)``) of the pieces that a chunk's
    token window cut out of a longer sentence.

    A chunk may open inside a sentence the previous chunk began (its first piece starts with
    a lower-case letter) and close inside one the next chunk finishes (its last piece lacks
    final punctuation and the text does not end at a line break): "The instrument was used
    mainly to". The chunk's own text keeps them; a unit made of one states half a fact.
    """
    out: set[int] = set()
    if not sentences:
        return out
    if sentences[0][:1].islower():
        out.add(0)
    last = len(sentences) - 1
    if not _FINAL_PUNCT.search(sentences[last]) and not text.endswith("\n"):
        out.add(last)
    return out
