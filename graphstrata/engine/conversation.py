"""The search query of a conversation: the last user message, completed from the earlier
user turns (decision 0026).

A follow-up such as "Where did he work before that?" names nothing the index can find: its
subject is in an earlier turn. :func:`conversation_query` keeps the last user message as it
is and appends terms of the earlier user messages that it does not already hold, newest turn
first: all their content words when the last message names nothing itself, else only their
names (capitalised words that do not open a sentence, so "Tomas Veld", "Meridian Optics",
not "Who"), acronyms and numbers, so that a new topic is not pulled back to the old one. No
LLM is called, and the same conversation always gives the same query. The assistant's turns
are not read: their text is the previous retrieval again, and it pulled a new topic back to
the previous answer's documents (``python -m benchmarks.quality.followups``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from graphstrata.engine.sparse.analysis import STOPWORDS_EN

#: A word: letters (any script), digits, inner apostrophes and hyphens.
_WORD = re.compile(r"\w+(?:['’-]\w+)*")
#: What ends a sentence (the next word opens one and its capital says nothing).
_SENTENCE_ENDS = ".!?:;"
#: Most earlier turns read (the newest ones).
MAX_TURNS = 4
#: Words that carry no subject of a question: BM25's stop words, question words, pronouns,
#: auxiliaries and the phrasing of a request ("tell me about").
FILLER = STOPWORDS_EN | frozenset(
    [
        "who",
        "whom",
        "whose",
        "what",
        "which",
        "when",
        "where",
        "why",
        "how",
        "did",
        "does",
        "do",
        "done",
        "has",
        "have",
        "had",
        "been",
        "being",
        "were",
        "am",
        "can",
        "could",
        "would",
        "should",
        "may",
        "might",
        "must",
        "shall",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "its",
        "it's",
        "them",
        "those",
        "from",
        "about",
        "tell",
        "know",
        "please",
        "also",
        "than",
        "so",
        "any",
        "some",
        "much",
        "many",
        "more",
        "most",
        "other",
        "else",
    ]
)


def salient_terms(text: str) -> list[str]:
    """The names, acronyms and numbers of ``text``, in order, each once.

    A word counts when it holds a digit, or starts with a capital and does not open a
    sentence (the first word, or one after ``.!?:;``), and is not a stop word.

    Parameters
    ----------
    text:
        A user message.

    Returns
    -------
    list of str
        The terms as written.
    """
    out: list[str] = []
    seen: set[str] = set()
    for match in _WORD.finditer(text):
        word = match.group(0)
        before = text[: match.start()].rstrip(" \t\n\"'“‘(")
        opens = not before or before[-1] in _SENTENCE_ENDS
        named = word[0].isupper() and not opens
        if (named or any(c.isdigit() for c in word)) and word.lower() not in FILLER:
            key = word.lower()
            if key not in seen:
                seen.add(key)
                out.append(word)
    return out


def content_words(text: str) -> list[str]:
    """The words of ``text`` that are not :data:`FILLER`, in order, each once."""
    out: list[str] = []
    seen: set[str] = set()
    for word in _WORD.findall(text):
        key = word.lower()
        if key not in FILLER and len(key) > 1 and key not in seen:
            seen.add(key)
            out.append(word)
    return out


def conversation_query(
    question: str, history: Sequence[tuple[str, str]], max_chars: int | None = None
) -> str:
    """The search query of a chat: ``question`` completed from the earlier user turns.

    A question that names nothing itself ("Where did he work before that?") gets the content
    words of the earlier user messages; one that names something ("Who founded Meridian
    Optics?") only their names, acronyms and numbers (:func:`salient_terms`), so a change of
    topic is not pulled back to the previous one. Terms it already holds are not repeated.

    Parameters
    ----------
    question:
        The last user message.
    history:
        The earlier ``(role, content)`` turns, oldest first (only ``user`` turns are read,
        the newest :data:`MAX_TURNS` of them, newest first).
    max_chars:
        The query's length limit: terms are appended only while they fit (the question
        itself is never cut here).

    Returns
    -------
    str
        ``question`` when nothing is to be added, else ``"question term term ..."``.
    """
    have = {w.lower() for w in _WORD.findall(question)}
    pick = salient_terms if salient_terms(question) else content_words
    users = [content for role, content in history if role == "user"][-MAX_TURNS:]
    query = question
    for turn in reversed(users):
        for term in pick(turn):
            if term.lower() in have:
                continue
            longer = f"{query} {term}"
            if max_chars is not None and len(longer) > max_chars:
                return query
            have.add(term.lower())
            query = longer
    return query
