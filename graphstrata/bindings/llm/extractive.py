"""The built-in ``extractive`` LLM backend: no model, CPU only, deterministic.

It does every LLM task of the engine by selecting and recombining sentences of its inputs:

* ``summarize``: the most central sentences of the segment (LexRank-style degree centrality
  over TF-IDF sentence vectors) within the token limit, in their original order;
* ``decompose``: rule-based semantic units (groups of sentences), entities (capitalized
  phrases, acronyms, numbers and dates) and relationships (entity pairs in one sentence with
  the words between them);
* ``attribute``, ``community``: central sentences about the entity / the community, with a
  title made of its most frequent names;
* ``query_entities``: the same entity rules on the question (``ENTITY_RULES``: the
  ``standard`` rules by default, ``refined`` as an option);
* ``answer``: the few context sentences that best answer the question (BM25 against its
  terms, not centrality), best first, each with its ``[n]`` marker in a numbered context,
  under a length limit (:func:`answer_sentences`).

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
from dataclasses import dataclass

from graphstrata.bindings.llm.statements import WORD as _WORD
from graphstrata.bindings.llm.statements import cut_pieces, is_statement
from graphstrata.core.bm25 import idf as bm25_idf
from graphstrata.engine import EXTRACTIVE_LLM, LLMError, LLMRequest, LLMResponse, count_tokens

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[“‘]?[A-Z0-9])")
_HEADING_MARK = re.compile(r"^#{1,6}\s*")
# A period after these does not end a sentence ("Dr. Lindqvist", "J. Smith", "the U.S. Army").
_ABBREVIATION_END = re.compile(
    r"(?:^|[\s(])(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sr|Jr|St|Mt|Ft|Gen|Col|Lt|Capt|Sgt|Cmdr|Adm|Gov|Sen"
    r"|Rep|Pres|Rev|Hon|Inc|Co|Corp|Ltd|Bros|No|Nos|Vol|vs|approx|est|dept|Univ|Jan|Feb|Mar"
    r"|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|[A-Z]|(?:[A-Za-z]\.)+[A-Za-z])\.$"
)
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


# fmt: off
# Words that open a sentence or a question but never start a name (adverbs, gerunds,
# prepositions and news boilerplate); the "refined" rules trim them like _NOT_NAMES.
_OPENERS = frozenset(
    ["Considering", "Following", "Regarding", "Including", "Concerning", "Given", "Based", "Compared", "Unlike", "Like", "Whether", "Besides", "Beyond", "Amid", "Amidst", "Against", "Along", "Around", "Across", "Through", "Throughout", "Toward", "Towards", "Via", "Per", "Ah", "Oh", "Well", "Now", "Please", "Note", "Indeed", "Instead", "Overall", "Finally", "Additionally", "Moreover", "Furthermore", "Notably", "Recently", "Previously", "Currently", "Initially", "Later", "Earlier", "Soon", "Often", "Sometimes", "Perhaps", "Maybe", "Actually", "Basically", "Clearly", "Obviously", "Certainly", "Really", "Together", "Elsewhere", "Nevertheless", "Nonetheless", "Otherwise", "Therefore", "Hence", "Accordingly", "Consequently", "Similarly", "Likewise", "Specifically", "Generally", "Typically", "Usually", "Ultimately", "Eventually", "Apparently", "Reportedly", "Fortunately", "Unfortunately", "Interestingly", "Importantly", "Surprisingly", "Thanks", "Sources", "Officials", "Experts", "Analysts", "Critics", "Fans", "Users", "Customers", "Investors", "Researchers", "Scientists", "People", "Watch", "Sign", "Follow", "Tickets", "Here's", "There's", "It's", "That's", "What's", "Let's", "Don't", "Isn't", "Doesn't", "Didn't", "Can't", "Won't", "Yes", "Okay", "OK", "Hey", "Wow", "Why", "Whatever", "Whoever", "Wherever", "Whenever", "Unless", "Once", "Except", "Nor", "Plus", "Still", "Already", "Never", "Always", "Again", "Almost", "Nearly", "About", "Above", "Below", "Behind", "Beside", "Near", "Off", "Out", "Up", "Down", "Back", "Meanwhile", "Speaking", "Asked", "Having", "Being", "Using", "Making", "Taking", "Getting", "Looking", "Going", "Coming", "Adding", "Saying", "Writing", "Starting", "Ending", "Beginning", "Although", "Despite", "Notwithstanding"]
)
# fmt: on
_CAMEL_WORD = r"(?<![\w'’\-])[a-z]{1,3}[A-Z][\w'’\-]*"  # iPhone, eBay, macOS, xAI
_CAP_WORD_V2 = rf"(?:{_CAMEL_WORD}|(?<![\w'’\-])[A-Z][\w'’\-]*\.?|(?<![\w'’\-])[A-Z]{{2,}}\d*)"
_NAME_V2 = re.compile(rf"{_CAP_WORD_V2}(?:\s+(?:{_CONNECT}\s+)?{_CAP_WORD_V2})*")
# An acronym followed by a number that is not a year names one thing ("BWV 1033").
_ACRONYM_NUMBER = re.compile(r"\b([A-Z]{2,5})\s+(\d{1,4})\b(?![.,:/\-–]\d)(?!\s?%)")
_MODERN_YEAR = re.compile(r"^(?:1[89]|20)\d\d$")
_INNER_POSSESSIVE = re.compile(r"(?<=\w)['’]s\s+(?=\S)")
_ISO_DATE = re.compile(r"\b(?:1[89]|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b")


@dataclass(frozen=True)
class EntityRules:
    """One set of the extractive backend's entity rules (``ENTITY_RULES``).

    Parameters
    ----------
    name:
        Its name (``ExtractiveLLM(entity_rules=name)``).
    keep_acronyms:
        An all-caps word of two or more letters is never trimmed as a stop word ("US",
        "IT", "AI").
    keep_trailing_capitals:
        A name keeps its capitalized last words even when they are stop words ("Pick Me
        Up"; only a final "I" is trimmed).
    trim_openers:
        Sentence-opening adverbs, gerunds and news boilerplate (``_OPENERS``) are not names
        and are trimmed from the front of one ("Following Apple" -> "Apple").
    camel_case:
        Lower-case-initial brand words are names ("iPhone", "eBay"), and no name starts
        inside a word.
    acronym_numbers:
        An acronym and the number after it (not a year) are one name ("BWV 1033").
    iso_dates:
        ISO dates ("2023-11-24") are entities.
    split_possessives:
        A possessive inside a capitalized run ends a name ("Google's Gemini" -> "Google",
        "Gemini"; news names the owner and the owned thing).
    """

    name: str
    keep_acronyms: bool = True
    keep_trailing_capitals: bool = True
    trim_openers: bool = True
    camel_case: bool = True
    acronym_numbers: bool = True
    iso_dates: bool = True
    split_possessives: bool = True


#: The entity rule sets. ``standard`` (the rules the backend always had) is the default;
#: ``refined`` fixes what they get wrong on news and questions (acronyms such as "US"
#: trimmed as stop words, "Phone" out of "iPhone", "Considering" as a name). Measured by
#: their effect on ``graph`` (benchmarks/results/graph_tuning-*-refined.md against the
#: standard files, ``graph:default`` rows): fact recall 0.988 vs 0.988 on HotpotQA, 0.557 vs
#: 0.566 on the 150-document MultiHop-RAG subset and 0.542 vs 0.538 on MultiHop-RAG, i.e.
#: no consistent gain, so ``standard`` stays the default (and an index built before keeps its entities on insert).
ENTITY_RULES: dict[str, EntityRules] = {
    "standard": EntityRules(
        "standard",
        keep_acronyms=False,
        keep_trailing_capitals=False,
        trim_openers=False,
        camel_case=False,
        acronym_numbers=False,
        iso_dates=False,
        split_possessives=False,
    ),
    "refined": EntityRules("refined"),
}


def rules_named(rules: str | EntityRules = "standard") -> EntityRules:
    """The rule set named ``rules`` (a rule set passes as is).

    Raises
    ------
    ValueError
        For an unknown name.
    """
    if isinstance(rules, EntityRules):
        return rules
    try:
        return ENTITY_RULES[rules]
    except KeyError:
        raise ValueError(
            f"unknown entity rules {rules!r}; expected one of {sorted(ENTITY_RULES)}"
        ) from None


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
    # sum_j!=i cos(v_i, v_j) = v_i . (sum_j v_j) - v_i . v_i: linear in the terms, not
    # quadratic in the sentences (a 300-sentence segment summary was 1.5M dict lookups).
    total: dict[str, float] = {}
    for vec in vecs:
        for term, weight in vec.items():
            total[term] = total.get(term, 0.0) + weight
    scores = []
    for vi in vecs:
        score = sum(w * (total[term] - w) for term, w in vi.items())
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


def _clean_name(phrase: str, rules: EntityRules = ENTITY_RULES["standard"]) -> str:
    """Trim leading sentence words and titles, trailing stop words and a possessive."""
    words = phrase.strip().rstrip(".").split()

    def stop(word: str) -> bool:
        if rules.keep_acronyms and len(word) > 1 and word.isupper():
            return False
        return word.lower() in _STOP

    def leading(word: str) -> bool:
        if word in _NOT_NAMES or word in _TITLES or stop(word):
            return True
        return rules.trim_openers and word in _OPENERS

    while words and leading(words[0]):
        words = words[1:]
    if rules.keep_trailing_capitals and len(words) > 1:
        while len(words) > 1 and words[-1] == "I":
            words = words[:-1]
    else:
        while words and stop(words[-1]):
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
    sentence: str,
    lower_words: frozenset[str] | None = None,
    rules: EntityRules = ENTITY_RULES["standard"],
) -> list[tuple[int, int, str]]:
    """Every entity occurrence of a sentence as ``(start, end, phrase)``, by position."""
    found: list[tuple[int, int, str]] = []
    for m in _DATE.finditer(sentence):
        found.append((m.start(), m.end(), m.group(0)))

    def overlaps(start: int, end: int) -> bool:
        return any(start < e and s < end for s, e, _ in found)

    if rules.iso_dates:
        for m in _ISO_DATE.finditer(sentence):
            if not overlaps(m.start(), m.end()):
                found.append((m.start(), m.end(), m.group(0)))
    if rules.acronym_numbers:
        for m in _ACRONYM_NUMBER.finditer(sentence):
            if not _MODERN_YEAR.match(m.group(2)) and not overlaps(m.start(), m.end()):
                found.append((m.start(), m.end(), m.group(0)))
    names = _NAME_V2 if rules.camel_case else _NAME
    not_single = _SINGLE_NOT_NAMES | _OPENERS if rules.trim_openers else _SINGLE_NOT_NAMES
    for m in names.finditer(sentence):
        if overlaps(m.start(), m.end()):
            continue
        offset = m.start()
        parts = _split_connectors(m.group(0))
        if rules.split_possessives:
            parts = [p for part in parts for p in _INNER_POSSESSIVE.split(part)]
        for part in parts:
            phrase = _clean_name(part, rules)
            start = sentence.find(phrase, offset) if phrase else -1
            if start < 0 or len(phrase) < 2 or phrase in _NOT_NAMES or phrase in not_single:
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


def extract_entities(
    sentence: str,
    lower_words: frozenset[str] | None = None,
    rules: str | EntityRules = "standard",
) -> list[str]:
    """Capitalized phrases, acronyms, dates and quantities of one sentence, in order, unique.

    Parameters
    ----------
    sentence:
        One sentence.
    lower_words:
        Optional words seen in lower case in the surrounding text: a single capitalized word
        that opens the sentence and occurs there in lower case ("Logs were floated ...") is
        an ordinary word, not a name.
    rules:
        The entity rule set (``ENTITY_RULES``): ``"standard"`` or ``"refined"``.
    """
    seen: set[str] = set()
    out = []
    for _, _, phrase in _entity_spans(sentence, lower_words, rules_named(rules)):
        key = phrase.lower()
        if key not in seen:
            seen.add(key)
            out.append(phrase)
    return out


def decompose(
    text: str, sentences_per_unit: int = 2, rules: str | EntityRules = "standard"
) -> dict[str, list[dict[str, object]]]:
    """Rule-based NodeRAG decomposition of one chunk.

    Groups of ``sentences_per_unit`` whole statements (:func:`is_statement` drops headings,
    table rows and fragments, :func:`cut_pieces` what the chunk's window cut) are the units;
    their entities are the names, dates and quantities of :func:`extract_entities` (``rules``),
    their relationships link consecutive entities of a sentence by the words between them.
    """
    chosen = rules_named(rules)
    every = split_sentences(text)
    # No whole statement (a note, a title): keep the fragments, or heterograph.parse refuses it.
    cut = cut_pieces(text, every)
    whole = [s for i, s in enumerate(every) if i not in cut and is_statement(s)]
    sentences = whole or [s for s in every if is_statement(s)] or every
    lower_words = frozenset(w for w in _WORD.findall(text) if w.islower())
    units: list[dict[str, object]] = []
    for start in range(0, len(sentences), sentences_per_unit):
        group = sentences[start : start + sentences_per_unit]
        entities: list[str] = []
        relationships: list[list[str]] = []
        for sentence in group:
            spans = _entity_spans(sentence, lower_words, chosen)
            for _, _, e in spans:
                if e not in entities:
                    entities.append(e)
            relationships.extend(_relations(sentence, spans))
        units.append(
            {"text": " ".join(group), "entities": entities, "relationships": relationships}
        )
    return {"semantic_units": units}


# Words between two entities that say nothing about how they relate ("A and B", "A, B",
# "Founding of Meridian Optics": a noun and its complement, "Oslo's Varde").
_CLAUSE_MARK = re.compile(r"[|?!:;()\[\]]")
_NO_RELATION = frozenset(
    ["and", "or", "&", "as", "well", "also", "with", "nor", "the", "a", "an", "-", "of", "'s",
     "’s", "its", "their", "his", "her", "this", "that", "these", "those", "which", "who", "—",
     "–"]
)  # fmt: skip


def _named(entity: str) -> bool:
    """Whether an entity has at least two letters (a name, not a stray mark or initial);
    dates and quantities have digits, which count."""
    return sum(c.isalnum() for c in entity) >= 2


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
        if not (_named(a) and _named(b)):  # ". h", "3": no name to relate
            continue
        rels.append([a, " ".join(words), b])
    return rels


def _title(texts: Sequence[str], n: int = 3, rules: str | EntityRules = "standard") -> str:
    """A keyword title: the most frequent names of ``texts`` (else their most frequent terms)."""
    counts: Counter[str] = Counter()
    for t in texts:
        for sentence in split_sentences(t):
            for e in extract_entities(sentence, rules=rules):
                if not e[0].isdigit() and e[0] not in "$€£¥":
                    counts[e] += 1
    names = [name for name, _ in counts.most_common(n)]
    if names:
        return ", ".join(names)
    terms: Counter[str] = Counter(w for t in texts for w in _terms(t))
    return " ".join(w for w, _ in terms.most_common(n)) or "untitled"


class ExtractiveLLM:
    """Deterministic CPU backend that satisfies the ``LLM`` interface without a model.

    Parameters
    ----------
    sentences_per_unit:
        Sentences per semantic unit of ``decompose``.
    entity_rules:
        The entity rule set of ``decompose``, ``community`` titles and ``query_entities``
        (``ENTITY_RULES``: ``"standard"``, the default, or ``"refined"``).
    """

    def __init__(self, sentences_per_unit: int = 2, entity_rules: str = "standard"):
        self.sentences_per_unit = sentences_per_unit
        self.rules = rules_named(entity_rules)

    @property
    def name(self) -> str:
        return EXTRACTIVE_LLM

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
        units = decompose(request.inputs[0], self.sentences_per_unit, self.rules)
        return json.dumps(units, ensure_ascii=False)

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
        element = {"title": _title(request.inputs, rules=self.rules), "description": description}
        return json.dumps({"high_level_elements": [element]}, ensure_ascii=False)

    def _task_query_entities(self, request: LLMRequest) -> str:
        entities = extract_entities(request.inputs[0], rules=self.rules)
        return json.dumps({"entities": entities}, ensure_ascii=False)

    def _task_answer(self, request: LLMRequest) -> str:
        question, context = request.inputs
        return answer_sentences(question, context, min(request.max_tokens, ANSWER_TOKENS))


#: Token limit of an extractive answer (the request's ``max_tokens`` when smaller).
ANSWER_TOKENS = 120
#: Most sentences in an extractive answer.
ANSWER_SENTENCES = 3
#: A sentence after the first is kept only when it scores this share of the best one.
RELATIVE_FLOOR = 0.4
#: Weight of the retrieval rank: a sentence of the context's n-th entry (from 0) scores
#: ``1 + RANK_PRIOR / (1 + n)`` times its BM25 score, so equal matches favour the best hit.
RANK_PRIOR = 0.5
_ENTRY_START = re.compile(r"^(?:-\s+|\[(\d+)\]\s*)")
_ENTRY_DOCS = re.compile(r"\s*\[([^\]]*)\]\s*$")


def context_entries(context: str) -> list[tuple[str, str]]:
    """The entries of an answer context as ``(marker, text)``.

    Two context formats are read: the numbered one of the chat API and of
    ``graphstrata answer`` (entries ``[n] text``: the marker is ``[n]``) and the engine's
    (``## Kind`` headings, entries ``- text [doc, ...]``: the trailing document list is
    dropped and the marker is empty, so ``Engine.answer`` keeps its plain sentences; its
    citations are the hits' ``docs``). Lines that do not start an entry
    continue the previous one; Markdown heading lines inside an entry are dropped (titles
    are not answers).
    """
    entries: list[tuple[str, list[str]]] = []
    for raw in context.splitlines():
        line = raw.strip()
        start = _ENTRY_START.match(line)
        if start:
            marker = f"[{start.group(1)}]" if start.group(1) else ""
            entries.append((marker, [line[start.end() :]]))
        elif line.startswith("#") or not entries:
            continue
        else:
            entries[-1][1].append(line)
    out = []
    for marker, lines in entries:
        lines = [ln for ln in lines if not ln.lstrip().startswith("#")]
        text = "\n".join(lines)
        if not marker:
            docs = _ENTRY_DOCS.search(text)
            if docs:
                text = text[: docs.start()]
        out.append((marker, text))
    return out


def answer_sentences(
    question: str,
    context: str,
    max_tokens: int = ANSWER_TOKENS,
    max_sentences: int = ANSWER_SENTENCES,
) -> str:
    """The context sentences that best answer ``question``, each with its citation marker.

    Sentences are ranked by BM25 against the question's terms (the sentences of the context
    are the collection: a question term that is in every sentence counts little), not by
    centrality; a sentence that is no sentence (no terminal punctuation and under five
    words: a heading, a caption) or a repeat is skipped; the retrieval rank of a sentence's
    entry breaks near ties (:data:`RANK_PRIOR`). The best ones (at most
    ``max_sentences``, each scoring at least :data:`RELATIVE_FLOOR` of the best) that fit in
    ``max_tokens`` are returned best first, each followed by its entry's marker (``[n]``
    of a numbered context).

    Returns
    -------
    str
        ``"sentence [marker] sentence [marker]"``, or ``"Insufficient information."`` when
        no sentence shares a term with the question.
    """
    q_terms = set(_terms(question))
    candidates: list[tuple[str, str, list[str]]] = []
    ranks: list[int] = []
    seen: set[str] = set()
    for rank, (marker, text) in enumerate(context_entries(context)):
        for sentence in split_sentences(text):
            key = " ".join(sentence.lower().split())
            words = sentence.split()
            if key in seen or (len(words) < 5 and not re.search(r"[.!?]$", sentence)):
                continue
            seen.add(key)
            candidates.append((sentence, marker, _terms(sentence)))
            ranks.append(rank)
    if not q_terms or not candidates:
        return "Insufficient information."
    n = len(candidates)
    df: Counter[str] = Counter()
    for _, _, terms in candidates:
        df.update(set(terms) & q_terms)
    avg_len = sum(len(t) for _, _, t in candidates) / n or 1.0
    k1, b = 1.2, 0.75
    scored = []
    for i, (_, _, terms) in enumerate(candidates):
        tf = Counter(terms)
        norm = k1 * (1 - b + b * len(terms) / avg_len)
        score = sum(
            bm25_idf(df[t], n) * tf[t] * (k1 + 1) / (tf[t] + norm) for t in q_terms if tf[t]
        )
        if score > 0:
            scored.append((score * (1.0 + RANK_PRIOR / (1 + ranks[i])), i))
    scored.sort(key=lambda si: (-si[0], si[1]))
    parts: list[str] = []
    used = 0
    for score, i in scored[:max_sentences]:
        if score < RELATIVE_FLOOR * scored[0][0]:
            break
        sentence, marker, _ = candidates[i]
        part = f"{sentence} {marker}".strip()
        cost = count_tokens(part)
        if parts and used + cost > max_tokens:
            break
        parts.append(part)
        used += cost
    return " ".join(parts) if parts else "Insufficient information."
