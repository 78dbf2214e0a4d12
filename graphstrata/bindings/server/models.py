"""Request and response models of the service, built per app (limits come from the settings).

The schema of the ``params`` member of the retrieval requests is generated from the typed
mode parameters the served index declares (``Engine.mode_params``, classes of
:class:`~graphstrata.bindings.api.ModeParams`): an object whose properties are the union of the served
modes' parameters, each described with the modes it applies to, and no other property. The
engine checks the parameters against the requested mode (:meth:`ModeParams.parse`), so the
documentation and what is accepted come from the same classes.

This module does not use ``from __future__ import annotations``: the models are classes local
to :func:`build_models`, and pydantic must resolve their annotations when they are created.
"""

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from graphstrata.bindings.api import ModeParams
from graphstrata.bindings.server.settings import ServerSettings

#: Names a mode parameter may not take: members of the retrieval requests, and keyword
#: parameters of the engine's query calls (``Engine.query_vectors(..., **params)``).
REQUEST_FIELDS = frozenset(
    {"query", "queries", "mode", "budget_tokens", "top_k", "params"}
    | {"text", "texts", "vectors", "embed_seconds"}
)


def params_schema(mode_params: Mapping[str, type[ModeParams]]) -> dict[str, Any]:
    """JSON Schema of ``params``, generated from the served modes' parameter classes.

    Parameters
    ----------
    mode_params:
        Mode -> its parameters class (``Engine.mode_params``).

    Returns
    -------
    dict
        ``{"type": "object", "properties": ..., "additionalProperties": false}``; each
        property is the class's own schema (``ModeParams.json_schema``) with the modes that
        read it named in its description (a name declared with different types by several
        classes becomes an ``anyOf``).

    Raises
    ------
    TypeError
        When a parameter is named like a member of the request (a defect of the classes).
    """
    variants: dict[str, list[dict[str, Any]]] = {}
    described: dict[str, str] = {}
    modes_of: dict[str, list[str]] = {}
    per_mode: list[str] = []
    for mode in sorted(mode_params):
        props = mode_params[mode].json_schema()["properties"]
        per_mode.append(f"{mode}: {', '.join(sorted(props)) or 'none'}")
        for name, prop in props.items():
            if name in REQUEST_FIELDS:
                raise TypeError(f"mode parameter {name!r} of {mode!r} shadows a request member")
            modes_of.setdefault(name, []).append(mode)
            if prop.get("description"):
                described.setdefault(name, prop["description"])
            bare = {k: v for k, v in prop.items() if k != "description"}
            if bare not in variants.setdefault(name, []):
                variants[name].append(bare)
    properties: dict[str, dict[str, Any]] = {}
    for name in sorted(variants):
        prop = variants[name][0] if len(variants[name]) == 1 else {"anyOf": variants[name]}
        applies = f"(modes: {', '.join(modes_of[name])})"
        properties[name] = {**prop, "description": f"{described.get(name, '')} {applies}".strip()}
    return {
        "type": "object",
        "title": "ModeParams",
        "description": "Parameters of the chosen search mode (unset ones take the index's "
        "configured values); an unknown name or a value of the wrong type is refused with 422. "
        "Per mode: " + "; ".join(per_mode) + ".",
        "properties": properties,
        "additionalProperties": False,
    }


#: Request models are strict: no coercion (``true`` is not 1, ``"5"`` is not 5, ``null`` is not
#: an object, a number is not a string) and unknown members are refused.
STRICT = ConfigDict(extra="forbid", strict=True)

#: What the engine refuses in text that JSON Schema can say too, as ``pattern`` members of the
#: published schema (the engine's own checks give the error messages): a query or a text
#: needs a character that is not whitespace (``str.isspace``, which counts U+001C-U+001F);
#: a text holds no NUL; a doc_id holds no control character, line or paragraph separator.
#: Python's whitespace (``str.isspace``) spelled out: ``\s`` means other sets in other regex
#: dialects (ECMA's lacks U+0085 and has U+FEFF), and schema clients use those dialects.
_SPACE = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
)
NOT_BLANK = rf"[^{_SPACE}]"
TEXT_PATTERN = rf"^[^\u0000]*[^{_SPACE}\u0000][^\u0000]*$"
_ID_CHAR = r"\u0000-\u001f\u007f-\u009f\u2028\u2029"
DOC_ID_PATTERN = rf"^[^{_ID_CHAR}]*[^{_SPACE}{_ID_CHAR}][^{_ID_CHAR}]*$"


def integral(value: Any) -> Any:
    """A float without a fraction as an int (JSON Schema's ``integer`` includes ``5.0``).

    Anything else is left to the strict ``int`` validation, which refuses ``true``, ``"5"``
    and ``5.5``.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: An integer as JSON Schema defines it: ``5`` or ``5.0``, never ``true`` or ``"5"``.
JsonInt = Annotated[int, BeforeValidator(integral)]


def per_mode_params(mode_params: Mapping[str, type[ModeParams]], default: str) -> list[Any]:
    """``if``/``then`` members saying which ``params`` each ``mode`` takes (``allOf``).

    Parameters
    ----------
    mode_params:
        Mode -> its parameters class.
    default:
        The mode of a request that names none.

    Returns
    -------
    list
        One condition per mode, plus one for a request without ``mode``.
    """
    out: list[Any] = []
    for mode in sorted(mode_params):
        only = mode_params[mode].json_schema()
        out.append(
            {
                "if": {"properties": {"mode": {"const": mode}}, "required": ["mode"]},
                "then": {"properties": {"params": only}},
            }
        )
    if default in mode_params:
        out.append(
            {
                "if": {"not": {"required": ["mode"]}},
                "then": {"properties": {"params": mode_params[default].json_schema()}},
            }
        )
    return out


class Citation(BaseModel):
    """What an answer's ``[marker]`` cites: a retrieved node and one of its documents (only
    the nodes the answer cites are listed)."""

    marker: int
    doc_id: str | None
    node_id: int
    kind: str
    score: float
    title: str | None
    metadata: dict[str, Any]
    spans: list[dict[str, Any]]
    text: str


class OpenAIErrorDetail(BaseModel):
    model_config = ConfigDict(extra="allow")
    message: str
    type: str
    param: str | None
    code: str | None


class OpenAIErrorOut(BaseModel):
    """An error of the OpenAI-compatible routes, in OpenAI's shape."""

    error: OpenAIErrorDetail


#: The ``filter`` member of the retrieval requests (docs/guide/filters.md; checked by the
#: engine's one parser, ``Index.check_filter``: a bad filter is a 422 naming the problem).
FILTER_FIELD: Any = Field(
    default=None,
    description="Metadata filter: only nodes of matching documents are searched. Top-level "
    "keys are ANDed; a key is a metadata field, doc_id or title; a value is a scalar "
    "(equality) or an operator object ($eq, $ne, $in, $nin, $gt, $gte, $lt, $lte; ranges "
    "take numbers or ISO-8601 dates); $and / $or take lists of filters.",
    examples=[{"year": {"$gte": 2020}, "source": {"$in": ["news", "blog"]}}],
)


class DocumentRef(BaseModel):
    """A document a retrieved node cites: its id, title and metadata."""

    doc_id: str
    title: str
    metadata: dict[str, Any]


class RetrieveFields(BaseModel):
    """The members of ``POST /v1/retrieve`` and ``/v1/answer`` (limits: the per-app subclass)."""

    model_config = STRICT
    query: str
    mode: str = "naive"
    budget_tokens: JsonInt | None = None
    top_k: JsonInt | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    filter: dict[str, Any] | None = FILTER_FIELD


class BatchRetrieveFields(BaseModel):
    """The members of ``POST /v1/retrieve/batch`` (limits: the per-app subclass)."""

    model_config = STRICT
    queries: list[str]
    mode: str = "naive"
    budget_tokens: JsonInt | None = None
    top_k: JsonInt | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    filter: dict[str, Any] | None = FILTER_FIELD


@dataclass(frozen=True)
class Models:
    """The pydantic models of one app (their limits and the params schema are per app).

    The request classes are subclasses of :class:`RetrieveFields` and
    :class:`BatchRetrieveFields`, which endpoints use for typing (``cast``): FastAPI must see
    the per-app class in the annotation, which a type checker cannot follow.
    """

    RetrieveRequest: type[RetrieveFields]
    BatchRetrieveRequest: type[BatchRetrieveFields]
    RetrieveResponse: type[BaseModel]
    AnswerResponse: type[BaseModel]
    BatchRetrieveResponse: type[BaseModel]
    DocumentIn: type[BaseModel]
    OperationOut: type[BaseModel]
    OperationList: type[BaseModel]
    DocumentPage: type[BaseModel]
    DocumentStatus: type[BaseModel]
    ErrorOut: type[BaseModel]


def build_models(settings: ServerSettings, mode_params: Mapping[str, type[ModeParams]]) -> Models:
    """Request/response models; their limits come from the settings.

    Parameters
    ----------
    settings:
        The limits (query length, batch size, ``top_k``, budget).
    mode_params:
        The served modes and their parameters classes (``Engine.mode_params``).

    Returns
    -------
    Models
        The models, to be used as endpoint annotations of this app.
    """
    modes = sorted(mode_params)
    mode_enum: dict[str, Any] = {"enum": modes}
    generated = params_schema(mode_params)

    def replace_params_schema(schema: dict[str, Any]) -> None:
        schema.clear()
        schema.update(copy.deepcopy(generated))  # pydantic post-processes it in place

    query_field = Field(
        min_length=1,
        max_length=settings.max_query_chars,
        description=f"The question (at most {settings.max_query_chars} characters, "
        "not only whitespace).",
        json_schema_extra={"pattern": NOT_BLANK},
    )
    conditions = per_mode_params(mode_params, "naive")

    def add_conditions(schema: dict[str, Any]) -> None:
        schema["allOf"] = copy.deepcopy(conditions)

    mode_field = Field(
        default="naive",
        description="Search mode; this index serves: " + ", ".join(modes),
        json_schema_extra=mode_enum,
    )
    # The bounds go inside the type: on the field of an ``Annotated`` type with a validator,
    # pydantic would publish them as unknown keywords (``ge``) instead of ``minimum``.
    Budget = Annotated[int, Field(ge=0, le=settings.max_budget_tokens), BeforeValidator(integral)]
    TopK = Annotated[int, Field(ge=1, le=settings.max_top_k), BeforeValidator(integral)]
    budget_field = Field(
        default=None,
        description="Token budget of the retrieved context (default: the index's, 2000).",
    )
    top_k_field = Field(default=None, description="Vector candidates per kind.")
    params_field: Any = Field(default_factory=dict, json_schema_extra=replace_params_schema)

    class RetrieveRequest(RetrieveFields):
        model_config = ConfigDict(json_schema_extra=add_conditions)
        query: str = query_field
        mode: str = mode_field
        budget_tokens: Budget | None = budget_field  # type: ignore[valid-type]
        top_k: TopK | None = top_k_field  # type: ignore[valid-type]
        params: dict[str, Any] = params_field

    class BatchRetrieveRequest(BatchRetrieveFields):
        model_config = ConfigDict(json_schema_extra=add_conditions)
        queries: list[str] = Field(
            min_length=1,
            max_length=settings.max_batch_queries,
            description=f"1 to {settings.max_batch_queries} questions, embedded in one call.",
            json_schema_extra={
                "items": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": settings.max_query_chars,
                    "pattern": NOT_BLANK,
                }
            },
        )
        mode: str = mode_field
        budget_tokens: Budget | None = budget_field  # type: ignore[valid-type]
        top_k: TopK | None = top_k_field  # type: ignore[valid-type]
        params: dict[str, Any] = params_field

    class NodeOut(BaseModel):
        id: int
        kind: str
        layer: int
        text: str
        score: float
        tokens: int
        docs: list[str]
        documents: list[DocumentRef]
        spans: list[dict[str, Any]] = Field(
            default_factory=list,
            description="Where a chunk lies in its document: doc_id, page, section, "
            "start, end (character offsets) per page and section it covers",
        )

    class RetrieveResponse(BaseModel):
        nodes: list[NodeOut]
        report: dict[str, Any]

    class AnswerResponse(RetrieveResponse):
        answer: str
        citations: list[Citation]

    class BatchRetrieveResponse(BaseModel):
        results: list[RetrieveResponse]

    class DocumentIn(BaseModel):
        """One document to insert; other members are refused (put them in ``metadata``)."""

        model_config = STRICT
        doc_id: str = Field(
            min_length=1,
            max_length=1024,
            description="Not only whitespace; no control characters or line separators.",
            json_schema_extra={"pattern": DOC_ID_PATTERN},
        )
        text: str = Field(
            min_length=1,
            description="Not only whitespace; no NUL characters.",
            json_schema_extra={"pattern": TEXT_PATTERN},
        )
        title: str = ""
        metadata: dict[str, Any] = Field(default_factory=dict)

    class OperationOut(BaseModel):
        id: str
        kind: str
        status: str
        documents: dict[str, str] = Field(
            description="Each document's state (first 100): queued, indexed, deleted, "
            "failed or cancelled"
        )
        document_count: int
        doc_ids: list[str]
        submitted_at: float
        started_at: float | None
        finished_at: float | None
        report: dict[str, Any] | None
        error: dict[str, str] | None
        files: list[dict[str, Any]] = Field(
            default_factory=list,
            description="An upload's files: name, status (indexed, failed, skipped), "
            "doc_id, format, pages, error",
        )

    class OperationList(BaseModel):
        operations: list[OperationOut]

    class DocumentInfo(BaseModel):
        doc_id: str
        title: str
        metadata: dict[str, Any]
        status: str = Field(description="committed, or pending while an operation touches it")
        chunks: int
        version: int
        source: dict[str, Any] | None = Field(
            description="A parsed file's filename, format and pages; null for text"
        )

    class DocumentPage(BaseModel):
        documents: list[DocumentInfo]
        total: int
        offset: int
        limit: int

    class DocumentStatus(BaseModel):
        doc_id: str
        status: str = Field(description="committed, pending (an operation touches it)")
        present: bool
        index_version: int
        version: int | None = None
        chunks: int | None = None
        title: str | None = None
        metadata: dict[str, Any] | None = None
        source: dict[str, Any] | None = None
        pending_operations: list[str] = Field(default_factory=list)

    class ErrorDetail(BaseModel):
        model_config = ConfigDict(extra="allow")
        code: str
        message: str

    class ErrorOut(BaseModel):
        error: ErrorDetail

    return Models(
        RetrieveRequest=RetrieveRequest,
        BatchRetrieveRequest=BatchRetrieveRequest,
        RetrieveResponse=RetrieveResponse,
        AnswerResponse=AnswerResponse,
        BatchRetrieveResponse=BatchRetrieveResponse,
        DocumentIn=DocumentIn,
        OperationOut=OperationOut,
        OperationList=OperationList,
        DocumentPage=DocumentPage,
        DocumentStatus=DocumentStatus,
        ErrorOut=ErrorOut,
    )
