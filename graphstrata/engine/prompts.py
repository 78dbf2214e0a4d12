"""Every prompt and JSON schema the engine sends to an LLM, in one place.

Each builder returns an ``LLMRequest`` carrying both the full prompt (for generative
backends) and the raw inputs (for the extractive backend), so all backends do the same task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphstrata.engine.interfaces import LLMRequest

# --------------------------------------------------------------------------- EraRAG
#: The EraRAG paper's summarization prompt (§III-C / public code).
SUMMARY_PROMPT = (
    "Write a summary of the following, including as many key details as possible: {context}"
)


def summarize_request(texts: Sequence[str], max_tokens: int) -> LLMRequest:
    """EraRAG: summarize one segment (its members' texts, in anchor order)."""
    context = "\n\n".join(texts)
    return LLMRequest(
        task="summarize",
        prompt=SUMMARY_PROMPT.format(context=context),
        max_tokens=max_tokens,
        inputs=tuple(texts),
    )


# --------------------------------------------------------------------------- NodeRAG
DECOMPOSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "semantic_units": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "entities": {"type": "array", "items": {"type": "string"}},
                    "relationships": {
                        "type": "array",
                        "items": {
                            "type": "array",
                            "items": {"type": "string"},
                            "minItems": 3,
                            "maxItems": 3,
                        },
                    },
                },
                "required": ["text", "entities", "relationships"],
            },
        }
    },
    "required": ["semantic_units"],
}

DECOMPOSE_PROMPT = """Decompose the text below into semantic units for a knowledge graph.
A semantic unit is a self-contained paraphrase of one event or fact (1-3 sentences) that
names its subjects instead of using pronouns, so it can be read on its own.
For each unit list the named entities it mentions (people, organizations, places, products,
dates, numbers with units), each by its full name as written in the text, and the
relationships between them as [source, relation, target], where source and target are
entities of the unit and relation is a short verb phrase.
Cover every fact of the text; do not add facts that are not in it.
Answer with JSON only, in this form:
{{"semantic_units": [{{"text": "...", "entities": ["..."], "relationships": [["source", "relation", "target"]]}}]}}

Text:
{text}"""


def decompose_request(text: str, max_tokens: int) -> LLMRequest:
    """NodeRAG: decompose one chunk into semantic units with their entities and relations."""
    return LLMRequest(
        task="decompose",
        prompt=DECOMPOSE_PROMPT.format(text=text),
        max_tokens=max_tokens,
        schema=DECOMPOSE_SCHEMA,
        inputs=(text,),
    )


ATTRIBUTE_PROMPT = """Write a concise profile of the entity "{entity}" from the facts below:
who or what it is, its key properties, and its most important relations. Use only these facts;
answer with the profile text only (at most one paragraph).

Facts:
{facts}

Relationships:
{relationships}"""


def attribute_request(
    entity: str, facts: Sequence[str], relationships: Sequence[str], max_tokens: int
) -> LLMRequest:
    """NodeRAG: profile one important entity from its units and relationships."""
    return LLMRequest(
        task="attribute",
        prompt=ATTRIBUTE_PROMPT.format(
            entity=entity,
            facts="\n".join(f"- {f}" for f in facts),
            relationships="\n".join(f"- {r}" for r in relationships),
        ),
        max_tokens=max_tokens,
        inputs=(entity, *facts, *relationships),
    )


COMMUNITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "high_level_elements": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "description": {"type": "string"}},
                "required": ["title", "description"],
            },
        }
    },
    "required": ["high_level_elements"],
}

COMMUNITY_PROMPT = """The texts below belong to one community of a knowledge graph.
Identify its main themes. For each theme write a high-level description (2-4 sentences that
connect the facts) and a short title (at most 8 words). Answer with JSON only, in this form:
{{"high_level_elements": [{{"title": "...", "description": "..."}}]}}

Texts:
{texts}"""


def community_request(texts: Sequence[str], max_tokens: int) -> LLMRequest:
    """NodeRAG: the high-level elements (description and title) of one community."""
    return LLMRequest(
        task="community",
        prompt=COMMUNITY_PROMPT.format(texts="\n".join(f"- {t}" for t in texts)),
        max_tokens=max_tokens,
        schema=COMMUNITY_SCHEMA,
        inputs=tuple(texts),
    )


QUERY_ENTITIES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"entities": {"type": "array", "items": {"type": "string"}}},
    "required": ["entities"],
}

QUERY_ENTITIES_PROMPT = """List the named entities (people, organizations, places, products,
dates, numbers) mentioned in the question. Answer with JSON only: {{"entities": ["..."]}}

Question: {question}"""


def query_entities_request(question: str) -> LLMRequest:
    """The named entities of a question (``graph`` mode's exact-match entry points)."""
    return LLMRequest(
        task="query_entities",
        prompt=QUERY_ENTITIES_PROMPT.format(question=question),
        max_tokens=128,
        schema=QUERY_ENTITIES_SCHEMA,
        inputs=(question,),
    )


# --------------------------------------------------------------------------- answers
#: The one answer prompt of every mode and every door (API, HTTP, chat, CLI), so modes are
#: compared on retrieval alone; ``{context}`` is the numbered context (``answer.py``).
ANSWER_PROMPT = """You answer questions using only the numbered context below. Cite the \
context items you use with their numbers in square brackets, like [1] or [2]. If the context \
does not hold the answer, say "Insufficient information." Be brief.

Context:
{context}"""

#: Default completion limit of an answer.
ANSWER_MAX_TOKENS = 256


def answer_request(
    question: str,
    context: str,
    max_tokens: int = ANSWER_MAX_TOKENS,
    history: Sequence[tuple[str, str]] = (),
) -> LLMRequest:
    """The one answer prompt: the numbered context, a chat's earlier turns, the question.

    Parameters
    ----------
    question:
        The question (a chat's last user message).
    context:
        The retrieved nodes as ``[n] text`` entries (``answer.numbered_context``).
    max_tokens:
        The completion limit.
    history:
        Earlier ``(role, content)`` turns of a chat, put into the prompt before the question.

    Returns
    -------
    LLMRequest
        Task ``answer``; ``inputs`` are the question and the numbered context.
    """
    turns = "".join(f"{role}: {content}\n" for role, content in history)
    prompt = f"{ANSWER_PROMPT.format(context=context)}\n\n{turns}user: {question}\nassistant:"
    return LLMRequest(
        task="answer", prompt=prompt, max_tokens=max_tokens, inputs=(question, context)
    )
