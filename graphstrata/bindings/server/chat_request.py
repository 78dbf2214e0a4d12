"""The request of ``POST /v1/chat/completions`` as OpenAI clients send it (docs/guide/openai.md).

Every member of the chat-completions request schema (``openai`` 3.63,
``openai/types/chat/completion_create_params.py``) is accepted and its type checked. Members
that cannot change a grounded answer (sampling, penalties, ``seed``, ``user``, ``metadata``,
``store``, ``reasoning_effort``, ``tools`` the model may leave uncalled, ...) are ignored; a
value that cannot be honoured (``n > 1``, a required tool call, JSON output, log
probabilities, audio) is refused by :func:`refuse_unsupported` with a 400 naming the member
(OpenAI's ``param``). Unknown members are accepted too, unlike the rest of the API: OpenAI
adds members often and clients send them as soon as they know them.

Messages: the roles ``system``, ``developer``, ``user``, ``assistant``, ``tool`` and
``function``; content a string, a list of parts (only ``text`` parts are read: an image or
audio part is not searchable) or null (an assistant turn that called a tool).

No ``from __future__ import annotations`` (pydantic resolves the annotations at class creation).
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from graphstrata.bindings.server.errors import ApiError
from graphstrata.bindings.server.models import integral

#: Largest completion a request may ask for; a larger ``max_tokens`` is served as this.
MAX_COMPLETION_TOKENS = 4096

#: Open objects: OpenAI's members are checked where they are read, others are kept unread.
OPEN = ConfigDict(extra="allow")


def Integer(low: int | None = None, high: int | None = None) -> Any:
    """An integer as JSON Schema defines it (``5`` or ``5.0``), optionally bounded; never a
    boolean or a string (strict: ``false`` is not 0)."""
    return Annotated[int, Field(ge=low, le=high, strict=True), BeforeValidator(integral)]


class ContentPart(BaseModel):
    """One part of a message's content list; only ``text`` parts are read."""

    model_config = OPEN
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """One chat message."""

    model_config = OPEN
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[ContentPart] | None = None
    name: str | None = None

    def text(self) -> str:
        """The message's text (its text parts joined by newlines; empty without any)."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(p.text for p in self.content if p.type == "text" and p.text)


class StreamOptions(BaseModel):
    """``stream_options``: ``include_usage`` adds a usage chunk before ``[DONE]``."""

    model_config = OPEN
    include_usage: bool | None = None
    include_obfuscation: bool | None = None


class ResponseFormat(BaseModel):
    """``response_format``: only ``text`` can be honoured."""

    model_config = OPEN
    type: Literal["text", "json_object", "json_schema"]


class NamedFunction(BaseModel):
    model_config = OPEN
    name: str


class NamedTool(BaseModel):
    """A ``tool_choice`` that forces one tool (``{"type": "function", "function": {...}}``)."""

    model_config = OPEN
    type: str
    function: NamedFunction | None = None


class ChatRequest(BaseModel):
    """The chat completions request (see the module's docstring for what is honoured)."""

    model_config = OPEN
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    max_tokens: Integer(1) | None = None  # type: ignore[valid-type]
    max_completion_tokens: Integer(1) | None = None  # type: ignore[valid-type]
    n: Integer(1, 128) | None = None  # type: ignore[valid-type]
    stop: str | list[str] | None = Field(default=None)
    # Ignored: sampling cannot change an answer grounded in the retrieved nodes.
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    presence_penalty: float | None = Field(default=None, ge=-2, le=2)
    frequency_penalty: float | None = Field(default=None, ge=-2, le=2)
    logit_bias: dict[str, Annotated[float, Field(ge=-100, le=100)]] | None = None
    seed: Integer(-(2**63), 2**63 - 1) | None = None  # type: ignore[valid-type]
    logprobs: bool | None = None
    top_logprobs: Integer(0, 20) | None = None  # type: ignore[valid-type]
    response_format: ResponseFormat | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedTool | None = None
    parallel_tool_calls: bool | None = None
    functions: list[dict[str, Any]] | None = None
    function_call: Literal["none", "auto"] | NamedFunction | None = None
    modalities: list[Literal["text", "audio"]] | None = None
    audio: dict[str, Any] | None = None
    prediction: dict[str, Any] | None = None
    # Ignored: bookkeeping of OpenAI's platform.
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None
    service_tier: str | None = None
    reasoning_effort: str | None = None
    verbosity: Literal["low", "medium", "high"] | None = None
    web_search_options: dict[str, Any] | None = None
    moderation: dict[str, Any] | None = None
    # graphstrata's extensions.
    budget_tokens: Integer(1, 2**53) | None = None  # type: ignore[valid-type]
    top_k: Integer(1, 2**53) | None = None  # type: ignore[valid-type]
    sources: bool = Field(
        default=True,
        description="Append a 'Sources:' footer of the cited references to the content.",
    )

    def completion_limit(self) -> int:
        """The completion's token limit (default 256, at most :data:`MAX_COMPLETION_TOKENS`)."""
        asked = self.max_completion_tokens or self.max_tokens or 256
        return min(asked, MAX_COMPLETION_TOKENS)

    def stop_sequences(self) -> list[str]:
        """The ``stop`` sequences (none, one or a list)."""
        if self.stop is None:
            return []
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)


def refuse_unsupported(body: ChatRequest) -> None:
    """Refuse the values of ``body`` that a grounded answer cannot honour.

    Raises
    ------
    ApiError
        400 ``unsupported_value`` naming the member (``param``): ``n`` above 1; a tool or
        function call the model must make (``tool_choice`` ``"required"`` or naming a
        function, ``function_call`` naming one); ``response_format`` other than ``text``;
        ``logprobs: true`` or ``top_logprobs`` above 0; audio output; more than 4 ``stop``
        sequences.
    """

    def refuse(param: str, message: str) -> ApiError:
        return ApiError(400, "unsupported_value", message, param=param)

    if body.n is not None and body.n > 1:
        raise refuse("n", "n > 1 is not supported: the index gives one grounded answer")
    if body.tools and (body.tool_choice == "required" or isinstance(body.tool_choice, NamedTool)):
        raise refuse("tool_choice", "tool calls are not supported: the answer is always text")
    if body.functions and isinstance(body.function_call, NamedFunction):
        raise refuse("function_call", "function calls are not supported: the answer is text")
    if body.response_format is not None and body.response_format.type != "text":
        raise refuse(
            "response_format",
            f"response_format {body.response_format.type!r} is not supported: the answer "
            "is text with [n] citation markers",
        )
    if body.logprobs:
        raise refuse("logprobs", "logprobs are not supported")
    if body.top_logprobs:
        raise refuse("top_logprobs", "top_logprobs are not supported")
    if (body.modalities and "audio" in body.modalities) or body.audio is not None:
        raise refuse("modalities", "audio output is not supported")
    if len(body.stop_sequences()) > 4:
        raise refuse("stop", "at most 4 stop sequences")


def conversation(messages: list[ChatMessage], max_chars: int) -> tuple[str, list[tuple[str, str]]]:
    """The last user message (cut to ``max_chars``) and the earlier turns of a chat.

    Parameters
    ----------
    messages:
        The request's messages.
    max_chars:
        The query length limit.

    Returns
    -------
    tuple
        ``(question, history)``: the last user message with text (else the last message);
        the ``user`` and ``assistant`` turns before it, as ``(role, text)``, those without
        text left out.

    Raises
    ------
    ApiError
        400 when that message holds no text.
    """
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    last = users[-1] if users else len(messages) - 1
    question = messages[last].text()[:max_chars]
    if not question.strip():
        raise ApiError(
            400,
            "bad_request",
            "the last user message has no text to search with",
            param=f"messages.{last}.content",
        )
    history: list[tuple[str, str]] = [
        (str(m.role), m.text())
        for m in messages[:last]
        if m.role in ("user", "assistant") and m.text().strip()
    ]
    return question, history


def cut_at_stop(text: str, stops: list[str]) -> str:
    """``text`` up to the first of the ``stop`` sequences (all of it when none occurs)."""
    cut = len(text)
    for stop in stops:
        at = text.find(stop) if stop else -1
        if at >= 0:
            cut = min(cut, at)
    return text[:cut]
