"""The built-in ``extractive`` LLM backend: no model, CPU only, deterministic.

It does every LLM task of the engine by selecting and recombining sentences of its inputs:

* ``summarize``: the most central sentences of the segment (LexRank-style degree centrality
  over TF-IDF sentence vectors) within the token limit, in their original order;
* ``decompose``: rule-based semantic units (groups of sentences), entities (capitalized
  phrases, acronyms, numbers and dates) and relationships (entity pairs in one sentence with
  the words between them);
* ``attribute``, ``community``: central sentences about the entity / the community, with a
  title made of its most frequent names;
* ``query_entities``: the same entity rules on the question;
* ``answer``: the context sentence that best overlaps the question.

Token counts are reported like a real LLM's ``usage`` (cl100k_base over prompt and answer), so
cost comparisons between operations hold for any backend.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence

from graphstrata.engine.interfaces import LLMError, LLMRequest, LLMResponse
from graphstrata.engine.tokens import count_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ0-9][A-Za-zÀ-ÖØ-öø-ÿ0-9'\-]*")
_STOP = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "than", "then", "there", "here", "into", "onto", "over", "under", "after", "before", "during", "between", "among", "about", "above", "below", "up", "down", "out", "off", "again", "further", "once", "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "too", "very", "can", "will", "just", "should", "now", "also", "has", "have", "had", "do", "does", "did", "their", "they", "them", "he", "she", "his", "her", "we", "our", "you", "your", "i", "me", "my", "mine", "us"]
)
# Capitalized words that start sentences or questions but are not names.
_NOT_NAMES = frozenset(
    ["The", "A", "An", "In", "On", "At", "By", "For", "From", "With", "As", "It", "Its", "This", "That", "These", "Those", "There", "Here", "When", "Where", "Why", "How", "What", "Which", "Who", "Whom", "Whose", "If", "But", "And", "Or", "Yet", "So", "After", "Before", "During", "Since", "Until", "While", "Although", "Though", "Because", "However", "Meanwhile", "Today", "Yesterday", "Tomorrow", "Each", "Every", "Some", "Many", "Most", "Several", "Both", "Neither", "Either", "Another", "Other", "Such", "Its", "Their", "His", "Her", "Our", "Your", "We", "They", "He", "She", "I", "You", "Is", "Are", "Was", "Were", "Do", "Does", "Did", "Has", "Have", "Had", "Can", "Could", "Should", "Would", "Will", "Shall", "May", "Might", "Must", "Not", "No", "Yes", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "First", "Second", "Third", "Last", "Next", "Also", "Still", "Then", "Thus", "Even", "Only", "Just", "Over", "Under", "According", "Despite", "Among", "Between", "Within", "Without", "Into", "Upon"]
)
_CAP_WORD = r"(?:[A-Z][\w'’\-]*\.?|[A-Z]{2,}\d*)"
_CONNECT = r"(?:of|the|de|van|von|der|du|la|le|and|&|for|on)"
_NAME = re.compile(rf"{_CAP_WORD}(?:\s+(?:{_CONNECT}\s+)*{_CAP_WORD})*")
_NUMBER = re.compile(
    r"\b(?:\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s?(?:%|percent|km|m|kg|tonnes|million|billion|crowns|dollars|euros|metres|meters|years))?\b"
)
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+{_MONTH}\s+\d{{4}}|{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}|{_MONTH}\s+\d{{4}})\b"
)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (regex splitter; good enough for prose)."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=#)|\n(?=[-*] )", text):
        block = " ".join(block.split())
        if not block:
            continue
        out.extend(s.strip() for s in _SENTENCE_END.split(block) if s.strip())
    return out


def _terms(sentence: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(sentence) if w.lower() not in _STOP and len(w) > 1]


def central_sentences(
    sentences: Sequence[str], max_tokens: int, focus: Sequence[str] = ()
) -> list[str]:
    """The most central sentences that fit in ``max_tokens``, in original order.

    Centrality is the sum of TF-IDF cosine similarities to the other sentences (degree
    LexRank), plus a bonus for sentences that mention a ``focus`` term.
    """
    if not sentences:
        return []
    bags = [Counter(_terms(s)) for s in sentences]
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    n = len(sentences)
    vecs = []
    for bag in bags:
        vec = {t: c * math.log(1.0 + n / df[t]) for t, c in bag.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        vecs.append({t: v / norm for t, v in vec.items()})
    focus_terms = {t for f in focus for t in _terms(f)}
    scores = []
    for i, vi in enumerate(vecs):
        score = 0.0
        for j, vj in enumerate(vecs):
            if i != j:
                small, large = (vi, vj) if len(vi) < len(vj) else (vj, vi)
                score += sum(v * large.get(t, 0.0) for t, v in small.items())
        if focus_terms:
            score += 2.0 * len(focus_terms & set(vi)) / max(len(focus_terms), 1)
        scores.append(score)
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    used = 0
    for i in order:
        t = count_tokens(sentences[i])
        if used + t <= max_tokens:
            chosen.append(i)
            used += t
        if used >= max_tokens:
            break
    if not chosen:  # the best sentence alone is too long: cut it to the limit
        words = sentences[order[0]].split()
        text = ""
        for w in words:
            if count_tokens(f"{text} {w}") > max_tokens:
                break
            text = f"{text} {w}".strip()
        return [text] if text else []
    return [sentences[i] for i in sorted(chosen)]


def extract_entities(sentence: str) -> list[str]:
    """Capitalized phrases, acronyms, dates and numbers of one sentence, in order, unique."""
    found: list[tuple[int, str]] = []
    for m in _DATE.finditer(sentence):
        found.append((m.start(), m.group(0)))
    for m in _NAME.finditer(sentence):
        phrase = m.group(0).strip().rstrip(".")
        words = phrase.split()
        while words and (words[0] in _NOT_NAMES or words[0].lower() in _STOP):
            words = words[1:]
        while words and words[-1].lower() in _STOP:
            words = words[:-1]
        phrase = " ".join(words)
        if not phrase or (len(phrase) < 2) or phrase in _NOT_NAMES:
            continue
        found.append((m.start(), phrase))
    for m in _NUMBER.finditer(sentence):
        value = m.group(0)
        if any(value in f for _, f in found):
            continue
        found.append((m.start(), value))
    seen: set[str] = set()
    out = []
    for _, phrase in sorted(found):
        key = phrase.lower()
        if key not in seen:
            seen.add(key)
            out.append(phrase)
    return out


def decompose(text: str, sentences_per_unit: int = 2) -> dict[str, list[dict[str, object]]]:
    """Rule-based NodeRAG decomposition of one chunk."""
    sentences = split_sentences(text)
    units = []
    for start in range(0, len(sentences), sentences_per_unit):
        group = sentences[start : start + sentences_per_unit]
        entities: list[str] = []
        relationships: list[list[str]] = []
        for sentence in group:
            ents = extract_entities(sentence)
            for e in ents:
                if e not in entities:
                    entities.append(e)
            relationships.extend(_relations(sentence, ents))
        units.append(
            {"text": " ".join(group), "entities": entities, "relationships": relationships}
        )
    return {"semantic_units": units}


def _relations(sentence: str, entities: Sequence[str], max_words: int = 8) -> list[list[str]]:
    """Consecutive entity pairs of a sentence, related by the words between them."""
    positions = []
    for e in entities:
        idx = sentence.find(e)
        if idx >= 0:
            positions.append((idx, e))
    positions.sort()
    rels = []
    for (i, a), (j, b) in zip(positions, positions[1:], strict=False):
        between = sentence[i + len(a) : j].strip(" ,;:()")
        words = between.split()
        if not words or len(words) > max_words:
            continue
        rels.append([a, " ".join(words), b])
    return rels


def _title(texts: Sequence[str], n: int = 3) -> str:
    counts: Counter[str] = Counter()
    for t in texts:
        for e in extract_entities(t):
            if not e[0].isdigit():
                counts[e] += 1
    names = [name for name, _ in counts.most_common(n)]
    if names:
        return ", ".join(names)
    terms: Counter[str] = Counter(w for t in texts for w in _terms(t))
    return " ".join(w for w, _ in terms.most_common(n)) or "untitled"


class ExtractiveLLM:
    """Deterministic CPU backend that satisfies the ``LLM`` interface without a model."""

    def __init__(self, sentences_per_unit: int = 2):
        self.sentences_per_unit = sentences_per_unit

    @property
    def name(self) -> str:
        return "extractive"

    def complete(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        return [self._one(r) for r in requests]

    def _one(self, request: LLMRequest) -> LLMResponse:
        handler = getattr(self, f"_task_{request.task}", None)
        if handler is None:
            raise LLMError(f"extractive backend cannot do task {request.task!r}")
        text = handler(request)
        return LLMResponse(
            text=text,
            prompt_tokens=count_tokens(request.prompt),
            completion_tokens=count_tokens(text),
        )

    def _task_summarize(self, request: LLMRequest) -> str:
        sentences = [s for t in request.inputs for s in split_sentences(t)]
        return " ".join(central_sentences(sentences, request.max_tokens))

    def _task_decompose(self, request: LLMRequest) -> str:
        return json.dumps(decompose(request.inputs[0], self.sentences_per_unit), ensure_ascii=False)

    def _task_attribute(self, request: LLMRequest) -> str:
        entity, *rest = request.inputs
        sentences = [s for t in rest for s in split_sentences(t)]
        body = " ".join(
            central_sentences(sentences, max(request.max_tokens - 8, 8), focus=[entity])
        )
        return f"{entity}: {body}".strip()

    def _task_community(self, request: LLMRequest) -> str:
        sentences = [s for t in request.inputs for s in split_sentences(t)]
        description = " ".join(central_sentences(sentences, max(request.max_tokens - 32, 16)))
        element = {"title": _title(request.inputs), "description": description}
        return json.dumps({"high_level_elements": [element]}, ensure_ascii=False)

    def _task_query_entities(self, request: LLMRequest) -> str:
        return json.dumps({"entities": extract_entities(request.inputs[0])}, ensure_ascii=False)

    def _task_answer(self, request: LLMRequest) -> str:
        question, context = request.inputs
        q_terms = set(_terms(question))
        best, best_score = "", 0.0
        for line in context.splitlines():
            line = re.sub(r"^\s*-\s*", "", line)
            line = re.sub(r"\s*\[[^\]]*\]\s*$", "", line)
            for sentence in split_sentences(line):
                terms = set(_terms(sentence))
                score = len(q_terms & terms) / math.sqrt(len(terms) + 1)
                if score > best_score:
                    best, best_score = sentence, score
        return best if best else "Insufficient information."
