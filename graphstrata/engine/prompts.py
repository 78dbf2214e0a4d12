"""Every prompt and JSON schema the engine sends to an LLM, in one place.

Each builder returns an ``LLMRequest`` carrying both the full prompt (for generative
backends) and the raw inputs (for the extractive backend), so all backends do the same task,
and the fields the task's template was filled with. The templates below are the documented
defaults (docs/guide/llm.md); an index may replace any of them, and set its own entity types
and examples, in its ``prompts`` section (:class:`PromptConfig`, recorded in the manifest
with a SHA-256 of the effective prompts); :class:`PromptedLLM` renders each request with the
index's templates, so a changed prompt changes what is sent and the LLM cache key.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from graphstrata.engine.fields import ErrorType
from graphstrata.engine.interfaces import LLM, LLMRequest, LLMResponse

# --------------------------------------------------------------------------- EraRAG
#: The EraRAG paper's summarization prompt (§III-C / public code).
SUMMARY_PROMPT = (
    "Write a summary of the following, including as many key details as possible: {context}"
)


def summarize_request(texts: Sequence[str], max_tokens: int) -> LLMRequest:
    """EraRAG: summarize one segment (its members' texts, in anchor order)."""
    fields = {"context": "\n\n".join(texts)}
    return LLMRequest(
        task="summarize",
        prompt=render("summarize", fields),
        max_tokens=max_tokens,
        inputs=tuple(texts),
        fields=fields,
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
For each unit list the named entities it mentions ({entity_types}), each by its full name as written in the text, and the
relationships between them as [source, relation, target], where source and target are
entities of the unit and relation is a short verb phrase.
Cover every fact of the text; do not add facts that are not in it.
Answer with JSON only, in this form:
{{"semantic_units": [{{"text": "...", "entities": ["..."], "relationships": [["source", "relation", "target"]]}}]}}{examples}

Text:
{text}"""

#: The entity types the default decomposition prompt names (``PromptConfig.entity_types``).
DEFAULT_ENTITY_TYPES = "people, organizations, places, products,\ndates, numbers with units"


def decompose_request(text: str, max_tokens: int) -> LLMRequest:
    """NodeRAG: decompose one chunk into semantic units with their entities and relations."""
    fields = {"text": text}
    return LLMRequest(
        task="decompose",
        prompt=render("decompose", fields),
        max_tokens=max_tokens,
        schema=DECOMPOSE_SCHEMA,
        inputs=(text,),
        fields=fields,
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
    fields = {
        "entity": entity,
        "facts": "\n".join(f"- {f}" for f in facts),
        "relationships": "\n".join(f"- {r}" for r in relationships),
    }
    return LLMRequest(
        task="attribute",
        prompt=render("attribute", fields),
        max_tokens=max_tokens,
        inputs=(entity, *facts, *relationships),
        fields=fields,
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
    fields = {"texts": "\n".join(f"- {t}" for t in texts)}
    return LLMRequest(
        task="community",
        prompt=render("community", fields),
        max_tokens=max_tokens,
        schema=COMMUNITY_SCHEMA,
        inputs=tuple(texts),
        fields=fields,
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
    fields = {"question": question}
    return LLMRequest(
        task="query_entities",
        prompt=render("query_entities", fields),
        max_tokens=128,
        schema=QUERY_ENTITIES_SCHEMA,
        inputs=(question,),
        fields=fields,
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
    fields = {"context": context, "turns": turns, "question": question}
    return LLMRequest(
        task="answer",
        prompt=render("answer", fields),
        max_tokens=max_tokens,
        inputs=(question, context),
        fields=fields,
    )


# --------------------------------------------------------------------------- per index
#: Each task's default template (the module's prompts above).
DEFAULT_TEMPLATES: dict[str, str] = {
    "summarize": SUMMARY_PROMPT,
    "decompose": DECOMPOSE_PROMPT,
    "attribute": ATTRIBUTE_PROMPT,
    "community": COMMUNITY_PROMPT,
    "query_entities": QUERY_ENTITIES_PROMPT,
    "answer": ANSWER_PROMPT,
}
#: The placeholders a task's template must keep (the material of the request).
REQUIRED_FIELDS: dict[str, tuple[str, ...]] = {
    "summarize": ("context",),
    "decompose": ("text",),
    "attribute": ("entity", "facts", "relationships"),
    "community": ("texts",),
    "query_entities": ("question",),
    "answer": ("context",),
}
#: Placeholders every template may use besides its task's own (``PromptConfig``'s values).
SHARED_FIELDS = ("entity_types", "examples")
#: What follows the answer template: a chat's earlier turns, then the question.
ANSWER_TAIL = "\n\n{turns}user: {question}\nassistant:"


def render(
    task: str,
    fields: Mapping[str, str],
    templates: Mapping[str, str] | None = None,
    entity_types: str = "",
    examples: str = "",
) -> str:
    """The prompt of ``task`` from its ``fields``, with an index's templates if given.

    Parameters
    ----------
    task:
        One of :data:`DEFAULT_TEMPLATES`.
    fields:
        The request's values (``LLMRequest.fields``).
    templates, entity_types, examples:
        An index's ``prompts`` section (empty: the defaults).
    """
    template = (templates or {}).get(task) or DEFAULT_TEMPLATES[task]
    values = {
        **fields,
        "entity_types": entity_types or DEFAULT_ENTITY_TYPES,
        "examples": f"\n\nExamples:\n{examples}" if examples else "",
    }
    prompt = template.format(**values)
    if task == "answer":
        prompt += ANSWER_TAIL.format(**values)
    return prompt


@dataclass
class PromptConfig:
    """An index's own prompts (docs/guide/llm.md, "Domain prompts"); empty: the defaults.

    Attributes
    ----------
    entity_types:
        What the decomposition asks to list, e.g. ``"genes, proteins, diseases, drugs"``
        (the ``{entity_types}`` placeholder; default :data:`DEFAULT_ENTITY_TYPES`).
    examples:
        Worked examples added to the decomposition prompt before the text (``{examples}``).
    templates:
        Task -> template replacing :data:`DEFAULT_TEMPLATES`'s (``str.format`` syntax:
        literal braces doubled; the task's :data:`REQUIRED_FIELDS` must appear).
    sha256:
        SHA-256 of the effective prompts (computed; recorded in the manifest so a changed
        prompt is visible).
    """

    entity_types: str = ""
    examples: str = ""
    templates: dict[str, str] = field(default_factory=dict)
    sha256: str = ""

    def __post_init__(self) -> None:
        self.sha256 = self.digest()

    @property
    def overridden(self) -> bool:
        """Whether anything differs from the defaults."""
        return bool(self.entity_types or self.examples or self.templates)

    def effective(self) -> dict[str, Any]:
        """The prompts this index sends: every task's template, entity types, examples."""
        return {
            "entity_types": self.entity_types or DEFAULT_ENTITY_TYPES,
            "examples": self.examples,
            "templates": {t: self.templates.get(t) or d for t, d in DEFAULT_TEMPLATES.items()},
        }

    def digest(self) -> str:
        """SHA-256 of :meth:`effective` (canonical JSON)."""
        text = json.dumps(self.effective(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def validate(self, error: ErrorType) -> None:
        """Raise ``error`` for an unknown task, a template that does not render or lacks a
        required placeholder, or a non-string value; refresh :attr:`sha256`."""
        for name in ("entity_types", "examples"):
            if not isinstance(getattr(self, name), str):
                raise error(f"prompts.{name} must be a string")
        if not isinstance(self.templates, dict):
            raise error("prompts.templates must be a mapping of task -> template")
        for task, template in self.templates.items():
            check_template(task, template, error)
        self.sha256 = self.digest()

    def render(self, request: LLMRequest) -> LLMRequest:
        """``request`` with its prompt rendered from this index's templates."""
        if not request.fields or request.task not in DEFAULT_TEMPLATES:
            return request
        prompt = render(
            request.task, request.fields, self.templates, self.entity_types, self.examples
        )
        return request if prompt == request.prompt else replace(request, prompt=prompt)


def check_template(task: str, template: Any, error: ErrorType) -> None:
    """Raise ``error`` unless ``template`` is a usable template of ``task``."""
    where = f"prompts.templates.{task}"
    if task not in DEFAULT_TEMPLATES:
        raise error(f"{where}: unknown task; tasks are {', '.join(DEFAULT_TEMPLATES)}")
    if not isinstance(template, str) or not template.strip():
        raise error(f"{where} must be a non-empty string")
    allowed = set(REQUIRED_FIELDS[task]) | set(SHARED_FIELDS)
    if task == "answer":
        allowed |= {"turns", "question"}
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    except ValueError as exc:
        raise error(f"{where}: {exc} (write literal braces as {{{{ and }}}})") from None
    unknown = sorted(names - allowed)
    if unknown:
        raise error(
            f"{where}: unknown placeholder(s) {unknown}; allowed: {sorted(allowed)} "
            "(write literal braces as {{ and }})"
        )
    missing = [n for n in REQUIRED_FIELDS[task] if n not in names]
    if missing:
        raise error(f"{where} must contain {', '.join('{' + n + '}' for n in missing)}")


class PromptedLLM:
    """An LLM whose requests are rendered with an index's :class:`PromptConfig` first.

    Everything else (``name``, ``close``, counters) is the wrapped backend's.
    """

    def __init__(self, llm: LLM, prompts: PromptConfig):
        self.llm = llm
        self.prompts = prompts

    @property
    def name(self) -> str:
        """The wrapped backend's name."""
        return self.llm.name

    def complete(self, requests: Sequence[LLMRequest]) -> list[LLMResponse]:
        """The wrapped backend's answers to the re-rendered requests."""
        return self.llm.complete([self.prompts.render(r) for r in requests])

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)


def with_prompts(llm: LLM, prompts: PromptConfig) -> LLM:
    """``llm`` rendering ``prompts`` (the backend itself when they are the defaults)."""
    return PromptedLLM(llm, prompts) if prompts.overridden else llm
