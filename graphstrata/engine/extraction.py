"""Extraction yield: what the LLM stages got out of their answers, and the floor under it.

A generative model that answers a JSON stage with prose, reasoning, an empty string or a
well-formed object holding nothing produces an index that looks built and knows nothing
(LightRAG#3597: documents marked processed with an empty graph). Every answer a write
receives is therefore counted per task (:func:`tally_answers`: answers, valid JSON, repaired,
empty, failed, reasoning blocks stripped), every extraction stage says what each input
yielded (:func:`record_items`: items per chunk, per entity, per community, per segment), and
a stage whose share of inputs that yielded something falls below the index's floor
(:class:`YieldConfig`) raises :class:`ExtractionYieldError` before anything is committed
(docs/decisions/0030-extraction-yield-floor.md, docs/guide/llm.md).

Reasoning models wrap their answer in ``<think>...</think>``; the block is not the answer and
is removed before anything parses it (:func:`strip_think`).
"""

from __future__ import annotations

import json
import re
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from graphstrata.engine.fields import ErrorType, check_fields, setting
from graphstrata.engine.interfaces import LLMError, LLMRequest, LLMResponse

#: The extraction tasks a floor applies to -> what one of their answers must hold to count.
YIELD_ITEMS: dict[str, str] = {
    "decompose": "entity",
    "attribute": "profile",
    "community": "element",
    "summarize": "summary",
}

#: Counters of one task in ``OperationReport.llm_yield`` (``first_bad`` is a string).
COUNTERS = (
    "answers",
    "valid_json",
    "repaired",
    "empty",
    "failed",
    "think",
    "inputs",
    "held",
    "items",
)

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_DECODER = json.JSONDecoder()
#: Characters of the first bad answer quoted in a floor error.
BAD_EXCERPT_CHARS = 200


@dataclass
class YieldConfig:
    """The floor under each extraction stage's yield (per index, recorded in the manifest).

    A stage's yield is the share of its inputs (chunks for ``decompose``, entities for
    ``attribute``, communities for ``community``, segments for ``summarize``) whose final
    answer held at least one item. The built-in extractive backend yields 0.99-1.0 on
    every shared set and fixture (decision 0030); a model that answers with nothing usable
    yields close to 0.
    """

    min_yield: float = setting(
        0.5,
        ge=0.0,
        le=1.0,
        doc="Least share of a stage's inputs whose answer must hold an item; 0 turns the "
        "floor off.",
    )
    min_inputs: int = setting(
        8,
        ge=1,
        doc="A stage with fewer inputs than this in one write is held only to one usable "
        "answer (a short note may name nothing; a model that answers nothing usable fails).",
    )

    def validate(self, error: ErrorType) -> None:
        """Raise ``error`` on an invalid value."""
        check_fields(self, "yield_floor", error)


class ExtractionYieldError(LLMError):
    """An extraction stage's yield fell below the index's floor; nothing was committed."""


def strip_think(text: str) -> tuple[str, int]:
    """``text`` without its reasoning blocks, and how many there were.

    Closed ``<think>...</think>`` blocks are removed; an unclosed ``<think>`` (the model
    ran out of tokens while reasoning) drops everything after it; a lone ``</think>`` (chat
    templates that open the block in the prompt) drops everything before it.
    """
    if "think>" not in text.lower():
        return text, 0
    count = len(_THINK_BLOCK.findall(text))
    text = _THINK_BLOCK.sub("", text)
    close = _THINK_CLOSE.search(text)
    if close is not None:
        text, count = text[close.end() :], count + 1
    opening = _THINK_OPEN.search(text)
    if opening is not None:
        text, count = text[: opening.start()], count + 1
    return text.strip(), count


def leading_json(text: str) -> Any:
    """The first complete JSON object or array of ``text``, or None.

    Small models often write a whole answer and go on (a second object, a comment); the
    answer is the first value, which ``json.loads`` refuses because of what follows it and
    ``json_repair`` may merge with what follows.
    """
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return None
    try:
        value, _ = _DECODER.raw_decode(text, start)
    except ValueError:
        return None
    return value


def _entry(table: MutableMapping[str, dict[str, Any]], task: str) -> dict[str, Any]:
    entry = table.get(task)
    if entry is None:
        entry = table[task] = {name: 0 for name in COUNTERS}
    return entry


def tally_answers(
    table: MutableMapping[str, dict[str, Any]],
    requests: Sequence[LLMRequest],
    responses: Sequence[LLMResponse],
) -> list[LLMResponse]:
    """Count each answer under its task and return the answers without reasoning blocks.

    An answer of a JSON task (its request has a schema) is ``empty`` (nothing left after
    the reasoning), ``failed`` (the backend could not make it the schema's JSON: its meta
    has ``unusable``) or ``valid_json`` (``repaired`` too when the backend had to mend it);
    a free-text answer is ``empty`` or not.

    Parameters
    ----------
    table:
        ``OperationReport.llm_yield``, updated in place.
    requests, responses:
        One stage batch, aligned.
    """
    out: list[LLMResponse] = []
    for request, response in zip(requests, responses, strict=True):
        entry = _entry(table, request.task)
        text, blocks = strip_think(response.text)
        entry["answers"] += 1
        entry["think"] += blocks + int(response.meta.get("think", 0) or 0)
        if not text.strip():
            entry["empty"] += 1
        elif request.schema is not None:
            if response.meta.get("unusable"):
                entry["failed"] += 1
            else:
                entry["valid_json"] += 1
                entry["repaired"] += int(bool(response.meta.get("repaired")))
        out.append(replace(response, text=text) if blocks else response)
    return out


def record_items(
    table: MutableMapping[str, dict[str, Any]],
    task: str,
    items: Sequence[int],
    answers: Sequence[str],
    floor: YieldConfig | None,
    model: str,
    usable: Sequence[bool] | None = None,
) -> None:
    """Record what each input of ``task`` yielded, and hold the stage to ``floor``.

    Parameters
    ----------
    table:
        ``OperationReport.llm_yield``, updated in place.
    task:
        One of :data:`YIELD_ITEMS`.
    items:
        Items extracted per input (entities of a chunk, elements of a community, 1 for a
        non-empty profile or summary), after the stage's retry.
    answers:
        The final answer of each input (the first one that held nothing is quoted).
    floor:
        The index's floor (None: only record).
    model:
        The LLM's name, for the message.
    usable:
        Per input, whether its answer could be read at all (valid JSON of the task that may
        still hold nothing); default: whether it held an item.

    Raises
    ------
    ExtractionYieldError
        When at least ``floor.min_inputs`` inputs were answered and the share that held an
        item is below ``floor.min_yield``, or fewer were answered and none usably (with
        ``min_yield`` above 0).
    """
    entry = _entry(table, task)
    entry["item"] = YIELD_ITEMS.get(task, "item")
    entry["inputs"] += len(items)
    entry["held"] += sum(1 for n in items if n > 0)
    entry["items"] += int(sum(items))
    entry["items_per_input"] = round(entry["items"] / entry["inputs"], 3) if entry["inputs"] else 0
    bad = next((a for a, n in zip(answers, items, strict=True) if n <= 0), None)
    if bad is not None and "first_bad" not in entry:
        entry["first_bad"] = bad[:BAD_EXCERPT_CHARS]
    if floor is None or not items or floor.min_yield <= 0:
        return
    if len(items) < floor.min_inputs:
        # Too few inputs for a share: a short note may name nothing, but a model that gave
        # not one readable answer (LightRAG#3597's empty graph) is still stopped.
        readable = usable if usable is not None else [n > 0 for n in items]
        if not any(readable):
            raise ExtractionYieldError(floor_message(task, items, bad or "", floor, model))
        return
    share = sum(1 for n in items if n > 0) / len(items)
    if share < floor.min_yield:
        raise ExtractionYieldError(floor_message(task, items, bad or "", floor, model))


def floor_message(task: str, items: Sequence[int], bad: str, floor: YieldConfig, model: str) -> str:
    """The one line of a floor error: stage, share, model, first bad answer, the way out."""
    empty = sum(1 for n in items if n <= 0)
    pct = 100.0 * empty / len(items)
    rule = (
        f"at least {100 * floor.min_yield:.0f} % must"
        if len(items) >= floor.min_inputs
        else f"under {floor.min_inputs} inputs, one readable answer must"
    )
    return (
        f"{task}: {pct:.0f} % of {len(items)} responses held no {YIELD_ITEMS.get(task, 'item')} "
        f"(floor: {rule}); model {model}; first bad "
        f"response: {bad[:BAD_EXCERPT_CHARS]!r}; nothing was committed (use a stronger model "
        "or domain prompts, or lower yield_floor.min_yield)"
    )
