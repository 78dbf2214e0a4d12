"""Turn a model's answer to a JSON stage into clean JSON, or say why it cannot.

Generative backends share this: servers without JSON mode (and models that ignore it) wrap
JSON in prose or code fences, drop a closing brace when they hit ``max_tokens``, or leave
trailing commas. ``json_repair`` fixes those; the top-level keys of the stage's schema are
then checked so a repaired-but-wrong answer is caught here, not deep inside a component.
Reasoning blocks (``<think>...</think>``) are removed first (``engine.strip_think``) and
counted. An answer still unusable after the backend's one re-ask is handed to the engine
marked ``unusable`` (:func:`unusable_meta`), which counts it and holds the stage to the
index's yield floor (``engine.extraction``) instead of failing the whole write on one answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import json_repair

from graphstrata.engine import leading_json, strip_think

#: JSON-schema type names -> the Python types ``json.loads`` produces for them.
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


class JSONAnswerError(ValueError):
    """An answer is not JSON of the expected shape, even after repair."""


@dataclass(frozen=True)
class ParsedAnswer:
    """A validated JSON answer: the object, its canonical text, and whether it was repaired."""

    value: dict[str, Any]
    text: str
    repaired: bool
    think: int = 0


def parse_json_answer(text: str, schema: Mapping[str, Any]) -> ParsedAnswer:
    """Parse ``text`` as the JSON object that ``schema`` describes, repairing it if needed.

    Parameters
    ----------
    text:
        The raw completion.
    schema:
        The stage's JSON schema; its ``required`` top-level keys must be present and each
        top-level property with a declared ``type`` must have that type.

    Returns
    -------
    ParsedAnswer
        The object and its canonical JSON text (what the backend hands to the engine).

    Raises
    ------
    JSONAnswerError
        When no JSON object can be recovered or it lacks the schema's top-level keys.
    """
    repaired = False
    text, think = strip_think(text or "")
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        # The first complete object (a model that went on after it), else a repaired one.
        leading = leading_json(text)
        value = leading if isinstance(leading, dict) else json_repair.loads(text or "")
        repaired = True
    check_top_level(value, schema)
    canonical = json.dumps(value, ensure_ascii=False)
    return ParsedAnswer(value=value, text=canonical, repaired=repaired, think=think)


def unusable_meta(error: str, answer: str) -> dict[str, Any]:
    """The ``meta`` of an answer that is not the stage's JSON: why, and that it is unusable
    (the engine counts it as failed; the LLM cache does not keep it)."""
    return {"unusable": error, "think": strip_think(answer or "")[1]}


def check_top_level(value: Any, schema: Mapping[str, Any]) -> None:
    """Raise :class:`JSONAnswerError` unless ``value`` has the schema's top-level shape."""
    if not isinstance(value, dict):
        got = "nothing" if value in ("", None) else type(value).__name__
        raise JSONAnswerError(f"expected a JSON object, got {got}")
    missing = [k for k in schema.get("required", ()) if k not in value]
    if missing:
        raise JSONAnswerError(f"JSON answer lacks required key(s) {missing}")
    for key, prop in (schema.get("properties") or {}).items():
        want = prop.get("type") if isinstance(prop, Mapping) else None
        if key not in value or not isinstance(want, str) or want not in _JSON_TYPES:
            continue
        ok = isinstance(value[key], _JSON_TYPES[want])
        if want in ("number", "integer") and isinstance(value[key], bool):
            ok = False
        if not ok:
            raise JSONAnswerError(
                f"JSON answer key {key!r} should be {want}, got {type(value[key]).__name__}"
            )


def reask_prompt(prompt: str, bad_answer: str, error: str, schema: Mapping[str, Any]) -> str:
    """A follow-up prompt asking once more for valid JSON after a bad answer."""
    keys = ", ".join(repr(k) for k in schema.get("required", ()))
    return (
        f"{prompt}\n\nYour previous answer could not be used ({error}):\n{bad_answer[:2000]}\n\n"
        f"Answer again with one JSON object only, with the top-level key(s) {keys}, "
        "and nothing else."
    )
