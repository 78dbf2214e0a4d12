"""Reading the heterograph's LLM answers, and the names they contain.

Generative models wrap JSON in prose or code fences, stop mid-object at ``max_tokens``, or
return the right keys with the wrong types. Every function here takes the raw completion and
returns clean Python values, or ``None`` when nothing usable is left, so the pipeline can
retry or skip the item instead of crashing.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

import json_repair

from graphstrata.engine.extraction import leading_json

#: Names longer than this are sentences the model put in the wrong field.
MAX_NAME_CHARS = 120
#: Relation phrases longer than this are paraphrases, not relations.
MAX_RELATION_CHARS = 300

_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)
_POSSESSIVE = re.compile(r"['’]s\b")


def normalize_name(name: str) -> str:
    """The key entities and titles merge on: case-folded, accents kept, punctuation and
    possessives dropped, whitespace collapsed ("Google's" == "google" == "GOOGLE.")."""
    text = unicodedata.normalize("NFKC", name)
    text = _POSSESSIVE.sub("", text).casefold()
    return " ".join(_NON_WORD.sub(" ", text).split())


def _clean_text(value: Any) -> str:
    return " ".join(value.split()) if isinstance(value, str) else ""


def _clean_name(value: Any) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    name = _clean_text(value).strip(" \"'`“”‘’.,;:")
    if not name or len(name) > MAX_NAME_CHARS or not normalize_name(name):
        return ""
    return name


def load_json(text: Any) -> Any:
    """``text`` as JSON: its first complete value (a model that goes on after its answer),
    else repaired (``None`` when nothing can be recovered)."""
    if not isinstance(text, str) or not text.strip():
        return None
    leading = leading_json(text)
    if leading is not None:
        return leading
    try:
        value = json_repair.loads(text)
    except Exception:  # json_repair raises assorted errors on pathological input
        return None
    return None if value == "" else value


@dataclass
class Unit:
    """One semantic unit of a chunk, as decomposed."""

    text: str
    entities: list[str] = field(default_factory=list)
    relationships: list[tuple[str, str, str]] = field(default_factory=list)


def _relationship(value: Any) -> tuple[str, str, str] | None:
    if isinstance(value, dict):  # {"source": .., "relation": .., "target": ..}
        keys = [("source", "relation", "target"), ("subject", "predicate", "object")]
        for a, r, b in keys:
            if a in value and b in value:
                value = [value.get(a), value.get(r, ""), value.get(b)]
                break
        else:
            return None
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        return None
    source, target = _clean_name(value[0]), _clean_name(value[2])
    relation = _clean_text(value[1])
    if not source or not target or len(relation) > MAX_RELATION_CHARS:
        return None
    if normalize_name(source) == normalize_name(target):
        return None
    return source, relation, target


def _unit(value: Any) -> Unit | None:
    if isinstance(value, str):  # a bare paraphrase without structure still is a unit
        text = _clean_text(value)
        return Unit(text) if text else None
    if not isinstance(value, dict):
        return None
    text = _clean_text(value.get("text") or value.get("semantic_unit") or value.get("unit"))
    entities: list[str] = []
    raw_entities = value.get("entities", [])
    if isinstance(raw_entities, (str, dict)):
        raw_entities = [raw_entities]
    for raw in raw_entities if isinstance(raw_entities, list) else []:
        if isinstance(raw, dict):
            raw = raw.get("name") or raw.get("entity")
        name = _clean_name(raw)
        if name and name not in entities:
            entities.append(name)
    relationships: list[tuple[str, str, str]] = []
    raw_rels = value.get("relationships", value.get("relations", []))
    for raw in raw_rels if isinstance(raw_rels, list) else []:
        rel = _relationship(raw)
        if rel is not None and rel not in relationships:
            relationships.append(rel)
            # A relationship's endpoints are entities of the unit, listed or not.
            for name in (rel[0], rel[2]):
                if name not in entities:
                    entities.append(name)
    if not text and relationships:
        # Cut off at max_tokens before its text (models that write the entities first):
        # the unit's own relations say its fact.
        text = " ".join(f"{a} {r} {b}." for a, r, b in relationships)
    return Unit(text, entities, relationships) if text else None


def parse_decomposition(text: Any) -> list[Unit] | None:
    """Semantic units from a ``decompose`` answer; ``None`` when the answer is unusable.

    Accepts the schema's ``{"semantic_units": [...]}``, a bare list of units, one bare unit
    object, and units with missing or mistyped fields (bad entities and relationships are
    dropped; a unit without text is read from its relationships, or dropped without them).
    An answer with no unit left is unusable.
    """
    value = load_json(text)
    if isinstance(value, dict) and "semantic_units" not in value and "units" not in value:
        value = [value]  # one unit without the wrapper (small models drop it)
    elif isinstance(value, dict):
        value = value.get("semantic_units", value.get("units"))
    if not isinstance(value, list):
        return None
    units = [u for u in (_unit(v) for v in value) if u is not None]
    return units or None


@dataclass
class Element:
    """One high-level element of a community: a description and its keyword title."""

    title: str
    description: str


def parse_elements(text: Any, max_elements: int) -> list[Element] | None:
    """High-level elements from a ``community`` answer; ``None`` when unusable."""
    value = load_json(text)
    if isinstance(value, dict) and ("description" in value or "content" in value):
        value = [value]  # one element without the wrapper (small models drop it)
    elif isinstance(value, dict):
        value = value.get("high_level_elements", value.get("elements"))
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, list):
        return None
    out: list[Element] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        description = _clean_text(item.get("description") or item.get("content"))
        title = _clean_name(item.get("title") or item.get("name")) or ""
        if not description:
            continue
        out.append(
            Element(
                title=title or description.split(".")[0][:MAX_NAME_CHARS], description=description
            )
        )
        if len(out) >= max_elements:
            break
    return out or None


def parse_query_entities(text: Any) -> list[str]:
    """Entity names from a ``query_entities`` answer (empty when unusable)."""
    value = load_json(text)
    if isinstance(value, dict):
        value = value.get("entities", [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return []
    names: list[str] = []
    for raw in value:
        if isinstance(raw, dict):
            raw = raw.get("name") or raw.get("entity")
        name = _clean_name(raw)
        if name and name not in names:
            names.append(name)
    return names


_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
#: Longest word n-gram of a question looked up as a name (entity names are rarely longer).
MAX_QUERY_NGRAM = 6
_QUERY_WORD = re.compile(r"[^\W_][\w'’\-.&]*", re.UNICODE)


def title_key(title: str) -> str:
    """The key a document title is looked up by: ``normalize_name`` without a leading
    article ("The Lake Sundra Ferry" -> "lake sundra ferry", as entity names are kept)."""
    return _ARTICLE.sub("", normalize_name(title))


def query_name_candidates(question: str, max_words: int = MAX_QUERY_NGRAM) -> list[str]:
    """Normalized word n-grams of ``question`` that may name something, in order, unique.

    An n-gram of up to ``max_words`` words qualifies when its first and its last word start
    with an upper-case letter or a digit ("Haymo of Faversham", "2012", "BWV 1033"); the
    search keeps those that are known names (entity, element title or document title), so a
    name the entity rules split or trimmed is still matched whole.

    Parameters
    ----------
    question:
        The query text.
    max_words:
        Longest n-gram considered.
    """
    words = [m.group(0).rstrip(".'’") for m in _QUERY_WORD.finditer(question)]
    words = [w for w in words if w]
    starts = [w[0].isupper() or w[0].isdigit() for w in words]
    # normalize_name works word by word, so a phrase's key is its words' keys joined.
    keys = [normalize_name(w) for w in words]
    out: dict[str, None] = {}
    for i in range(len(words)):
        if not starts[i]:
            continue
        for j in range(i, min(len(words), i + max_words)):
            if starts[j]:
                key = " ".join(k for k in keys[i : j + 1] if k)
                if key:
                    out.setdefault(key, None)
                    stripped = _ARTICLE.sub("", key)
                    if stripped and stripped != key:
                        out.setdefault(stripped, None)
    return list(out)
