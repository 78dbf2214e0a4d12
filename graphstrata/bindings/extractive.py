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

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Sequence

from graphstrata.engine.interfaces import LLMError, LLMRequest, LLMResponse
from graphstrata.engine.tokens import count_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[“‘]?[A-Z0-9])")
_HEADING_MARK = re.compile(r"^#{1,6}\s*")
# A period after these does not end a sentence ("Dr. Lindqvist", "J. Smith", "the U.S. Army").
_ABBREVIATION_END = re.compile(
    r"(?:^|[\s(])(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr|St|Mt|Ft|Gen|Col|Lt|Capt|Sgt|Cmdr|Adm|Gov|Sen"
    r"|Rep|Pres|Rev|Hon|Inc|Co|Corp|Ltd|Bros|No|Nos|Vol|vs|approx|est|dept|Univ|Jan|Feb|Mar"
    r"|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|[A-Z]|(?:[A-Za-z]\.)+[A-Za-z])\.$"
)
_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ0-9][A-Za-zÀ-ÖØ-öø-ÿ0-9'\-]*")
# fmt: off
_STOP = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "which", "who", "whom", "whose", "what", "when", "where", "why", "how", "than", "then", "there", "here", "into", "onto", "over", "under", "after", "before", "during", "between", "among", "about", "above", "below", "up", "down", "out", "off", "again", "further", "once", "all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "too", "very", "can", "will", "just", "should", "now", "also", "has", "have", "had", "do", "does", "did", "their", "they", "them", "he", "she", "his", "her", "we", "our", "you", "your", "i", "me", "my", "mine", "us"]
)
# Capitalized words that start sentences or questions but are not names.
_NOT_NAMES = frozenset(
    ["The", "A", "An", "In", "On", "At", "By", "For", "From", "With", "As", "It", "Its", "This", "That", "These", "Those", "There", "Here", "When", "Where", "Why", "How", "What", "Which", "Who", "Whom", "Whose", "If", "But", "And", "Or", "Yet", "So", "After", "Before", "During", "Since", "Until", "While", "Although", "Though", "Because", "However", "Meanwhile", "Today", "Yesterday", "Tomorrow", "Each", "Every", "Some", "Many", "Most", "Several", "Both", "Neither", "Either", "Another", "Other", "Such", "Its", "Their", "His", "Her", "Our", "Your", "We", "They", "He", "She", "I", "You", "Is", "Are", "Was", "Were", "Do", "Does", "Did", "Has", "Have", "Had", "Can", "Could", "Should", "Would", "Will", "Shall", "May", "Might", "Must", "Not", "No", "Yes", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "First", "Second", "Third", "Last", "Next", "Also", "Still", "Then", "Thus", "Even", "Only", "Just", "Over", "Under", "According", "Despite", "Among", "Between", "Within", "Without", "Into", "Upon"]
)
# Words that look like names at the start of a phrase but are titles, not part of the name.
_TITLES = frozenset(
    ["Dr", "Dr.", "Mr", "Mr.", "Mrs", "Mrs.", "Ms", "Ms.", "Prof", "Prof.", "Sir", "Dame", "Lord", "Lady", "Rev", "Rev."]
)
# Capitalized words that are never an entity on their own (a date needs its day or year).
_SINGLE_NOT_NAMES = frozenset(
    ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Mr", "Mrs", "Ms", "Dr", "Prof", "Sir", "Lord", "Lady", "Co", "Inc", "Ltd", "Corp", "Read", "More", "Click", "Photo", "Image", "Source", "Getty", "Images", "Advertisement", "Subscribe", "Related", "Share", "Updated"]
)
# Names that take an "of" / "for" complement ("University of Oslo", "Institute for Climate
# Research"); after any other word the connector separates two names ("Halvorsen of the
# Sundra Institute").
_HEADS = frozenset(
    ["University", "Universities", "College", "School", "Academy", "Institute", "Institution", "Center", "Centre", "Museum", "Library", "Bank", "Department", "Ministry", "Secretary", "Minister", "Office", "Bureau", "Agency", "Authority", "Board", "Council", "Commission", "Committee", "Court", "Republic", "Kingdom", "Empire", "State", "States", "Province", "City", "County", "District", "Isle", "Isles", "Island", "Islands", "Gulf", "Sea", "Bay", "Lake", "Cape", "Mount", "Strait", "Port", "Fort", "Battle", "Treaty", "Order", "Church", "Cathedral", "House", "Hall", "Duke", "Duchess", "Prince", "Princess", "King", "Queen", "Earl", "Count", "Lord", "Lady", "Society", "Association", "Federation", "Union", "League", "Alliance", "Party", "Army", "Navy", "Corps", "Company", "Corporation", "Foundation", "Fund", "Festival", "Conference", "Congress", "Parliament", "Assembly", "Journal", "Times", "Book", "Books", "Lord", "Statue", "Tower", "Bridge", "Palace", "Castle", "Temple", "Campaign", "Coalition", "Network", "Organization", "Organisation", "Chamber", "Station", "Survey", "Laboratory", "Laboratories", "Hospital", "Orchestra", "Symphony", "Order", "Game", "Games", "Cup", "Championship", "Championships", "Tournament", "Festival", "Day", "Year", "Age", "War", "Wars", "Revolution", "Declaration", "Act", "Code", "Law", "Bill", "Charter", "Convention", "Protocol", "Rights", "Band", "Tales", "Legend", "Lord", "Master", "Masters", "Doctor", "Professor", "Chief", "Head", "Director", "President", "Governor", "Mayor", "Director", "Commissioner", "Chancellor"]
)
# fmt: on
_CAP_WORD = r"(?:[A-Z][\w'’\-]*\.?|[A-Z]{2,}\d*)"
# "of" (optionally "of the"), "for", "&" and nobiliary particles join capitalized words into
# one name ("Bank of the West", "Institute for Climate Research", "Ludwig van Beethoven");
# "and", "on" and a bare "the" do not ("Varde and the Lake Sundra" are two names).
_CONNECT = r"(?:of(?:\s+the)?|for|de|van|von|der|du|la|le|&)"
_NAME = re.compile(rf"{_CAP_WORD}(?:\s+(?:{_CONNECT}\s+)?{_CAP_WORD})*")
_UNIT = (
    r"%|percent|per cent|km|m|cm|mm|kg|g|t|tonnes|tons|mph|km/h|million|billion|trillion|crowns"
    r"|dollars|euros|pounds|metres|meters|miles|feet|years|months|days|hours|minutes|points"
    r"|yards|games|people|users|employees|seats|votes"
)
_NUMBER = re.compile(
    rf"(?:[$€£¥]\s?)?\b(?:\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)?)(?:\s?(?:{_UNIT}))?\b(?:\s?%)?"
)
_YEAR = re.compile(r"^(?:1[0-9]|20)\d\d$")
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?"
)
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}\s+{_MONTH}\s+\d{{4}}|{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}|{_MONTH}\s+\d{{4}})\b"
)
_POSSESSIVE = re.compile(r"['’]s?$")
_LINE_END_PUNCT = re.compile(r"[.!?:;\"”')\]]$")
_LINE_START_NEW = re.compile(r"^[\"“'(\[]?[A-Z0-9#*•-]")


def _paragraphs(text: str) -> list[str]:
    """Blocks of ``text``: blank lines, headings and bullets always break; a single line
    break also does after a punctuated or short line when the next line starts anew (news
    and wiki dumps put one paragraph per line; hard-wrapped prose continues in lower case)."""
    blocks: list[list[str]] = [[]]
    prev = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            blocks.append([])
            prev = ""
            continue
        starts_new = line.startswith("#") or line[:2] in ("- ", "* ", "• ")
        ends_prev = bool(prev) and (_LINE_END_PUNCT.search(prev) or len(prev) < 60)
        if blocks[-1] and (starts_new or (ends_prev and _LINE_START_NEW.match(line))):
            blocks.append([])
        blocks[-1].append(line)
        prev = line
    return [" ".join(b) for b in blocks if b]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (regex splitter; good enough for prose).

    A period after a title, an initial or a common abbreviation ("Dr.", "J.", "U.S.") does
    not end a sentence; markdown heading marks are dropped.
    """
    out: list[str] = []
    for block in _paragraphs(text):
        block = _HEADING_MARK.sub("", " ".join(block.split()))
        if not block:
            continue
        merged: list[str] = []
        for piece in _SENTENCE_END.split(block):
            piece = piece.strip()
            if not piece:
                continue
            if merged and _ABBREVIATION_END.search(merged[-1]):
                merged[-1] = f"{merged[-1]} {piece}"
            else:
                merged.append(piece)
        out.extend(merged)
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


def _clean_name(phrase: str) -> str:
    """Trim leading sentence words and titles, trailing stop words and a possessive."""
    words = phrase.strip().rstrip(".").split()
    while words and (words[0] in _NOT_NAMES or words[0] in _TITLES or words[0].lower() in _STOP):
        words = words[1:]
    while words and words[-1].lower() in _STOP:
        words = words[:-1]
    if words:
        words[-1] = _POSSESSIVE.sub("", words[-1])
    return " ".join(w for w in words if w)


def _split_connectors(phrase: str) -> list[str]:
    """Split a matched name at "of" / "for" unless the word before takes a complement."""
    words = phrase.split()
    parts: list[list[str]] = [[]]
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("of", "for") and parts[-1] and parts[-1][-1].rstrip(".,") not in _HEADS:
            i += 2 if i + 1 < len(words) and words[i + 1] == "the" else 1
            parts.append([])
            continue
        parts[-1].append(word)
        i += 1
    return [" ".join(p) for p in parts if p]


def _keep_number(value: str) -> bool:
    """Quantities with a unit or currency, large numbers and years are entities; bare small
    numbers ("28", "00") only add hubs that join unrelated facts."""
    digits = value.strip()
    if not digits[0].isdigit() or not digits[-1].isdigit():
        return True  # currency prefix, unit or percent sign
    return "," in digits or bool(_YEAR.match(digits))


def _entity_spans(
    sentence: str, lower_words: frozenset[str] | None = None
) -> list[tuple[int, int, str]]:
    """Every entity occurrence of a sentence as ``(start, end, phrase)``, by position."""
    found: list[tuple[int, int, str]] = []
    for m in _DATE.finditer(sentence):
        found.append((m.start(), m.end(), m.group(0)))

    def overlaps(start: int, end: int) -> bool:
        return any(start < e and s < end for s, e, _ in found)

    for m in _NAME.finditer(sentence):
        if overlaps(m.start(), m.end()):
            continue
        offset = m.start()
        for part in _split_connectors(m.group(0)):
            phrase = _clean_name(part)
            start = sentence.find(phrase, offset) if phrase else -1
            if start < 0 or len(phrase) < 2 or phrase in _NOT_NAMES or phrase in _SINGLE_NOT_NAMES:
                continue
            offset = start + len(phrase)
            if (
                lower_words is not None
                and " " not in phrase
                and not sentence[:start].strip("\"'“‘( ")
                and phrase.lower() in lower_words
            ):
                continue
            found.append((start, start + len(phrase), phrase))
    for m in _NUMBER.finditer(sentence):
        value = m.group(0).strip()
        if overlaps(m.start(), m.end()) or not _keep_number(value):
            continue
        found.append((m.start(), m.end(), value))
    return sorted(found)


def extract_entities(sentence: str, lower_words: frozenset[str] | None = None) -> list[str]:
    """Capitalized phrases, acronyms, dates and quantities of one sentence, in order, unique.

    Parameters
    ----------
    sentence:
        One sentence.
    lower_words:
        Optional words seen in lower case in the surrounding text: a single capitalized word
        that opens the sentence and occurs there in lower case ("Logs were floated ...") is
        an ordinary word, not a name.
    """
    seen: set[str] = set()
    out = []
    for _, _, phrase in _entity_spans(sentence, lower_words):
        key = phrase.lower()
        if key not in seen:
            seen.add(key)
            out.append(phrase)
    return out


def decompose(text: str, sentences_per_unit: int = 2) -> dict[str, list[dict[str, object]]]:
    """Rule-based NodeRAG decomposition of one chunk.

    Groups of ``sentences_per_unit`` sentences are the semantic units; their entities are
    the names, dates and quantities of :func:`extract_entities`; their relationships link
    consecutive entities of one sentence by the words between them.
    """
    sentences = split_sentences(text)
    lower_words = frozenset(w for w in _WORD.findall(text) if w.islower())
    units = []
    for start in range(0, len(sentences), sentences_per_unit):
        group = sentences[start : start + sentences_per_unit]
        entities: list[str] = []
        relationships: list[list[str]] = []
        for sentence in group:
            spans = _entity_spans(sentence, lower_words)
            for _, _, e in spans:
                if e not in entities:
                    entities.append(e)
            relationships.extend(_relations(sentence, spans))
        units.append(
            {"text": " ".join(group), "entities": entities, "relationships": relationships}
        )
    return {"semantic_units": units}


# Words between two entities that say nothing about how they relate ("A and B", "A, B").
_CLAUSE_MARK = re.compile(r"[|?!:;()\[\]]")
_NO_RELATION = frozenset(
    ["and", "or", "&", "as", "well", "also", "with", "nor", "the", "a", "an", "-"]
)


def _relations(
    sentence: str, spans: Sequence[tuple[int, int, str]], max_words: int = 8
) -> list[list[str]]:
    """Consecutive entity occurrences of a sentence, related by the words between them.

    A pair is skipped when the words between cross a clause mark (``| ? ! : ; ( )``), are
    more than ``max_words``, or say nothing ("A and B").
    """
    rels = []
    for (_, end_a, a), (start_b, _, b) in itertools.pairwise(spans):
        if a.lower() == b.lower():
            continue
        between = sentence[end_a:start_b]
        if _CLAUSE_MARK.search(between):
            continue
        between = between.strip(" ,'’\"“”")
        if between.lower().startswith("s "):  # the rest of a possessive: "Google's deal with"
            between = between[2:]
        words = between.split()
        if not words or len(words) > max_words:
            continue
        if all(w.lower().strip(",") in _NO_RELATION for w in words):
            continue
        rels.append([a, " ".join(words), b])
    return rels


def _title(texts: Sequence[str], n: int = 3) -> str:
    """A keyword title: the most frequent names of ``texts`` (else their most frequent terms)."""
    counts: Counter[str] = Counter()
    for t in texts:
        for sentence in split_sentences(t):
            for e in extract_entities(sentence):
                if not e[0].isdigit() and e[0] not in "$€£¥":
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
